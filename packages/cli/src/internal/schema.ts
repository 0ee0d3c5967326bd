/**
 * Decoding helpers shared by the command's own file formats (scenarios, prompts, request files): durations
 * as a person writes them, and parse errors as `path: message` lines.
 *
 * @internal
 */
import { Input } from "@rein/core"
import { ParseResult, Schema } from "effect"

const parseMillis = Input.parseMillis

const EXPECTED = "Expected a duration (milliseconds, or a string such as \"30 seconds\")"

const fromInput = (nonNegative: boolean) =>
  Schema.transformOrFail(Schema.Union(Schema.Number, Schema.String), Schema.Number, {
    strict: true,
    decode: (input, _, ast) => {
      const millis = typeof input === "number" ? input : parseMillis(input)
      const ok = millis !== undefined && Number.isFinite(millis) && (nonNegative ? millis >= 0 : millis > 0)
      return ok
        ? ParseResult.succeed(millis)
        : ParseResult.fail(
          new ParseResult.Type(
            ast,
            input,
            `${EXPECTED}${nonNegative ? "" : " > 0"}, actual ${JSON.stringify(input)}`
          )
        )
    },
    encode: (millis) => ParseResult.succeed(millis)
  })

/** A positive finite duration, decoded to milliseconds. @internal */
export const Millis = fromInput(false)

/** A finite duration ≥ 0 (an offset from the start), decoded to milliseconds. @internal */
export const Offset = fromInput(true)

/** A finite number ≥ 0. @internal */
export const NonNegative = Schema.Number.pipe(
  Schema.filter((n) => (Number.isFinite(n) && n >= 0) || `Expected a finite number ≥ 0, actual ${n}`)
)

/** An integer ≥ 0. @internal */
export const NonNegativeInt = Schema.Number.pipe(
  Schema.filter((n) => (Number.isInteger(n) && n >= 0) || `Expected an integer ≥ 0, actual ${n}`)
)

/** An integer > 0. @internal */
export const PositiveInt = Schema.Number.pipe(
  Schema.filter((n) => (Number.isInteger(n) && n > 0) || `Expected a positive integer, actual ${n}`)
)

/** A number in [0, 1]. @internal */
export const Fraction = Schema.Number.pipe(
  Schema.filter((n) => (Number.isFinite(n) && n >= 0 && n <= 1) || `Expected a number between 0 and 1, actual ${n}`)
)

/** `path: message` lines, as the core's decoders print them. @internal */
export const formatParseError = Input.formatParseError

/** Decodes unknown input, refusing unknown fields, with every problem named. @internal */
export const decodeWith = Input.decodeWith
