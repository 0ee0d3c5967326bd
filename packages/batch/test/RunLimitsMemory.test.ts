import { describe, expect, it } from "@effect/vitest"
import { Guardrails, RunLimits } from "@rein/batch"
import type { Termination } from "@rein/batch"
import { Effect, FastCheck as fc, Fiber, Option, TestClock } from "effect"

// The in-memory run limits through their public members, at each limit's boundary, under the TestClock
// (issue #23: these pin the exact answers the laws only bound).

const admitted = (a: RunLimits.Admission): RunLimits.Hold => {
  if (a._tag !== "Hold") throw new Error(`expected a hold, got a wait of ${a.millis} ms`)
  return a
}
const waited = (a: RunLimits.Admission): number => {
  if (a._tag !== "Wait") throw new Error("expected a wait, got a hold")
  return a.millis
}
const resourceOf = (stop: Termination.Stop | undefined): string | undefined =>
  stop !== undefined && stop._tag === "BudgetExceeded" ? stop.resource : undefined
const budgetStop = (resource: "tokens" | "cost", reason: string): Termination.Stop => ({
  _tag: "BudgetExceeded",
  kind: "budget_exceeded",
  resource,
  reason
})

describe("RunLimits.memory: soft caps and totals", () => {
  it.effect("reaching the token cap (equality counts) stops with a reason giving the total and the cap", () =>
    Effect.gen(function*() {
      const limits = yield* RunLimits.memory({ concurrency: 1, maxTotalTokens: 100, maxTotalCost: 10 })
      expect(yield* limits.charge({ tokens: 99, cost: 0 })).toEqual(Option.none())
      expect(yield* limits.charge({ tokens: 1, cost: 0 })).toEqual(
        Option.some(budgetStop("tokens", "token cap reached: 100 of 100 tokens"))
      )
      expect(yield* limits.totals).toEqual({ tokens: 100, cost: 0 })
    }))

  it.effect("reaching the cost cap (equality counts) stops with a reason giving the total and the cap", () =>
    Effect.gen(function*() {
      const limits = yield* RunLimits.memory({ concurrency: 1, maxTotalTokens: 100, maxTotalCost: 0.5 })
      expect(yield* limits.charge({ tokens: 1, cost: 0.25 })).toEqual(Option.none())
      expect(yield* limits.charge({ tokens: 1, cost: 0.25 })).toEqual(
        Option.some(budgetStop("cost", "cost cap reached: 0.5 of 0.5"))
      )
    }))

  it.effect("when both caps are reached by one charge, the token cap is the reason", () =>
    Effect.gen(function*() {
      const limits = yield* RunLimits.memory({ concurrency: 1, maxTotalTokens: 10, maxTotalCost: 1 })
      expect(Option.map(yield* limits.charge({ tokens: 10, cost: 1 }), (s) => s.reason)).toEqual(
        Option.some("token cap reached: 10 of 10 tokens")
      )
    }))

  it.effect("without caps nothing stops, and the totals are the sums of the charges", () =>
    Effect.gen(function*() {
      const limits = yield* RunLimits.memory({ concurrency: 1 })
      expect(yield* limits.charge({ tokens: 1e9, cost: 1e6 })).toEqual(Option.none())
      expect(yield* limits.charge({ tokens: 5, cost: 0.5 })).toEqual(Option.none())
      expect(yield* limits.totals).toEqual({ tokens: 1e9 + 5, cost: 1e6 + 0.5 })
    }))

  it.effect("a total that overflows is not taken: the stop names it, a cost overflow before a token one", () =>
    Effect.gen(function*() {
      const limits = yield* RunLimits.memory({ concurrency: 1 })
      const big = Number.MAX_VALUE
      expect(yield* limits.charge({ tokens: big, cost: big })).toEqual(Option.none())
      expect(yield* limits.charge({ tokens: big, cost: 0 })).toEqual(
        Option.some(budgetStop("tokens", `the running token total overflowed: ${big} + ${big} is not finite`))
      )
      expect(yield* limits.charge({ tokens: big, cost: big })).toEqual(
        Option.some(budgetStop("cost", `the running cost total overflowed: ${big} + ${big} is not finite`))
      )
      // Neither overflowed sum was taken; a finite one still is.
      expect(yield* limits.charge({ tokens: 1, cost: 1 })).toEqual(Option.none())
      expect(yield* limits.totals).toEqual({ tokens: big + 1, cost: big + 1 })
    }))

  it.effect("an overflow is reported before a cap that the other total reaches in the same charge", () =>
    Effect.gen(function*() {
      const limits = yield* RunLimits.memory({ concurrency: 1, maxTotalCost: 1 })
      const big = Number.MAX_VALUE
      yield* limits.charge({ tokens: big, cost: 0 })
      expect(Option.map(yield* limits.charge({ tokens: big, cost: 5 }), (s) => s.reason)).toEqual(
        Option.some(`the running token total overflowed: ${big} + ${big} is not finite`)
      )
      // The cost of that charge was still counted (it was finite).
      expect((yield* limits.totals).cost).toBe(5)
    }))

  it.effect("a charge that is not a count stops the run, names the resource (cost first) and is not added", () =>
    Effect.gen(function*() {
      const limits = yield* RunLimits.memory({ concurrency: 1, maxTotalTokens: 100 })
      expect(yield* limits.charge({ tokens: Number.NaN, cost: 0 })).toEqual(
        Option.some(budgetStop("tokens", "an attempt's token count is not a finite number ≥ 0: NaN"))
      )
      expect(yield* limits.charge({ tokens: Number.NaN, cost: -1 })).toEqual(
        Option.some(budgetStop("cost", "an attempt's cost is not a finite number ≥ 0: -1"))
      )
      expect(Option.map(yield* limits.charge({ tokens: 1, cost: Number.POSITIVE_INFINITY }), resourceOf))
        .toEqual(Option.some("cost"))
      expect(yield* limits.totals).toEqual({ tokens: 0, cost: 0 })
      expect(yield* limits.charge({ tokens: 0, cost: 0 })).toEqual(Option.none())
    }))

  it("invalidCharge answers undefined exactly for finite counts ≥ 0, else the stop of the first bad resource", () => {
    const n = fc.oneof(fc.double(), fc.integer(), fc.constantFrom(0, -0, Number.NaN, Number.POSITIVE_INFINITY))
    const count = (x: number) => Number.isFinite(x) && x >= 0
    fc.assert(
      fc.property(n, n, (tokens, cost) => {
        const stop = RunLimits.invalidCharge({ tokens, cost })
        if (count(tokens) && count(cost)) expect(stop).toBeUndefined()
        else expect(resourceOf(stop)).toBe(count(cost) ? "tokens" : "cost")
      }),
      { numRuns: 300, seed: 23 }
    )
  })
})

