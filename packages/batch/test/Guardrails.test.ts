import { describe, expect, it } from "@effect/vitest"
import { Batch, Events, Guardrails, Identity } from "@rein/batch"
import type { Cost } from "@rein/batch"
import { Rein } from "@rein/core"
import type { Provider } from "@rein/core"
import { Clock, Duration, Effect, Either, Exit, Fiber, Random, SubscriptionRef, Supervisor, TestClock } from "effect"
import { catalog, contract, counted, fail, hang, ok, scripted } from "./batch-helpers.js"

const runFor = <A, E>(effect: Effect.Effect<A, E>, advance: Duration.DurationInput = "1 hour") =>
  Effect.gen(function*() {
    const fiber = yield* Effect.fork(effect)
    yield* TestClock.adjust(advance)
    return yield* Fiber.join(fiber)
  })

const prompts = (n: number) => Array.from({ length: n }, (_, i) => `p${i}`)

describe("Guardrails.make and Identity.make", () => {
  it("throw the typed error naming the field, not Either's \"getOrThrow called on a Left\"", () => {
    expect(() => Guardrails.make({ concurrency: 0 })).toThrow(Guardrails.GuardrailsError)
    expect(() => Guardrails.make({ concurrency: 0 })).toThrow(/^concurrency: /)
    const bad = { provider: "openai", promptVersion: "p", parserVersion: "j", applicationVersion: "a" }
    expect(() => Identity.make(bad as unknown as Identity.IdentityInput)).toThrow(Identity.IdentityError)
    expect(() => Identity.make(bad as unknown as Identity.IdentityInput)).toThrow(/model/)
  })
})

describe("Guardrails config", () => {
  it("decodes durations and limits, naming the bad field", () => {
    const good = Guardrails.decode({ concurrency: 4, batchDeadline: "1 hour", itemDeadline: 30_000 })
    expect(Either.isRight(good)).toBe(true)
    if (Either.isRight(good)) {
      expect(Duration.toMillis(good.right.batchDeadline!)).toBe(3_600_000)
      expect(good.right.abortMode).toBe("drain-active")
    }
    const cases: ReadonlyArray<readonly [unknown, string]> = [
      [{ batchDeadline: 0 }, "batchDeadline: Expected a positive finite duration"],
      [{ itemDeadline: -5 }, "itemDeadline: Expected a positive finite duration"],
      [{ itemDeadline: Number.NaN }, "itemDeadline: Expected a positive finite duration"],
      [{ batchDeadline: Number.POSITIVE_INFINITY }, "batchDeadline: Expected a positive finite duration"],
      [{ batchDeadline: true }, "batchDeadline: Expected a positive finite duration"],
      [{ cooldown: "soon" }, "cooldown: Expected a positive finite duration"],
      [{ concurrency: 0 }, "concurrency: Expected a positive integer"],
      [{ maxTotalTokens: -1 }, "maxTotalTokens: Expected a positive finite number"],
      [{ maxTotalCost: Number.NaN }, "maxTotalCost: Expected a positive finite number"],
      [{ abortOn: ["authentication", "bogus"] }, "abortOn.1: Expected an error category"],
      [{ abortMode: "later" }, "abortMode"],
      [{ capacity: { a: 1.5 } }, "capacity.a: Expected a positive integer"],
      [{ concurency: 3 }, "concurency"]
    ]
    for (const [input, message] of cases) {
      const decoded = Guardrails.decode(input)
      expect(Either.isLeft(decoded), JSON.stringify(input)).toBe(true)
      if (Either.isLeft(decoded)) expect(decoded.left.message).toContain(message)
    }
  })
})

