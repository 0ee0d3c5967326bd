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
import { canImport, collect, fmtMs, fmtRatio, loadNow, loadRange, median, nowMillis, table } from "./harness.js"

const IN_FLIGHT = 1_000
/** How long item 0's call waits, once all calls are in flight, before it fails with `authentication`. */
const TRIGGER_DELAY_MILLIS = 20
/** How long every other call takes to answer: far beyond the measurement. */
const SLOW_MILLIS = 60_000
/** The goal: every item torn down within this multiple of the one-level interruption floor. */
const GOAL_RATIO = 1.5
const ONE_LEVEL = "floor: one-level interruption (999 forked fibers, unsafeInterruptAsFork each), no Rein"

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
  /** Slow calls whose interruption ran (torn down), and when the last one did (hrtime ms). */
  tornDown: number
  lastTornDown: number
}

const newRound = (): Round => ({
  started: 0,
  allIn: Deferred.unsafeMake<void>(FiberId.none),
  triggeredAt: NaN,
  tornDown: 0,
  lastTornDown: NaN
})

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
      if (request.id !== "0") {
        return Effect.as(Effect.sleep(SLOW_MILLIS), response).pipe(Effect.onInterrupt(() =>
          Effect.sync(() => {
            round.tornDown++
            round.lastTornDown = nowMillis()
          })
        ))
      }
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
  /** Trigger → the last call torn down (its interruption ran): the goal's figure. */
  readonly toTornDown: number
  /** Trigger → last terminal result published. */
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
        check(`${round.tornDown} calls torn down`, round.tornDown === IN_FLIGHT - 1)
        check(
          `categories ${JSON.stringify(summary.stats.byCategory)}`,
          summary.stats.byCategory["authentication"] === 1 &&
            summary.stats.byCategory["batch_aborted"] === IN_FLIGHT - 1
        )
        return {
          toTornDown: round.lastTornDown - round.triggeredAt,
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
        check(`${round.tornDown} calls torn down`, round.tornDown === IN_FLIGHT - 1)
        return {
          toTornDown: round.lastTornDown - round.triggeredAt,
          toLast: last - round.triggeredAt,
          toReturn: ended - round.triggeredAt,
          toAborted: NaN
        }
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
  name: "peer: Effect.forEach (concurrency 1,000) fail-fast, no Rein",
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
    return {
      toTornDown: last - round.triggeredAt,
      toLast: last - round.triggeredAt,
      toReturn: returned - round.triggeredAt,
      toAborted: NaN
    }
  }
})

/**
 * The bare mechanism Rein's engine uses to cancel: 999 forked fibers asleep on the same 60 s timer, each
 * interrupted with `unsafeInterruptAsFork` in one loop (the trigger); → the last interruption handler run.
 */
const bareRow = (): Row => ({
  name: ONE_LEVEL,
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
    return {
      toTornDown: last - triggeredAt,
      toLast: last - triggeredAt,
      toReturn: returned - triggeredAt,
      toAborted: NaN
    }
  }
})

const summarise = (xs: ReadonlyArray<number>) => {
  const s = xs.filter(Number.isFinite).sort((a, b) => a - b)
  return {
    median: median(s),
    min: s.length === 0 ? NaN : s[0]!,
    max: s.length === 0 ? NaN : s[s.length - 1]!,
    n: s.length
  }
}

const run = async (options: RunOptions): Promise<Section> => {
  const rounds = options.quick ? 2 : 7
  if (!(await canImport("@rein/batch"))) {
    return { markdown: "skipped: @rein/batch not built yet.", goals: [] }
  }
  const rows = [bareRow(), floorRow(), ...(await rowsOf(await import("@rein/batch") as BatchModule))]
  const load0 = loadNow()
  for (const row of rows) await row.round() // warm-up, not recorded
  for (let r = 0; r < rounds; r++) {
    for (let k = 0; k < rows.length; k++) {
      const row = rows[(k + r) % rows.length]!
      collect()
      row.measures.push(await row.round())
    }
    options.log(`  round ${r + 1}/${rounds}`)
  }
  const load = loadRange(load0, loadNow())
  const header = [
    "run",
    "trigger",
    "rounds",
    "trigger → last call torn down, median ms",
    "min–max ms",
    "trigger → last terminal result, median ms",
    "trigger → run returned, median ms",
    "failing call returned → RunAborted, median ms"
  ]
  const floor = median(rows[0]!.measures.map((m) => m.toTornDown))
  const goals: Array<Goal> = []
  const body = rows.map((row) => {
    const torn = summarise(row.measures.map((m) => m.toTornDown))
    const last = summarise(row.measures.map((m) => m.toLast))
    const ret = summarise(row.measures.map((m) => m.toReturn))
    const aborted = summarise(row.measures.map((m) => m.toAborted))
    options.log(`    ${row.name}: torn down ${fmtMs(torn.median)} ms, last result ${fmtMs(last.median)} ms`)
    if (!row.name.startsWith("floor") && !row.name.startsWith("peer")) {
      goals.push({
        benchmark: "5. abort",
        goal: `${row.name}, cancel-active with ${
          IN_FLIGHT.toLocaleString("en-US")
        } calls in flight: trigger → every call torn down ≤ ${GOAL_RATIO}× the one-level interruption floor`,
        measured: `median ${fmtMs(torn.median)} ms vs floor ${fmtMs(floor)} ms (${fmtRatio(torn.median / floor)}); ` +
          `last result published at ${fmtMs(last.median)} ms; ${load}`,
        status: torn.median <= GOAL_RATIO * floor ? "PASS" : "FAIL"
      })
    }
    return [
      row.name,
      row.trigger,
      String(torn.n),
      fmtMs(torn.median),
      `${fmtMs(torn.min)}–${fmtMs(torn.max)}`,
      fmtMs(last.median),
      fmtMs(ret.median),
      aborted.n === 0 ? "—" : fmtMs(aborted.median)
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
    `checked: all ${IN_FLIGHT.toLocaleString("en-US")} calls started, all ${
      IN_FLIGHT - 1
    } slow calls torn down (their \`onInterrupt\` ran), termination \`fail_fast\`,`,
    `1 \`authentication\` and ${
      IN_FLIGHT - 1
    } \`batch_aborted\` results. ${rounds} interleaved rounds after a warm-up (order`,
    "rotated every round); median and min–max over the rounds. \"Torn down\" is when the last slow call's",
    "interruption ran, from the moment the failing call returned (hrtime): the goal's figure. Batch.run rows: last",
    "terminal result = the last `ItemFailed` event's `at` minus the `RunAborted` event's `at` (the run's clock);",
    "Batch.stream rows (no observer): from the failing call's return to the last result reaching the consumer.",
    "The one-level floor is the runtime alone: 999 forked fibers asleep on the same timer, each interrupted with",
    "`unsafeInterruptAsFork` in one loop, to the last interruption handler run. `Effect.forEach` fail-fast over",
    "the same calls and trigger is a peer.",
    "",
    "A cancelled item's result is published once its call's teardown has ended (or its grace ran out, reported",
    "`teardownUnconfirmed`), never at the stop itself: its attempt record and its charge are only known then.",
    `Measured at ${load} (1-minute load average).`
  ].join("\n")
  return { markdown: `${notes}\n\n${table(header, body)}`, goals }
}

export const abort: Benchmark = {
  id: 5,
  title: "Abort latency",
  requires: { module: "@rein/batch", skipped: "skipped: @rein/batch not built yet" },
  goals: [`\`cancel-active\` with 1,000 calls in flight: every call torn down ≤ ${GOAL_RATIO}× the one-level floor`],
  run
}
