import { describe, expect, it } from "@effect/vitest"
import { Batch, Guardrails } from "@rein/batch"
import type { Events } from "@rein/batch"
import { Effect, Fiber, TestClock } from "effect"
import * as Limiter from "../src/internal/limiter.js"
import { contract, fail, hang, ok, scripted } from "./batch-helpers.js"

const prompts = (n: number) => Array.from({ length: n }, (_, i) => `p${i}`)

/** Runs under the TestClock and returns the summary with every event. */
const observed = <A, E>(run: (onEvent: (e: Events.Event) => Effect.Effect<void>) => Effect.Effect<A, E>) =>
  Effect.gen(function*() {
    const events: Array<Events.Event> = []
    const fiber = yield* Effect.fork(run((e) => Effect.sync(() => void events.push(e))))
    yield* TestClock.adjust("1 hour")
    const summary = yield* Fiber.join(fiber)
    const admitted = events.filter((e): e is typeof Events.ItemAdmitted.Type => e._tag === "ItemAdmitted")
    return { summary, events, admitted }
  })

describe("rate limits and admission", () => {
  it.effect("requests per minute: a bucket of a minute's worth, refilled continuously", () =>
    Effect.gen(function*() {
      const fake = scripted(() => ok(0))
      const { admitted } = yield* observed((onEvent) =>
        Batch.run(prompts(4), {
          contract: contract(),
          guardrails: Guardrails.make({ concurrency: 4, requestsPerMinute: 2 }),
          onEvent
        }).pipe(Effect.provide(fake.layer))
      )
      expect(admitted.map((e) => e.at)).toEqual([0, 0, 30_000, 60_000])
      expect(admitted.map((e) => e.waitedMillis)).toEqual([0, 0, 30_000, 60_000])
    }))

  it.effect("a limit under one per minute still admits: one attempt per 1/rate minutes, never a wait to the deadline", () =>
    Effect.gen(function*() {
      const fake = scripted(() => ok(0, { inputTokens: 1, outputTokens: 1 }))
      const { admitted, summary } = yield* observed((onEvent) =>
        Batch.run(prompts(3), {
          contract: contract(),
          guardrails: Guardrails.make({ concurrency: 3, requestsPerMinute: 0.5 }),
          onEvent
        }).pipe(Effect.provide(fake.layer))
      )
      expect(admitted.map((e) => e.at)).toEqual([0, 120_000, 240_000])
      expect(summary.stats.succeeded).toBe(3)
      const tokens = yield* observed((onEvent) =>
        Batch.run(prompts(2), {
          contract: contract(),
          request: (prompt: string) => ({ prompt, inputTokens: 1, maxOutputTokens: 1 }),
          guardrails: Guardrails.make({ concurrency: 2, tokensPerMinute: 0.5 }),
          onEvent
        }).pipe(Effect.provide(fake.layer))
      )
      expect(tokens.summary.stats.succeeded).toBe(2)
    }))

  it.effect("tokens per minute: each attempt reserves its worst case, reconciled to actual usage when it ends", () =>
    Effect.gen(function*() {
      const fake = scripted(() => ok(1_000, { inputTokens: 50, outputTokens: 50 }))
      const { admitted, summary } = yield* observed((onEvent) =>
        Batch.run(prompts(2), {
          contract: contract(),
          request: (prompt: string) => ({ prompt, inputTokens: 100, maxOutputTokens: 500 }),
          guardrails: Guardrails.make({ concurrency: 2, tokensPerMinute: 1_000 }),
          onEvent
        }).pipe(Effect.provide(fake.layer))
      )
      // 600 reserved of 1000: the second needs 600 and waits. When the first ends having used 100, 500 come back
      // at once: without reconciliation it would wait 12 s for the refill.
      expect(admitted.map((e) => e.at)).toEqual([0, 1_000])
      expect(summary.stats).toMatchObject({ admissionWaits: 1, admissionWaitMillis: 1_000 })
    }))

  it.effect("provider capacity per endpoint", () =>
    Effect.gen(function*() {
      const fake = scripted(() => ok(1_000))
      const { admitted } = yield* observed((onEvent) =>
        Batch.run(prompts(3), {
          contract: contract(),
          guardrails: Guardrails.make({ concurrency: 3, capacity: { a: 1 } }),
          onEvent
        }).pipe(Effect.provide(fake.layer))
      )
      expect(admitted.map((e) => e.at)).toEqual([0, 1_000, 2_000])
    }))

  it.effect("startup ramp: attempts in flight grow from 1 to the concurrency", () =>
    Effect.gen(function*() {
      const fake = scripted(() => ok(10_000))
      const { admitted } = yield* observed((onEvent) =>
        Batch.run(prompts(4), {
          contract: contract(),
          guardrails: Guardrails.make({ concurrency: 4, startupRamp: "4 seconds" }),
          onEvent
        }).pipe(Effect.provide(fake.layer))
      )
      expect(admitted.map((e) => e.at)).toEqual([0, 2_000, 3_000, 4_000])
    }))

  it.effect("a 429 starts a shared cooldown: new attempts on that endpoint wait for it; Retry-After lengthens it", () =>
    Effect.gen(function*() {
      // The 429 takes 10 ms to arrive, so that p1 is admitted before it (a synchronous 429 would start the
      // cooldown before the second worker pulled p1).
      const fake = scripted((prompt, call) =>
        prompt === "p0" && call === 1 ? fail("rate_limited", { retryAfter: 2_000, latency: 10 }) : ok(500)
      )
      const { admitted, events, summary } = yield* observed((onEvent) =>
        Batch.run(prompts(3), {
          contract: contract(),
          guardrails: Guardrails.make({ concurrency: 2, cooldown: "1 second" }),
          onEvent
        }).pipe(Effect.provide(fake.layer))
      )
      const cooldowns = events.filter((e) => e._tag === "CooldownStarted" || e._tag === "CooldownEnded")
      expect(cooldowns).toEqual([
        { _tag: "CooldownStarted", at: 10, endpoint: "a", untilMillis: 2_010 },
        { _tag: "CooldownEnded", at: 2_010, endpoint: "a" }
      ])
      // p1 started before the 429; p2 (pulled at 500 ms) and p0's retry wait for the cooldown.
      const byTime = admitted.map((e) => [e.itemId, e.at, e.waitedMillis] as const)
        .sort((x, y) => x[1] - y[1] || x[0].localeCompare(y[0]))
      expect(byTime).toEqual([
        ["0", 0, 0],
        ["1", 0, 0],
        ["0", 2_010, 0],
        ["2", 2_010, 1_510]
      ])
      expect(summary.stats).toMatchObject({ rateLimited: 1, retries: 1, succeeded: 3 })
    }))

  it.effect("the cooldown outlives the item that caused it", () =>
    Effect.gen(function*() {
      const fake = scripted((prompt) => (prompt === "p0" ? fail("rate_limited", { retryAfter: 5_000 }) : ok(0)))
      const { admitted, summary } = yield* observed((onEvent) =>
        Batch.run(prompts(2), {
          contract: contract({ retry: { perEndpoint: 0 } }),
          guardrails: Guardrails.make({ concurrency: 1, rateLimitRetries: 0, cooldown: "1 second" }),
          onEvent
        }).pipe(Effect.provide(fake.layer))
      )
      expect(summary.results.map((r) => r._tag === "Failed" ? r.category : "ok")).toEqual(["rate_limited", "ok"])
      expect(admitted.map((e) => e.at)).toEqual([0, 5_000])
    }))

  it("Retry-After may lengthen a cooldown, never shorten it", () => {
    const limiter = Limiter.make({
      concurrency: 1,
      requestsPerMinute: undefined,
      tokensPerMinute: undefined,
      capacity: {},
      startupRampMillis: undefined,
      cooldownMillis: 1_000
    }, 0)
    expect(limiter.cool("a", 0, 5_000)).toBe(true)
    expect(limiter.coolingUntil("a")).toBe(5_000)
    expect(limiter.cool("a", 100, 1_000)).toBe(false)
    expect(limiter.coolingUntil("a")).toBe(5_000)
    expect(limiter.cool("a", 200, 9_000)).toBe(false)
    expect(limiter.coolingUntil("a")).toBe(9_200)
    expect(limiter.endCooldown("a", 9_000)).toBe(false)
    expect(limiter.take(9_000, "a", 0)).toBe(200)
    expect(limiter.endCooldown("a", 9_200)).toBe(true)
    expect(typeof limiter.take(9_200, "a", 0)).toBe("object")
  })

  it.effect("429 retries have their own cap and do not use up the normal attempts", () =>
    Effect.gen(function*() {
      const script = (_: string, call: number) => (call <= 3 ? fail("rate_limited") : ok(0))
      const own = scripted(script)
      const { summary } = yield* observed((onEvent) =>
        Batch.run(prompts(1), {
          contract: contract({ retry: { perEndpoint: 0, base: "100 millis", jitter: 0 } }),
          guardrails: Guardrails.make({ rateLimitRetries: 3 }),
          onEvent
        }).pipe(Effect.provide(own.layer))
      )
      expect(summary.results[0]?._tag).toBe("Succeeded")
      expect(own.log).toHaveLength(4)
      const shared = scripted(script)
      const { summary: without } = yield* observed((onEvent) =>
        Batch.run(prompts(1), {
          contract: contract({ retry: { perEndpoint: 0, base: "100 millis", jitter: 0 } }),
          onEvent
        }).pipe(Effect.provide(shared.layer))
      )
      expect(without.results.map((r) => r._tag === "Failed" ? r.category : "ok")).toEqual(["rate_limited"])
      expect(shared.log).toHaveLength(1)
    }))

  it.effect("a run stop ends admission waits at once", () =>
    Effect.gen(function*() {
      const fake = scripted(() => hang)
      const { admitted, summary } = yield* observed((onEvent) =>
        Batch.run(prompts(3), {
          contract: contract(),
          guardrails: Guardrails.make({
            concurrency: 3,
            requestsPerMinute: 1,
            batchDeadline: "10 seconds",
            abortMode: "cancel-active"
          }),
          onEvent
        }).pipe(Effect.provide(fake.layer))
      )
      expect(admitted).toHaveLength(1)
      expect(summary.results.map((r) => r._tag === "Failed" ? r.category : "ok").sort()).toEqual([
        "batch_deadline_exceeded",
        "batch_deadline_exceeded",
        "batch_deadline_exceeded"
      ])
    }))
})
