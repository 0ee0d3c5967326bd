/**
 * What the fault server needs to know to speak one vendor's wire format: which requests are its own, how
 * a model, a streaming flag and credentials are read from them, and how answers, errors and stream events
 * are written. One module per vendor (`openaiChat`, `openaiResponses`, `anthropic`, `gemini`, `azure`,
 * `openRouter`); the server picks the first dialect that claims a request's path.
 *
 * @since 0.1.0
 */

/**
 * Why an answer ended, in the vendors' common terms (each dialect writes its own spelling: `length`,
 * `max_output_tokens`, `max_tokens`, `MAX_TOKENS`, …).
 *
 * @example
 * ```ts
 * import type { Dialect } from "@rein/providers/testing"
 *
 * const finish: Dialect.Finish = "length"
 * ```
 * @category models
 * @since 0.1.0
 */
export type Finish = "stop" | "length" | "tool_calls" | "content_filter"

/**
 * One tool call in an answer; `arguments` is the JSON text the vendor sends.
 *
 * @example
 * ```ts
 * import type { Dialect } from "@rein/providers/testing"
 *
 * const call: Dialect.ToolCall = { id: "call_1", name: "weather", arguments: "{\"city\":\"Oslo\"}" }
 * ```
 * @category models
 * @since 0.1.0
 */
export interface ToolCall {
  readonly id: string
  readonly name: string
  readonly arguments: string
}

/**
 * Token usage as the server reports it; `null` omits it.
 *
 * @example
 * ```ts
 * import type { Dialect } from "@rein/providers/testing"
 *
 * const usage: Dialect.Usage = { inputTokens: 12, outputTokens: 5 }
 * ```
 * @category models
 * @since 0.1.0
 */
export type Usage = { readonly inputTokens: number; readonly outputTokens: number } | null

/**
 * A complete answer to write.
 *
 * @example
 * ```ts
 * import type { Dialect } from "@rein/providers/testing"
 *
 * const answer: Dialect.Answer = { deltas: ["hi"], usage: null, finish: "stop", toolCalls: [] }
 * ```
 * @category models
 * @since 0.1.0
 */
export interface Answer {
  readonly deltas: ReadonlyArray<string>
  readonly usage: Usage
  readonly finish: Finish
  readonly toolCalls: ReadonlyArray<ToolCall>
}

/**
 * An error to write: the status, the vendor's machine fields, prose, headers and (Google) typed details.
 *
 * @example
 * ```ts
 * import type { Dialect } from "@rein/providers/testing"
 *
 * const error: Dialect.ErrorSpec = { status: 529, code: null, type: "overloaded_error", message: "busy" }
 * ```
 * @category models
 * @since 0.1.0
 */
export interface ErrorSpec {
  readonly status: number
  readonly code: string | null
  readonly type: string | null
  readonly message: string
  readonly details?: ReadonlyArray<unknown> | undefined
}

/**
 * SSE events of one answer: the head (before any delta), one per delta, and the tail (tool calls, finish,
 * usage, terminator). A cut stream sends head and deltas only.
 *
 * @example
 * ```ts
 * import type { Dialect } from "@rein/providers/testing"
 *
 * declare const events: Dialect.StreamEvents
 * const cut = [...events.head, ...events.deltas] // what a cut stream sends
 * ```
 * @category models
 * @since 0.1.0
 */
export interface StreamEvents {
  readonly head: ReadonlyArray<string>
  readonly deltas: ReadonlyArray<string>
  readonly tail: ReadonlyArray<string>
}

/**
 * What the server saw of a request, for a dialect to judge.
 *
 * @example
 * ```ts
 * import type { Dialect } from "@rein/providers/testing"
 *
 * const incoming: Dialect.Incoming = { path: "/v1/messages", query: {}, headers: {}, body: {} }
 * ```
 * @category models
 * @since 0.1.0
 */
export interface Incoming {
  readonly path: string
  readonly query: Readonly<Record<string, string>>
  /** Lower-case names, raw values (credentials included: the dialect checks them, never records them). */
  readonly headers: Readonly<Record<string, string>>
  readonly body: unknown
}

/**
 * A refusal the dialect writes before any scripted fault (a missing credential header or API version).
 *
 * @example
 * ```ts
 * import type { Dialect } from "@rein/providers/testing"
 *
 * const refusal: Dialect.Refusal = { status: 401, body: "{}" }
 * ```
 * @category models
 * @since 0.1.0
 */
export interface Refusal {
  readonly status: number
  readonly body: string
}

/**
 * One vendor's wire format.
 *
 * @example
 * ```ts
 * import type { Dialect } from "@rein/providers/testing"
 *
 * declare const dialect: Dialect.Dialect
 * dialect.claims("/v1/chat/completions")
 * ```
 * @category models
 * @since 0.1.0
 */
export interface Dialect {
  readonly name: string
  readonly claims: (path: string) => boolean
  /** The model a request names: from the body by default; Gemini and Azure carry it in the path. */
  readonly model?: ((request: Incoming) => string | null) | undefined
  /** Whether a request asks for SSE: `stream: true` in the body by default. */
  readonly streams?: ((request: Incoming) => boolean) | undefined
  /** Whether a streamed answer carries usage (chat completions: only on `stream_options.include_usage`). */
  readonly streamsUsage?: ((request: Incoming) => boolean) | undefined
  readonly refuse?: ((request: Incoming) => Refusal | undefined) | undefined
  readonly errorBody: (error: ErrorSpec) => string
  readonly complete: (model: string, answer: Answer) => string
  readonly events: (model: string, answer: Answer, withUsage: boolean) => StreamEvents
  /** An error event inside an SSE stream (after some deltas), in the vendor's in-stream shape. */
  readonly streamError: (error: ErrorSpec) => string
}

/**
 * One SSE event.
 *
 * @example
 * ```ts
 * import { Dialect } from "@rein/providers/testing"
 *
 * Dialect.sse({ type: "message_stop" }, "message_stop") // "event: message_stop\ndata: {…}\n\n"
 * ```
 * @category encoding
 * @since 0.1.0
 */
export const sse = (data: unknown, event?: string): string =>
  `${event === undefined ? "" : `event: ${event}\n`}data: ${typeof data === "string" ? data : JSON.stringify(data)}\n\n`

/**
 * A body field, when the body is an object that has it.
 *
 * @example
 * ```ts
 * import { Dialect } from "@rein/providers/testing"
 *
 * Dialect.field({ model: "m" }, "model") // "m"
 * ```
 * @category utils
 * @since 0.1.0
 */
export const field = (body: unknown, key: string): unknown =>
  typeof body === "object" && body !== null && key in body ? (body as Record<string, unknown>)[key] : undefined
