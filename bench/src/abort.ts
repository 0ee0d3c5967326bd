/**
 * Benchmark 5: abort latency. A `Batch.run` of 1,000 items at concurrency 1,000 with `abortMode:
 * "cancel-active"` and `abortOn: ["authentication"]`: 999 calls answer only after a long real latency (60 s),
 * so they are all in flight; once every one of the 1,000 calls has started, item 0's call waits a short real
 * delay and fails with `authentication`, which trips fail-fast. Measured: the time from that trigger to the
 * last terminal result (the 999 collateral `batch_aborted` failures). Real clock: this is a benchmark.
 *
 * Two ways of observing, each for every Rein configuration of the fixtures:
 *
 * - `Batch.run` with `onEvent`: from the `RunAborted` event's `at` to the last `ItemFailed` event's `at`
 *   (the run's own monotonic clock), and from the moment the failing call returned (hrtime) to the moment
 *   `Batch.run` returned;
 * - `Batch.stream` with no observer: from the moment the failing call returned to the moment the last
 *   result reached the consumer (hrtime), and to the end of the stream.
 */
import { Contract, Failure } from "@rein/core"
import type { Provider, Rein } from "@rein/core"
import type { Context } from "effect"
import { Deferred, Effect, Exit, Fiber, FiberId, Stream } from "effect"
import { contextOf, reinVariants, response } from "./fixtures.js"
import type { Benchmark, Goal, RunOptions, Section } from "./harness.js"
import { canImport, collect, fmtMs, nowMillis, quantile, table } from "./harness.js"

const IN_FLIGHT = 1_000
/** How long item 0's call waits, once all calls are in flight, before it fails with `authentication`. */
const TRIGGER_DELAY_MILLIS = 20
/** How long every other call takes to answer: far beyond the measurement. */
const SLOW_MILLIS = 60_000
const GOAL_MILLIS = 20

type BatchModule = typeof import("@rein/batch")

const contract = Contract.make({ deadline: "2 minutes", candidates: ["mem/a"], retry: { perEndpoint: 0 } })

const authentication = new Failure.ProviderFailure({ kind: "authentication", code: "http_401", dispatched: true })

const requestOf = (_: number, index: number): Provider.CompletionRequest => ({
  id: String(index),
  prompt: "hello",
  inputTokens: 10,
  maxOutputTokens: 10
})

const items = Array.from({ length: IN_FLIGHT }, (_, i) => i)

/** One round's provider state: calls started, and when the tripping call returned its failure (hrtime ms). */
interface Round {
  started: number
  readonly allIn: Deferred.Deferred<void>
  triggeredAt: number
}

const newRound = (): Round => ({ started: 0, allIn: Deferred.unsafeMake<void>(FiberId.none), triggeredAt: NaN })

/**
 * Item "0" waits until every call is in flight, then `TRIGGER_DELAY_MILLIS`, then fails with
 * `authentication`; every other item answers after `SLOW_MILLIS` (an interruptible real timer).
 */
const providerOf = (current: () => Round): Provider.Provider => ({
  internalMaxAttempts: 1,
  call: (request) =>
    Effect.suspend(() => {
      const round = current()
      if (++round.started === IN_FLIGHT) Deferred.unsafeDone(round.allIn, Exit.void)
      if (request.id !== "0") return Effect.as(Effect.sleep(SLOW_MILLIS), response)
      return Deferred.await(round.allIn).pipe(
        Effect.zipRight(Effect.sleep(TRIGGER_DELAY_MILLIS)),
        Effect.zipRight(Effect.suspend(() => {
          round.triggeredAt = nowMillis()
          return Effect.fail(authentication)
        }))
      )
    })
})

/** What one round measured, in ms. */
interface Measure {
  /** Trigger → last terminal result (the headline figure). */
  readonly toLast: number
  /** Trigger → `Batch.run` returned / the stream ended. */
  readonly toReturn: number
  /** Failing call returned → `RunAborted` (onEvent rows only). */
  readonly toAborted: number
}

interface Row {
  readonly name: string
  readonly trigger: string
  readonly measures: Array<Measure>
  readonly round: () => Promise<Measure>
}

const check = (what: string, ok: boolean) => {
  if (!ok) throw new Error(`abort benchmark: ${what}`)
}

