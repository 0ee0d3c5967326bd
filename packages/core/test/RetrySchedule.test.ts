import { describe, expect, it } from "@effect/vitest"
import { Contract, Failure, Fake, Journal, Rein, RetrySchedule } from "@rein/core"
import { Duration, Effect, FastCheck as fc, Fiber, Layer, Random, Ref, Schedule, TestClock } from "effect"
import { catalog, endpoint } from "./fixtures.js"

const failure = fc.record({
  kind: fc.constantFrom(...Failure.FailureKind.literals),
  retryAfterMillis: fc.option(fc.integer({ min: 0, max: 40_000 }), { nil: undefined })
})

const scenario = fc.record({
  failures: fc.array(failure, { minLength: 1, maxLength: 8 }),
  deadline: fc.integer({ min: 100, max: 60_000 }),
  minAttempt: fc.option(fc.integer({ min: 1, max: 2_000 }), { nil: undefined }),
  perEndpoint: fc.integer({ min: 0, max: 6 }),
  rateLimited: fc.option(fc.integer({ min: 0, max: 4 }), { nil: undefined }),
  base: fc.integer({ min: 1, max: 1_000 }),
  factor: fc.double({ min: 1, max: 3, noNaN: true }),
  max: fc.integer({ min: 1_000, max: 20_000 }),
  jitter: fc.double({ min: 0, max: 1, noNaN: true }),
  maxRetryAfter: fc.integer({ min: 1, max: 30_000 }),
  seed: fc.integer()
})
type Scenario = typeof scenario extends fc.Arbitrary<infer S> ? S : never

const contractOf = (s: Scenario) =>
  Contract.make({
    deadline: s.deadline,
    attemptTimeout: s.deadline,
    ...(s.minAttempt === undefined ? {} : { minAttempt: s.minAttempt }),
    candidates: ["a"],
    allowSimulated: true,
    retry: {
      perEndpoint: s.perEndpoint,
      ...(s.rateLimited === undefined ? {} : { rateLimited: s.rateLimited }),
      base: s.base,
      factor: s.factor,
      max: s.max,
      jitter: s.jitter,
      maxRetryAfter: s.maxRetryAfter
    }
  })

const cat = catalog(endpoint("a"))

/** The waits the executor's planner chose before each retry (from the journal), failing as scripted. */
const plannerWaits = (s: Scenario) =>
  Effect.gen(function*() {
    const fake = Fake.make({
      a: [
        ...s.failures.map((f) =>
          Fake.fail(f.kind, f.retryAfterMillis === undefined ? {} : { retryAfter: Duration.millis(f.retryAfterMillis) })
        ),
        Fake.succeed()
      ]
    })
    const layer = Layer.mergeAll(
      Rein.layer({ catalog: cat, providers: { fake: fake.provider }, health: false }),
      Journal.layerMemory
    )
    return yield* Effect.gen(function*() {
      const fiber = yield* Effect.fork(Effect.either(Rein.execute({ id: "r", prompt: "p" }, contractOf(s))))
      yield* TestClock.adjust(s.deadline + 1)
      yield* Fiber.join(fiber)
      const [record] = yield* Effect.flatMap(Journal.MemoryJournal, (j) => j.records)
      return record!.decisions.flatMap(({ decision }) =>
        decision._tag === "Attempt" && decision.role === "retry" ? [decision.waitMillis] : []
      )
    }).pipe(Effect.provide(layer), Effect.withRandom(Random.make(s.seed)))
  })

/** The delays `Effect.retry` waits under the contract's `RetrySchedule`, failing as scripted. */
const scheduleDelays = (s: Scenario) =>
  Effect.gen(function*() {
    const calls = yield* Ref.make(0)
    const delays = yield* Ref.make<ReadonlyArray<number>>([])
    const call = Effect.flatMap(Ref.getAndUpdate(calls, (n) => n + 1), (n) => {
      const f = s.failures[n]
      return f === undefined ? Effect.void : Effect.fail(f)
    })
    const schedule = (yield* RetrySchedule.make(contractOf(s))).pipe(
      Schedule.tapOutput((delay) => Ref.update(delays, (ds) => [...ds, Duration.toMillis(delay)]))
    )
    const fiber = yield* Effect.fork(Effect.either(Effect.retry(call, schedule)))
    yield* TestClock.adjust(s.deadline + 1)
    yield* Fiber.join(fiber)
    return { delays: yield* Ref.get(delays), calls: yield* Ref.get(calls) }
  }).pipe(Effect.withRandom(Random.make(s.seed)))

describe("RetrySchedule", () => {
  it.effect.prop(
    "for random failures, Retry-After, jitter seeds and deadlines, the schedule's delays are the planner's waits",
    [scenario],
    ([s]) =>
      Effect.gen(function*() {
        const waits = yield* plannerWaits(s)
        const { calls, delays } = yield* scheduleDelays(s)
        // Every retry the planner allowed is a delay of the schedule; where it stopped, the schedule stops
        // (its last output is the step that said done).
        expect(delays.slice(0, calls - 1)).toEqual(waits)
        expect(calls).toBe(waits.length + 1)
      }),
    { fastCheck: { numRuns: 150 } }
  )

  it.effect("a 429's Retry-After longer than the backoff is waited, clamped to maxRetryAfter", () =>
    Effect.gen(function*() {
      const contract = Contract.make({
        deadline: "60 seconds",
        candidates: ["a"],
        retry: { perEndpoint: 3, base: "100 millis", factor: 2, max: "1 second", jitter: 0, maxRetryAfter: "5 seconds" }
      })
      const schedule = RetrySchedule.fromStart(contract, 0)
      const out = yield* Schedule.run(schedule, 0, [
        { kind: "rate_limited", retryAfterMillis: 3_000 },
        { kind: "server_error" },
        { kind: "rate_limited", retryAfterMillis: 60_000 },
        { kind: "server_error" }
      ])
      expect(Array.from(out, Duration.toMillis)).toEqual([3_000, 200, 5_000, 0])
    }))

  it.effect("a kind the table does not retry ends the schedule at once", () =>
    Effect.gen(function*() {
      const contract = Contract.make({ deadline: "60 seconds", candidates: ["a"], retry: { perEndpoint: 3 } })
      const out = yield* Schedule.run(RetrySchedule.fromStart(contract, 0), 0, [{ kind: "authentication" }])
      expect(Array.from(out, Duration.toMillis)).toEqual([0])
    }))
})
