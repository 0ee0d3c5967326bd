/**
 * Benchmark 2: batch efficiency. 20,000 items, each one call of 5 ms latency (a real timer), concurrency
 * 200: measured time against the ideal (items × latency / concurrency) and against `p-limit` and `p-queue`
 * loops doing the same calls (plus `Effect.forEach` with the same concurrency, the Effect-native floor).
 *
 * Rein's rows need `@rein/batch` built (`pnpm build`); until then the table says so.
 */
import { Contract, Rein } from "@rein/core"
import type { Provider } from "@rein/core"
import { Effect } from "effect"
import pLimit from "p-limit"
import PQueue from "p-queue"
import { catalog, request, response } from "./fixtures.js"
import type { Benchmark, Goal, RunOptions, Section } from "./harness.js"
import { canImport, collect, fmtMs, median, nowMillis, table } from "./harness.js"

const ITEMS = 20_000
const LATENCY_MILLIS = 5
const CONCURRENCY = 200
const IDEAL_MILLIS = (ITEMS * LATENCY_MILLIS) / CONCURRENCY

/** A contender: `run` processes all ITEMS and resolves with the number of items that completed. */
export interface BatchContender {
  readonly name: string
  readonly run: () => Promise<number>
}

const call = (): Promise<number> => new Promise((resolve) => setTimeout(() => resolve(1), LATENCY_MILLIS))

const items = Array.from({ length: ITEMS }, (_, i) => i)

const baselines: ReadonlyArray<BatchContender> = [
  {
    name: "p-limit loop",
    run: async () => {
      const limit = pLimit(CONCURRENCY)
      const done = await Promise.all(items.map(() => limit(call)))
      return done.length
    }
  },
  {
    name: "p-queue loop",
    run: async () => {
      const queue = new PQueue({ concurrency: CONCURRENCY })
      let done = 0
      for (const _ of items) {
        void queue.add(async () => {
          const n = await call()
          done += n
        })
      }
      await queue.onIdle()
      return done
    }
  },
  {
    // The Effect-native way to bound each call, as Rein bounds each attempt: a fork and a timer per call.
    name: "Effect.forEach + Effect.timeout per call (concurrency 200)",
    run: () =>
      Effect.runPromise(
        Effect.map(
          Effect.forEach(items, () => Effect.timeout(Effect.promise(call), "60 seconds"), { concurrency: CONCURRENCY }),
          (done) => done.length
        )
      )
  },
  {
    name: "Effect.forEach (concurrency 200, Effect.sleep)",
    run: () =>
      Effect.runPromise(
        Effect.map(
          Effect.forEach(items, () => Effect.as(Effect.sleep(LATENCY_MILLIS), 1), { concurrency: CONCURRENCY }),
          (done) => done.length
        )
      )
  }
]

type BatchModule = typeof import("@rein/batch")

/**
 * Rein's rows: a run of ITEMS items over a provider whose call is `Effect.promise(call)` (the same 5 ms
 * timer), concurrency CONCURRENCY, one row per guardrail configuration: only the concurrency, and every
 * guardrail on (item and batch deadline, fail-fast, generous token and cost caps, generous rate limits).
 */
const reinRows = (batch: BatchModule): ReadonlyArray<BatchContender> => {
  const { Batch, Guardrails } = batch
  const provider: Provider.Provider = {
    internalMaxAttempts: 1,
    call: () => Effect.as(Effect.promise(call), response)
  }
  const layer = Rein.layer({ catalog, providers: { mem: provider } })
  const contract = Contract.make({ deadline: "1 minute", candidates: ["mem/a"] })
  const requestOf = () => request
  const row = (name: string, guardrails: InstanceType<BatchModule["Guardrails"]["Guardrails"]>): BatchContender => ({
    name,
    run: () =>
      Effect.runPromise(
        Batch.run(items, { contract, request: requestOf, guardrails }).pipe(
          Effect.map((summary) => summary.stats.succeeded),
          Effect.provide(layer)
        )
      )
  })
  return [
    row("Rein Batch.run (concurrency 200)", Guardrails.make({ concurrency: CONCURRENCY })),
    row(
      "Rein Batch.run (every guardrail on)",
      Guardrails.make({
        concurrency: CONCURRENCY,
        itemDeadline: "30 seconds",
        batchDeadline: "10 minutes",
        abortOn: ["authentication", "insufficient_balance"],
        maxTotalTokens: 1e12,
        maxTotalCost: 1e9,
        requestsPerMinute: 1e9,
        tokensPerMinute: 1e12,
        cooldown: "1 second"
      })
    )
  ]
}

