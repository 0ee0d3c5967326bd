import { describe, expect, it } from "@effect/vitest"
import { Budget, Fake, Journal, Rein, Usage } from "@rein/core"
import type { Outcome } from "@rein/core"
import { Chunk, Effect, Either, Fiber, Layer, Schema, Stream, TestClock } from "effect"
import { contract, layer } from "./fixtures.js"

// 100 in and 100 out at 1e-6 / 2e-6: a worst case of 3e-4 and 200 tokens.
const request = { prompt: "hello", inputTokens: 100, maxOutputTokens: 100 }
const WORST = { cost: 3e-4, tokens: 200 }

/** Usage a misbehaving provider might report. */
const invalid: ReadonlyArray<readonly [string, Usage.Tokens]> = [
  ["NaN", { inputTokens: Number.NaN, outputTokens: 10 }],
  ["Infinity", { inputTokens: 10, outputTokens: Number.POSITIVE_INFINITY }],
  ["-Infinity", { inputTokens: Number.NEGATIVE_INFINITY, outputTokens: 10 }],
  ["a negative count", { inputTokens: -1_000_000, outputTokens: 10 }],
  ["counts whose sum overflows", { inputTokens: Number.MAX_VALUE, outputTokens: Number.MAX_VALUE }]
]

const runFor = <A, E>(effect: Effect.Effect<A, E>) =>
  Effect.gen(function*() {
    const fiber = yield* Effect.fork(effect)
    yield* TestClock.adjust("1 minute")
    return yield* Fiber.join(fiber)
  })

describe("usage that is not a count", () => {
  for (const [name, usage] of invalid) {
    it.effect(`a provider reporting ${name} is charged its whole reservation, and the run's cap still refuses`, () =>
      Effect.gen(function*() {
        const fake = Fake.make({ a: [Fake.succeed({ usage })] })
        // Room for three worst cases, not four.
        const run = Budget.unsafeMake({ cost: 1e-3, tokens: 10_000 })
        const execute = Rein.execute(request, contract({ candidates: ["a"] })).pipe(
          Effect.provide(Layer.merge(layer(fake), Journal.layerMemory)),
          Effect.provideService(Budget.SharedBudget, run)
        )
        const results: Array<Either.Either<Outcome.Completion, Outcome.Terminal>> = []
        for (let i = 0; i < 4; i++) results.push(yield* runFor(Effect.either(execute)))
        const [first, , , fourth] = results
        if (first === undefined || Either.isLeft(first)) throw new Error("the first request should succeed")
        expect(fourth !== undefined && Either.isLeft(fourth) && fourth.left._tag).toBe("BudgetExhausted")
        const left = run.unsafeLeft!()
        expect(left.cost).toBeCloseTo(1e-3 - 3 * WORST.cost, 12)
        expect(left.tokens).toBe(10_000 - 3 * WORST.tokens)
        const record = first.right.attempts[0]!
        expect(record.usage).toBe("unknown")
        expect(record.invalidUsage).toBe(true)
        expect(record.charged).toEqual(WORST)
        expect(first.right.usage).toBe("unknown")
        expect(first.right.cost).toBe("unknown")
      }))
  }

  it.effect("a journal of an attempt with usage that is not a count encodes, reads back and replays", () =>
    Effect.gen(function*() {
      const fake = Fake.make({ a: [Fake.succeed({ usage: { inputTokens: Number.NaN, outputTokens: 1 } })] })
      const records = yield* runFor(
        Effect.zipRight(
          Rein.execute(request, contract({ candidates: ["a"], budget: { cost: 1 } })),
          Effect.flatMap(Journal.MemoryJournal, (j) => j.records)
        ).pipe(Effect.provide(Layer.merge(layer(fake), Journal.layerMemory)))
      )
      expect(records).toHaveLength(1)
      const line = Journal.encode(records[0]!)
      const back = Either.getOrThrow(Journal.decodeLine(line))
      expect(back.attempts[0]!.invalidUsage).toBe(true)
      expect(back.outcome._tag === "Completion" && back.outcome.usage).toBe("unknown")
      expect(Journal.replay(back)).toEqual(Either.right(1))
    }))

  it.effect("a stream whose usage is not a count completes with unknown usage, charged its reservation", () =>
    Effect.gen(function*() {
      const fake = Fake.make({
        a: [Fake.succeed({ deltas: ["he", "llo"], usage: { inputTokens: 5, outputTokens: -5 } })]
      })
      const events = yield* runFor(
        Stream.runCollect(Rein.executeStream(request, contract({ candidates: ["a"] }))).pipe(
          Effect.provide(layer(fake))
        )
      )
      const last = Chunk.unsafeLast(events)
      if (last._tag !== "Completed") throw new Error(`expected Completed, got ${last._tag}`)
      expect(last.completion.usage).toBe("unknown")
      expect(last.completion.attempts[0]!.charged).toEqual(WORST)
      expect(last.completion.attempts[0]!.invalidUsage).toBe(true)
    }))

  it("Usage.Tokens refuses counts that are not finite or are negative at decode", () => {
    const decode = Schema.decodeUnknownEither(Usage.Tokens)
    expect(Either.isRight(decode({ inputTokens: 0, outputTokens: 12.5 }))).toBe(true)
    // JSON says "not finite" only by overflowing: 1e400 parses to Infinity.
    for (const bad of [-1, Number.NaN, JSON.parse("1e400"), "5", null]) {
      expect(Either.isLeft(decode({ inputTokens: 1, outputTokens: bad }))).toBe(true)
    }
  })
})
