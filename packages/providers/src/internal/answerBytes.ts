/**
 * How much of a streamed answer an `@effect/ai` stream part carries, for the `maxResponseBytes` bound of a
 * whole streamed answer.
 *
 * @internal
 */
import type { Response, Tool } from "@effect/ai"

/**
 * The length of the answer a stream part carries: its delta, for the parts that carry the answer piece by
 * piece (text, reasoning, a tool call's parameters); 0 for the others. A streamed answer's deltas are
 * bounded together: a tool call's parameters and a reasoning as much as the text (a vendor model
 * accumulates a tool call's parameters until the call ends, and each delta is a small event, under the
 * per-event bound). @internal
 */
export const deltaLength = (part: Response.StreamPart<Record<string, Tool.Any>>): number =>
  part.type === "text-delta" || part.type === "reasoning-delta" || part.type === "tool-params-delta"
    ? part.delta.length
    : 0
