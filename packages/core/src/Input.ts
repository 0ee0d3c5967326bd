/**
 * Decoding at the edge, shared by every package that reads config or files: durations as a person writes
 * them (`"30 seconds"`, `"250 millis"`, `"4s"`, or a number of milliseconds), timer clamping, and parse
 * errors rendered as `path: message` lines that name each bad field.
 *
 * @since 0.1.0
 */
import type { Duration, Either, ParseResult, Schema } from "effect"
import * as decode from "./internal/decode.js"
import * as duration from "./internal/duration.js"

/**
 * The largest timer Node honours (2^31−1 ms); above it a timer fires at once.
 *
 * @example
 * ```ts
 * import { Input } from "@rein/core"
 *
 * Input.MAX_TIMER_MILLIS // 2147483647
 * ```
 * @since 0.1.0
 */
export const MAX_TIMER_MILLIS: number = duration.MAX_TIMER_MILLIS

/**
 * Clamps a wait into `[0, MAX_TIMER_MILLIS]` (NaN → 0).
 *
 * @example
 * ```ts
 * import { Input } from "@rein/core"
 *
 * Input.clampMillis(1e12) // 2147483647
 * ```
 * @since 0.1.0
 */
export const clampMillis: (millis: number) => number = duration.clampMillis

/**
 * Parses a duration a person wrote into milliseconds; `undefined` when it does not parse.
 *
 * @example
 * ```ts
 * import { Input } from "@rein/core"
 *
 * Input.parseMillis("1.5 minutes") // 90000
 * ```
 * @since 0.1.0
 */
export const parseMillis: (input: string) => number | undefined = duration.parseMillis

/**
 * A positive, finite duration: rejects NaN, ±Infinity, 0, negatives, booleans and strings that do not
 * parse, with a message naming the field. Encodes as milliseconds.
 *
 * @example
 * ```ts
 * import { Schema } from "effect"
 * import { Input } from "@rein/core"
 *
 * const Settings = Schema.Struct({ timeout: Input.PositiveDuration })
 * ```
 * @since 0.1.0
 */
export const PositiveDuration: Schema.Schema<Duration.Duration, number | string> = duration.PositiveDuration

/**
 * Renders a parse error as `path: message` lines.
 *
 * @example
 * ```ts
 * import { Either, Schema } from "effect"
 * import { Input } from "@rein/core"
 *
 * const result = Schema.decodeUnknownEither(Schema.Struct({ n: Schema.Number }))({ n: "x" })
 * if (Either.isLeft(result)) console.log(Input.formatParseError(result.left)) // n: Expected number, actual "x"
 * ```
 * @since 0.1.0
 */
export const formatParseError: (error: ParseResult.ParseError) => string = decode.formatParseError

/**
 * A decoder that refuses unknown fields and reports every problem, each naming its field.
 *
 * @example
 * ```ts
 * import { Schema } from "effect"
 * import { Input } from "@rein/core"
 *
 * const decodeSettings = Input.decodeWith(Schema.Struct({ timeout: Input.PositiveDuration }))
 * decodeSettings({ timeout: -1 }) // Left("timeout: Expected a positive finite duration …, actual -1")
 * ```
 * @since 0.1.0
 */
export const decodeWith: <A, I>(schema: Schema.Schema<A, I>) => (input: unknown) => Either.Either<A, string> =
  decode.decodeWith
