/**
 * Decoding at the edge: durations a person writes, positive finite numbers, and one formatter that turns a
 * parse error into `path: message` lines naming each bad field.
 *
 * @internal
 */
import { Input } from "@rein/core"
import { Schema } from "effect"

/** Durations, clamping and error formatting come from core's `Input`: one parser for every package. */
export const MAX_TIMER_MILLIS = Input.MAX_TIMER_MILLIS
/** @internal */
export const clampMillis = Input.clampMillis
/** @internal */
export const PositiveDuration = Input.PositiveDuration

const describe = (u: unknown): string => (typeof u === "string" ? JSON.stringify(u) : String(u))

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

/** @internal */
export const formatParseError = Input.formatParseError

/** @internal */
export const decodeWith = Input.decodeWith
