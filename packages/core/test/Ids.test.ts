import { describe, expect, it } from "@effect/vitest"
import { Fake, Health, Journal, Rein } from "@rein/core"
import { Effect, Either, Layer } from "effect"
import { catalog, contract, endpoint } from "./fixtures.js"

// Names every plain object inherits: an index by id that is a `{}` finds them before any entry is made.
const names = ["constructor", "__proto__", "toString", "hasOwnProperty"] as const
const request = { prompt: "p", inputTokens: 10, maxOutputTokens: 10 }

describe("endpoint ids that are Object.prototype names", () => {
  for (const health of [true, false]) {
    it.effect.each(names)(
      `%s is callable like any other id (health ${health ? "on" : "off"})`,
      (id) =>
        Effect.gen(function*() {
          const fake = Fake.make({ [id]: [Fake.succeed()] })
          const layer = Rein.layer({
            catalog: catalog(endpoint(id)),
            providers: { fake: fake.provider },
            ...(health ? {} : { health: false })
          })
          const answer = yield* Rein.execute(request, contract({ candidates: [id] })).pipe(Effect.provide(layer))
          expect(answer.endpoint).toBe(id)
          expect((yield* fake.calls).map((c) => c.endpoint)).toEqual([id])
        })
    )
  }

  it.effect.each(names)("%s as a fallback: its breaker and retry bucket are its own", (id) =>
    Effect.gen(function*() {
      const fake = Fake.make({ a: [Fake.fail("overloaded")], [id]: [Fake.succeed()] })
      const h = yield* Health.make()
      const layer = Layer.merge(
        Rein.layer({
          catalog: catalog(endpoint("a"), endpoint(id)),
          providers: { fake: fake.provider },
          health: false
        }),
        Layer.succeed(Health.Health, h)
      )
      const answer = yield* Rein.execute(request, contract({ candidates: ["a", id], retry: { perEndpoint: 0 } })).pipe(
        Effect.provide(layer)
      )
      expect(answer.endpoint).toBe(id)
      expect(yield* h.breaker(id)).toBe("closed")
      // The fallback took one token from the bucket of its own endpoint.
      const view = yield* h.view(["a", id])
      expect(Object.getOwnPropertyDescriptor(view.retryTokens.endpoints, id)?.value).toBe(9)
    }))

  it.effect.each(names)("%s: the journal's record replays", (id) =>
    Effect.gen(function*() {
      const fake = Fake.make({ a: [Fake.fail("overloaded")], [id]: [Fake.succeed()] })
      const layer = Rein.layer({ catalog: catalog(endpoint("a"), endpoint(id)), providers: { fake: fake.provider } })
      const records = yield* Effect.gen(function*() {
        yield* Rein.execute(request, contract({ candidates: ["a", id], retry: { perEndpoint: 0 } }))
        return yield* Effect.flatMap(Journal.MemoryJournal, (j) => j.records)
      }).pipe(Effect.provide(Journal.layerMemory), Effect.provide(layer))
      const line = Journal.encode(records[0]!)
      const decoded = Journal.decodeLine(line)
      expect(Either.isRight(decoded)).toBe(true)
      if (Either.isRight(decoded)) expect(Journal.replay(decoded.right)).toEqual(Either.right(2))
    }))

  it.effect.each(names)(
    "%s with an open breaker: the journal keeps its breaker and tokens, and replay reproduces every decision",
    (id) =>
      Effect.gen(function*() {
        const fake = Fake.make({ [id]: [Fake.fail("overloaded")], b: [Fake.succeed()] })
        const h = yield* Health.make({ consecutiveFailures: 1, cooldown: "1 hour" })
        const layer = Layer.merge(
          Rein.layer({
            catalog: catalog(endpoint(id), endpoint("b")),
            providers: { fake: fake.provider },
            health: false
          }),
          Layer.succeed(Health.Health, h)
        )
        const c = contract({ candidates: [id, "b"], retry: { perEndpoint: 0 } })
        const records = yield* Effect.gen(function*() {
          yield* Rein.execute(request, c)
          // The breaker is open now: the second request's first decision skips it.
          yield* Rein.execute(request, c)
          return yield* Effect.flatMap(Journal.MemoryJournal, (j) => j.records)
        }).pipe(Effect.provide(Journal.layerMemory), Effect.provide(layer))
        expect(yield* h.breaker(id)).toBe("open")
        const second = records[1]!
        expect(second.attempts.map((a) => a.endpoint)).toEqual(["b"])
        const decoded = Journal.decodeLine(Journal.encode(second))
        if (Either.isLeft(decoded)) throw new Error(decoded.left.message)
        const snapshot = decoded.right.decisions[0]!.snapshot
        expect(Object.getOwnPropertyDescriptor(snapshot.health, id)?.value).toEqual(
          Object.getOwnPropertyDescriptor(second.decisions[0]!.snapshot.health, id)?.value
        )
        expect(Object.getOwnPropertyDescriptor(snapshot.retryTokens.endpoints, id)?.value).toBe(
          Object.getOwnPropertyDescriptor(second.decisions[0]!.snapshot.retryTokens.endpoints, id)?.value
        )
        // Byte for byte: the record read back encodes to the very line that was written.
        expect(Journal.encode(decoded.right)).toBe(Journal.encode(second))
        expect(Journal.replay(decoded.right)).toEqual(Either.right(1))
      })
  )
})
