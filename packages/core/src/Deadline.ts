/**
 * The monotonic deadline. Read from `Clock.currentTimeNanos` (never the wall clock), it starts when
 * execution starts; a nested deadline takes the minimum of its own and the enclosing one. Every wait
 * computed from it is clamped below Node's 2^31−1 ms timer limit, and a longer one sleeps again for what remains.
 *
 * @since 0.1.0
 */
import { Clock, Context, Duration, Effect, Option } from "effect"
import { dual } from "effect/Function"
import { sleepMillis } from "./internal/duration.js"

/**
 * A deadline: its origin and expiry, in monotonic nanoseconds (`Clock.currentTimeNanos`).
 *
 * @example
 * ```ts
 * import type { Deadline } from "@rein/core"
 *
 * const twoSeconds: Deadline.Service = { originNanos: 0n, expiresNanos: 2_000_000_000n }
 * ```
 * @category models
 * @since 0.1.0
 */
export interface Service {
  readonly originNanos: bigint
  readonly expiresNanos: bigint
}

/**
 * The deadline in force: its origin and expiry, in monotonic nanoseconds.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Deadline } from "@rein/core"
 *
 * const program = Deadline.remainingMillis.pipe(Deadline.within("5 seconds"))
 * ```
 * @category services
 * @since 0.1.0
 */
export class Deadline extends Context.Tag("@rein/core/Deadline")<Deadline, Service>() {}

/**
 * Milliseconds between two monotonic readings.
 *
 * @category utils
 * @since 0.1.0
 */
export const millisBetween = (from: bigint, to: bigint): number => Number(to - from) / 1e6

/**
 * The deadline that starts at `nowNanos` and ends after `duration`, or at `outer` if that comes first: what
 * `make` computes, as a pure function of the clock reading.
 *
 * @example
 * ```ts
 * import { Option } from "effect"
 * import { Deadline } from "@rein/core"
 *
 * const d = Deadline.starting(0n, "2 seconds", Option.some({ originNanos: 0n, expiresNanos: 1_000_000_000n }))
 * // d.expiresNanos === 1_000_000_000n: the enclosing deadline comes first
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const starting = (
  nowNanos: bigint,
  duration: Duration.DurationInput,
  outer: Option.Option<Service>
): Service => startingNanos(nowNanos, nanosOf(duration), Option.getOrUndefined(outer))

/** A deadline's duration as the nanoseconds `starting` adds (rounded up). @internal */
export const nanosOf = (duration: Duration.DurationInput): bigint =>
  BigInt(Math.ceil(Duration.toMillis(duration) * 1e6))

/** `starting`, with the duration converted once (`nanosOf`) and no `Option`: once per request. @internal */
export const startingNanos = (nowNanos: bigint, nanos: bigint, outer: Service | undefined): Service => {
  const own = nowNanos + nanos
  return {
    originNanos: nowNanos,
    expiresNanos: outer !== undefined && outer.expiresNanos < own ? outer.expiresNanos : own
  }
}

/**
 * Makes a deadline starting now and ending after `duration`, or at the enclosing deadline if that comes
 * first.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Deadline } from "@rein/core"
 *
 * const program = Effect.map(Deadline.make("5 seconds"), (d) => d.expiresNanos - d.originNanos)
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const make = (duration: Duration.DurationInput): Effect.Effect<Service> =>
  Effect.flatMap(
    Effect.serviceOption(Deadline),
    (outer) => Effect.map(Clock.currentTimeNanos, (now) => starting(now, duration, outer))
  )

/**
 * Runs an effect inside a deadline of `duration` (nested: the minimum with the enclosing one).
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Deadline } from "@rein/core"
 *
 * const bounded = Deadline.within(Effect.succeed(1), "2 seconds")
 * ```
 * @category combinators
 * @since 0.1.0
 */
export const within: {
  (
    duration: Duration.DurationInput
  ): <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, Exclude<R, Deadline>>
  <A, E, R>(self: Effect.Effect<A, E, R>, duration: Duration.DurationInput): Effect.Effect<A, E, Exclude<R, Deadline>>
} = dual(
  2,
  <A, E, R>(
    self: Effect.Effect<A, E, R>,
    duration: Duration.DurationInput
  ): Effect.Effect<A, E, Exclude<R, Deadline>> =>
    Effect.flatMap(make(duration), (d) => Effect.provideService(self, Deadline, d))
)

/**
 * Milliseconds left before the deadline in force (never negative); `Infinity` when there is none.
 *
 * @category utils
 * @since 0.1.0
 */
export const remainingMillis: Effect.Effect<number> = Effect.flatMap(
  Effect.serviceOption(Deadline),
  (d) =>
    Option.isNone(d)
      ? Effect.succeed(Number.POSITIVE_INFINITY)
      : Effect.map(Clock.currentTimeNanos, (now) => Math.max(0, millisBetween(now, d.value.expiresNanos)))
)

/**
 * Sleeps for `millis`, but never past the deadline in force; interruptible. Succeeds with `true` when the
 * full wait elapsed, `false` when the deadline cut it short.
 *
 * @example
 * ```ts
 * import { Deadline } from "@rein/core"
 *
 * const waited = Deadline.sleep(250) // Effect<boolean>
 * ```
 * @category utils
 * @since 0.1.0
 */
export const sleep = (millis: number): Effect.Effect<boolean> =>
  Effect.flatMap(remainingMillis, (left) => {
    const bounded = Math.min(millis, left)
    const full = bounded >= millis
    return bounded <= 0
      ? Effect.succeed(full)
      : Effect.as(sleepMillis(bounded), full)
  })
