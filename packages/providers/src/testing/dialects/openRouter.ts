/**
 * OpenRouter (`POST /api/v1/chat/completions`): the chat-completions shape, with its own error body
 * `{ "error": { "code": <HTTP status as a number>, "message", "metadata": { "provider_name", "raw" } } }`
 * (a moderation refusal is a 403 whose `metadata.reasons` lists the flags), also sent inside a 200 SSE
 * stream when the upstream provider fails mid-answer.
 *
 * @since 0.1.0
 */
import type { Dialect, ErrorSpec } from "./Dialect.js"
import { chat } from "./openaiChat.js"

const errorBody = (error: ErrorSpec): string =>
  JSON.stringify({
    error: {
      code: error.status,
      message: error.message,
      metadata: error.type === "moderation"
        ? { reasons: ["flagged"], flagged_input: "…", provider_name: "fault", model_slug: "fault/model" }
        : { provider_name: "fault", raw: error.code }
    }
  })

/**
 * OpenRouter at `/api/v1/chat/completions` (base URL `<server.url>/api/v1`). A `Status` fault's `type:
 * "moderation"` writes the moderation metadata.
 *
 * @example
 * ```ts
 * import { openRouter } from "@rein/providers/testing"
 *
 * openRouter.dialect.claims("/api/v1/chat/completions") // true
 * ```
 * @category dialects
 * @since 0.1.0
 */
export const dialect: Dialect = chat({
  name: "openrouter",
  claims: (path) => path.startsWith("/api/v1/") && path.endsWith("/chat/completions"),
  errorBody
})