describe("RunLimits.memory: admission", () => {
  it.effect("with no rate, capacity, ramp or cooldown nothing ever waits", () =>
    Effect.gen(function*() {
      const limits = yield* RunLimits.memory({ concurrency: 2, maxTotalTokens: 10 })
      expect(limits.waits).toBe(false)
      for (let i = 0; i < 5; i++) admitted(yield* limits.admit("a", 1_000))
      for (
        const config of [
          { concurrency: 2, requestsPerMinute: 1 },
          { concurrency: 2, tokensPerMinute: 1 },
          { concurrency: 2, capacity: { a: 1 } },
          { concurrency: 2, startupRampMillis: 1 },
          { concurrency: 2, cooldownMillis: 1 }
        ]
      ) {
        expect((yield* RunLimits.memory(config)).waits).toBe(true)
      }
    }))

  it.effect("requests per minute: the wait is the time to refill one request", () =>
    Effect.gen(function*() {
      const limits = yield* RunLimits.memory({ concurrency: 4, requestsPerMinute: 2 })
      admitted(yield* limits.admit("a", 0))
      admitted(yield* limits.admit("a", 0))
      expect(waited(yield* limits.admit("a", 0))).toBe(30_000)
      yield* TestClock.adjust("10 seconds")
      expect(waited(yield* limits.admit("a", 0))).toBeCloseTo(20_000, 6)
      yield* TestClock.adjust("20 seconds")
      admitted(yield* limits.admit("a", 0))
      // A release gives no request back: the bucket only refills with time.
      expect(waited(yield* limits.admit("a", 0))).toBe(30_000)
    }))

  it.effect("tokens per minute: a hold reserves its tokens (at most the bucket), a release reconciles them", () =>
    Effect.gen(function*() {
      const limits = yield* RunLimits.memory({ concurrency: 4, tokensPerMinute: 600 })
      const first = admitted(yield* limits.admit("a", 400))
      expect(first).toEqual({ _tag: "Hold", endpoint: "a", tokens: 400 })
      // 200 left: 300 more need 100 tokens of refill at 0.01 per ms.
      expect(waited(yield* limits.admit("a", 300))).toBe(10_000)
      // Used 100 of 400: 300 come back at once.
      yield* limits.release(first, 100)
      const second = admitted(yield* limits.admit("a", 300))
      // Used 800 of 300: a debt of 500 is paid off before anything new starts.
      yield* limits.release(second, 800)
      expect(waited(yield* limits.admit("a", 0))).toBeCloseTo(30_100, 6) // (1 + 300) / 0.01
      // A request larger than the bucket reserves the whole bucket.
      const fresh = yield* RunLimits.memory({ concurrency: 1, tokensPerMinute: 600 })
      expect(admitted(yield* fresh.admit("a", 5_000)).tokens).toBe(600)
    }))

  it.effect("tokens per minute: unknown usage keeps the whole reservation, and a refund never overfills", () =>
    Effect.gen(function*() {
      const limits = yield* RunLimits.memory({ concurrency: 4, tokensPerMinute: 600 })
      const hold = admitted(yield* limits.admit("a", 600))
      yield* limits.release(hold, undefined)
      // 600 per minute is 0.01 per ms: 60 tokens take 6 s.
      expect(waited(yield* limits.admit("a", 60))).toBe(6_000)
      yield* TestClock.adjust("1 minute")
      const half = admitted(yield* limits.admit("a", 300))
      yield* TestClock.adjust("30 seconds")
      admitted(yield* limits.admit("a", 0)) // refills the bucket to 600 while `half` is held
      // Its 300 unused come back, but the bucket holds at most 600.
      yield* limits.release(half, 0)
      admitted(yield* limits.admit("a", 600))
      expect(waited(yield* limits.admit("a", 1))).toBe(100)
    }))

  it.effect("capacity: a full endpoint waits for a release; other endpoints are not limited", () =>
    Effect.gen(function*() {
      const limits = yield* RunLimits.memory({ concurrency: 4, capacity: { a: 1, constructor: 1 } })
      const hold = admitted(yield* limits.admit("a", 0))
      expect(waited(yield* limits.admit("a", 0))).toBe(Number.POSITIVE_INFINITY)
      admitted(yield* limits.admit("b", 0))
      admitted(yield* limits.admit("b", 0))
      const waiter = yield* Effect.fork(limits.released)
      yield* Effect.yieldNow()
      yield* limits.release(hold, undefined)
      yield* Fiber.join(waiter)
      const again = admitted(yield* limits.admit("a", 0))
      expect(again.endpoint).toBe("a")
      expect(waited(yield* limits.admit("a", 0))).toBe(Number.POSITIVE_INFINITY)
      // Releasing an endpoint with no capacity leaves the others' counts alone.
      const b = admitted(yield* limits.admit("b", 0))
      yield* limits.release(b, undefined)
      expect(waited(yield* limits.admit("a", 0))).toBe(Number.POSITIVE_INFINITY)
    }))

  it.effect("startup ramp: in flight grows from 1 to the concurrency; the wait is until the next step", () =>
    Effect.gen(function*() {
      const limits = yield* RunLimits.memory({ concurrency: 4, startupRampMillis: 4_000 })
      const first = admitted(yield* limits.admit("a", 0))
      // One in flight: a second is allowed when 4 × t / 4000 reaches 2, at t = 2000.
      expect(waited(yield* limits.admit("a", 0))).toBe(2_000)
      yield* TestClock.adjust("1500 millis")
      expect(waited(yield* limits.admit("a", 0))).toBe(500)
      yield* TestClock.adjust("500 millis")
      admitted(yield* limits.admit("a", 0))
      expect(waited(yield* limits.admit("a", 0))).toBe(1_000)
      // A release makes room at once.
      yield* limits.release(first, undefined)
      admitted(yield* limits.admit("a", 0))
      // Past the ramp only the concurrency (enforced by the run) limits: the limits admit.
      yield* TestClock.adjust("2 seconds")
      for (let i = 0; i < 6; i++) admitted(yield* limits.admit("a", 0))
    }))

  it.effect("capacity above 1: a release frees one slot, not all of them", () =>
    Effect.gen(function*() {
      const limits = yield* RunLimits.memory({ concurrency: 4, capacity: { a: 2 } })
      const first = admitted(yield* limits.admit("a", 0))
      admitted(yield* limits.admit("a", 0))
      yield* limits.release(first, undefined)
      admitted(yield* limits.admit("a", 0))
      expect(waited(yield* limits.admit("a", 0))).toBe(Number.POSITIVE_INFINITY)
    }))

  it.effect("the ramp starts when the limits are made, not at the clock's origin", () =>
    Effect.gen(function*() {
      yield* TestClock.adjust("1 minute")
      const limits = yield* RunLimits.memory({ concurrency: 4, startupRampMillis: 4_000 })
      admitted(yield* limits.admit("a", 0))
      expect(waited(yield* limits.admit("a", 0))).toBe(2_000)
    }))

  it.effect("startup ramp: the wait is never under 1 ms", () =>
    Effect.gen(function*() {
      const limits = yield* RunLimits.memory({ concurrency: 3, startupRampMillis: 1_000 })
      admitted(yield* limits.admit("a", 0))
      // The second is allowed at 2000 / 3 ≈ 666.7 ms: at 666 ms, 0.67 ms early, the wait is 1 ms.
      yield* TestClock.adjust("666 millis")
      expect(waited(yield* limits.admit("a", 0))).toBe(1)
    }))
})

