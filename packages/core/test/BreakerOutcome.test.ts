/**
 * A request whose candidates an open breaker refuses ends `PlanExhausted` saying so: the typed outcome names
 * each refusing endpoint, its breaker's state and when it may half-open; the journal record's detail is
 * `breaker_open`; replay reproduces the decision.
 */
import { describe, expect, it } from "@effect/vitest"
import { Fake, Health, Journal, Rein } from "@rein/core"
import type { Provider } from "@rein/core"
import { Effect, Either, Layer, TestClock } from "effect"
import { catalog, contract, endpoint } from "./fixtures.js"

const cat = catalog(endpoint("a"), endpoint("b"))
const request = { prompt: "p", inputTokens: 10, maxOutputTokens: 10 }

const layer = (health: Health.Service, provider: Provider.Provider, records: Array<Journal.JournalRecord>) =>
  Layer.mergeAll(
    Rein.layer({ catalog: cat, providers: { fake: provider }, health: false }),
    Layer.succeed(Health.Health, health),
    Layer.succeed(Journal.Journal, Journal.make((record) => Effect.sync(() => void records.push(record))))
  )

describe("an open breaker on every candidate", () => {
  it.effect("the only candidate's open breaker: PlanExhausted names it, its state and when it may half-open", () =>
    Effect.gen(function*() {
      const health = yield* Health.make({ consecutiveFailures: 1, cooldown: 5_000 })
      const fake = Fake.make({ a: [Fake.fail("overloaded")] })
      const records: Array<Journal.JournalRecord> = []
      const c = contract({ candidates: ["a"], retry: { perEndpoint: 0 } })
      const run = Effect.either(Rein.execute(request, c).pipe(Effect.provide(layer(health, fake.provider, records))))
      // The first request's 503 opens a's breaker (one failure in a row) for 5 s.
      expect(Either.isLeft(yield* run)).toBe(true)
      yield* TestClock.adjust("2 seconds")
      const second = yield* run
      expect(Either.isLeft(second) && second.left._tag).toBe("PlanExhausted")
      if (Either.isRight(second) || second.left._tag !== "PlanExhausted") return
      expect(second.left.attempts).toEqual([])
      expect(second.left.breakers).toEqual([{ endpoint: "a", state: "open", halfOpensInMillis: 3_000 }])
      // In what is serialised (artifacts), and in the journal record.
      expect(JSON.stringify(second.left)).toContain(
        `"breakers":[{"endpoint":"a","state":"open","halfOpensInMillis":3000}]`
      )
      const record = records[1]!
      expect(record.outcome).toMatchObject({ _tag: "PlanExhausted", detail: "breaker_open" })
      expect(Journal.replay(record)).toEqual(Either.right(record.decisions.length))
      // The first request's plan ended on its failure, no breaker refused it: no detail.
      expect(records[0]!.outcome).toMatchObject({ _tag: "PlanExhausted", detail: null })
      expect((yield* fake.calls).length).toBe(1)
    }))

  it.effect("a fallback's open breaker after the first candidate failed: both refusals named, no extra call", () =>
    Effect.gen(function*() {
      const health = yield* Health.make({ consecutiveFailures: 1, cooldown: 10_000 })
      const fake = Fake.make({ b: [Fake.fail("overloaded")], a: [Fake.fail("overloaded"), Fake.fail("overloaded")] })
      const records: Array<Journal.JournalRecord> = []
      const provide = Effect.provide(layer(health, fake.provider, records))
      // b's breaker opens first (a request on b alone), then a request on a, b: a fails and opens, b is open.
      yield* Effect.either(
        Rein.execute(request, contract({ candidates: ["b"], retry: { perEndpoint: 0 } })).pipe(provide)
      )
      yield* TestClock.adjust("1 second")
      const result = yield* Effect.either(
        Rein.execute(request, contract({ candidates: ["a", "b"], retry: { perEndpoint: 1 } })).pipe(provide)
      )
      expect(Either.isLeft(result) && result.left._tag).toBe("PlanExhausted")
      if (Either.isRight(result) || result.left._tag !== "PlanExhausted") return
      expect(result.left.attempts.map((a) => a.endpoint)).toEqual(["a"])
      expect(result.left.breakers).toEqual([
        { endpoint: "a", state: "open", halfOpensInMillis: 10_000 },
        { endpoint: "b", state: "open", halfOpensInMillis: 9_000 }
      ])
      expect(records[1]!.outcome).toMatchObject({ _tag: "PlanExhausted", detail: "breaker_open" })
    }))
})
