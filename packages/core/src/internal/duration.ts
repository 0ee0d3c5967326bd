/**
 * Durations at the edge: what a config file may say ("30 seconds", "250 millis", "4s", or a number of
 * milliseconds) and the clamping every timer goes through.
 *
 * @internal
 */
import { Duration, Option, ParseResult, Schema } from "effect"
import { describe } from "./decode.js"

/** Node treats a timer above 2^31−1 ms as "fire now"; every wait Rein starts is clamped below it. @internal */
export const MAX_TIMER_MILLIS = 2_147_483_647

/** @internal */
export const clampMillis = (millis: number): number =>
  millis <= 0 || Number.isNaN(millis) ? 0 : millis >= MAX_TIMER_MILLIS ? MAX_TIMER_MILLIS : millis

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