describe("RunLimits.memory: cooldowns and the stop", () => {
  it.effect("a 429 starts a cooldown of the configured length, or the Retry-After when longer", () =>
    Effect.gen(function*() {
      const limits = yield* RunLimits.memory({ concurrency: 2, cooldownMillis: 5_000 })
      expect(yield* limits.cooldownLeft("a")).toEqual(Option.none())
      expect(yield* limits.cool("a", null)).toEqual(Option.some(5_000))
      expect(yield* limits.cool("b", 8_000)).toEqual(Option.some(8_000))
      expect(yield* limits.cool("c", 1_000)).toEqual(Option.some(5_000))
      expect(waited(yield* limits.admit("a", 0))).toBe(5_000)
      admitted(yield* limits.admit("d", 0))
      // Lengthening an existing cooldown is not a new one; shortening it does nothing.
      yield* TestClock.adjust("1 second")
      expect(yield* limits.cool("a", 10_000)).toEqual(Option.none())
      expect(yield* limits.cooldownLeft("a")).toEqual(Option.some(10_000))
      expect(yield* limits.cool("a", 1_000)).toEqual(Option.none())
      expect(yield* limits.cooldownLeft("a")).toEqual(Option.some(10_000))
      expect(yield* limits.cool("a", 10_000)).toEqual(Option.none())
      expect(yield* limits.cooldownLeft("a")).toEqual(Option.some(10_000))
    }))

  it.effect("a cooldown ends when its time has passed: 0 left once, then none, and waiters wake", () =>
    Effect.gen(function*() {
      const limits = yield* RunLimits.memory({ concurrency: 2, cooldownMillis: 5_000 })
      yield* limits.cool("a", null)
      yield* TestClock.adjust("4999 millis")
      expect(yield* limits.cooldownLeft("a")).toEqual(Option.some(1))
      expect(waited(yield* limits.admit("a", 0))).toBe(1)
      const waiter = yield* Effect.fork(limits.released)
      yield* TestClock.adjust("1 millis")
      expect(yield* limits.cooldownLeft("a")).toEqual(Option.some(0))
      yield* Fiber.join(waiter)
      expect(yield* limits.cooldownLeft("a")).toEqual(Option.none())
      admitted(yield* limits.admit("a", 0))
      // A new cooldown after the end is a new one again.
      expect(yield* limits.cool("a", null)).toEqual(Option.some(5_000))
    }))

  it.effect("without a configured cooldown a 429 cools only for its Retry-After", () =>
    Effect.gen(function*() {
      const limits = yield* RunLimits.memory({ concurrency: 2 })
      expect(yield* limits.cool("a", 2_000)).toEqual(Option.some(2_000))
      expect(waited(yield* limits.admit("a", 0))).toBe(2_000)
      expect(yield* limits.cool("b", null)).toEqual(Option.some(0))
      admitted(yield* limits.admit("b", 0))
    }))

  it.effect("the first stop wins; whenStopped completes with it", () =>
    Effect.gen(function*() {
      const limits = yield* RunLimits.memory({ concurrency: 1 })
      expect(yield* limits.stopped).toEqual(Option.none())
      const waiter = yield* Effect.fork(limits.whenStopped)
      const first = budgetStop("cost", "first")
      expect(yield* limits.stop(first)).toEqual(first)
      expect(yield* limits.stop(budgetStop("tokens", "second"))).toEqual(first)
      expect(yield* limits.stopped).toEqual(Option.some(first))
      expect(yield* Fiber.join(waiter)).toEqual(first)
      expect(limits.unsafeStopped?.()).toEqual(first)
    }))
})

describe("RunLimits.configOf", () => {
  it("reads every limit of the guardrails, durations in milliseconds", () => {
    expect(
      RunLimits.configOf(Guardrails.make({
        concurrency: 3,
        requestsPerMinute: 60,
        tokensPerMinute: 9_000,
        capacity: { a: 2 },
        startupRamp: "2 seconds",
        cooldown: 1_500,
        maxTotalTokens: 10,
        maxTotalCost: 0.5
      }))
    ).toEqual({
      concurrency: 3,
      requestsPerMinute: 60,
      tokensPerMinute: 9_000,
      capacity: { a: 2 },
      startupRampMillis: 2_000,
      cooldownMillis: 1_500,
      maxTotalTokens: 10,
      maxTotalCost: 0.5
    })
    const bare = RunLimits.configOf(Guardrails.make({ concurrency: 1 }))
    expect(bare.startupRampMillis).toBeUndefined()
    expect(bare.cooldownMillis).toBeUndefined()
  })
})
