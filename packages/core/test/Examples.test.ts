import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, TestClock } from "effect"
import * as JournalExplain from "../../../examples/core/journal-explain.js"
import * as RetryAndFallback from "../../../examples/core/retry-and-fallback.js"
import * as TelemetryExample from "../../../examples/core/telemetry.js"

// The examples in examples/core are compiled with the build and run here, so they cannot rot.
describe("examples/core", () => {
  it.effect("retry-and-fallback: retries the overloaded primary once, then falls back", () =>
    Effect.gen(function*() {
      const fiber = yield* Effect.fork(RetryAndFallback.program)
      yield* TestClock.adjust("5 seconds")
      const completion = yield* Fiber.join(fiber)
      expect(completion.endpoint).toBe("secondary")
      expect(completion.attempts.map((a) => `${a.endpoint}:${a.role}:${a.status}`)).toEqual([
        "primary:first:failure",
        "primary:retry:failure",
        "secondary:fallback:success"
      ])
    }))

  it.effect("journal-explain: the explanation names the Retry-After and the skipped candidate", () =>
    Effect.gen(function*() {
      const text = yield* JournalExplain.program
      expect(text).toContain("Retry-After 30000 ms does not fit")
      expect(text).toContain("✗ c (fallback): budget: worst-case cost 0.2 > 0.0098 left")
      expect(text).toContain("outcome: success on b")
    }))

  it.effect("telemetry: the span tree shows the Retry-After wait, the skipped candidates and the fallback", () =>
    Effect.gen(function*() {
      const fiber = yield* Effect.fork(TelemetryExample.program)
      yield* TestClock.adjust("5 seconds")
      const text = yield* Fiber.join(fiber)
      const lines = text.split("\n")
      expect(lines.filter((l) => !l.trimStart().startsWith("·")).map((l) => l.split(" [")[0])).toEqual([
        "rein.request",
        "  chat model-a",
        "  chat model-a",
        "  chat model-b"
      ])
      expect(text).toContain("· +0 ms rein.wait rein.wait.kind=retry_after rein.wait.millis=1000")
      expect(text).toContain("rein.predicate=budget")
      expect(text).toContain("rein.attempt.reason=fallback after rate_limited")
    }))
})
