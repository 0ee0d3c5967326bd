import { describe, expect, it } from "@effect/vitest"
import { Fake, Rein } from "@rein/core"
import { Failure } from "@rein/core"
import type { Outcome } from "@rein/core"
import { Effect, Either, FastCheck as fc, Fiber, Random, TestClock } from "effect"
import { catalog, contract, endpoint, failureStep } from "./fixtures.js"

const kinds = Failure.FailureKind.literals

const step: fc.Arbitrary<Fake.Step> = fc.oneof(
  fc.record({
    latency: fc.integer({ min: 0, max: 3_000 }),
    known: fc.boolean(),
    input: fc.integer({ min: 0, max: 100 }),
    output: fc.integer({ min: 0, max: 100 })
  }).map(({ input, known, latency, output }) =>
    Fake.succeed({ latency, usage: known ? { inputTokens: input, outputTokens: output } : "unknown" })
  ),
  failureStep(kinds, 3_000),
  fc.constant(Fake.hang)
)

const scenario = fc.record({
  a: fc.array(step, { minLength: 1, maxLength: 5 }),
  b: fc.array(step, { minLength: 1, maxLength: 5 }),
  c: fc.array(step, { minLength: 1, maxLength: 5 }),
  deadline: fc.integer({ min: 100, max: 20_000 }),
  attemptTimeout: fc.option(fc.integer({ min: 50, max: 10_000 }), { nil: undefined }),
  cost: fc.option(fc.double({ min: 0, max: 0.002, noNaN: true }), { nil: undefined }),
  calls: fc.option(fc.integer({ min: 0, max: 6 }), { nil: undefined }),
  perEndpoint: fc.integer({ min: 0, max: 3 }),
  jitter: fc.double({ min: 0, max: 1, noNaN: true }),
  seed: fc.integer()
})

type Scenario = typeof scenario extends fc.Arbitrary<infer S> ? S : never

const cat = catalog(
  endpoint("a", { scope: "x" }),
  endpoint("b", { scope: "y", inPrice: 5e-6, outPrice: 5e-6 }),
  endpoint("c", { scope: "z", contextWindow: 16_000 })
)

const request = { prompt: "p", inputTokens: 100, maxOutputTokens: 100 }

const play = (s: Scenario) =>
  Effect.gen(function*() {
    const fake = Fake.make({ a: s.a, b: s.b, c: s.c })
    const c = contract({
      deadline: s.deadline,
      ...(s.attemptTimeout !== undefined ? { attemptTimeout: s.attemptTimeout } : {}),
      teardownGrace: 10,
      candidates: ["a", "b", "c"],
      budget: {
        ...(s.cost !== undefined ? { cost: s.cost } : {}),
        ...(s.calls !== undefined ? { calls: s.calls } : {})
      },
      retry: { perEndpoint: s.perEndpoint, base: 100, factor: 2, max: 2_000, jitter: s.jitter }
    })
    const fiber = yield* Effect.fork(Effect.either(
      Rein.execute(request, c).pipe(
        Effect.provide(Rein.layer({ catalog: cat, providers: { fake: fake.provider } })),
        Effect.withRandom(Random.make(s.seed))
      )
    ))
    yield* TestClock.adjust(s.deadline + 1_000)
    const outcome = yield* Fiber.join(fiber)
    const attempts: ReadonlyArray<Outcome.AttemptRecord> = Either.isRight(outcome)
      ? outcome.right.attempts
      : outcome.left.attempts
    return { outcome, attempts, calls: yield* fake.calls }
  })

describe("invariants over random failure scripts, deadlines and budgets", () => {
  it.effect.prop(
    "no attempt starts at or after the deadline; every call has a record",
    [scenario],
    ([s]) =>
      Effect.gen(function*() {
        const { attempts, calls } = yield* play(s)
        for (const a of attempts) expect(a.startMillis).toBeLessThan(s.deadline)
        expect(attempts.length).toBe(calls.length)
        // Calls are numbered without a gap; the logical attempt leaves out the rate-limited tries before it.
        attempts.forEach((a, i) => {
          expect(a.call).toBe(i + 1)
          expect(a.attempt).toBe(1 + attempts.slice(0, i).filter((b) => b.failure !== "rate_limited").length)
        })
        expect(calls.map((c) => [c.attempt, c.call])).toEqual(attempts.map((a) => [a.attempt, a.call]))
      }),
    { fastCheck: { numRuns: 150 } }
  )

  it.effect.prop(
    "reservations never exceed the hard budget; calls never exceed the cap",
    [scenario],
    ([s]) =>
      Effect.gen(function*() {
        const { attempts, calls } = yield* play(s)
        if (s.calls !== undefined) expect(calls.length).toBeLessThanOrEqual(s.calls)
        if (s.cost !== undefined) {
          let charged = 0
          for (const a of attempts) {
            // Each reservation fitted what was left when it was made.
            expect(charged + (a.reservation.cost ?? 0)).toBeLessThanOrEqual(s.cost + 1e-12)
            charged += a.charged.cost
          }
        }
      }),
    { fastCheck: { numRuns: 150 } }
  )

  it.effect.prop("unknown is never retried nor fallen back from", [scenario], ([s]) =>
    Effect.gen(function*() {
      const { attempts } = yield* play(s)
      const i = attempts.findIndex((a) => a.failure === "unknown")
      if (i >= 0) expect(i).toBe(attempts.length - 1)
    }), { fastCheck: { numRuns: 150 } })

  it.effect.prop("the same seed gives the same records", [scenario], ([s]) =>
    Effect.gen(function*() {
      const first = yield* play(s)
      const second = yield* play(s)
      expect(JSON.stringify(second.attempts)).toBe(JSON.stringify(first.attempts))
      expect(second.outcome._tag).toBe(first.outcome._tag)
    }), { fastCheck: { numRuns: 60 } })
})
