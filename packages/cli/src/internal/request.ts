/**
 * The request file of `rein plan --request R`: the shape of a request (its input-token bound and output
 * bound, or a prompt to bound from).
 *
 * @internal
 */
import { Schema } from "effect"
import { PositiveInt } from "./schema.js"

/** @internal */
export const RequestFile = Schema.Struct({
  prompt: Schema.optional(Schema.String),
  system: Schema.optional(Schema.String),
  inputTokens: Schema.optional(PositiveInt),
  maxOutputTokens: Schema.optional(PositiveInt)
})

/** @internal */
export type RequestFile = typeof RequestFile.Type
