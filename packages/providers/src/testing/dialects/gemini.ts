/**
 * Google Gemini (`POST /v1beta/models/{model}:generateContent`, and `:streamGenerateContent?alt=sse` for
 * SSE): the model is in the path, the key in `x-goog-api-key` (or `?key=`); `candidates[].content.parts`
 * hold `text` and `functionCall`, `finishReason` is `STOP`, `MAX_TOKENS` or `SAFETY`, usage is
 * `usageMetadata`. A stream has no terminator: it ends after the chunk that carries `finishReason`.
 * Errors are Google RPC statuses, `{ "error": { "code": 429, "message", "status": "RESOURCE_EXHAUSTED",
 * "details": [ … google.rpc.RetryInfo / QuotaFailure / ErrorInfo … ] } }`.
 *
 * @since 0.1.0
 */
import type { Answer, Dialect, ErrorSpec, Incoming } from "./Dialect.js"
import { sse } from "./Dialect.js"

const PATH = /^\/v1beta\/models\/([^/:]+):(generateContent|streamGenerateContent)$/

const FINISH: Record<Answer["finish"], string> = {
  stop: "STOP",
  length: "MAX_TOKENS",
  tool_calls: "STOP",
  content_filter: "SAFETY"
}

const STATUS: Readonly<Record<number, string>> = {
  400: "INVALID_ARGUMENT",
  401: "UNAUTHENTICATED",
  403: "PERMISSION_DENIED",
  404: "NOT_FOUND",
  429: "RESOURCE_EXHAUSTED",
  499: "CANCELLED",
  500: "INTERNAL",
  503: "UNAVAILABLE",
  504: "DEADLINE_EXCEEDED"
}

const errorObject = (error: ErrorSpec) => ({
  code: error.status,
  message: error.message,
  status: error.code !== null && /^[A-Z_]+$/.test(error.code) ? error.code : STATUS[error.status] ?? "UNKNOWN",
  ...(error.details !== undefined ? { details: error.details } : {})
})

const errorBody = (error: ErrorSpec): string => JSON.stringify({ error: errorObject(error) })

const parseArgs = (json: string): unknown => {
  try {
    return JSON.parse(json)
  } catch {
    return {}
  }
}

const usageOf = (answer: Answer) =>
  answer.usage === null ? {} : {
    usageMetadata: {
      promptTokenCount: answer.usage.inputTokens,
      candidatesTokenCount: answer.usage.outputTokens,
      totalTokenCount: answer.usage.inputTokens + answer.usage.outputTokens
    }
  }

const candidate = (parts: ReadonlyArray<object>, finish?: string) => ({
  content: { role: "model", parts },
  ...(finish !== undefined ? { finishReason: finish } : {}),
  index: 0
})

const toolParts = (answer: Answer) =>
  answer.toolCalls.map((call) => ({ functionCall: { name: call.name, args: parseArgs(call.arguments) } }))

const complete = (model: string, answer: Answer): string => {
  const text = answer.deltas.join("")
  return JSON.stringify({
    candidates: [candidate([...(text !== "" ? [{ text }] : []), ...toolParts(answer)], FINISH[answer.finish])],
    ...usageOf(answer),
    modelVersion: model
  })
}

const events = (model: string, answer: Answer) => ({
  head: [],
  deltas: answer.deltas.map((text) => sse({ candidates: [candidate([{ text }])], modelVersion: model })),
  tail: [
    sse({
      candidates: [candidate(answer.toolCalls.length > 0 ? toolParts(answer) : [{ text: "" }], FINISH[answer.finish])],
      ...usageOf(answer),
      modelVersion: model
    })
  ]
})

const refuse = (request: Incoming) =>
  request.headers["x-goog-api-key"] === undefined && request.query.key === undefined
    ? {
      status: 403,
      body: errorBody({ status: 403, code: "PERMISSION_DENIED", type: null, message: "unregistered callers" })
    }
    : undefined

/**
 * Gemini at `/v1beta/models/{model}:generateContent` (base URL `<server.url>`).
 *
 * @example
 * ```ts
 * import { gemini } from "@rein/providers/testing"
 *
 * gemini.dialect.claims("/v1beta/models/gemini-2.5-flash:generateContent") // true
 * ```
 * @category dialects
 * @since 0.1.0
 */
export const dialect: Dialect = {
  name: "gemini",
  claims: (path) => PATH.test(path),
  model: (request) => PATH.exec(request.path)?.[1] ?? null,
  streams: (request) => PATH.exec(request.path)?.[2] === "streamGenerateContent",
  refuse,
  errorBody,
  complete,
  events: (model, answer) => events(model, answer),
  streamError: (error) => sse({ error: errorObject(error) })
}

/**
 * `google.rpc.RetryInfo`: the wait Gemini asks for, in its body rather than a header.
 *
 * @example
 * ```ts
 * import { gemini } from "@rein/providers/testing"
 *
 * gemini.retryInfo("2s")
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const retryInfo = (retryDelay: string) => ({
  "@type": "type.googleapis.com/google.rpc.RetryInfo",
  retryDelay
})

/**
 * `google.rpc.QuotaFailure` naming a quota, e.g. `GenerateRequestsPerDayPerProjectPerModel-FreeTier`.
 *
 * @example
 * ```ts
 * import { gemini } from "@rein/providers/testing"
 *
 * gemini.quotaFailure("GenerateRequestsPerDayPerProjectPerModel-FreeTier")
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const quotaFailure = (quotaId: string) => ({
  "@type": "type.googleapis.com/google.rpc.QuotaFailure",
  violations: [{ quotaMetric: "generativelanguage.googleapis.com/generate_requests", quotaId }]
})

/**
 * `google.rpc.ErrorInfo` with a machine `reason` (`API_KEY_INVALID`, …).
 *
 * @example
 * ```ts
 * import { gemini } from "@rein/providers/testing"
 *
 * gemini.errorInfo("API_KEY_INVALID")
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const errorInfo = (reason: string) => ({
  "@type": "type.googleapis.com/google.rpc.ErrorInfo",
  reason,
  domain: "googleapis.com"
})
