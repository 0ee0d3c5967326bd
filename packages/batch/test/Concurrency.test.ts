import { describe, expect, it } from "@effect/vitest"
import { Batch, Guardrails } from "@rein/batch"
import { Cause, Effect, Exit, Fiber, Stream, TestClock } from "effect"
import * as fc from "effect/FastCheck"
import { contract, ok, scripted } from "./batch-helpers.js"

// With concurrency N and a fixed latency L, a worker that frees its slot takes the next item in the same
// instant: N calls are in flight at every moment until the source drains. Call j (in start order) starts at
// floor(j / N) × L, and the run ends at ceil(M / N) × L. A slot released late, a refill that waits for a timer
// or a worker that starts late shows as a call starting after its instant.
const Source = fc.constantFrom(...(["array", "iterable", "stream"] as const))
const sourceOf = (kind: "array" | "iterable" | "stream", prompts: ReadonlyArray<string>) => {
  switch (kind) {
    case "array":
      return prompts
    case "iterable":
      return (function*() {
        yield* prompts
      })()
    case "stream":
      return Stream.fromIterable(prompts)
  }
}

describe("Batch concurrency", () => {
  it.effect.prop(
    "N calls are in flight at every instant until the source drains (fixed latency, virtual time)",
    {
      items: fc.integer({ min: 1, max: 24 }),
      concurrency: fc.integer({ min: 1, max: 8 }),
      latency: fc.constantFrom(5, 200, 1_000),
      source: Source,
      order: fc.constantFrom(...(["completion", "submission"] as const)),
      gated: fc.boolean()
    },
    ({ concurrency, gated, items, latency, order, source }) =>
      Effect.gen(function*() {
        const fake = scripted(() => ok(latency))
        const prompts = Array.from({ length: items }, (_, i) => `p${i}`)
        const guardrails = Guardrails.make({
          concurrency,
          order,
          // Every guardrail that puts the run's gate in front of each attempt, none of them binding.
          ...(gated ? { itemDeadline: "1 hour", abortOn: ["authentication"], maxTotalTokens: 1e9 } : {})
        })
        const start = yield* TestClock.currentTimeMillis
        const fiber = yield* Effect.fork(
          Batch.run(sourceOf(source, prompts), { contract: contract(), guardrails }).pipe(Effect.provide(fake.layer))
        )
        const waves = Math.ceil(items / concurrency)
        for (let w = 0; w < waves; w++) yield* TestClock.adjust(latency)
        const summary = yield* Fiber.join(fiber)

        expect(summary.stats.succeeded).toBe(items)
        expect(fake.log.map((c) => c.startMillis - start)).toEqual(
          Array.from({ length: items }, (_, j) => Math.floor(j / concurrency) * latency)
        )
        expect(fake.log.map((c) => c.endMillis! - c.startMillis)).toEqual(prompts.map(() => latency))
      }),
    { fastCheck: { numRuns: 30 } }
  )
})

describe("Batch workers", () => {
  it.effect("a worker that dies (the request builder throws) ends the run with the defect and tears the other calls down", () =>
    Effect.gen(function*() {
      const fake = scripted(() => ok(10_000))
      const fiber = yield* Effect.fork(
        Batch.run(["p0", "p1", "p2", "p3"], {
          contract: contract(),
          guardrails: Guardrails.make({ concurrency: 3 }),
          request: (prompt: string) => {
            if (prompt === "p2") throw new Error("bad item")
            return { prompt }
          }
        }).pipe(Effect.provide(fake.layer))
      )
      yield* TestClock.adjust("1 second")
      const exit = yield* Fiber.await(fiber)
      expect(Exit.isFailure(exit) && Cause.isDie(exit.cause)).toBe(true)
      expect(fake.log.map((c) => [c.prompt, c.tornDown])).toEqual([["p0", true], ["p1", true]])
    }))
})