const rowsOf = async (batch: BatchModule): Promise<ReadonlyArray<Row>> => {
  const { Batch, Guardrails } = batch
  const guardrails = Guardrails.make({
    concurrency: IN_FLIGHT,
    abortMode: "cancel-active",
    abortOn: ["authentication"]
  })
  let round = newRound()
  const provider = providerOf(() => round)
  const rows: Array<Row> = []
  for (const variant of reinVariants) {
    const context: Context.Context<Rein.Rein> = await contextOf(variant, { mem: provider })
    rows.push({
      name: `${variant.name}, Batch.run + onEvent`,
      trigger: "RunAborted.at",
      measures: [],
      round: async () => {
        round = newRound()
        let abortedAt = NaN
        let abortedReal = NaN
        let lastAt = NaN
        let terminal = 0
        const onEvent = (event: { readonly _tag: string; readonly at: number }) =>
          Effect.sync(() => {
            if (event._tag === "RunAborted") {
              abortedAt = event.at
              abortedReal = nowMillis()
            } else if (event._tag === "ItemFailed" || event._tag === "ItemCompleted") {
              terminal++
              lastAt = event.at
            }
          })
        const summary = await Effect.runPromise(
          Effect.provide(Batch.run(items, { contract, guardrails, request: requestOf, onEvent }), context)
        )
        const returned = nowMillis()
        check(`${terminal} terminal events of ${IN_FLIGHT}`, terminal === IN_FLIGHT)
        check(`termination ${summary.termination.kind}`, summary.termination.kind === "fail_fast")
        check(`${round.started} calls started`, round.started === IN_FLIGHT)
        check(
          `categories ${JSON.stringify(summary.stats.byCategory)}`,
          summary.stats.byCategory["authentication"] === 1 &&
            summary.stats.byCategory["batch_aborted"] === IN_FLIGHT - 1
        )
        return {
          toLast: lastAt - abortedAt,
          toReturn: returned - round.triggeredAt,
          toAborted: abortedReal - round.triggeredAt
        }
      }
    })
    rows.push({
      name: `${variant.name}, Batch.stream`,
      trigger: "failing call returned",
      measures: [],
      round: async () => {
        round = newRound()
        let last = NaN
        let results = 0
        let collateral = 0
        await Effect.runPromise(
          Effect.provide(
            Stream.runForEach(
              Batch.stream(items, { contract, guardrails, request: requestOf }),
              (result) =>
                Effect.sync(() => {
                  results++
                  if (result._tag === "Failed" && result.category === "batch_aborted") collateral++
                  last = nowMillis()
                })
            ),
            context
          )
        )
        const ended = nowMillis()
        check(`${results} results of ${IN_FLIGHT}`, results === IN_FLIGHT)
        check(`${collateral} collateral results of ${IN_FLIGHT - 1}`, collateral === IN_FLIGHT - 1)
        check(`${round.started} calls started`, round.started === IN_FLIGHT)
        return { toLast: last - round.triggeredAt, toReturn: ended - round.triggeredAt, toAborted: NaN }
      }
    })
  }
  return rows
}

/**
 * The runtime's own floor: `Effect.forEach` over the same 1,000 calls at concurrency 1,000 (no Rein), the
 * same trigger (item 0 fails once all have started); the failure interrupts the other 999, each recording
 * when its interruption ran. Trigger → the last of those, and → `forEach` returned.
 */
const floorRow = (): Row => ({
  name: "floor: Effect.forEach (concurrency 1,000), no Rein",
  trigger: "failing call returned",
  measures: [],
  round: async () => {
    const round = newRound()
    let last = NaN
    let interrupted = 0
    const one = (i: number): Effect.Effect<void, string> =>
      Effect.suspend(() => {
        if (++round.started === IN_FLIGHT) Deferred.unsafeDone(round.allIn, Exit.void)
        if (i !== 0) {
          return Effect.sleep(SLOW_MILLIS).pipe(Effect.onInterrupt(() =>
            Effect.sync(() => {
              interrupted++
              last = nowMillis()
            })
          ))
        }
        return Deferred.await(round.allIn).pipe(
          Effect.zipRight(Effect.sleep(TRIGGER_DELAY_MILLIS)),
          Effect.zipRight(Effect.suspend(() => {
            round.triggeredAt = nowMillis()
            return Effect.fail("authentication")
          }))
        )
      })
    await Effect.runPromise(Effect.either(Effect.forEach(items, one, { concurrency: IN_FLIGHT, discard: true })))
    const returned = nowMillis()
    check(`floor: ${interrupted} interrupted of ${IN_FLIGHT - 1}`, interrupted === IN_FLIGHT - 1)
    return { toLast: last - round.triggeredAt, toReturn: returned - round.triggeredAt, toAborted: NaN }
  }
})

/**
 * The bare mechanism Rein's engine uses to cancel: 999 forked fibers asleep on the same 60 s timer, each
 * interrupted with `unsafeInterruptAsFork` in one loop (the trigger); → the last interruption handler run.
 */
const bareRow = (): Row => ({
  name: "floor: 999 forked fibers, unsafeInterruptAsFork each, no Rein",
  trigger: "interrupt loop started",
  measures: [],
  round: async () => {
    let last = NaN
    let interrupted = 0
    const fibers = Effect.runSync(
      Effect.forEach(items.slice(1), () =>
        Effect.forkDaemon(
          Effect.sleep(SLOW_MILLIS).pipe(Effect.onInterrupt(() =>
            Effect.sync(() => {
              interrupted++
              last = nowMillis()
            })
          ))
        ))
    )
    await new Promise((resolve) => setTimeout(resolve, TRIGGER_DELAY_MILLIS))
    const triggeredAt = nowMillis()
    for (const fiber of fibers) fiber.unsafeInterruptAsFork(FiberId.none)
    await Effect.runPromise(Fiber.awaitAll(fibers))
    const returned = nowMillis()
    check(`bare: ${interrupted} interrupted of ${IN_FLIGHT - 1}`, interrupted === IN_FLIGHT - 1)
    return { toLast: last - triggeredAt, toReturn: returned - triggeredAt, toAborted: NaN }
  }
})