describe("cost function", () => {
  const bad: ReadonlyArray<readonly [string, Cost.CostFunction]> = [
    ["throws", () => {
      throw new Error("secret-canary")
    }],
    ["NaN", () => Number.NaN],
    ["negative", () => -1],
    ["a Promise", () => Promise.resolve(1)],
    ["a boolean", () => true]
  ]
  for (const [what, costFunction] of bad) {
    it.effect(`a cost function that returns ${what} stops the run with budget_exceeded, costComplete false`, () =>
      Effect.gen(function*() {
        const fake = scripted(() => ok(100))
        const summary = yield* runFor(
          Batch.run(prompts(6), {
            contract: contract(),
            guardrails: Guardrails.make({ concurrency: 2, maxTotalCost: 1 }),
            costFunction
          }).pipe(Effect.provide(fake.layer))
        )
        expect(summary.termination).toMatchObject({ kind: "budget_exceeded", resource: "cost_function" })
        expect(summary.termination.reason).not.toContain("secret-canary")
        expect(summary.stats.costComplete).toBe(false)
        // Tokens are still counted; the drained call finished, nothing new started.
        expect(summary.stats.tokensUsed).toBe(20)
        expect(fake.log).toHaveLength(2)
      }))
  }

  it.effect("a valid cost function prices each attempt; reaching the cost cap (equality) stops the run", () =>
    Effect.gen(function*() {
      const fake = scripted(() => ok(100))
      const seen: Array<Cost.AttemptUsage> = []
      const summary = yield* runFor(
        Batch.run(prompts(6), {
          contract: contract(),
          guardrails: Guardrails.make({ concurrency: 1, maxTotalCost: 0.5 }),
          costFunction: (u) => {
            seen.push(u)
            return 0.25
          }
        }).pipe(Effect.provide(fake.layer))
      )
      expect(fake.log).toHaveLength(2)
      expect(summary.stats.costUsed).toBe(0.5)
      expect(summary.stats.costComplete).toBe(true)
      expect(summary.termination).toMatchObject({ kind: "budget_exceeded", resource: "cost" })
      expect(summary.termination.reason).toBe("cost cap reached: 0.5 of 0.5")
      expect(seen[0]).toMatchObject({ itemId: "0", attempt: 1, endpoint: "a", succeeded: true })
    }))

  it.effect("a cost total that overflows (each value finite, the sum not) stops the run, costComplete false", () =>
    Effect.gen(function*() {
      const fake = scripted(() => ok(100))
      const summary = yield* runFor(
        Batch.run(prompts(4), {
          contract: contract(),
          guardrails: Guardrails.make({ concurrency: 1 }),
          costFunction: () => Number.MAX_VALUE
        }).pipe(Effect.provide(fake.layer))
      )
      expect(summary.termination).toMatchObject({ kind: "budget_exceeded", resource: "cost" })
      expect(summary.stats.costComplete).toBe(false)
      expect(summary.stats.costUsed).toBe(Number.MAX_VALUE)
      expect(fake.log).toHaveLength(2)
    }))

  for (const gated of [true, false]) {
    it.effect(`a token total that overflows stops the run (${gated ? "with" : "without"} a gate)`, () =>
      Effect.gen(function*() {
        const fake = scripted(() => ok(100, { inputTokens: Number.MAX_VALUE / 2, outputTokens: Number.MAX_VALUE / 2 }))
        const summary = yield* runFor(
          Batch.run(prompts(4), {
            contract: contract(),
            guardrails: Guardrails.make({ concurrency: 1, ...(gated ? { batchDeadline: "1 day" } : {}) })
          }).pipe(Effect.provide(fake.layer))
        )
        expect(summary.termination).toMatchObject({ kind: "budget_exceeded", resource: "tokens" })
        expect(Number.isFinite(summary.stats.tokensUsed)).toBe(true)
        expect(Number.isFinite(summary.stats.costUsed)).toBe(true)
        expect(fake.log).toHaveLength(2)
      }))
  }

  it.effect("without a cost function, cost is the catalog's price of the reported usage; unknown usage is counted apart", () =>
    Effect.gen(function*() {
      const fake = scripted((prompt) => ok(0, prompt === "p0" ? "unknown" : { inputTokens: 1000, outputTokens: 500 }))
      const summary = yield* runFor(
        Batch.run(prompts(3), { contract: contract(), guardrails: Guardrails.make({ concurrency: 1 }) }).pipe(
          Effect.provide(fake.layer)
        )
      )
      expect(summary.stats.unknownUsageAttempts).toBe(1)
      expect(summary.stats.tokensUsed).toBe(3000)
      expect(summary.stats.costUsed).toBeCloseTo(2 * (1000 * 1e-6 + 500 * 2e-6), 12)
    }))

  for (const gated of [true, false]) {
    it.effect(
      `usage that is not a count is unknown usage: never in the totals, never priced (${
        gated ? "with" : "without"
      } a gate)`,
      () =>
        Effect.gen(function*() {
          const usages = {
            p0: { inputTokens: Number.NaN, outputTokens: 5 },
            p1: { inputTokens: -1_000_000, outputTokens: 5 },
            p2: { inputTokens: 1000, outputTokens: 500 }
          } as const
          const fake = scripted((prompt) => ok(0, usages[prompt as keyof typeof usages]))
          const priced: Array<Cost.AttemptUsage["usage"]> = []
          const summary = yield* runFor(
            Batch.run(prompts(3), {
              contract: contract(),
              guardrails: Guardrails.make({
                concurrency: 1,
                maxTotalTokens: 100_000,
                ...(gated ? { batchDeadline: "1 day" } : {})
              }),
              ...(gated ? { costFunction: (u: Cost.AttemptUsage) => (priced.push(u.usage), 0.5) } : {})
            }).pipe(Effect.provide(fake.layer))
          )
          expect(summary.termination.kind).toBe("completed")
          expect(summary.stats.unknownUsageAttempts).toBe(2)
          expect(summary.stats.tokensUsed).toBe(1500)
          expect(priced).toEqual(gated ? [usages.p2] : [])
        })
    )
  }
})

