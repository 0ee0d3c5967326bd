/**
 * Decoding helpers shared by the command's own file formats (scenarios, prompts, request files): durations
 * as a person writes them, and parse errors as `path: message` lines.
 *
 * @internal
 */
import { Input } from "@rein/core"
import { Duration, ParseResult, Schema } from "effect"

const EXPECTED_OFFSET = "Expected a duration ≥ 0 (milliseconds, or a string such as \"30 seconds\")"

/** A positive finite duration (the core's rules, the clock's resolution included), decoded to milliseconds. @internal */
export const Millis = Schema.transform(Input.PositiveDuration, Schema.Number, {
  strict: true,
  decode: Duration.toMillis,
  encode: (millis) => Duration.millis(millis)
})

/** A finite duration ≥ 0 (an offset from the start), decoded to milliseconds. @internal */
export const Offset = Schema.transformOrFail(Schema.Union(Schema.Number, Schema.String), Schema.Number, {
  strict: true,
  decode: (input, _, ast) => {
    const millis = typeof input === "number" ? input : Input.parseMillis(input)
    return millis !== undefined && Number.isFinite(millis) && millis >= 0
      ? ParseResult.succeed(millis)
      : ParseResult.fail(new ParseResult.Type(ast, input, `${EXPECTED_OFFSET}, actual ${Input.describe(input)}`))
  },
  encode: (millis) => ParseResult.succeed(millis)
}).annotations({
  message: (issue) => ({ message: `${EXPECTED_OFFSET}, actual ${Input.describe(issue.actual)}`, override: true })
})

/** A finite number ≥ 0. @internal */
export const NonNegative = Input.NonNegativeNumber

/** An integer ≥ 0. @internal */
export const NonNegativeInt = Input.NonNegativeInt

/** An integer > 0. @internal */
export const PositiveInt = Input.PositiveInt

/** A number in [0, 1]. @internal */
export const Fraction = Input.Fraction

/** A value shown safely in a message. @internal */
export const describe = Input.describe

/** `path: message` lines, as the core's decoders print them. @internal */
export const formatParseError = Input.formatParseError

/** Decodes unknown input, refusing unknown fields, with every problem named. @internal */
export const decodeWith = Input.decodeWith