/** The time a single 5 ms timer really takes here, sequentially (median of 100). */
const timerAlone = async (): Promise<number> => {
  const xs: Array<number> = []
  for (let i = 0; i < 100; i++) {
    const t0 = nowMillis()
    await call()
    xs.push(nowMillis() - t0)
  }
  return median(xs)
}

const run = async (options: RunOptions): Promise<Section> => {
  const rounds = options.quick ? 1 : 5
  const batchBuilt = await canImport("@rein/batch")
  const rein = batchBuilt ? reinRows(await import("@rein/batch") as BatchModule) : []
  const contenders = [...rein, ...baselines]
  const samples = contenders.map((): Array<number> => [])
  for (const c of contenders) await c.run() // warm-up
  for (let r = 0; r < rounds; r++) {
    for (let k = 0; k < contenders.length; k++) {
      const i = (k + r) % contenders.length
      collect()
      const t0 = nowMillis()
      const done = await contenders[i]!.run()
      samples[i]!.push(nowMillis() - t0)
      if (done !== ITEMS) throw new Error(`${contenders[i]!.name}: ${done} of ${ITEMS} items completed`)
    }
    options.log(`  round ${r + 1}/${rounds}`)
  }
  const timer = await timerAlone()
  const medians = samples.map(median)
  const pLimitMillis = medians[contenders.findIndex((c) => c.name === "p-limit loop")]!
  const header = ["contender", "time ms (median)", "min ms", "efficiency (ideal ÷ time)", "÷ p-limit"]
  const rows = contenders.map((c, i) => [
    c.name,
    fmtMs(medians[i]!, 0),
    fmtMs(Math.min(...samples[i]!), 0),
    (IDEAL_MILLIS / medians[i]!).toFixed(3),
    `${(medians[i]! / pLimitMillis).toFixed(3)}×`
  ])
  const goals: Array<Goal> = []
  if (!batchBuilt || rein.length === 0) {
    rows.unshift([
      "Rein batch",
      batchBuilt ? "skipped: Rein's row is not written yet" : "skipped: @rein/batch not built yet",
      "",
      "",
      ""
    ])
    goals.push({
      benchmark: "2. batch efficiency",
      goal: "Rein batch within 10% of p-limit (time ≤ 1.10 × p-limit)",
      measured: `p-limit ${fmtMs(pLimitMillis, 0)} ms (efficiency ${
        (IDEAL_MILLIS / pLimitMillis).toFixed(3)
      }); Rein not measured`,
      status: "pending"
    })
  }
  rein.forEach((c, i) => {
    const ratio = medians[i]! / pLimitMillis
    goals.push({
      benchmark: "2. batch efficiency",
      goal: `${c.name} within 10% of p-limit (time ≤ 1.10 × p-limit)`,
      measured: `${fmtMs(medians[i]!, 0)} ms vs ${fmtMs(pLimitMillis, 0)} ms (${ratio.toFixed(3)}×; efficiency ${
        (IDEAL_MILLIS / medians[i]!).toFixed(3)
      })`,
      status: ratio <= 1.1 ? "PASS" : "FAIL"
    })
  })
  const notes = [
    `${
      ITEMS.toLocaleString("en-US")
    } items, each one call that resolves after a real ${LATENCY_MILLIS} ms timer, at most`,
    `${CONCURRENCY} in flight. Ideal = items × latency ÷ concurrency = ${IDEAL_MILLIS} ms. ${rounds} interleaved rounds after`,
    `a warm-up; median and min over the rounds. On this machine one ${LATENCY_MILLIS} ms timer alone takes`,
    `${fmtMs(timer)} ms (median of 100, sequential), so no loop can reach efficiency 1.`,
    "",
    "p-limit, p-queue and the plain `Effect.forEach` bound nothing: a call that never answers holds its slot",
    "forever. Rein bounds every attempt (its own fiber, so that a provider ignoring interruption cannot hold",
    "the item past the teardown grace, and a timeout). The `Effect.forEach + Effect.timeout` row is the",
    "Effect-native way to put such a bound on each call, measured in the same run."
  ].join("\n")
  return { markdown: `${notes}\n\n${table(header, rows)}`, goals }
}

export const batch: Benchmark = {
  id: 2,
  title: "Batch efficiency",
  run
}
