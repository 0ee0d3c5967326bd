/**
 * Benchmark 4: deadline precision. 1,000 concurrent requests with a 50 ms deadline against a provider
 * that never answers: p50 / p99 / max of (return time − deadline). Then against a provider that ignores
 * interruption: the same, measured against deadline + teardown grace. Real clock: this is a benchmark.
 *
 * A floor row times plain `Effect.timeout(Effect.never, 50 ms)` the same way, to show what the runtime's
 * timers alone give on this machine.
 */
import { Contract, Rein } from "@rein/core"
import type { Provider } from "@rein/core"
import { Effect } from "effect"
import { contextOf, reinVariants, request, response } from "./fixtures.js"
import type { Benchmark, Goal, RunOptions, Section } from "./harness.js"
import { collect, fmtMs, nowMillis, quantile, table } from "./harness.js"

const CONCURRENCY = 1_000
const DEADLINE_MILLIS = 50
const GRACE_MILLIS = 250
/** How long the stubborn provider ignores interruption: far beyond deadline + grace. */
const STUBBORN_MILLIS = 2_000

const contract = Contract.make({
  deadline: DEADLINE_MILLIS,
  teardownGrace: GRACE_MILLIS,
  candidates: ["mem/a"],
  retry: { perEndpoint: 0 }
})

const never: Provider.Provider = { internalMaxAttempts: 1, call: () => Effect.never }

/** Ignores interruption for `STUBBORN_MILLIS`; counts the calls whose fiber has ended. */
const stubborn = () => {
  const state = { started: 0, ended: 0 }
  const provider: Provider.Provider = {
    internalMaxAttempts: 1,
    call: () =>
      Effect.suspend(() => {
        state.started++
        return Effect.as(Effect.uninterruptible(Effect.sleep(STUBBORN_MILLIS)), response)
      }).pipe(Effect.ensuring(Effect.sync(() => state.ended++)))
  }
  return { provider, state }
}

/**
 * Runs `one` CONCURRENCY times at once; returns each request's (return time − expected return time), in ms.
 * The expected return time depends on the result (see `expectedReturn`).
 */
const overshoots = async <E>(
  one: Effect.Effect<unknown, E>,
  expected: (result: unknown) => number,
  check: (result: unknown) => boolean
): Promise<Array<number>> => {
  const out: Array<number> = []
  let wrong = 0
  const timed = Effect.suspend(() => {
    const t0 = nowMillis()
    return Effect.map(Effect.either(one), (result) => {
      out.push(nowMillis() - t0 - expected(result))
      if (!check(result)) wrong++
    })
  })
  collect()
  await Effect.runPromise(Effect.forEach(Array.from({ length: CONCURRENCY }), () => timed, {
    concurrency: "unbounded",
    discard: true
  }))
  if (wrong > 0) throw new Error(`${wrong} of ${CONCURRENCY} requests ended with an unexpected result`)
  return out
}

const isDeadlineExceeded = (r: unknown) => {
  const e = r as { readonly _tag: string; readonly left?: { readonly _tag?: string } }
  return e._tag === "Left" && e.left?._tag === "DeadlineExceeded"
}
const isTimeout = (r: unknown) => {
  const e = r as { readonly _tag: string; readonly left?: { readonly _tag?: string } }
  return e._tag === "Left" && e.left?._tag === "TimeoutException"
}

const atDeadline = () => DEADLINE_MILLIS

/**
 * When a request should return: at the deadline; after the teardown grace as well when an attempt was in
 * flight and did not confirm its teardown (the stubborn provider). A request whose attempt never started
 * (the deadline expired before admission, when the process is saturated) is due at the deadline.
 */
const expectedReturn = (r: unknown) => {
  const e = r as { readonly left?: { readonly teardownUnconfirmed?: boolean } }
  return e.left?.teardownUnconfirmed === true ? DEADLINE_MILLIS + GRACE_MILLIS : DEADLINE_MILLIS
}

const waitUntil = async (done: () => boolean, maxMillis: number) => {
  const t0 = nowMillis()
  while (!done() && nowMillis() - t0 < maxMillis) await new Promise((resolve) => setTimeout(resolve, 10))
}