const summarise = (xs: ReadonlyArray<number>) => {
  const s = xs.filter(Number.isFinite).sort((a, b) => a - b)
  return { p50: quantile(s, 0.5), max: s.length === 0 ? NaN : s[s.length - 1]!, n: s.length }
}

const run = async (options: RunOptions): Promise<Section> => {
  const rounds = options.quick ? 2 : 5
  if (!(await canImport("@rein/batch"))) {
    return { markdown: "skipped: @rein/batch not built yet.", goals: [] }
  }
  const rows = [bareRow(), floorRow(), ...(await rowsOf(await import("@rein/batch") as BatchModule))]
  for (const row of rows) await row.round() // warm-up, not recorded
  for (let r = 0; r < rounds; r++) {
    for (let k = 0; k < rows.length; k++) {
      const row = rows[(k + r) % rows.length]!
      collect()
      row.measures.push(await row.round())
    }
    options.log(`  round ${r + 1}/${rounds}`)
  }
  const header = [
    "run",
    "trigger",
    "rounds",
    "trigger → last terminal result, p50 ms",
    "max ms",
    "trigger → run returned, p50 ms",
    "max ms",
    "failing call returned → RunAborted, p50 ms"
  ]
  const goals: Array<Goal> = []
  const body = rows.map((row) => {
    const last = summarise(row.measures.map((m) => m.toLast))
    const ret = summarise(row.measures.map((m) => m.toReturn))
    const aborted = summarise(row.measures.map((m) => m.toAborted))
    options.log(`    ${row.name}: p50 ${fmtMs(last.p50)} ms, max ${fmtMs(last.max)} ms`)
    if (row.name.startsWith("floor")) {
      return [
        row.name,
        row.trigger,
        String(last.n),
        fmtMs(last.p50),
        fmtMs(last.max),
        fmtMs(ret.p50),
        fmtMs(ret.max),
        "—"
      ]
    }
    goals.push({
      benchmark: "5. abort",
      goal: `${row.name}, cancel-active with ${
        IN_FLIGHT.toLocaleString("en-US")
      } calls in flight: trigger → last terminal result ≤ ${GOAL_MILLIS} ms`,
      measured: `p50 ${fmtMs(last.p50)} ms, max ${fmtMs(last.max)} ms`,
      status: last.max <= GOAL_MILLIS ? "PASS" : "FAIL"
    })
    return [
      row.name,
      row.trigger,
      String(last.n),
      fmtMs(last.p50),
      fmtMs(last.max),
      fmtMs(ret.p50),
      fmtMs(ret.max),
      aborted.n === 0 ? "—" : fmtMs(aborted.p50)
    ]
  })
  const notes = [
    `${IN_FLIGHT.toLocaleString("en-US")} items, concurrency ${
      IN_FLIGHT.toLocaleString("en-US")
    }, \`abortMode: "cancel-active"\`, \`abortOn: ["authentication"]\`,`,
    `one candidate, no retry. ${IN_FLIGHT - 1} calls answer only after a real ${SLOW_MILLIS / 1000} s timer; once all ${
      IN_FLIGHT.toLocaleString("en-US")
    } calls`,
    `have started, item 0's call waits ${TRIGGER_DELAY_MILLIS} ms and fails with \`authentication\` (fail-fast). Every round is`,
    `checked: all ${
      IN_FLIGHT.toLocaleString("en-US")
    } calls started, termination \`fail_fast\`, 1 \`authentication\` and ${IN_FLIGHT - 1} \`batch_aborted\` results.`,
    `${rounds} interleaved rounds after a warm-up; p50 and max over the rounds. Batch.run rows: trigger = the`,
    "`RunAborted` event's `at`, last terminal result = the last `ItemFailed` event's `at` (both on the run's",
    "clock); \"run returned\" is measured from the moment the failing call returned (hrtime). Batch.stream rows",
    "(no observer): from the moment the failing call returned to the last result reaching the consumer, and to",
    "the end of the stream (hrtime). The floor rows are the runtime alone, without Rein: 999 forked fibers asleep",
    "on the same timer, each interrupted with `unsafeInterruptAsFork` (what Rein's engine does on a stop); and",
    "`Effect.forEach` at concurrency 1,000 over the same calls and trigger, the other 999 interrupted by its",
    "fail-fast.",
    "The goal is judged on the max."
  ].join("\n")
  return { markdown: `${notes}\n\n${table(header, body)}`, goals }
}

export const abort: Benchmark = {
  id: 5,
  title: "Abort latency",
  requires: { module: "@rein/batch", skipped: "skipped: @rein/batch not built yet" },
  goals: [`\`cancel-active\` with 1,000 calls in flight: trigger → last terminal result ≤ ${GOAL_MILLIS} ms`],
  run
}
