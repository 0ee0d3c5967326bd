/**
 * Azure OpenAI chat completions: `POST /openai/deployments/{deployment}/chat/completions?api-version=…`
 * with the key in the `api-key` header (not a bearer token); the deployment names the model. The server
 * checks both: no `api-version` is a 404, no `api-key` a 401, in Azure's error shape
 * `{ "error": { "code": "<status or code>", "message" } }`.
 *
 * @since 0.1.0
 */
import type { Dialect, ErrorSpec, Incoming } from "./Dialect.js"
import { chat } from "./openaiChat.js"

const DEPLOYMENT = /^\/openai\/deployments\/([^/]+)\/chat\/completions$/

const errorBody = (error: ErrorSpec): string =>
  JSON.stringify({
    error: {
      code: error.code ?? String(error.status),
      message: error.message,
      ...(error.type !== null ? { type: error.type } : {}),
      param: null
    }
  })

const refuse = (request: Incoming) =>
  request.query["api-version"] === undefined || request.query["api-version"] === ""
    ? { status: 404, body: errorBody({ status: 404, code: "404", type: null, message: "Resource not found" }) }
    : request.headers["api-key"] === undefined || request.headers["api-key"] === ""
    ? {
      status: 401,
      body: errorBody({ status: 401, code: "401", type: null, message: "Access denied: missing api-key header" })
    }
    : undefined

/**
 * Azure OpenAI deployments (base `<server.url>/openai/deployments/<deployment>`).
 *
 * @example
 * ```ts
 * import { azure } from "@rein/providers/testing"
 *
 * azure.dialect.claims("/openai/deployments/gpt4o/chat/completions") // true
 * ```
 * @category dialects
 * @since 0.1.0
 */
export const dialect: Dialect = chat({
  name: "azure",
  claims: (path) => DEPLOYMENT.test(path),
  model: (request) => decodeURIComponent(DEPLOYMENT.exec(request.path)?.[1] ?? ""),
  refuse,
  errorBody
})
