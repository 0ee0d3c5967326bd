import { describe, expect, it } from "@effect/vitest"
import { Fake, Health, Rein } from "@rein/core"
import { Effect, Fiber, Metric, MetricLabel, TestClock } from "effect"
import { catalog, contract, endpoint } from "./fixtures.js"

// A lone 429 on a single-candidate request (DESIGN, the failure table: `rate_limited` is retried on the same endpoint
// after max(backoff, Retry-After), bounded by the remaining deadline, and counts against endpoint health as one
// failure; the breaker opens after N of them). It once opened the breaker by itself for the Retry-After: every
// single-candidate request that started meanwhile ended at once as PlanExhausted, with no call.

const request = { prompt: "p", inputTokens: 10, maxOutputTokens: 10 }

/** Transitions of `solo`'s breaker to open, as published (the endpoint is this file's own). */
const opened = Metric.value(
  Metric.taggedWithLabels(Metric.counter("rein_breaker_transitions_total", { incremental: true }), [
    MetricLabel.make("endpoint", "solo"),
    MetricLabel.make("to", "open")
  ])
).pipe(Effect.map((s) => s.count))

describe("a lone 429 on a single-candidate request", () => {
  it.effect("a 429 with Retry-After 1 s then success, 30 s deadline: the request succeeds after ≥ 1 s; the breaker never opens, and a request started meanwhile runs", () =>
    Effect.gen(function*() {
      const fake = Fake.make({
        solo: [Fake.fail("rate_limited", { retryAfter: "1 second", code: "http_429" }), Fake.succeed(), Fake.succeed()]
      })
      const c = contract({
        candidates: ["solo"],
        deadline: "30 seconds",
        retry: { perEndpoint: 2, base: "100 millis", jitter: 0 }
      })
      // The default health settings, as a user's `Rein.layer` has them.
      const layer = Rein.layer({ catalog: catalog(endpoint("solo")), providers: { fake: fake.provider } })
      yield* Effect.gen(function*() {
        const health = yield* Health.Health
        const before = yield* opened
        const first = yield* Effect.fork(Rein.execute(request, c))
        const second = yield* Effect.fork(Effect.delay(Rein.execute(request, c), "500 millis"))
        for (const step of [1, 499, 1, 498]) {
          yield* TestClock.adjust(step)
          expect(yield* health.breaker("solo")).toBe("closed")
        }
        // The request that started while the first waited out the Retry-After ran at once.
        const meanwhile = yield* Fiber.join(second)
        expect(meanwhile.attempts.map((a) => [a.endpoint, a.role, a.startMillis])).toEqual([["solo", "first", 0]])
        yield* TestClock.adjust("30 seconds")
        const answer = yield* Fiber.join(first)
        expect(answer.endpoint).toBe("solo")
        expect(answer.attempts.map((a) => [a.role, a.failure ?? "ok"])).toEqual([
          ["first", "rate_limited"],
          ["retry", "ok"]
        ])
        expect(answer.attempts[1]!.startMillis - answer.attempts[0]!.endMillis).toBeGreaterThanOrEqual(1_000)
        expect(yield* health.breaker("solo")).toBe("closed")
        expect((yield* opened) - before).toBe(0)
        expect((yield* fake.calls).length).toBe(3)
      }).pipe(Effect.provide(layer))
    }))
})