describe("runs", () => {
  it.effect("a dry run makes no provider call and counts nothing", () =>
    Effect.gen(function*() {
      const fake = scripted(() => ok(100))
      const summary = yield* runFor(
        Batch.run(prompts(4), {
          contract: contract(),
          guardrails: Guardrails.make({ dryRun: true, maxTotalTokens: 1 })
        }).pipe(Effect.provide(fake.layer))
      )
      expect(fake.log).toHaveLength(0)
      expect(summary.results.map((r) => r._tag)).toEqual(["Planned", "Planned", "Planned", "Planned"])
      expect(summary.stats).toMatchObject({ planned: 4, attempts: 0, tokensUsed: 0, costUsed: 0 })
      expect(summary.termination.kind).toBe("completed")
    }))

  it.effect("every run gets a fresh budget", () =>
    Effect.gen(function*() {
      const fake = scripted(() => ok(0, { inputTokens: 3, outputTokens: 3 }))
      const options = { contract: contract(), guardrails: Guardrails.make({ concurrency: 1, maxTotalTokens: 12 }) }
      const first = yield* runFor(Batch.run(prompts(5), options).pipe(Effect.provide(fake.layer)))
      const second = yield* runFor(Batch.run(prompts(5), options).pipe(Effect.provide(fake.layer)))
      expect(first.stats.tokensUsed).toBe(12)
      expect(second.stats.tokensUsed).toBe(12)
      expect(fake.log).toHaveLength(4)
    }))

  it.effect("nothing leaks: after the run no fiber, timer or source stays open", () =>
    Effect.gen(function*() {
      const fake = scripted((prompt) =>
        prompt === "p1" ? fail("rate_limited", { retryAfter: 60_000 }) : prompt === "p2" ? hang : ok(1_000)
      )
      const src = counted()
      const supervisor = yield* Supervisor.track
      const summary = yield* runFor(
        Batch.run(src.source, {
          contract: contract(),
          guardrails: Guardrails.make({
            concurrency: 3,
            batchDeadline: "5 seconds",
            abortMode: "cancel-active",
            requestsPerMinute: 600,
            cooldown: "1 second",
            startupRamp: "1 second"
          })
        }).pipe(Effect.provide(fake.layer), Effect.supervised(supervisor))
      )
      expect(summary.termination.kind).toBe("batch_timeout")
      const alive = (yield* supervisor.value).filter((f) => f.unsafePoll() === null)
      expect(alive).toHaveLength(0)
      expect(yield* TestClock.sleeps()).toHaveLength(0)
      expect(src.state.closed).toBe(true)
      expect(src.state.materialised).toBe(summary.stats.accepted)
    }))

  it.effect("caller interruption propagates as interruption, and tears the calls down", () =>
    Effect.gen(function*() {
      const fake = scripted(() => ok(10_000))
      const src = counted()
      const fiber = yield* Effect.fork(
        Batch.run(src.source, { contract: contract(), guardrails: Guardrails.make({ concurrency: 2 }) }).pipe(
          Effect.provide(fake.layer)
        )
      )
      yield* TestClock.adjust("1 second")
      const exit = yield* Fiber.interrupt(fiber)
      expect(Exit.isInterrupted(exit)).toBe(true)
      expect(fake.log.map((c) => c.tornDown)).toEqual([true, true])
      expect(src.state.closed).toBe(true)
    }))

  it.effect("progress and events describe the run", () =>
    Effect.gen(function*() {
      const fake = scripted((prompt) => (prompt === "p2" ? fail("invalid_request") : ok(100)))
      const progress = yield* SubscriptionRef.make(Events.initialProgress)
      const events: Array<Events.Event> = []
      const summary = yield* runFor(
        Batch.run(prompts(4), {
          contract: contract(),
          guardrails: Guardrails.make({ concurrency: 2 }),
          progress,
          onEvent: (e) => Effect.sync(() => void events.push(e))
        }).pipe(Effect.provide(fake.layer), Effect.withRandom(Random.make(1)))
      )
      expect(yield* SubscriptionRef.get(progress)).toEqual({
        accepted: 4,
        done: 4,
        succeeded: 3,
        failed: 1,
        reused: 0,
        inFlight: 0,
        tokens: 30,
        cost: summary.stats.costUsed
      })
      const tags = events.map((e) => e._tag)
      expect(tags[0]).toBe("RunStarted")
      expect(tags.at(-1)).toBe("RunCompleted")
      expect(tags.filter((t) => t === "ItemStarted")).toHaveLength(4)
      expect(tags.filter((t) => t === "ItemAdmitted")).toHaveLength(4)
      expect(tags.filter((t) => t === "ItemCompleted")).toHaveLength(3)
      expect(events.filter((e) => e._tag === "ItemFailed")).toMatchObject([{
        itemId: "2",
        category: "invalid_request"
      }])
      expect(summary.stats.byCategory).toEqual({ ok: 3, invalid_request: 1 })
    }))
})

