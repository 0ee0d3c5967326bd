import { describe, expect, it } from "@effect/vitest"
import { Fake, Rein } from "@rein/core"
import { Effect, Either, Fiber, TestClock } from "effect"
import { contract, layer } from "./fixtures.js"

const request = { prompt: "hello", inputTokens: 100, maxOutputTokens: 100 }

describe("Execute", () => {
  it.effect("a retried failure then success stays inside the deadline", () =>
    Effect.gen(function*() {
      const fake = Fake.make({ a: [Fake.fail("overloaded"), Fake.succeed({ text: "hi" })] })
      const fiber = yield* Effect.fork(Rein.execute(request, contract()).pipe(Effect.provide(layer(fake))))
      yield* TestClock.adjust("1 second")
      const result = yield* Fiber.join(fiber)
      expect(result.text).toBe("hi")
      expect(result.attempts.map((a) => [a.endpoint, a.status, a.failure])).toEqual([
        ["a", "failure", "overloaded"],
        ["a", "success", null]
      ])
      expect(result.attempts[0]!.backoffMillis).toBe(100)
    }))

  it.effect("an unknown failure is never retried nor fallen back from", () =>
    Effect.gen(function*() {
      const fake = Fake.make({ a: [Fake.fail("unknown")] })
      const result = yield* Effect.either(Rein.execute(request, contract()).pipe(Effect.provide(layer(fake))))
      expect(Either.isLeft(result) && result.left._tag).toBe("FailedSafe")
      expect((yield* fake.calls).length).toBe(1)
    }))
})
