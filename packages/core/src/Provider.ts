/**
 * Providers are one-shot: one physical call, a typed failure, no retries inside (Rein owns every retry).
 * A provider declares `internalMaxAttempts`; anything other than 1 makes Rein refuse the request with zero
 * calls. Each attempt receives an `AttemptContext`: which attempt it is, the endpoint, the timeout it was
 * given, the deadline left and what was reserved for it.
 *
 * @since 0.1.0
 */
import type { Prompt } from "@effect/ai"
import type { Effect, Stream } from "effect"
import { Context } from "effect"
import type { Endpoint } from "./Catalog.js"
import type { ProviderFailure } from "./Failure.js"
import type { FinishReason, Reservation, ToolCall } from "./Outcome.js"
import type { Usage } from "./Usage.js"

/**
 * A tool a request offers the model. A provider-defined tool (`vendor` set, e.g. OpenAI's web search,
 * `@effect/ai` id `openai.web_search`) runs only on that vendor's endpoints: the `capable` predicate
 * excludes the others before anything is sent.
 *
 * @example
 * ```ts
 * import type { Provider } from "@rein/core"
 *
 * const tools: ReadonlyArray<Provider.Tool> = [{ name: "getWeather" }, { name: "web_search", vendor: "openai" }]
 * ```
 * @category models
 * @since 0.1.0
 */
export interface Tool {
  readonly name: string
  /** The vendor of a provider-defined tool (the catalog's `vendor`, else `provider`); absent: user-defined. */
  readonly vendor?: string | undefined
}

/**
 * Which tools the model may or must call (the `@effect/ai` shape).
 *
 * @category models
 * @since 0.1.0
 */
export type ToolChoice =
  | "auto"
  | "none"
  | "required"
  | { readonly tool: string }
  | { readonly mode?: "auto" | "required" | undefined; readonly oneOf: ReadonlyArray<string> }

/**
 * What a caller asks for. `prompt` (with `system` before it) is the shorthand for a one-message
 * conversation; `messages`, an `@effect/ai` `Prompt` (system, user, assistant and tool messages; text and
 * file parts), is the whole conversation and, when present, is what providers send. `inputTokens` is an upper bound on the prompt's tokens: without it (or a tokenizer), a hard cost or token
 * budget cannot admit anything. `maxOutputTokens` defaults to the endpoint's maximum. A request with
 * `tools` runs only on endpoints with tool support, one with `responseFormat: "json"` only on endpoints
 * with structured output. `payload` is opaque to Rein (handed to the provider as is, never journaled).
 *
 * @example
 * ```ts
 * import type { Provider } from "@rein/core"
 *
 * const request: Provider.CompletionRequest = { prompt: "Summarise …", inputTokens: 900, maxOutputTokens: 400 }
 * ```
 * @category models
 * @since 0.1.0
 */
export interface CompletionRequest {
  /** An id for journals and artifacts (generated when absent). Never the prompt. */
  readonly id?: string | undefined
  readonly prompt: string
  readonly system?: string | undefined
  /** The conversation, sent instead of `system` + `prompt` when present (never recorded). */
  readonly messages?: Prompt.Prompt | undefined
  readonly inputTokens?: number | undefined
  readonly maxOutputTokens?: number | undefined
  readonly tools?: ReadonlyArray<Tool> | undefined
  readonly toolChoice?: ToolChoice | undefined
  /** `"json"`: the answer must be a JSON object (the endpoint needs structured output). Default `"text"`. */
  readonly responseFormat?: "text" | "json" | undefined
  /** Opaque to Rein: handed to the provider as is, never recorded. */
  readonly payload?: unknown
}

/**
 * What a provider returns from one successful call.
 *
 * @category models
 * @since 0.1.0
 */
export interface ProviderResponse {
  readonly text: string
  readonly usage: Usage
  /** Why the model stopped. `"length"` is truncation: the contract's `truncation` decides what it means. */
  readonly finishReason?: FinishReason | undefined
  readonly toolCalls?: ReadonlyArray<ToolCall> | undefined
  /** Reasoning text the model returned beside its answer. */
  readonly reasoning?: ReadonlyArray<string> | undefined
  /** Opaque to Rein: handed back on the completion as is, never recorded. */
  readonly payload?: unknown
}

/**
 * One piece of a streamed answer. `delta` is caller-visible text; `usage` may arrive with the last piece.
 * A complete stream ends with a part carrying `done: true` (adapters emit `{ delta: "", usage, done: true }`
 * when they see the protocol's terminator, e.g. SSE `[DONE]`); a stream that ends without it was
 * truncated and is reported as a failure. Empty deltas never commit a stream.
 *
 * @category models
 * @since 0.1.0
 */
export interface StreamPart {
  readonly delta: string
  readonly usage?: Usage | undefined
  /** The stream's own terminator was seen (a stream that ends without it was truncated). */
  readonly done?: boolean | undefined
  /**
   * The caller sees this part: it commits the stream even with an empty `delta` (reasoning and tool-call
   * deltas). Metadata parts are not visible: they never commit. A non-empty `delta` is always visible.
   */
  readonly visible?: boolean | undefined
  /** Why the model stopped (on the last part). */
  readonly finishReason?: FinishReason | undefined
  /** Opaque to Rein: emitted with the part's event as is, never recorded. */
  readonly payload?: unknown
}

/**
 * What one attempt knows about itself. `attempt` is the logical attempt: a try after a 429 (the provider
 * refused the call, nothing was processed) is the same attempt again, so a request that met two 429s
 * before its first answer was on attempt 1 throughout. `call` is the physical call number: every call
 * counts, 429s included.
 *
 * @example
 * ```ts
 * import type { Provider } from "@rein/core"
 *
 * // An idempotency key that stays the same across rate-limited tries of one attempt.
 * const key = (request: Provider.CompletionRequest, context: Provider.AttemptContext) =>
 *   `${request.id}-${context.attempt}`
 * ```
 * @category models
 * @since 0.1.0
 */
export interface AttemptContext {
  /** The logical attempt, from 1: earlier attempts of this request that were not rate-limited, plus one. */
  readonly attempt: number
  /** The physical call, from 1: every earlier call of this request, plus one. */
  readonly call: number
  readonly endpoint: Endpoint
  readonly timeoutMillis: number
  readonly remainingMillis: number
  readonly reservation: Reservation
  /** The output bound Rein reserved for: adapters must send it as the provider's max-tokens limit. */
  readonly maxOutputTokens: number
}

/**
 * A one-shot provider.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import type { Provider } from "@rein/core"
 *
 * const echo: Provider.Provider = {
 *   internalMaxAttempts: 1,
 *   call: (request) => Effect.succeed({ text: request.prompt, usage: "unknown" })
 * }
 * ```
 * @category services
 * @since 0.1.0
 */
export interface Provider {
  /** How many times the provider's own client may try one call. Must be 1. */
  readonly internalMaxAttempts: number
  /** Results of a simulated provider are labelled simulated, and run only when the contract allows it. */
  readonly simulated?: boolean | undefined
  readonly call: (
    request: CompletionRequest,
    context: AttemptContext
  ) => Effect.Effect<ProviderResponse, ProviderFailure>
  readonly stream?:
    | ((request: CompletionRequest, context: AttemptContext) => Stream.Stream<StreamPart, ProviderFailure>)
    | undefined
}

/**
 * The providers by name (the catalog's `provider` field).
 *
 * @category services
 * @since 0.1.0
 */
export class Providers extends Context.Tag("@rein/core/Providers")<Providers, ReadonlyMap<string, Provider>>() {}
