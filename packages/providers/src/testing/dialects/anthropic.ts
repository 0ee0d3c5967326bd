/**
 * Anthropic Messages (`POST …/messages`, `x-api-key` and `anthropic-version` headers required): `content`
 * blocks `text` and `tool_use`, `stop_reason` (`end_turn`, `max_tokens`, `tool_use`, `refusal`), `usage`;
 * SSE events `message_start`, `content_block_start` / `content_block_delta` (`text_delta`,
 * `input_json_delta`) / `content_block_stop`, `message_delta` (with `stop_reason` and output usage),
 * `message_stop`, and the in-stream `event: error` (`overloaded_error`). Errors as
 * `{ "type": "error", "error": { "type", "message" } }`: 529 `overloaded_error`, 429 `rate_limit_error`
 * with `retry-after` and `anthropic-ratelimit-*` headers.
 *
 * @since 0.1.0
 */
import type { Answer, Dialect, ErrorSpec, Incoming } from "./Dialect.js"
import { sse } from "./Dialect.js"

const STOP: Record<Answer["finish"], string> = {
  stop: "end_turn",
  length: "max_tokens",
  tool_calls: "tool_use",
  content_filter: "refusal"
}

/** The error type Anthropic sends with each status, for faults that name none. */
const TYPES: Readonly<Record<number, string>> = {
  400: "invalid_request_error",
  401: "authentication_error",
  402: "billing_error",
  403: "permission_error",
  404: "not_found_error",
  413: "request_too_large",
  429: "rate_limit_error",
  500: "api_error",
  504: "timeout_error",
  529: "overloaded_error"
}

const errorObject = (error: ErrorSpec) => ({
  type: error.code ?? error.type ?? TYPES[error.status] ?? "api_error",
  message: error.message
})

const errorBody = (error: ErrorSpec): string => JSON.stringify({ type: "error", error: errorObject(error) })

const parseInput = (json: string): unknown => {
  try {
    return JSON.parse(json)
  } catch {
    return {}
  }
}

const complete = (model: string, answer: Answer): string => {
  const text = answer.deltas.join("")
  return JSON.stringify({
    id: "msg_fault",
    type: "message",
    role: "assistant",
    model,
    content: [
      ...(text !== "" || answer.toolCalls.length === 0 ? [{ type: "text", text }] : []),
      ...answer.toolCalls.map((call) => ({
        type: "tool_use",
        id: call.id,
        name: call.name,
        input: parseInput(call.arguments)
      }))
    ],
    stop_reason: STOP[answer.finish],
    stop_sequence: null,
    usage: { input_tokens: answer.usage?.inputTokens ?? 0, output_tokens: answer.usage?.outputTokens ?? 0 }
  })
}

const events = (model: string, answer: Answer) => {
  const event = (type: string, data: object) => sse({ type, ...data }, type)
  const tools = answer.toolCalls.flatMap((call, i) => [
    event("content_block_start", {
      index: i + 1,
      content_block: { type: "tool_use", id: call.id, name: call.name, input: {} }
    }),
    event("content_block_delta", { index: i + 1, delta: { type: "input_json_delta", partial_json: call.arguments } }),
    event("content_block_stop", { index: i + 1 })
  ])
  return {
    head: [
      event("message_start", {
        message: {
          id: "msg_fault",
          type: "message",
          role: "assistant",
          model,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: { input_tokens: answer.usage?.inputTokens ?? 0, output_tokens: 0 }
        }
      }),
      event("content_block_start", { index: 0, content_block: { type: "text", text: "" } })
    ],
    deltas: answer.deltas.map((text) =>
      event("content_block_delta", { index: 0, delta: { type: "text_delta", text } })
    ),
    tail: [
      event("content_block_stop", { index: 0 }),
      ...tools,
      event("message_delta", {
        delta: { stop_reason: STOP[answer.finish], stop_sequence: null },
        usage: { output_tokens: answer.usage?.outputTokens ?? 0 }
      }),
      event("message_stop", {})
    ]
  }
}

const refuse = (request: Incoming) =>
  request.headers["anthropic-version"] === undefined
    ? {
      status: 400,
      body: errorBody({ status: 400, code: "invalid_request_error", type: null, message: "anthropic-version required" })
    }
    : request.headers["x-api-key"] === undefined
    ? {
      status: 401,
      body: errorBody({ status: 401, code: "authentication_error", type: null, message: "x-api-key required" })
    }
    : undefined

/**
 * Anthropic Messages at `…/messages`.
 *
 * @example
 * ```ts
 * import { anthropic } from "@rein/providers/testing"
 *
 * anthropic.dialect.claims("/v1/messages") // true
 * ```
 * @category dialects
 * @since 0.1.0
 */
export const dialect: Dialect = {
  name: "anthropic",
  claims: (path) => path.endsWith("/messages"),
  refuse,
  errorBody,
  complete,
  events: (model, answer) => events(model, answer),
  streamError: (error) => sse({ type: "error", error: errorObject(error) }, "error")
}

/**
 * A 429 `rate_limit_error` as Anthropic sends it: `retry-after` in seconds and the
 * `anthropic-ratelimit-requests-*` headers (remaining 0, reset at `resetAt`, an RFC 3339 instant).
 *
 * @example
 * ```ts
 * import { anthropic } from "@rein/providers/testing"
 *
 * anthropic.rateLimitHeaders({ retryAfterSeconds: 1, resetAt: "2026-01-01T00:00:01Z" })
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const rateLimitHeaders = (options: {
  readonly retryAfterSeconds?: number
  readonly resetAt: string
}): Readonly<Record<string, string>> => ({
  ...(options.retryAfterSeconds !== undefined ? { "retry-after": String(options.retryAfterSeconds) } : {}),
  "anthropic-ratelimit-requests-limit": "50",
  "anthropic-ratelimit-requests-remaining": "0",
  "anthropic-ratelimit-requests-reset": options.resetAt,
  "anthropic-ratelimit-tokens-limit": "40000",
  "anthropic-ratelimit-tokens-remaining": "39000",
  "anthropic-ratelimit-tokens-reset": options.resetAt
})
