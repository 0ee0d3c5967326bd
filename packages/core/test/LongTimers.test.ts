import { describe, expect, it } from "@effect/vitest"
import { Budget, Deadline, Fake, Input, Rein } from "@rein/core"
import { Clocks } from "@rein/core/testing"
import { Duration, Effect, Either, Fiber, Option, TestClock } from "effect"
import * as Timers from "../src/internal/timers.js"
import { contract, layer } from "./fixtures.js"
import { CallbackClock } from "./support/callbackClock.js"

// Node's timers treat a wait above 2^31−1 ms (24.86 days) as "never": every wait Rein starts is clamped to it.
// A longer deadline, timeout or sleep then sleeps again for what remains: it ends when it is due, never at the
// clamp. Time is the TestClock's.

const request = { prompt: "hello", inputTokens: 100, maxOutputTokens: 100 }
const CLAMP = Duration.millis(Input.MAX_TIMER_MILLIS)
const DAY = 86_400_000

describe("a wait longer than the longest timer", () => {
  it.effect("a 30-day contract deadline does not expire at 24.86 days; it does at 30 days", () =>
    Effect.gen(function*() {
      const fake = Fake.make({ a: [Fake.hang] })
      const c = contract({ deadline: "30 days", attemptTimeout: "40 days", candidates: ["a"] })
      const fiber = yield* Effect.fork(Effect.either(Rein.execute(request, c).pipe(Effect.provide(layer(fake)))))
      yield* TestClock.adjust(CLAMP)
      yield* TestClock.adjust("1 hour")
      expect(Option.isNone(yield* Fiber.poll(fiber))).toBe(true)
      yield* TestClock.adjust(Duration.millis(30 * DAY - Input.MAX_TIMER_MILLIS - 3_600_001))
      expect(Option.isNone(yield* Fiber.poll(fiber))).toBe(true)
      yield* TestClock.adjust("1 millis")
      const exit = yield* Fiber.join(fiber)
      expect(Either.isLeft(exit) && exit.left._tag).toBe("DeadlineExceeded")
      if (Either.isLeft(exit)) {
        expect(exit.left.attempts[0]).toMatchObject({ timeoutMillis: 30 * DAY, binding: "deadline" })
      }
    }))

  it.effect("a 30-day attempt timeout does not fire at 24.86 days; it does at 30 days", () =>
    Effect.gen(function*() {
      const fake = Fake.make({ a: [Fake.hang, Fake.succeed({ text: "second" })] })
      const c = contract({ deadline: "60 days", attemptTimeout: "30 days", candidates: ["a"] })
      const fiber = yield* Effect.fork(Rein.execute(request, c).pipe(Effect.provide(layer(fake))))
      yield* TestClock.adjust(CLAMP)
      yield* TestClock.adjust("1 hour")
      expect((yield* fake.calls).length).toBe(1)
      yield* TestClock.adjust(Duration.millis(30 * DAY - Input.MAX_TIMER_MILLIS - 3_600_000))
      yield* TestClock.adjust("10 minutes")
      const result = yield* Fiber.join(fiber)
      expect(result.text).toBe("second")
      expect(result.attempts.map((a) => [a.status, a.failure, a.startMillis])).toEqual([
        ["timeout", "timeout", 0],
        ["success", null, 30 * DAY + 100]
      ])
    }))

  it.effect("a 30-day backoff waits 30 days before the next attempt, not 24.86 days", () =>
    Effect.gen(function*() {
      const fake = Fake.make({ a: [Fake.fail("overloaded"), Fake.succeed({ text: "later" })] })
      const c = contract({
        deadline: "60 days",
        candidates: ["a"],
        retry: { perEndpoint: 2, base: "30 days", factor: 2, max: "40 days", jitter: 0 }
      })
      const fiber = yield* Effect.fork(Rein.execute(request, c).pipe(Effect.provide(layer(fake))))
      yield* TestClock.adjust(CLAMP)
      yield* TestClock.adjust("1 hour")
      expect((yield* fake.calls).length).toBe(1)
      yield* TestClock.adjust(Duration.millis(30 * DAY - Input.MAX_TIMER_MILLIS - 3_600_000))
      const result = yield* Fiber.join(fiber)
      expect(result.attempts.map((a) => [a.status, a.backoffMillis, a.startMillis])).toEqual([
        ["failure", 30 * DAY, 0],
        ["success", 0, 30 * DAY]
      ])
    }))

  it.effect("Deadline.sleep of 30 days sleeps 30 days and says it slept in full", () =>
    Effect.gen(function*() {
      const fiber = yield* Effect.fork(Deadline.sleep(30 * DAY).pipe(Deadline.within("40 days")))
      yield* TestClock.adjust(CLAMP)
      yield* TestClock.adjust("1 hour")
      expect(Option.isNone(yield* Fiber.poll(fiber))).toBe(true)
      yield* TestClock.adjust(Duration.millis(30 * DAY - Input.MAX_TIMER_MILLIS - 3_600_001))
      expect(Option.isNone(yield* Fiber.poll(fiber))).toBe(true)
      yield* TestClock.adjust("1 millis")
      expect(yield* Fiber.join(fiber)).toBe(true)
    }))

  it.effect("Deadline.sleep cut by a 30-day deadline ends at 30 days, not at the clamp, and says it was cut", () =>
    Effect.gen(function*() {
      const fiber = yield* Effect.fork(Deadline.sleep(50 * DAY).pipe(Deadline.within("30 days")))
      yield* TestClock.adjust(CLAMP)
      yield* TestClock.adjust("1 hour")
      expect(Option.isNone(yield* Fiber.poll(fiber))).toBe(true)
      yield* TestClock.adjust(Duration.millis(30 * DAY - Input.MAX_TIMER_MILLIS - 3_600_000))
      expect(yield* Fiber.join(fiber)).toBe(false)
    }))
})

