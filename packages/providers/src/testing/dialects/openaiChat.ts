/**
 * OpenAI chat completions (`POST …/chat/completions`): `choices[].message` with `tool_calls`,
 * `finish_reason` (`stop`, `length`, `tool_calls`, `content_filter`), `usage`, SSE chunks ending in
 * `data: [DONE]` (usage only on `stream_options.include_usage`), errors as
 * `{ "error": { "message", "type", "param", "code" } }`. Azure OpenAI and OpenRouter reuse it with their
 * own paths, checks and error shapes.
 *
 * @since 0.1.0
 */
import type { Answer, Dialect, ErrorSpec, Incoming } from "./Dialect.js"
import { field, sse } from "./Dialect.js"

const usageOf = (answer: Answer) =>
  answer.usage === null ? undefined : {
    prompt_tokens: answer.usage.inputTokens,
    completion_tokens: answer.usage.outputTokens,
    total_tokens: answer.usage.inputTokens + answer.usage.outputTokens
  }

const toolCallsOf = (answer: Answer) =>
  answer.toolCalls.map((call) => ({
    id: call.id,
    type: "function",
    function: { name: call.name, arguments: call.arguments }
  }))

/**
 * The OpenAI error body.
 *
 * @example
 * ```ts
 * import { openaiChat } from "@rein/providers/testing"
 *
 * openaiChat.openAiErrorBody({ status: 429, code: "rate_limit_exceeded", type: "requests", message: "slow down" })
 * ```
 * @category encoding
 * @since 0.1.0
 */
export const openAiErrorBody = (error: ErrorSpec): string =>
  JSON.stringify({ error: { message: error.message, type: error.type, param: null, code: error.code } })

const complete = (model: string, answer: Answer): string => {
  const usage = usageOf(answer)
  return JSON.stringify({
    id: "chatcmpl-fault",
    object: "chat.completion",
    created: 0,
    model,
    choices: [{
      index: 0,
      message: {
        role: "assistant",
        content: answer.toolCalls.length > 0 && answer.deltas.join("") === "" ? null : answer.deltas.join(""),
        ...(answer.toolCalls.length > 0 ? { tool_calls: toolCallsOf(answer) } : {})
      },
      finish_reason: answer.finish
    }],
    ...(usage === undefined ? {} : { usage })
  })
}

const events = (model: string, answer: Answer, withUsage: boolean) => {
  const chunk = (delta: object, finish: string | null) =>
    sse({
      id: "chatcmpl-fault",
      object: "chat.completion.chunk",
      created: 0,
      model,
      choices: [{ index: 0, delta, finish_reason: finish }]
    })
  const usage = usageOf(answer)
  return {
    head: [chunk({ role: "assistant", content: "" }, null)],
    deltas: answer.deltas.map((d) => chunk({ content: d }, null)),
    tail: [
      ...answer.toolCalls.map((call, index) =>
        chunk({
          tool_calls: [{
            index,
            id: call.id,
            type: "function",
            function: { name: call.name, arguments: call.arguments }
          }]
        }, null)
      ),
      chunk({}, answer.finish),
      ...(withUsage && usage !== undefined
        ? [sse({ id: "chatcmpl-fault", object: "chat.completion.chunk", created: 0, model, choices: [], usage })]
        : []),
      sse("[DONE]")
    ]
  }
}

/**
 * A chat-completions dialect with its own path, checks and error shape.
 *
 * @example
 * ```ts
 * import { openaiChat } from "@rein/providers/testing"
 *
 * const local = openaiChat.chat({ name: "local", claims: (path) => path === "/openaiChat.chat/completions" })
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const chat = (options: Pick<Dialect, "name" | "claims"> & Partial<Dialect>): Dialect => ({
  errorBody: openAiErrorBody,
  complete,
  events,
  streamsUsage: (request: Incoming) => field(field(request.body, "stream_options"), "include_usage") === true,
  streamError: (error) => sse({ error: JSON.parse(options.errorBody?.(error) ?? openAiErrorBody(error)).error }),
  ...options
})

/**
 * OpenAI chat completions at `…/chat/completions`.
 *
 * @example
 * ```ts
 * import { openaiChat } from "@rein/providers/testing"
 *
 * openaiChat.dialect.claims("/v1/chat/completions") // true
 * ```
 * @category dialects
 * @since 0.1.0
 */
export const dialect: Dialect = chat({ name: "openai-chat", claims: (path) => path.endsWith("/chat/completions") })

/**
 * OpenAI's rate-limit headers (also Azure's): `x-ratelimit-limit-*`, `x-ratelimit-remaining-*` and
 * `x-ratelimit-reset-*` (durations such as `1s`, `6m0s`, `20ms`) for requests and tokens; `exhausted`
 * names the dimension whose remaining count is 0.
 *
 * @example
 * ```ts
 * import { openaiChat } from "@rein/providers/testing"
 *
 * openaiChat.rateLimitHeaders({ exhausted: "tokens", reset: "1m6.5s" })
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const rateLimitHeaders = (options: {
  readonly exhausted: "requests" | "tokens"
  readonly reset: string
}): Readonly<Record<string, string>> => ({
  "x-ratelimit-limit-requests": "500",
  "x-ratelimit-remaining-requests": options.exhausted === "requests" ? "0" : "12",
  "x-ratelimit-reset-requests": options.exhausted === "requests" ? options.reset : "20ms",
  "x-ratelimit-limit-tokens": "30000",
  "x-ratelimit-remaining-tokens": options.exhausted === "tokens" ? "0" : "29000",
  "x-ratelimit-reset-tokens": options.exhausted === "tokens" ? options.reset : "20ms"
})
