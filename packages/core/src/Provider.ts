/**
 * Providers are one-shot: one physical call, a typed failure, no retries inside (Rein owns every retry).
 * A provider declares `internalMaxAttempts`; anything other than 1 makes Rein refuse the request with zero
 * calls. Each attempt receives an `AttemptContext`: which attempt it is, the endpoint, the timeout it was
 * given, the deadline left and what was reserved for it.
 *
 * @since 0.1.0
 */
import type { Effect, Stream } from "effect"
import { Context } from "effect"
import type { Endpoint } from "./Catalog.js"
import type { ProviderFailure } from "./Failure.js"
import type { Reservation } from "./Outcome.js"
import type { Usage } from "./Usage.js"

/**
 * What a caller asks for. `inputTokens` is an upper bound on the prompt's tokens: without it (or a
 * tokenizer), a hard cost or token budget cannot admit anything. `maxOutputTokens` defaults to the
 * endpoint's maximum.
 *
 * @example
 * ```ts
 * import type { Provider } from "@rein/core"
 *
 * const request: Provider.CompletionRequest = { prompt: "Summarise …", inputTokens: 900, maxOutputTokens: 400 }
 * ```
 * @since 0.1.0
 */
export interface CompletionRequest {
  /** An id for journals and artifacts (generated when absent). Never the prompt. */
  readonly id?: string | undefined
  readonly prompt: string
  readonly system?: string | undefined
  readonly inputTokens?: number | undefined
  readonly maxOutputTokens?: number | undefined
}

/**
 * What a provider returns from one successful call.
 *
 * @since 0.1.0
 */
export interface ProviderResponse {
  readonly text: string
  readonly usage: Usage
}

/**
 * One piece of a streamed answer. `delta` is caller-visible text; `usage` may arrive with the last piece.
 * A complete stream ends with a part carrying `done: true` (adapters emit `{ delta: "", usage, done: true }`
 * when they see the protocol's terminator, e.g. SSE `[DONE]`); a stream that ends without it was
 * truncated and is reported as a failure. Empty deltas never commit a stream.
 *
 * @since 0.1.0
 */
export interface StreamPart {
  readonly delta: string
  readonly usage?: Usage | undefined
  /** The stream's own terminator was seen (a stream that ends without it was truncated). */
  readonly done?: boolean | undefined
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
 * @since 0.1.0
 */
export class Providers extends Context.Tag("@rein/core/Providers")<Providers, ReadonlyMap<string, Provider>>() {}
