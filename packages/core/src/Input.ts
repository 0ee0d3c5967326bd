/**
 * Decoding at the edge, shared by every package that reads config or files: durations as a person writes
 * them (`"30 seconds"`, `"250 millis"`, `"4s"`, or a number of milliseconds), timer clamping, and parse
 * errors rendered as `path: message` lines that name each bad field.
 *
 * @since 0.1.0
 */
import type { Duration, Effect, Either, ParseResult, Schema } from "effect"
import * as decode from "./internal/decode.js"
import * as duration from "./internal/duration.js"
import * as jsonDepth from "./internal/jsonDepth.js"

/**
 * The largest timer Node honours (2^31−1 ms); above it a timer fires at once (Effect's clock: never).
 *
 * @example
 * ```ts
 * import { Input } from "@rein/core"
 *
 * Input.MAX_TIMER_MILLIS // 2147483647
 * ```
 * @category constants
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
 * @category durations
 * @since 0.1.0
 */
export const clampMillis: (millis: number) => number = duration.clampMillis

/**
 * Sleeps `millis` on the `Clock`, past the longest timer too: a wait above `MAX_TIMER_MILLIS` is clamped to it
 * and then sleeps again for what remains, so it ends when it is due, never early at the clamp (≤ 0 or NaN: a
 * zero sleep; `Infinity`: forever).
 *
 * @example
 * ```ts
 * import { Input } from "@rein/core"
 *
 * const thirtyDays = Input.sleepMillis(30 * 86_400_000) // Effect<void>, ends after 30 days
 * ```
 * @category durations
 * @since 0.1.0
 */
export const sleepMillis: (millis: number) => Effect.Effect<void> = duration.sleepMillis

/**
 * Parses a duration a person wrote into milliseconds; `undefined` when it does not parse.
 *
 * @example
 * ```ts
 * import { Input } from "@rein/core"
 *
 * Input.parseMillis("1.5 minutes") // 90000
 * ```
 * @category durations
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
 * @category schemas
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
 * @category formatting
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
 * @category decoding
 * @since 0.1.0
 */
export const decodeWith: <A, I>(schema: Schema.Schema<A, I>) => (input: unknown) => Either.Either<A, string> =
  decode.decodeWith

/**
 * A short rendering of any value for an error message, safe for hostile input: strings cut at 40
 * characters, at most 3 items or keys per level, 2 levels deep; never throws (null-prototype objects,
 * symbols, proxies, arrays nested 100,000 deep).
 *
 * @example
 * ```ts
 * import { Input } from "@rein/core"
 *
 * Input.describe("x".repeat(1000)) // "\"xxxx…\"… (1000 characters)"
 * Input.describe(Object.create(null)) // "{}"
 * ```
 * @category formatting
 * @since 0.1.0
 */
export const describe: (value: unknown) => string = decode.describe

/**
 * A number with a condition; any value that misses it (not a number, or out of range) reads
 * `Expected <what>, actual <value>`, the value shown with `describe`.
 *
 * @example
 * ```ts
 * import { Input } from "@rein/core"
 *
 * const Port = Input.numberWhere("a port number", (n) => Number.isInteger(n) && n > 0 && n < 65536)
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const numberWhere: (what: string, ok: (n: number) => boolean) => Schema.Schema<number> = decode.numberWhere

/**
 * A finite number ≥ 0.
 *
 * @example
 * ```ts
 * import { Schema } from "effect"
 * import { Input } from "@rein/core"
 *
 * const Price = Schema.Struct({ perToken: Input.NonNegativeNumber })
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const NonNegativeNumber: Schema.Schema<number> = decode.NonNegativeNumber

/**
 * A finite number > 0.
 *
 * @example
 * ```ts
 * import { Schema } from "effect"
 * import { Input } from "@rein/core"
 *
 * const Cap = Schema.Struct({ maxTotalCost: Input.PositiveNumber })
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const PositiveNumber: Schema.Schema<number> = decode.PositiveNumber

/**
 * An integer ≥ 0 (a safe integer: counts above 2^53 lose precision).
 *
 * @example
 * ```ts
 * import { Schema } from "effect"
 * import { Input } from "@rein/core"
 *
 * const Retries = Schema.Struct({ retries: Input.NonNegativeInt })
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const NonNegativeInt: Schema.Schema<number> = decode.NonNegativeInt

/**
 * An integer ≥ 1 (a safe integer).
 *
 * @example
 * ```ts
 * import { Schema } from "effect"
 * import { Input } from "@rein/core"
 *
 * const Pool = Schema.Struct({ concurrency: Input.PositiveInt })
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const PositiveInt: Schema.Schema<number> = decode.PositiveInt

/**
 * A number between 0 and 1, both included.
 *
 * @example
 * ```ts
 * import { Schema } from "effect"
 * import { Input } from "@rein/core"
 *
 * const Sampling = Schema.Struct({ share: Input.Fraction })
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const Fraction: Schema.Schema<number> = decode.Fraction

/**
 * A record keyed by strings that keeps every key as data and decodes into a null-prototype object: a
 * `"__proto__"` key is an entry like any other (with `Schema.Record` it silently replaces the result's
 * prototype), and looking up an absent `"constructor"` finds nothing.
 *
 * @example
 * ```ts
 * import { Schema } from "effect"
 * import { Input } from "@rein/core"
 *
 * const Capacity = Input.OwnRecord(Input.PositiveInt)
 * Schema.decodeUnknownSync(Capacity)(JSON.parse('{"__proto__": 2}'))["__proto__"] // 2
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const OwnRecord: <A, I>(
  value: Schema.Schema<A, I>
) => Schema.Schema<{ readonly [key: string]: A }, { readonly [key: string]: I }> = decode.OwnRecord

/**
 * The deepest nesting of arrays and objects Rein's readers of JSON accept (256). V8 parses a line of nested
 * arrays at ~50 times its size in memory, so deeper text is refused before it is parsed (`Input.tooDeep`).
 *
 * @example
 * ```ts
 * import { Input } from "@rein/core"
 *
 * Input.MAX_JSON_DEPTH // 256
 * ```
 * @category limits
 * @since 0.1.0
 */
export const MAX_JSON_DEPTH: number = jsonDepth.MAX_JSON_DEPTH

/**
 * Whether JSON text nests arrays and objects deeper than `max` (default `MAX_JSON_DEPTH`), read without
 * parsing it: a linear scan that allocates nothing. Check it before `JSON.parse` on text a user or a file gives.
 *
 * @example
 * ```ts
 * import { Input } from "@rein/core"
 *
 * Input.tooDeep("[".repeat(1000) + "]".repeat(1000)) // true
 * Input.tooDeep("{\"a\":[1,2,{\"b\":null}]}") // false
 * ```
 * @category decoding
 * @since 0.1.0
 */
export const tooDeep: (text: string, max?: number) => boolean = jsonDepth.tooDeep