describe("the executor's timer past the longest timer, on a clock like the live one", () => {
  it.effect("an entry due in 30 days (absolute or relative) fires at 30 days: not at the clamp, not never", () =>
    Effect.gen(function*() {
      const clock = new CallbackClock({ liveLike: true })
      const runtime = yield* Effect.runtime<never>()
      const fired: Array<string> = []
      Timers.schedule(clock, runtime, BigInt(30 * DAY) * 1_000_000n, () => fired.push("at"))
      Timers.after(clock, runtime, 30 * DAY, () => fired.push("after"))
      clock.advance(Input.MAX_TIMER_MILLIS)
      clock.advance(3_600_000)
      expect(fired).toEqual([])
      clock.advance(30 * DAY - Input.MAX_TIMER_MILLIS - 3_600_001)
      expect(fired).toEqual([])
      clock.advance(1)
      expect(fired).toEqual(["at", "after"])
      expect(clock.longest).toBeLessThanOrEqual(Input.MAX_TIMER_MILLIS)
    }))
})

describe("a wait bounded by a deadline past the longest timer, on a clock like the live one", () => {
  it.effect("a budget store that hangs under a 30-day deadline ends the request as DeadlineExceeded at 30 days", () =>
    Effect.gen(function*() {
      const fake = Fake.make({ a: [Fake.succeed()] })
      const inner = yield* Budget.make({})
      const hanging: Budget.Service = {
        limits: inner.limits,
        left: inner.left,
        reserve: () => Effect.never,
        settle: inner.settle,
        release: inner.release
      }
      const clock = Clocks.liveLike(yield* TestClock.testClock())
      const c = contract({ deadline: "30 days", candidates: ["a"] })
      const fiber = yield* Effect.fork(Effect.either(
        Rein.execute(request, c).pipe(
          Effect.provide(layer(fake)),
          Effect.provideService(Budget.SharedBudget, hanging),
          Effect.withClock(clock)
        )
      ))
      yield* TestClock.adjust(CLAMP)
      yield* TestClock.adjust("1 hour")
      expect(Option.isNone(yield* Fiber.poll(fiber))).toBe(true)
      yield* TestClock.adjust(Duration.millis(30 * DAY - Input.MAX_TIMER_MILLIS - 3_600_001))
      expect(Option.isNone(yield* Fiber.poll(fiber))).toBe(true)
      yield* TestClock.adjust("1 millis")
      expect(Option.isSome(yield* Fiber.poll(fiber))).toBe(true)
      const result = yield* Fiber.join(fiber)
      expect(Either.isLeft(result) && result.left._tag).toBe("DeadlineExceeded")
      expect((yield* fake.calls).length).toBe(0)
    }))
})

describe("a scripted Fake latency past the longest timer, on a clock like the live one", () => {
  it.effect("a 30-day latency answers at 30 days (not never)", () =>
    Effect.gen(function*() {
      const fake = Fake.make({ a: [Fake.succeed({ text: "late", latency: Duration.millis(30 * DAY) })] })
      const c = contract({ deadline: "60 days", attemptTimeout: "40 days", candidates: ["a"] })
      const clock = Clocks.liveLike(yield* TestClock.testClock())
      const fiber = yield* Effect.fork(
        Rein.execute(request, c).pipe(Effect.provide(layer(fake)), Effect.withClock(clock))
      )
      yield* TestClock.adjust(CLAMP)
      yield* TestClock.adjust("1 hour")
      expect(Option.isNone(yield* Fiber.poll(fiber))).toBe(true)
      yield* TestClock.adjust(Duration.millis(30 * DAY - Input.MAX_TIMER_MILLIS - 3_600_000))
      expect(Option.isSome(yield* Fiber.poll(fiber))).toBe(true)
      expect((yield* Fiber.join(fiber)).text).toBe("late")
    }))
})
