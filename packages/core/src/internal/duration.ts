/**
 * Durations at the edge: what a config file may say ("30 seconds", "250 millis", "4s", or a number of
 * milliseconds) and the clamping every timer goes through.
 *
 * @internal
 */
import { Clock, Duration, Effect, Option, ParseResult, Schema } from "effect"
import { describe } from "./decode.js"

/** Node treats a timer above 2^31−1 ms as "fire now"; every wait Rein starts is clamped below it. @internal */
export const MAX_TIMER_MILLIS = 2_147_483_647

/** @internal */
export const clampMillis = (millis: number): number =>
  millis <= 0 || Number.isNaN(millis) ? 0 : millis >= MAX_TIMER_MILLIS ? MAX_TIMER_MILLIS : millis

/** The longest timer, in nanoseconds. */
const MAX_TIMER_NANOS = BigInt(MAX_TIMER_MILLIS) * 1_000_000n

/** Sleeps until the clock reads `atNanos`, in waits no longer than the longest timer: never early. */
const sleepUntilNanos = (atNanos: bigint): Effect.Effect<void> =>
  Effect.flatMap(Clock.currentTimeNanos, (now) => {
    const left = atNanos - now
    return left <= 0n
      ? Effect.void
      : Effect.zipRight(
        Effect.sleep(Duration.nanos(left < MAX_TIMER_NANOS ? left : MAX_TIMER_NANOS)),
        Effect.suspend(() => sleepUntilNanos(atNanos))
      )
  })

/** A sleep past the longest timer (or NaN: none; +Infinity: forever). */
const sleepBeyond = (millis: number): Effect.Effect<void> =>
  Number.isNaN(millis)
    ? Effect.sleep(Duration.zero)
    : millis === Number.POSITIVE_INFINITY
    ? Effect.never
    : Effect.flatMap(Clock.currentTimeNanos, (now) => sleepUntilNanos(now + BigInt(Math.ceil(millis * 1e6))))

/**
 * Sleeps `millis` (≤ 0 or NaN: a zero sleep). A wait above the longest timer is clamped to it and then sleeps
 * again for what remains on the clock, until it is due: it never ends at the clamp. Up to the longest timer it
 * is one `Effect.sleep` (one comparison more).
 *
 * @internal
 */
export const sleepMillis = (millis: number): Effect.Effect<void> =>
  millis <= MAX_TIMER_MILLIS ? Effect.sleep(Duration.millis(millis > 0 ? millis : 0)) : sleepBeyond(millis)

/**
 * `Effect.timeoutOption` for `millis`, past the longest timer too (see `sleepMillis`).
 *
 * @internal
 */
export const timeoutOptionMillis = <A, E, R>(
  self: Effect.Effect<A, E, R>,
  millis: number
): Effect.Effect<Option.Option<A>, E, R> =>
  millis <= MAX_TIMER_MILLIS
    ? Effect.timeoutOption(self, Duration.millis(clampMillis(millis)))
    : Effect.raceFirst(Effect.asSome(self), Effect.interruptible(Effect.as(sleepMillis(millis), Option.none())))

const UNITS: Record<string, number> = {
  ns: 1e-6,
  nano: 1e-6,
  nanos: 1e-6,
  us: 1e-3,
  micro: 1e-3,
  micros: 1e-3,
  ms: 1,
  milli: 1,
  millis: 1,
  millisecond: 1,
  milliseconds: 1,
  s: 1_000,
  sec: 1_000,
  second: 1_000,
  seconds: 1_000,
  m: 60_000,
  min: 60_000,
  minute: 60_000,
  minutes: 60_000,
  h: 3_600_000,
  hour: 3_600_000,
  hours: 3_600_000,
  d: 86_400_000,
  day: 86_400_000,
  days: 86_400_000
}

const PATTERN = /^\s*([+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?)\s*([a-z]+)\s*$/i

/**
 * Parses a duration written by a person into milliseconds. `undefined` when it does not parse.
 *
 * @internal
 */
export const parseMillis = (input: string): number | undefined => {
  const match = PATTERN.exec(input)
  if (match === null) return undefined
  const unit = UNITS[match[2]!.toLowerCase()]
  if (unit === undefined) return undefined
  return Number(match[1]) * unit
}

const EXPECTED = "Expected a positive finite duration (milliseconds, or a string such as \"30 seconds\")"

/**
 * The clock counts whole nanoseconds: a positive duration that rounds to none of them ("0.4 ns", "1e-7 ms")
 * would become a zero deadline or timeout. It is refused, with its own message (a likely unit mistake).
 *
 * @internal
 */
export const BELOW_RESOLUTION = "Expected a duration of at least 1 nanosecond (the clock's resolution)"

/**
 * Milliseconds as a positive `Duration`, or why they are not one (`undefined` millis: the text did not parse).
 *
 * @internal
 */
export const positive = (millis: number | undefined): Duration.Duration | string => {
  if (millis === undefined || !Number.isFinite(millis) || millis <= 0) return EXPECTED
  const duration = Duration.millis(millis)
  return Duration.isZero(duration) ? BELOW_RESOLUTION : duration
}

/**
 * A positive, finite duration. Decodes a number of milliseconds or a string such as `"30 seconds"`;
 * rejects NaN, ±Infinity, 0, negatives, durations below one nanosecond, booleans and strings that do not
 * parse. Encodes as milliseconds.
 *
 * @internal
 */
export const PositiveDuration: Schema.Schema<Duration.Duration, number | string> = Schema.transformOrFail(
  Schema.Union(Schema.Number, Schema.String).annotations({
    message: (issue) => ({ message: `${EXPECTED}, actual ${describe(issue.actual)}`, override: true })
  }),
  Schema.DurationFromSelf,
  {
    strict: true,
    decode: (input, _, ast) => {
      const duration = positive(typeof input === "number" ? input : parseMillis(input))
      return typeof duration === "string"
        ? ParseResult.fail(new ParseResult.Type(ast, input, `${duration}, actual ${describe(input)}`))
        : ParseResult.succeed(duration)
    },
    encode: (duration) => ParseResult.succeed(Duration.toMillis(duration))
  }
).annotations({ identifier: "PositiveDuration" })

/** @internal */
export const toMillis = (d: Duration.DurationInput): number => Duration.toMillis(d)

/** @internal */
export const optionMillis = (d: Option.Option<Duration.Duration>): number | undefined =>
  Option.isSome(d) ? Duration.toMillis(d.value) : undefined
