/**
 * Decoding at the edge: durations a person writes, positive finite numbers, and one formatter that turns a
 * parse error into `path: message` lines naming each bad field.
 *
 * @internal
 */
import { Duration, Either, ParseResult, Schema } from "effect"

/** Node treats a timer above 2^31−1 ms as "fire now": every wait the run starts is clamped below it. @internal */
export const MAX_TIMER_MILLIS = 2_147_483_647

/** @internal */
export const clampMillis = (millis: number): number =>
  millis <= 0 || Number.isNaN(millis) ? 0 : millis >= MAX_TIMER_MILLIS ? MAX_TIMER_MILLIS : millis

const UNITS: Readonly<Record<string, number>> = {
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
  hours: 3_600_000
}

const PATTERN = /^\s*([+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?)\s*([a-z]+)\s*$/i

const parseMillis = (input: string): number | undefined => {
  const match = PATTERN.exec(input)
  if (match === null) return undefined
  const unit = UNITS[match[2]!.toLowerCase()]
  return unit === undefined ? undefined : Number(match[1]) * unit
}

const describe = (u: unknown): string => (typeof u === "string" ? JSON.stringify(u) : String(u))

const EXPECTED_DURATION = "Expected a positive finite duration (milliseconds, or a string such as \"30 seconds\")"

/**
 * A positive finite duration: a number of milliseconds or a string such as `"30 seconds"`. NaN, ±Infinity,
 * 0, negatives, booleans and strings that do not parse are rejected. Encodes as milliseconds.
 *
 * @internal
 */
export const PositiveDuration: Schema.Schema<Duration.Duration, number | string> = Schema.transformOrFail(
  Schema.Union(Schema.Number, Schema.String).annotations({
    message: (issue) => ({ message: `${EXPECTED_DURATION}, actual ${describe(issue.actual)}`, override: true })
  }),
  Schema.DurationFromSelf,
  {
    strict: true,
    decode: (input, _, ast) => {
      const millis = typeof input === "number" ? input : parseMillis(input)
      return millis !== undefined && Number.isFinite(millis) && millis > 0
        ? ParseResult.succeed(Duration.millis(millis))
        : ParseResult.fail(new ParseResult.Type(ast, input, `${EXPECTED_DURATION}, actual ${describe(input)}`))
    },
    encode: (duration) => ParseResult.succeed(Duration.toMillis(duration))
  }
).annotations({ identifier: "PositiveDuration" })

/** A finite number > 0. @internal */
export const PositiveNumber = Schema.Number.annotations({
  message: (issue) => `Expected a positive finite number, actual ${describe(issue.actual)}`
}).pipe(
  Schema.filter((n) => Number.isFinite(n) && n > 0, {
    message: (issue) => `Expected a positive finite number, actual ${describe(issue.actual)}`
  })
)

/** An integer ≥ 1. @internal */
export const PositiveInt = Schema.Number.annotations({
  message: (issue) => `Expected a positive integer, actual ${describe(issue.actual)}`
}).pipe(
  Schema.filter((n) => Number.isInteger(n) && n >= 1, {
    message: (issue) => `Expected a positive integer, actual ${describe(issue.actual)}`
  })
)

/** An integer ≥ 0. @internal */
export const NonNegativeInt = Schema.Number.annotations({
  message: (issue) => `Expected a non-negative integer, actual ${describe(issue.actual)}`
}).pipe(
  Schema.filter((n) => Number.isInteger(n) && n >= 0, {
    message: (issue) => `Expected a non-negative integer, actual ${describe(issue.actual)}`
  })
)

/** Formats a parse error as `path: message` lines. @internal */
export const formatParseError = (error: ParseResult.ParseError): string =>
  ParseResult.ArrayFormatter.formatErrorSync(error)
    .map((issue) =>
      issue.path.length === 0 ? issue.message : `${issue.path.map((p) => String(p)).join(".")}: ${issue.message}`
    )
    .join("\n")

/** @internal */
export const decodeWith = <A, I>(schema: Schema.Schema<A, I>) => {
  const decode = Schema.decodeUnknownEither(schema, { errors: "all", onExcessProperty: "error" })
  return (input: unknown): Either.Either<A, string> => Either.mapLeft(decode(input), formatParseError)
}