describe("the batch deadline at admission", () => {
  // A clock whose timers never fire, while each call moves its time on by 40 ms: the deadline's own timer is
  // as late as a loaded process can make it, and only the gate's reading of the clock can stop the run.
  const lateTimers = () => {
    const state = { now: 0 }
    const clock: Clock.Clock = {
      [Clock.ClockTypeId]: Clock.ClockTypeId,
      unsafeCurrentTimeMillis: () => state.now,
      currentTimeMillis: Effect.sync(() => state.now),
      unsafeCurrentTimeNanos: () => BigInt(state.now) * 1_000_000n,
      currentTimeNanos: Effect.sync(() => BigInt(state.now) * 1_000_000n),
      sleep: () => Effect.never
    }
    return { state, clock }
  }

  it.effect("no attempt starts once the deadline has passed, though its timer has not fired", () =>
    Effect.gen(function*() {
      const { clock, state } = lateTimers()
      const starts: Array<number> = []
      const provider: Provider.Provider = {
        internalMaxAttempts: 1,
        simulated: true,
        call: () =>
          Effect.sync(() => {
            starts.push(state.now)
            state.now += 40
            return { text: "ok", usage: { inputTokens: 5, outputTokens: 5 } }
          })
      }
      const summary = yield* Batch.run(prompts(10), {
        contract: contract(),
        guardrails: Guardrails.make({ concurrency: 1, batchDeadline: "100 millis" })
      }).pipe(
        Effect.provide(Rein.layer({ catalog, providers: { fake: provider }, health: false })),
        Effect.withClock(clock)
      )
      // Admitted at 0, 40 and 80 ms; the fourth item is refused at 120 ms, and the run stops there.
      expect(starts).toEqual([0, 40, 80])
      expect(summary.termination).toMatchObject({ kind: "batch_timeout" })
      expect(summary.stats.byCategory).toMatchObject({ ok: 3, batch_deadline_exceeded: 7 })
    }))
})
