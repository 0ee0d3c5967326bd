import { describe, expect, it } from "@effect/vitest"
import { Deadline } from "@rein/core"
import { Duration, Effect, Fiber, Option, TestClock } from "effect"

// One deadline for everything inside it: when it expires, how nesting picks the earlier one, and how a
// bounded sleep reports whether it slept in full. Time is the TestClock's.

describe("a deadline", () => {
  it("expires its duration after now, rounded up to the nanosecond; an earlier outer deadline wins", () => {
    // Never early: 2.000001 ms is 2000001.0000000002 ns in floating point, which rounds up to 2000002 ns.
    const own = Deadline.starting(1_000n, Duration.millis(2.000001), Option.none())
    expect(own).toEqual({ originNanos: 1_000n, expiresNanos: 1_000n + 2_000_002n })
    const outer = { originNanos: 0n, expiresNanos: 1_500_000n }
    expect(Deadline.starting(1_000n, "1 second", Option.some(outer))).toEqual({
      originNanos: 1_000n,
      expiresNanos: 1_500_000n
    })
    const later = { originNanos: 0n, expiresNanos: 5_000_000_000n }
    expect(Deadline.starting(1_000n, "1 second", Option.some(later))).toEqual({
      originNanos: 1_000n,
      expiresNanos: 1_000_001_000n
    })
  })

  it("counts milliseconds between two clock readings, fractions included", () => {
    expect(Deadline.millisBetween(1_000_000n, 3_500_000n)).toBe(2.5)
    expect(Deadline.millisBetween(3_500_000n, 1_000_000n)).toBe(-2.5)
  })

  it.effect("without a deadline the remaining time is infinite and a sleep sleeps in full", () =>
    Effect.gen(function*() {
      expect(yield* Deadline.remainingMillis).toBe(Number.POSITIVE_INFINITY)
      const fiber = yield* Effect.fork(Deadline.sleep(700))
      yield* TestClock.adjust("699 millis")
      expect(Option.isNone(yield* Fiber.poll(fiber))).toBe(true)
      yield* TestClock.adjust("1 millis")
      expect(yield* Fiber.join(fiber)).toBe(true)
    }))

  it.effect("the remaining time falls with the clock and stops at 0", () =>
    Effect.gen(function*() {
      const seen = yield* Effect.gen(function*() {
        const start = yield* Deadline.remainingMillis
        yield* TestClock.adjust("400 millis")
        const later = yield* Deadline.remainingMillis
        yield* TestClock.adjust("2 seconds")
        return [start, later, yield* Deadline.remainingMillis]
      }).pipe(Deadline.within("1 second"))
      expect(seen).toEqual([1_000, 600, 0])
    }))

  it.effect("an inner deadline cannot outlast the outer one; a shorter inner one is its own", () =>
    Effect.gen(function*() {
      const remaining = (inner: Duration.DurationInput) =>
        Deadline.remainingMillis.pipe(Deadline.within(inner), Deadline.within("1 second"))
      expect(yield* remaining("5 seconds")).toBe(1_000)
      expect(yield* remaining("300 millis")).toBe(300)
      const d = yield* Deadline.make("2 seconds")
      expect(Deadline.millisBetween(d.originNanos, d.expiresNanos)).toBe(2_000)
    }))

  it.effect("a sleep inside a deadline is cut at the deadline and says it was cut", () =>
    Effect.gen(function*() {
      const cut = yield* Effect.fork(Deadline.sleep(5_000).pipe(Deadline.within("1 second")))
      yield* TestClock.adjust("999 millis")
      expect(Option.isNone(yield* Fiber.poll(cut))).toBe(true)
      yield* TestClock.adjust("1 millis")
      expect(yield* Fiber.join(cut)).toBe(false)
      const exact = yield* Effect.fork(Deadline.sleep(1_000).pipe(Deadline.within("1 second")))
      yield* TestClock.adjust("1 second")
      expect(yield* Fiber.join(exact)).toBe(true)
    }))

  it.effect("with no time left a sleep returns at once: full only if it asked for nothing", () =>
    Effect.gen(function*() {
      const expired = <A>(effect: Effect.Effect<A>) =>
        Effect.gen(function*() {
          yield* TestClock.adjust("2 seconds")
          return yield* effect
        }).pipe(Deadline.within("1 second"))
      // No virtual time is added while these run: a sleep that slept would never return.
      expect(yield* expired(Deadline.sleep(10))).toBe(false)
      expect(yield* expired(Deadline.sleep(0))).toBe(true)
      expect(yield* Deadline.sleep(0)).toBe(true)
      expect(yield* Deadline.sleep(-5)).toBe(true)
    }))
})
