/**
 * Decoding at the edge: durations a person writes, bounded numbers, and the one formatter that turns a
 * parse error into `path: message` lines naming each bad field (all from core's `Input`).
 *
 * @internal
 */
import { Input } from "@rein/core"

/** Durations, clamping and error formatting come from core's `Input`: one parser for every package. */
export const MAX_TIMER_MILLIS = Input.MAX_TIMER_MILLIS
/** @internal */
export const clampMillis = Input.clampMillis
/** @internal */
export const sleepMillis = Input.sleepMillis
/** @internal */
export const PositiveDuration = Input.PositiveDuration

/** A finite number > 0. @internal */
export const PositiveNumber = Input.PositiveNumber

/** A finite number ≥ 0. @internal */
export const NonNegativeNumber = Input.NonNegativeNumber

/** An integer ≥ 1. @internal */
export const PositiveInt = Input.PositiveInt

/** An integer ≥ 0. @internal */
export const NonNegativeInt = Input.NonNegativeInt

/** A string-keyed record that keeps `"__proto__"` as a key (null-prototype output). @internal */
export const OwnRecord = Input.OwnRecord

/** A value shown safely in a message (hostile input never crashes the formatter). @internal */
export const describe = Input.describe

/** @internal */
export const formatParseError = Input.formatParseError

/** @internal */
export const decodeWith = Input.decodeWith
