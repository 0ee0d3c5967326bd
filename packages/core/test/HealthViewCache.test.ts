import { describe, expect, it } from "@effect/vitest"
import { Health } from "@rein/core"
import type { Planner } from "@rein/core"
import { Effect, Either, FastCheck as fc, TestClock } from "effect"

// The planner's view is cached per list of endpoints (by the list's identity) while nothing changed and no
// breaker in it is open. A list asked again must see exactly what a list never asked before sees (a new array
// always misses the cache): after any acquire, completion, degradation or its end, and as the clock moves.

const ENDPOINTS = ["a", "b", "c"] as const
const endpointArb = fc.constantFrom(...ENDPOINTS)
const resultArb: fc.Arbitrary<Health.Result> = fc.oneof(
  fc.constant<Health.Result>({ _tag: "success" }),
  fc.constant<Health.Result>({ _tag: "neutral" }),
  fc.record({
    _tag: fc.constant("failure" as const),
    kind: fc.constantFrom("server_error" as const, "overloaded" as const, "rate_limited" as const),
    retryAfterMillis: fc.option(fc.integer({ min: 0, max: 3_000 }), { nil: null })
  })
)

type Step =
  | { readonly _tag: "acquire"; readonly endpoint: string; readonly role: Planner.Role; readonly fund: boolean }
  | { readonly _tag: "complete"; readonly which: number; readonly result: Health.Result }
  | { readonly _tag: "degrade"; readonly endpoint: string }
  | { readonly _tag: "undegrade"; readonly which: number }
  | { readonly _tag: "advance"; readonly millis: number }
  | { readonly _tag: "view"; readonly list: number }

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  fc.record({
    _tag: fc.constant("acquire" as const),
    endpoint: endpointArb,
    role: fc.constantFrom<Planner.Role>("first", "retry", "fallback"),
    fund: fc.boolean()
  }),
  fc.record({ _tag: fc.constant("complete" as const), which: fc.nat(), result: resultArb }),
  fc.record({ _tag: fc.constant("degrade" as const), endpoint: endpointArb }),
  fc.record({ _tag: fc.constant("undegrade" as const), which: fc.nat() }),
  fc.record({ _tag: fc.constant("advance" as const), millis: fc.constantFrom(0, 1, 250, 999, 1_000, 2_500) }),
  fc.record({ _tag: fc.constant("view" as const), list: fc.nat({ max: 3 }) })
)

describe("Health: the planner's view, cached per list of endpoints", () => {
  it.effect.prop(
    "a list asked again sees what a new list of the same endpoints sees, after every step (property)",
    [fc.array(stepArb, { minLength: 1, maxLength: 60 })],
    ([steps]) =>
      Effect.gen(function*() {
        const health = yield* Health.make({ consecutiveFailures: 2, cooldown: 1_000, probes: 1, depositRatio: 0.5 })
        // The lists a planner and a simulator would hold on to: asked in turn, each by its own identity.
        const lists: ReadonlyArray<ReadonlyArray<string>> = [["a"], ["a", "b"], ["b", "c"], ["a", "b", "c"]]
        const permits: Array<Health.Permit> = []
        const undos: Array<Effect.Effect<void>> = []
        let now = 0
        const check = (list: ReadonlyArray<string>) =>
          Effect.gen(function*() {
            const cached = yield* health.view(list)
            expect(cached).toEqual(yield* health.view([...list]))
            // Asked twice with nothing changed in between: the same answer.
            expect(yield* health.view(list)).toEqual(cached)
          })
        for (const step of steps) {
          switch (step._tag) {
            case "acquire": {
              const options = step.fund ? { candidates: ENDPOINTS } : undefined
              const permit = yield* Effect.either(health.acquire(step.endpoint, step.role, options))
              if (Either.isRight(permit)) permits.push(permit.right)
              break
            }
            case "complete": {
              if (permits.length === 0) break
              const [permit] = permits.splice(step.which % permits.length, 1)
              yield* health.complete(permit!, step.result)
              break
            }
            case "degrade":
              undos.push(yield* health.degrade(step.endpoint))
              break
            case "undegrade": {
              if (undos.length === 0) break
              const [undo] = undos.splice(step.which % undos.length, 1)
              yield* undo!
              break
            }
            case "advance":
              now += step.millis
              yield* TestClock.setTime(now)
              break
            case "view":
              yield* check(lists[step.list]!)
              break
          }
          // Every list after every step (the ones asked last are the ones the cache would answer from).
          for (const list of lists) yield* check(list)
        }
      }),
    { fastCheck: { numRuns: 100, seed: 14 } }
  )

  it.effect("a list asked again with nothing changed gets the very view it got, one per list asked in turn", () =>
    Effect.gen(function*() {
      const health = yield* Health.make({ consecutiveFailures: 1, cooldown: 1_000 })
      // The planner's candidates and the simulator's every endpoint, asked in turn (a706dcd: one cache per list).
      const planner = ["a", "b"]
      const simulator = ["a", "b", "c"]
      yield* health.acquire("a", "retry")
      const first = yield* health.view(planner)
      const all = yield* health.view(simulator)
      expect(yield* health.view(planner)).toBe(first)
      expect(yield* health.view(simulator)).toBe(all)
      // A change: a new view for each list, then reused again.
      yield* health.complete(yield* health.acquire("b", "retry"), { _tag: "neutral" })
      const changed = yield* health.view(planner)
      expect(changed).not.toBe(first)
      expect(yield* health.view(planner)).toBe(changed)
      // An open breaker in the list: its view follows the clock, never reused; a list without it still is.
      yield* health.complete(yield* health.acquire("c", "first"), {
        _tag: "failure",
        kind: "server_error",
        retryAfterMillis: null
      })
      const open = yield* health.view(simulator)
      expect(yield* health.view(simulator)).not.toBe(open)
      const planned = yield* health.view(planner)
      expect(yield* health.view(planner)).toBe(planned)
      // Once the cooldown is over the breaker reads half-open, and the view is still rebuilt each time (stored open).
      yield* TestClock.setTime(1_000)
      expect((yield* health.view(simulator)).health.c).toEqual({ state: "half_open", probesFree: 1, opensInMillis: 0 })
    }))
})