interface Row {
  readonly name: string
  readonly against: string
  readonly samples: Array<number>
  readonly rein: boolean
}

const run = async (options: RunOptions): Promise<Section> => {
  const reps = options.quick ? 1 : 3
  const rows: Array<Row> = [
    { name: "floor: Effect.timeout(Effect.never, 50 ms)", against: "deadline", samples: [], rein: false }
  ]
  const variants = await Promise.all(reinVariants.map(async (variant) => {
    const neverRow: Row = {
      name: `${variant.name}, provider never answers`,
      against: "deadline",
      samples: [],
      rein: true
    }
    const stubbornRow: Row = {
      name: `${variant.name}, provider ignores interruption`,
      against: "deadline + teardown grace",
      samples: [],
      rein: true
    }
    rows.push(neverRow, stubbornRow)
    return { variant, neverRow, stubbornRow, neverContext: await contextOf(variant, { mem: never }) }
  }))
  const floor = Effect.timeout(Effect.never, DEADLINE_MILLIS)
  // Warm-up: one small round of each, not recorded.
  await overshoots(floor, atDeadline, isTimeout)
  for (const v of variants) {
    await overshoots(
      Effect.provide(Rein.execute(request, contract), v.neverContext),
      atDeadline,
      isDeadlineExceeded
    )
  }
  for (let r = 0; r < reps; r++) {
    options.log(`  round ${r + 1}/${reps}`)
    rows[0]!.samples.push(...(await overshoots(floor, atDeadline, isTimeout)))
    for (const v of variants) {
      v.neverRow.samples.push(
        ...(await overshoots(
          Effect.provide(Rein.execute(request, contract), v.neverContext),
          atDeadline,
          isDeadlineExceeded
        ))
      )
      const s = stubborn()
      const context = await contextOf(v.variant, { mem: s.provider })
      v.stubbornRow.samples.push(
        ...(await overshoots(
          Effect.provide(Rein.execute(request, contract), context),
          expectedReturn,
          isDeadlineExceeded
        ))
      )
      // Let every stubborn call end before the next measurement, so no leftover timers skew it.
      await waitUntil(() => s.state.ended >= s.state.started, STUBBORN_MILLIS * 3)
    }
  }
  const header = ["requests", "measured against", "samples", "p50 ms", "p99 ms", "max ms", "min ms"]
  const goals: Array<Goal> = []
  const body = rows.map((row) => {
    const s = [...row.samples].sort((a, b) => a - b)
    const p99 = quantile(s, 0.99)
    if (row.rein) {
      goals.push({
        benchmark: "4. deadline precision",
        goal: `${row.name}: overshoot p99 ≤ 5 ms (against ${row.against})`,
        measured: `p99 ${fmtMs(p99)} ms, max ${fmtMs(s[s.length - 1]!)} ms`,
        status: p99 <= 5 ? "PASS" : "FAIL"
      })
    }
    return [
      row.name,
      row.against,
      String(s.length),
      fmtMs(quantile(s, 0.5)),
      fmtMs(p99),
      fmtMs(s[s.length - 1]!),
      fmtMs(s[0]!)
    ]
  })
  const notes = [
    `${CONCURRENCY} requests started at once (\`Effect.forEach\`, unbounded concurrency), each with a`,
    `${DEADLINE_MILLIS} ms deadline (teardown grace ${GRACE_MILLIS} ms, no retry, one candidate); ${reps} rounds, all`,
    "samples pooled. Overshoot = (time the request returned − time it started) − deadline (− grace for the",
    "stubborn provider), read from `process.hrtime`; negative would mean early. Every request is checked to",
    "fail with `DeadlineExceeded` (`TimeoutException` for the floor). The stubborn provider runs",
    `\`Effect.uninterruptible(Effect.sleep(${STUBBORN_MILLIS} ms))\`; each round waits for all of them to end before the`,
    "next measurement. A stubborn request is due at deadline + grace when its teardown went unconfirmed, at the",
    "deadline when its attempt never started (the deadline expired before admission)."
  ].join("\n")
  return { markdown: `${notes}\n\n${table(header, body)}`, goals }
}

export const deadline: Benchmark = {
  id: 4,
  title: "Deadline precision",
  run
}
