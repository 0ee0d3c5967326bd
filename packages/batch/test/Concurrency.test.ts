import { describe, expect, it } from "@effect/vitest"
import { Batch, Guardrails } from "@rein/batch"
import { Cause, Effect, Exit, Fiber, Stream, TestClock } from "effect"
import * as fc from "effect/FastCheck"
import * as Pool from "../src/internal/pool.js"
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

  it.effect("a concurrency far above the items starts a worker per item taken, not per unit of concurrency", () =>
    Effect.gen(function*() {
      // 10⁹ workers forked up front ran out of memory (rein batch --concurrency 1000000000 over 48 items).
      const fake = scripted(() => ok(5))
      const prompts = Array.from({ length: 48 }, (_, i) => `p${i}`)
      const fiber = yield* Effect.fork(
        Batch.run(Stream.fromIterable(prompts), {
          contract: contract(),
          guardrails: Guardrails.make({ concurrency: 1_000_000_000 })
        }).pipe(Effect.provide(fake.layer))
      )
      yield* TestClock.adjust(5)
      const summary = yield* Fiber.join(fiber)
      expect(summary.stats.succeeded).toBe(48)
      expect(fake.log.map((c) => c.startMillis)).toEqual(prompts.map(() => 0))
    }))

  it.effect.prop(
    "Pool.runAll starts min(n, items + 1) workers, and at most n run at once",
    { items: fc.integer({ min: 0, max: 40 }), n: fc.integer({ min: 1, max: 60 }) },
    ({ items, n }) =>
      Effect.gen(function*() {
        let left = items
        let started = 0
        let running = 0
        let most = 0
        const worker = (spawner: Pool.Spawner<never>): Effect.Effect<void> => {
          const loop: Effect.Effect<void> = Effect.suspend(() => {
            if (left === 0) return Effect.void
            left--
            return Effect.zipRight(
              spawner.full ? Effect.void : spawner.one,
              Effect.zipRight(Effect.sleep(10), loop)
            )
          })
          return Effect.acquireUseRelease(
            Effect.sync(() => {
              started++
              most = Math.max(most, ++running)
            }),
            () => loop,
            () => Effect.sync(() => void running--)
          )
        }
        const fiber = yield* Effect.fork(Pool.runAll(worker, n))
        yield* TestClock.adjust(10 * (items + 1))
        yield* Fiber.join(fiber)
        expect(left).toBe(0)
        expect(started).toBe(Math.min(n, items + 1))
        expect(most).toBeLessThanOrEqual(n)
        expect(running).toBe(0)
      }),
    { fastCheck: { numRuns: 50 } }
  )

  it.effect("Pool.runAll: a worker that fails interrupts the others and stops the starting of more", () =>
    Effect.gen(function*() {
      let started = 0
      const worker = (spawner: Pool.Spawner<never>): Effect.Effect<void> =>
        Effect.suspend(() => {
          const me = ++started
          return me === 3
            ? Effect.die("worker 3")
            : Effect.zipRight(spawner.one, Effect.never)
        })
      const exit = yield* Effect.exit(Pool.runAll(worker, 10))
      expect(Exit.isFailure(exit) && Cause.isDie(exit.cause)).toBe(true)
      expect(started).toBe(3)
    }))
})
