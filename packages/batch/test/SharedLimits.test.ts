import { describe, expect, it } from "@effect/vitest"
import { Batch, Guardrails, RunLimits } from "@rein/batch"
import type { Events } from "@rein/batch"
import { Effect, Fiber, TestClock } from "effect"
import { contract, ok, scripted } from "./batch-helpers.js"

const prompts = (n: number) => Array.from({ length: n }, (_, i) => `p${i}`)

/** The same limits with their fast paths removed: a run must then go through their effects. */
const effectsOnly = (limits: RunLimits.Service): RunLimits.Service => ({
  waits: limits.waits,
  admit: limits.admit,
  release: limits.release,
  released: limits.released,
  charge: limits.charge,
  totals: limits.totals,
  cool: limits.cool,
  cooldownLeft: limits.cooldownLeft,
  stop: limits.stop,
  stopped: limits.stopped,
  whenStopped: limits.whenStopped
})

describe("run limits from the context", () => {
  it.effect("two runs sharing one token cap both stop, overshooting it by at most the attempts in flight", () =>
    Effect.gen(function*() {
      const fake = scripted(() => ok(1_000, { inputTokens: 5, outputTokens: 5 }))
      const limits = yield* RunLimits.memory({ concurrency: 2, maxTotalTokens: 50 })
      const one = Batch.run(prompts(10), { contract: contract(), guardrails: Guardrails.make({ concurrency: 2 }) })
      const fiber = yield* Effect.fork(
        Effect.all([one, one], { concurrency: "unbounded" }).pipe(
          Effect.provide(fake.layer),
          Effect.provideService(RunLimits.RunLimits, limits)
        )
      )
      yield* TestClock.adjust("1 hour")
      const [a, b] = yield* Fiber.join(fiber)
      expect(a.termination).toMatchObject({ kind: "budget_exceeded", resource: "tokens" })
      expect(b.termination).toEqual(a.termination)
      const total = a.stats.tokensUsed + b.stats.tokensUsed
      expect((yield* limits.totals).tokens).toBe(total)
      // 4 attempts in flight over both runs, 10 tokens each.
      expect(total).toBeLessThanOrEqual(50 - 1 + 4 * 10)
      expect(fake.log.length).toBeLessThan(20)
    }))

  it.effect("run limits without fast paths: admissions wait on their effects exactly as on the fast paths", () =>
    Effect.gen(function*() {
      const guardrails = Guardrails.make({ concurrency: 4, requestsPerMinute: 2 })
      const limits = effectsOnly(yield* RunLimits.memory(RunLimits.configOf(guardrails)))
      const fake = scripted(() => ok(0))
      const events: Array<Events.Event> = []
      const fiber = yield* Effect.fork(
        Batch.run(prompts(4), {
          contract: contract(),
          guardrails,
          onEvent: (e) => Effect.sync(() => void events.push(e))
        }).pipe(Effect.provide(fake.layer), Effect.provideService(RunLimits.RunLimits, limits))
      )
      yield* TestClock.adjust("1 hour")
      const summary = yield* Fiber.join(fiber)
      expect(summary.stats.succeeded).toBe(4)
      const admitted = events.filter((e): e is typeof Events.ItemAdmitted.Type => e._tag === "ItemAdmitted")
      expect(admitted.map((e) => e.at)).toEqual([0, 0, 30_000, 60_000])
    }))

  it.effect("run limits without fast paths: a token cap reached through their effects stops the run", () =>
    Effect.gen(function*() {
      const guardrails = Guardrails.make({ concurrency: 1, maxTotalTokens: 20 })
      const limits = effectsOnly(yield* RunLimits.memory(RunLimits.configOf(guardrails)))
      const fake = scripted(() => ok(0, { inputTokens: 5, outputTokens: 5 }))
      const summary = yield* Batch.run(prompts(5), { contract: contract(), guardrails }).pipe(
        Effect.provide(fake.layer),
        Effect.provideService(RunLimits.RunLimits, limits)
      )
      expect(summary.termination).toMatchObject({ kind: "budget_exceeded", resource: "tokens" })
      expect(summary.results.map((r) => r._tag === "Failed" ? r.category : "ok")).toEqual([
        "ok",
        "ok",
        "batch_budget_exceeded",
        "batch_budget_exceeded",
        "batch_budget_exceeded"
      ])
      expect(fake.log).toHaveLength(2)
    }))
})
