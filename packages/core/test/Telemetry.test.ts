import { describe, expect, it } from "@effect/vitest"
import { Failure, Fake, Rein, Telemetry } from "@rein/core"
import type { Provider } from "@rein/core"
import { Chunk, Duration, Effect, Fiber, Metric, MetricLabel, Redacted, Stream, TestClock } from "effect"
import { catalog, contract, endpoint } from "./fixtures.js"
import { dump, memoryTracing, tree } from "./telemetry-helpers.js"

const request = { prompt: "hello", inputTokens: 100, maxOutputTokens: 100 }

const runFor = <A, E>(effect: Effect.Effect<A, E>, advance: Duration.DurationInput = "10 minutes") =>
  Effect.gen(function*() {
    const fiber = yield* Effect.fork(effect)
    yield* TestClock.adjust(advance)
    return yield* Fiber.join(fiber)
  })

/** `a`, then `b` whose window cannot hold the request (skipped: `capable`), then `c`. */
const cat = catalog(endpoint("a"), endpoint("b", { contextWindow: 150 }), endpoint("c"))

const reinWith = (fake: Fake.Fake, c = cat) => Rein.layer({ catalog: c, providers: { fake: fake.provider } })

const counter = (m: Metric.Metric.Counter<number>, labels: Record<string, string>) =>
  Effect.map(
    Metric.value(Metric.taggedWithLabels(m, Object.entries(labels).map(([k, v]) => MetricLabel.make(k, v)))),
    (s) => s.count
  )

/** The provider's own error (here: holding the key) kept as the failure's cause, as adapters keep SDK errors. */
const withCause = (failure: Failure.ProviderFailure, text: string): Failure.ProviderFailure =>
  Object.defineProperty(failure, "cause", { value: new Error(text), enumerable: false })

