/**
 * Clocks for tests of long waits.
 *
 * @since 0.1.0
 */
import { Clock, Duration, Effect } from "effect"
import { MAX_TIMER_MILLIS } from "../internal/duration.js"

/**
 * A clock that answers as `inner` (typically the `TestClock`), except that a sleep longer than the longest
 * timer (`Input.MAX_TIMER_MILLIS`, 2^31 − 1 ms ≈ 24.8 days) never ends: what Effect's live clock does with
 * one. A wait that must end past 24.8 days has to sleep in clamped steps (`Input.sleepMillis`); under this
 * clock, one that does not never ends, as in production.
 *
 * @example
 * ```ts
 * import { Clocks } from "@rein/core/testing"
 * import { Effect, TestClock } from "effect"
 *
 * const program = Effect.gen(function*() {
 *   const clock = Clocks.liveLike(yield* TestClock.testClock())
 *   return yield* Effect.withClock(Effect.sleep("30 days"), clock) // never ends, as on the live clock
 * })
 * ```
 * @since 0.1.0
 * @category constructors
 */
export const liveLike = (inner: Clock.Clock): Clock.Clock => ({
  [Clock.ClockTypeId]: Clock.ClockTypeId,
  unsafeCurrentTimeMillis: () => inner.unsafeCurrentTimeMillis(),
  unsafeCurrentTimeNanos: () => inner.unsafeCurrentTimeNanos(),
  currentTimeMillis: inner.currentTimeMillis,
  currentTimeNanos: inner.currentTimeNanos,
  sleep: (duration) => Duration.toMillis(duration) > MAX_TIMER_MILLIS ? Effect.never : inner.sleep(duration)
})
