/**
 * Tool calls the inner model's decode rejects. Bare `@effect/ai` 0.37 (`LanguageModel.make`) decodes an
 * answer against the caller's whole toolkit, not only the tools a `toolChoice: { oneOf }` offers, and
 * validates each call where it runs it: `generateText` hands every call to `Toolkit.handle` as the vendor
 * sent it (a tool the toolkit lacks, or parameters that do not decode, fail there with `MalformedOutput`,
 * after the handlers of the calls before it ran), then decodes the answer; `streamText` decodes each chunk
 * before it runs the chunk's calls. Under Rein the inner model decodes the answer first, so:
 *
 * - the inner call gets the caller's whole toolkit (`wholeToolkit`, recorded by the outer `generateText` /
 *   `streamText` for the call's options), offered under the caller's tool choice as bare offers it: a call
 *   to a tool of the toolkit outside `oneOf` decodes and its handler runs, as bare;
 * - an answer the inner decode still rejects (a tool the toolkit lacks, parameters that do not decode) is a
 *   2xx body that does not decode: its attempt fails `malformed_response` / `tool_call_rejected` (DESIGN's
 *   table: not retried unless the contract allows it, fallen back from, counted against the endpoint), with
 *   the usage the vendor reported. A stream stops at the rejected chunk (after its first visible delta the
 *   request has committed: no fallback). No handler of a rejected answer runs while the plan goes on.
 * - when the plan ends on such an attempt, the caller gets what bare gives for that answer: a whole answer
 *   is recovered from the decode's error (`rejectedParts`: the parts the vendor sent, the decode's input,
 *   kept by `keepAnswer`) and validated above Rein exactly as bare validates it (bare's error, after the
 *   handlers bare runs first; or bare's answer, where the inner call could not be given the whole toolkit:
 *   `generateObject` through `LanguageModel.make`); a stream fails with the error bare raises
 *   (`rejection`).
 *
 * @internal
 */
import type { LanguageModel, Tool } from "@effect/ai"
import { AiError } from "@effect/ai"
import { Failure } from "@rein/core"
import type { Outcome } from "@rein/core"
import { Chunk, ParseResult, Predicate } from "effect"

const wholeToolkits = new WeakMap<LanguageModel.ProviderOptions, ReadonlyArray<Tool.Any>>()

/** Records the caller's whole toolkit for a call's options (only when it offers fewer tools). @internal */
export const recordWholeToolkit = (options: LanguageModel.ProviderOptions, tools: ReadonlyArray<Tool.Any>): void => {
  if (tools.length !== options.tools.length) wholeToolkits.set(options, tools)
}

/** The caller's whole toolkit for a call's options: the offered tools unless more were recorded. @internal */
export const wholeToolkit = (options: LanguageModel.ProviderOptions): ReadonlyArray<Tool.Any> =>
  wholeToolkits.get(options) ?? options.tools

/**
 * The parts an inner `LanguageModel.make` received when its decode of them failed: its `MalformedOutput`
 * (module `LanguageModel`; `generateObject`'s parts decode says `generateText` too) caused by the
 * `ParseError` of a list of parts (an array, or a stream's chunk), whose input they are. `undefined` for
 * any other error (a vendor's own, an object that does not decode). @internal
 */
export const rejectedParts = (error: unknown): ReadonlyArray<unknown> | undefined => {
  if (!(error instanceof AiError.MalformedOutput) || error.module !== "LanguageModel") return undefined
  if (error.method !== "generateText" && error.method !== "streamText") return undefined
  if (!ParseResult.isParseError(error.cause)) return undefined
  const actual: unknown = error.cause.issue.actual
  const parts = Chunk.isChunk(actual) ? Chunk.toReadonlyArray(actual) : actual
  return Array.isArray(parts) && parts.every((part) => Predicate.hasProperty(part, "type")) ? parts : undefined
}

/** A streamed attempt whose chunk the inner decode rejected. @internal */
export const TOOL_CALL_REJECTED = new Failure.ProviderFailure({
  kind: "malformed_response",
  code: "tool_call_rejected",
  dispatched: true
})

/** A whole answer the inner decode rejected, charged the usage the vendor reported (when it did). @internal */
export const toolCallRejected = (
  usage: { readonly inputTokens: number; readonly outputTokens: number } | "unknown"
): Failure.ProviderFailure =>
  usage === "unknown"
    ? TOOL_CALL_REJECTED
    : new Failure.ProviderFailure({
      kind: "malformed_response",
      code: TOOL_CALL_REJECTED.code,
      dispatched: true,
      usage
    })

const endedRejected = (outcome: Outcome.Terminal): boolean =>
  outcome.attempts[outcome.attempts.length - 1]?.code === TOOL_CALL_REJECTED.code

const answers = new WeakMap<LanguageModel.ProviderOptions, unknown>()

/** Keeps the last rejected whole answer of a call, for the outer call if the plan ends on it. @internal */
export const keepAnswer = (options: LanguageModel.ProviderOptions, answer: unknown): void =>
  void answers.set(options, answer)

/** The rejected whole answer a call's plan ended on (`undefined` if it ended otherwise). @internal */
export const keptAnswer = (options: LanguageModel.ProviderOptions, outcome: Outcome.Terminal): unknown =>
  endedRejected(outcome) ? answers.get(options) : undefined

const rejections = new WeakMap<LanguageModel.ProviderOptions, AiError.AiError>()

/** Keeps the inner model's error for the outer stream of the call (see the module summary). @internal */
export const reject = (options: LanguageModel.ProviderOptions, error: AiError.AiError): void =>
  void rejections.set(options, error)

/**
 * The error bare raises for a call whose streamed request ended with an attempt `tool_call_rejected`: the
 * inner model's (the outer `streamText` decodes the chunk again where bare's schema differs). @internal
 */
export const rejection = (
  options: LanguageModel.ProviderOptions,
  outcome: Outcome.Terminal
): AiError.AiError | undefined => endedRejected(outcome) ? rejections.get(options) : undefined
