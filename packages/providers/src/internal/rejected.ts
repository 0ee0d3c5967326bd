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
 * - an answer the inner decode still rejects is recovered from the decode's error (`rejectedParts`: the
 *   parts the vendor sent, the decode's input) and validated above Rein exactly as bare validates it, so the
 *   caller gets bare's error (or bare's answer, where the inner call could not be given the whole toolkit:
 *   `generateObject` through `LanguageModel.make`). A whole answer is a success of the attempt (its usage
 *   is settled); a stream stops at the rejected chunk, so its attempt fails `invalid_request` /
 *   `tool_call_rejected` (neither retried nor fallen back from: bare ends the call there) and the outer
 *   stream fails with the error bare raises (`rejection`).
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
  kind: "invalid_request",
  code: "tool_call_rejected",
  dispatched: true
})

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
): AiError.AiError | undefined =>
  outcome.attempts[outcome.attempts.length - 1]?.code === TOOL_CALL_REJECTED.code ? rejections.get(options) : undefined