describe("Telemetry", () => {
  it.effect(
    "a 429 with Retry-After, the wait, the retry, then the fallback: one request span, an attempt span per attempt, the wait and the skipped candidate as events",
    () =>
      Effect.gen(function*() {
        const { exporter, layer: tracing } = memoryTracing()
        const fake = Fake.make({
          a: [Fake.fail("rate_limited", { retryAfter: "1 second", code: "http_429" }), Fake.fail("overloaded")],
          c: [Fake.succeed({ text: "ok", usage: { inputTokens: 100, outputTokens: 20 }, latency: "50 millis" })]
        })
        const c = contract({ candidates: ["a", "b", "c"], retry: { perEndpoint: 1, base: "100 millis", jitter: 0 } })
        // Two failures in a row open a's breaker (DESIGN: closed → open after N provider-attributed failures): the
        // 429 is one failure (its breaker stays closed, its retry waits the Retry-After), the 503 the second.
        const rein = Rein.layer({
          catalog: cat,
          providers: { fake: fake.provider },
          health: { consecutiveFailures: 2 }
        })
        const answer = yield* runFor(
          Rein.execute(request, c).pipe(Effect.provide(rein), Effect.provide(Telemetry.layer))
        ).pipe(Effect.provide(tracing))
        expect(answer.endpoint).toBe("c")

        const spans = tree(exporter)
        expect(spans.map((s) => [s.name, s.parent])).toEqual([
          ["rein.request", null],
          ["chat model-a", "rein.request"],
          ["chat model-a", "rein.request"],
          ["chat model-c", "rein.request"]
        ])
        const [req, first, retry, fallback] = spans
        expect(req!.attributes).toMatchObject({
          "gen_ai.operation.name": "chat",
          "gen_ai.request.model": "model-c",
          "gen_ai.usage.input_tokens": 100,
          "gen_ai.usage.output_tokens": 20,
          "rein.outcome": "Completion",
          "rein.endpoint": "c",
          "rein.attempts": 3,
          "rein.waits": 1,
          "rein.waited_millis": 1000,
          "rein.candidates": "a,b,c",
          // Two failures of unknown usage, charged their reservations (200 each), and the answer's 120.
          "rein.charged.tokens": 520
        })
        expect(first!.attributes).toMatchObject({
          "gen_ai.system": "fake",
          "gen_ai.request.model": "model-a",
          "error.type": "rate_limited",
          "rein.failure.code": "http_429",
          "rein.retry_after_millis": 1000,
          "rein.attempt.role": "first",
          "rein.attempt.number": 1,
          "rein.attempt.call": 1
        })
        expect(retry!.attributes).toMatchObject({
          "error.type": "overloaded",
          "rein.attempt.role": "retry",
          "rein.attempt.reason": "retry after rate_limited",
          "rein.attempt.call": 2
        })
        expect(fallback!.attributes).toMatchObject({
          "rein.attempt.role": "fallback",
          "rein.attempt.reason": "fallback after overloaded",
          "gen_ai.usage.output_tokens": 20,
          "rein.attempt.status": "success"
        })
        // The retry starts when the Retry-After wait ends; the attempt spans carry the records' own times.
        expect(retry!.startMillis - first!.endMillis).toBe(1000)
        expect(fallback!.endMillis - fallback!.startMillis).toBe(50)
        expect(req!.events).toEqual([
          {
            name: "rein.wait",
            attributes: { "rein.wait.kind": "retry_after", "rein.wait.millis": 1000, "rein.endpoint": "a" }
          },
          {
            name: "rein.candidate.skipped",
            attributes: {
              "rein.endpoint": "a",
              "rein.attempt.role": "retry",
              // The second failure opened a's breaker for the 5 s cooldown (the first predicate that fails is named).
              "rein.predicate": "health",
              "rein.reason": "breaker open for 5000 ms more"
            }
          },
          {
            name: "rein.candidate.skipped",
            attributes: {
              "rein.endpoint": "b",
              "rein.attempt.role": "fallback",
              "rein.predicate": "capable",
              "rein.reason": "context window 150 < 100 input + 100 output"
            }
          }
        ])
        // Failed attempts are errors; the request that recovered is not.
        expect(spans.map((s) => s.status)).toEqual([1, 2, 2, 1])
      })
  )

  it.effect("a terminal outcome ends the request span as an error named by its tag", () =>
    Effect.gen(function*() {
      const { exporter, layer: tracing } = memoryTracing()
      const fake = Fake.make({ a: [Fake.fail("invalid_request")] })
      const error = yield* runFor(
        Effect.flip(Rein.execute(request, contract({ candidates: ["a"] }))).pipe(
          Effect.provide(reinWith(fake)),
          Effect.provide(Telemetry.layer)
        )
      ).pipe(Effect.provide(tracing))
      expect(error._tag).toBe("FailedSafe")
      const [req] = tree(exporter).filter((s) => s.name === "rein.request")
      expect(req!.attributes).toMatchObject({ "rein.outcome": "FailedSafe", "error.type": "FailedSafe" })
      expect(req!.status).toBe(2)
    }))

  it.effect("a request refused before it starts still gets its request span (an error, no attempt) and is counted", () =>
    Effect.gen(function*() {
      const { exporter, layer: tracing } = memoryTracing()
      const fake = Fake.make({ a: [Fake.succeed()] })
      const refused = () => counter(Telemetry.metrics.requests, { "rein.outcome": "Refused" })
      const before = yield* refused()
      const error = yield* runFor(
        Effect.flip(Rein.execute(request, contract({ candidates: ["a", "nowhere"] }))).pipe(
          Effect.provide(reinWith(fake)),
          Effect.provide(Telemetry.layer)
        )
      ).pipe(Effect.provide(tracing))
      expect(error._tag).toBe("Refused")
      const spans = tree(exporter)
      expect(spans.map((s) => s.name)).toEqual(["rein.request"])
      expect(spans[0]!.attributes).toMatchObject({ "rein.outcome": "Refused", "error.type": "Refused" })
      expect(spans[0]!.status).toBe(2)
      expect((yield* refused()) - before).toBe(1)
    }))

  it.effect("a stream that fails before its first delta and falls back: the same request span with two attempt spans", () =>
    Effect.gen(function*() {
      const { exporter, layer: tracing } = memoryTracing()
      const fake = Fake.make({
        a: [Fake.fail("overloaded", { code: "http_503" })],
        c: [Fake.succeed({ deltas: ["o", "k"], usage: { inputTokens: 100, outputTokens: 2 } })]
      })
      const events = yield* runFor(
        Stream.runCollect(Rein.executeStream(request, contract({ candidates: ["a", "c"], retry: { perEndpoint: 0 } })))
          .pipe(Effect.provide(reinWith(fake)), Effect.provide(Telemetry.layer))
      ).pipe(Effect.provide(tracing))
      expect(Chunk.toReadonlyArray(events).map((e) => e._tag).slice(-1)).toEqual(["Completed"])
      const spans = tree(exporter)
      expect(spans.map((s) => [s.name, s.parent])).toEqual([
        ["rein.request", null],
        ["chat model-a", "rein.request"],
        ["chat model-c", "rein.request"]
      ])
      expect(spans[0]!.attributes).toMatchObject({ "rein.outcome": "Completion", "rein.endpoint": "c" })
      expect(spans[1]!.attributes).toMatchObject({ "error.type": "overloaded", "rein.failure.code": "http_503" })
      expect(spans[2]!.attributes).toMatchObject({ "gen_ai.usage.output_tokens": 2, "rein.attempt.role": "fallback" })
    }))

  it.effect("without the Telemetry layer no span is opened, even under a tracer", () =>
    Effect.gen(function*() {
      const { exporter, layer: tracing } = memoryTracing()
      const fake = Fake.make({ a: [Fake.fail("overloaded"), Fake.succeed()] })
      yield* runFor(Rein.execute(request, contract()).pipe(Effect.provide(reinWith(fake)))).pipe(
        Effect.provide(tracing)
      )
      expect(exporter.getFinishedSpans()).toEqual([])
    }))

  it.effect("after a scripted outage the metrics count attempts by endpoint, role and outcome, fallbacks and tokens", () =>
    Effect.gen(function*() {
      // Endpoint ids of its own: metrics are process-wide.
      const outage = catalog(endpoint("out-a"), endpoint("out-b"))
      const fake = Fake.make({
        "out-a": [Fake.fail("overloaded"), Fake.fail("overloaded"), Fake.fail("overloaded"), Fake.succeed()],
        "out-b": [Fake.succeed({ usage: { inputTokens: 100, outputTokens: 40 } })]
      })
      const c = contract({ candidates: ["out-a", "out-b"], retry: { perEndpoint: 0 } })
      const completions = Metric.value(
        Metric.taggedWithLabels(Telemetry.metrics.requests, [MetricLabel.make("rein.outcome", "Completion")])
      )
      const before = (yield* completions).count
      for (let i = 0; i < 4; i++) {
        yield* runFor(
          Rein.execute(request, c).pipe(
            Effect.provide(Rein.layer({ catalog: outage, providers: { fake: fake.provider }, health: false })),
            Effect.provide(Telemetry.layer)
          )
        )
      }
      const attempts = Telemetry.metrics.attempts
      expect(
        yield* counter(attempts, {
          "rein.endpoint": "out-a",
          "rein.attempt.role": "first",
          "rein.outcome": "overloaded"
        })
      )
        .toBe(3)
      expect(
        yield* counter(attempts, { "rein.endpoint": "out-a", "rein.attempt.role": "first", "rein.outcome": "success" })
      )
        .toBe(1)
      expect(
        yield* counter(attempts, {
          "rein.endpoint": "out-b",
          "rein.attempt.role": "fallback",
          "rein.outcome": "success"
        })
      )
        .toBe(3)
      expect(yield* counter(Telemetry.metrics.fallbacks, { "rein.endpoint": "out-b" })).toBe(3)
      expect(yield* counter(Telemetry.metrics.retries, { "rein.endpoint": "out-a" })).toBe(0)
      // Charged: three fallbacks at 100 × 1e-6 + 40 × 2e-6.
      expect(yield* counter(Telemetry.metrics.chargedCost, { "rein.endpoint": "out-b" })).toBeCloseTo(3 * 180e-6, 12)
      expect(yield* counter(Telemetry.metrics.chargedTokens, { "rein.endpoint": "out-b" })).toBe(3 * 140)
      expect((yield* completions).count - before).toBe(4)
      const outputTokens = yield* Metric.value(Metric.taggedWithLabels(Telemetry.metrics.tokenUsage, [
        MetricLabel.make("gen_ai.operation.name", "chat"),
        MetricLabel.make("gen_ai.system", "fake"),
        MetricLabel.make("gen_ai.request.model", "model-out-b"),
        MetricLabel.make("gen_ai.token.type", "output")
      ]))
      expect([outputTokens.count, outputTokens.sum]).toEqual([3, 120])
      const failedDurations = yield* Metric.value(Metric.taggedWithLabels(Telemetry.metrics.operationDuration, [
        MetricLabel.make("gen_ai.operation.name", "chat"),
        MetricLabel.make("gen_ai.system", "fake"),
        MetricLabel.make("gen_ai.request.model", "model-out-a"),
        MetricLabel.make("error.type", "overloaded")
      ]))
      expect(failedDurations.count).toBe(3)
    }))

  it.effect("waits are measured by kind and a late outcome's overshoot past the deadline is recorded", () =>
    Effect.gen(function*() {
      const late = catalog(endpoint("late-a"))
      // Ignores interruption for 10 s: the outcome comes back after the 300 ms teardown grace.
      const fake = Fake.make({ "late-a": [Fake.fail("overloaded"), Fake.stubborn("10 seconds")] })
      const c = contract({
        deadline: "2 seconds",
        teardownGrace: "300 millis",
        candidates: ["late-a"],
        retry: { perEndpoint: 1, base: "250 millis", jitter: 0 }
      })
      const overshoot = Metric.value(Telemetry.metrics.deadlineOvershoot)
      const backoff = Metric.value(
        Metric.taggedWithLabels(Telemetry.metrics.waits, [MetricLabel.make("rein.wait.kind", "backoff")])
      )
      const [o0, b0] = [yield* overshoot, yield* backoff]
      const error = yield* runFor(Effect.flip(
        Rein.execute(request, c).pipe(
          Effect.provide(Rein.layer({ catalog: late, providers: { fake: fake.provider }, health: false })),
          Effect.provide(Telemetry.layer)
        )
      ))
      expect(error._tag).toBe("DeadlineExceeded")
      const [o1, b1] = [yield* overshoot, yield* backoff]
      expect([o1.count - o0.count, o1.sum - o0.sum]).toEqual([1, 300])
      expect([b1.count - b0.count, b1.sum - b0.sum]).toEqual([1, 250])
    }))

  it.effect("a canary prompt, answer and key appear in no exported span and no metric", () =>
    Effect.gen(function*() {
      const canary = "CANARY-tele-9d41e"
      const key = Redacted.make(`sk-${canary}-key`)
      const { exporter, layer: tracing } = memoryTracing()
      const keyed: Provider.Provider = {
        internalMaxAttempts: 1,
        call: (_request, ctx) =>
          ctx.endpoint.id === "a"
            ? Effect.fail(withCause(Failure.fromEvidence({ status: 503 }, { dispatched: true }), Redacted.value(key)))
            : Effect.succeed({ text: `answer ${canary}`, usage: { inputTokens: 5, outputTokens: 5 } })
      }
      const fake = Fake.make({ b: [Fake.fail("overloaded", { rawMessage: canary }), Fake.succeed({ text: canary })] })
      const c = contract({ candidates: ["a", "b", "c"], retry: { perEndpoint: 1 } })
      const providers = catalog(
        endpoint("a", { provider: "keyed" }),
        endpoint("b"),
        endpoint("c", { provider: "keyed" })
      )
      const answer = yield* runFor(
        Rein.execute({ ...request, prompt: `prompt ${canary}` }, c).pipe(
          Effect.provide(Rein.layer({ catalog: providers, providers: { fake: fake.provider, keyed } })),
          Effect.provide(Telemetry.layer)
        )
      ).pipe(Effect.provide(tracing))
      expect(answer.text).toContain(canary)
      const exported = dump(exporter)
      expect(exported).toContain("overloaded")
      expect(exported).not.toContain(canary)
      const snapshot = JSON.stringify(yield* Metric.snapshot, (_, v) => typeof v === "bigint" ? String(v) : v)
      expect(snapshot).toContain("rein.attempts")
      expect(snapshot).not.toContain(canary)
    }))
})
