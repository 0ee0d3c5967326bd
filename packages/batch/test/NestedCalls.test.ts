// A call that an item's provider makes to Rein itself (from the attempt's fiber, or from a fiber forked inside
// it) is governed by the run as one of the item's attempts: admitted under the run's rate limits, charged to its
// caps, and refused once the run stopped. That is the storm bound: a provider that fans out cannot escape the run.
import { describe, expect, it } from "@effect/vitest"
import { Batch, Guardrails } from "@rein/batch"
import { Catalog, Contract, Rein } from "@rein/core"
import type { Provider } from "@rein/core"
import { Duration, Effect, Either, Fiber, TestClock } from "effect"
import { contract, endpoint, ok, scripted } from "./batch-helpers.js"

/** Forks `effect`, advances virtual time by `advance`, and joins. */
const runFor = <A, E>(effect: Effect.Effect<A, E>, advance: Duration.DurationInput = "1 hour") =>
  Effect.gen(function*() {
    const fiber = yield* Effect.fork(effect)
    yield* TestClock.adjust(advance)
    return yield* Fiber.join(fiber)
  })

const prompts = (n: number) => Array.from({ length: n }, (_, i) => `p${i}`)

const nestedContract = Contract.make({ deadline: "10 minutes", candidates: ["a"], allowSimulated: true })

/**
 * A provider (endpoint "b") that makes `calls` nested `Rein.execute` calls in sequence (to endpoint "a", 200 tokens
 * each), from the attempt's own fiber or from a fiber it forks, and answers with 10 tokens. `outcomes` holds how
 * each nested call ended ("ok" or its error's tag).
 */
const fanningOut = (calls: number, from: "attempt" | "forked") => {
  const inner = scripted(() => ok(0, { inputTokens: 100, outputTokens: 100 }))
  const outcomes: Array<string> = []
  const nested = (prompt: string) =>
    Effect.forEach(
      Array.from({ length: calls }, (_, i) => i),
      (i) =>
        Effect.map(
          Effect.either(Rein.execute({ prompt: `${prompt} nested ${i}` }, nestedContract)),
          (e) => void outcomes.push(Either.isRight(e) ? "ok" : e.left._tag)
        ),
      { discard: true }
    ).pipe(Effect.provide(inner.layer))
  const outer: Provider.Provider = {
    internalMaxAttempts: 1,
    simulated: true,
    call: (request) =>
      Effect.as(
        from === "attempt" ? nested(request.prompt) : Effect.flatMap(Effect.fork(nested(request.prompt)), Fiber.join),
        { text: "ok", usage: { inputTokens: 5, outputTokens: 5 } }
      )
  }
  const layer = Rein.layer({
    catalog: Catalog.make({ endpoints: [endpoint("a"), endpoint("b", "outer")] }),
    providers: { outer },
    health: false
  })
  return { inner, outcomes, layer }
}

describe("a call made inside an item is governed as the item's attempt", () => {
  for (const abortMode of ["drain-active", "cancel-active"] as const) {
    for (const from of ["attempt", "forked"] as const) {
      it.effect(`its usage counts toward the caps, and once the run stopped it is refused (${abortMode}, ${from})`, () =>
        Effect.gen(function*() {
          const fan = fanningOut(3, from)
          const summary = yield* runFor(
            Batch.run(prompts(2), {
              contract: contract({ candidates: ["b"] }),
              guardrails: Guardrails.make({ concurrency: 1, abortMode, maxTotalTokens: 300 })
            }).pipe(Effect.provide(fan.layer))
          )
          // The first nested call brings the run to 200 tokens, the second to 400: the cap stops the run there, so
          // the third nested call never reaches its provider (refused at admission, or cancelled with its item), and
          // the second item never starts.
          expect(summary.termination.kind).toBe("budget_exceeded")
          expect(fan.inner.log).toHaveLength(2)
          expect(summary.stats.tokensUsed).toBeGreaterThanOrEqual(400)
          if (abortMode === "drain-active") expect(fan.outcomes).toEqual(["ok", "ok", "Halted"])
        }))

      it.effect(`it is admitted under the run's rate limits (${abortMode}, ${from})`, () =>
        Effect.gen(function*() {
          const fan = fanningOut(1, from)
          const summary = yield* runFor(
            Batch.run(prompts(2), {
              contract: contract({ candidates: ["b"] }),
              guardrails: Guardrails.make({ concurrency: 1, abortMode, requestsPerMinute: 2 })
            }).pipe(Effect.provide(fan.layer))
          )
          // Each item takes two admissions (its own attempt and the nested call): with two a minute, the second
          // item waits for the limit.
          expect(summary.termination.kind).toBe("completed")
          expect(fan.inner.log).toHaveLength(2)
          expect(summary.stats.attempts).toBe(4)
          expect(summary.stats.admissionWaits).toBeGreaterThanOrEqual(1)
        }))
    }
  }
})
