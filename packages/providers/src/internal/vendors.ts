/**
 * Vendor error tables: how each provider family says what went wrong in structured fields, and which
 * failure kind that is. Read are the HTTP status, the vendor's machine fields (Anthropic `error.type`,
 * OpenAI / Azure `error.code` and `error.type`, Gemini `error.status` and its typed `details`, OpenRouter's
 * numeric `error.code` and `metadata`) and the rate-limit headers — never the message prose. A vendor
 * that only says something in prose (Anthropic's "prompt is too long", Gemini's token-limit message, both
 * `invalid_request_error` / `INVALID_ARGUMENT`) stays `invalid_request`: its wording is not a contract.
 *
 * The dialect is recognised by shape, not by configuration, so one classifier serves the `@effect/ai`
 * bridge (whatever the vendor package) and the OpenAI-compatible adapter (OpenAI, Azure, OpenRouter, …).
 *
 * @internal
 */
import { Failure } from "@rein/core"
import { Either, Schema } from "effect"

type Kind = Failure.FailureKind

/** A machine code: short, no spaces. Anything else is prose and is ignored. */
const isMachineCode = (value: unknown): value is string =>
  typeof value === "string" && /^[A-Za-z0-9_.:-]{1,64}$/.test(value)

const decodeJson = Schema.decodeUnknownEither(Schema.parseJson(Schema.Unknown))

const record = (value: unknown): Readonly<Record<string, unknown>> | undefined =>
  typeof value === "object" && value !== null && !Array.isArray(value)
    ? value as Readonly<Record<string, unknown>>
    : undefined

/** Anthropic `error.type` (HTTP errors and the SSE `error` event alike). */
const ANTHROPIC: Readonly<Record<string, Kind>> = {
  invalid_request_error: "invalid_request",
  authentication_error: "authentication",
  permission_error: "permission_denied",
  not_found_error: "invalid_request",
  request_too_large: "context_length",
  billing_error: "insufficient_balance",
  rate_limit_error: "rate_limited",
  api_error: "server_error",
  // A 504 from the vendor's side is the provider failing (the taxonomy's 504 row), not Rein's own timeout.
  timeout_error: "server_error",
  overloaded_error: "overloaded"
}

/** OpenAI / Azure OpenAI `error.code`, consulted before `error.type`. */
const OPENAI_CODES: Readonly<Record<string, Kind>> = {
  insufficient_quota: "quota_exhausted",
  context_length_exceeded: "context_length",
  string_above_max_length: "context_length",
  rate_limit_exceeded: "rate_limited",
  invalid_api_key: "authentication",
  model_not_found: "invalid_request",
  content_filter: "content_filtered",
  content_policy_violation: "content_filtered",
  server_error: "server_error"
}

/** OpenAI `error.type` (Responses / chat completions, including in-stream `error` events). */
const OPENAI_TYPES: Readonly<Record<string, Kind>> = {
  invalid_request_error: "invalid_request",
  authentication_error: "authentication",
  permission_error: "permission_denied",
  rate_limit_error: "rate_limited",
  insufficient_quota: "quota_exhausted",
  server_error: "server_error",
  overloaded_error: "overloaded"
}

/** Google RPC `error.status` (Gemini). */
const GOOGLE: Readonly<Record<string, Kind>> = {
  INVALID_ARGUMENT: "invalid_request",
  FAILED_PRECONDITION: "invalid_request",
  OUT_OF_RANGE: "invalid_request",
  NOT_FOUND: "invalid_request",
  UNAUTHENTICATED: "authentication",
  PERMISSION_DENIED: "permission_denied",
  RESOURCE_EXHAUSTED: "rate_limited",
  UNAVAILABLE: "overloaded",
  INTERNAL: "server_error",
  DEADLINE_EXCEEDED: "server_error",
  UNKNOWN: "server_error"
}

/**
 * Further documented vendor codes that are kept as recorded data although neither the tables above nor
 * the core classifier (`Failure.classifierCodes`, added in `KNOWN_CODES`) decide a kind from them: OpenAI /
 * Azure `error.code` values, Anthropic error types, and Rein's own codes.
 */
const DOCUMENTED: ReadonlyArray<string> = [
  // OpenAI / Azure OpenAI `error.code` (API reference, error codes)
  "invalid_request_error",
  "invalid_prompt",
  "invalid_value",
  "invalid_type",
  "unsupported_value",
  "unsupported_parameter",
  "missing_required_parameter",
  "integer_below_min_value",
  "integer_above_max_value",
  "account_deactivated",
  "unsupported_country_region_territory",
  "DeploymentNotFound",
  "ResponsibleAIPolicyViolation",
  "ContentFilter",
  // Anthropic
  "error",
  // Rein's own codes for evidence without a vendor code
  "stream_error_event",
  "moderation"
]

const KNOWN_CODES: ReadonlySet<string> = new Set([
  ...Object.keys(ANTHROPIC),
  ...Object.keys(OPENAI_CODES),
  ...Object.keys(OPENAI_TYPES),
  ...Object.keys(GOOGLE),
  // Every code the core classifier reads (`Failure.classify`): one list, so the two cannot drift.
  ...Object.values(Failure.classifierCodes).flat(),
  ...DOCUMENTED
])

/**
 * The code written for a vendor code that is not a documented one: the field is the vendor's (or a proxy's)
 * free text, and may echo the API key or the prompt, so it is never recorded.
 *
 * @internal
 */
export const OTHER_CODE = "other"

/**
 * The code a failure records for a vendor's code: a documented code (the tables above, the core
 * classifier's `Failure.classifierCodes`, `DOCUMENTED`) or an HTTP status Rein derived (`http_503`) as is;
 * anything else is `OTHER_CODE`. Classify before this: the kind may depend on the code's exact text
 * (`Failure.classify` reads it case-insensitively).
 *
 * @internal
 */
export const recordedCode = (code: string | undefined): string | undefined =>
  code === undefined || KNOWN_CODES.has(code) || /^http_[1-5]\d\d$/.test(code) ? code : OTHER_CODE

/** What a vendor error body says, in Rein's terms. */
export interface VendorVerdict {
  readonly kind: Kind
  readonly code: string
  /** A wait hint carried in the body (Gemini `google.rpc.RetryInfo.retryDelay`). */
  readonly retryAfterMillis?: number | undefined
  /** The status the body carries when the transport had none to give (an in-stream error). */
  readonly status?: number | undefined
  /**
   * A generic field (OpenAI's `error.type`: `invalid_request_error`, `server_error`) that only decides
   * when there is no HTTP status; with one, the status is more precise (a 503 `server_error` is overload).
   */
  readonly generic?: boolean | undefined
}

const anthropic = (error: Readonly<Record<string, unknown>>): VendorVerdict | undefined => {
  const type = error.type
  if (!isMachineCode(type)) return undefined
  const kind = ANTHROPIC[type]
  return kind === undefined ? undefined : { kind, code: type }
}

/** `"37s"` / `"1.5s"` (protobuf Duration in JSON) in milliseconds. */
const protoDurationMillis = (value: unknown): number | undefined => {
  if (typeof value !== "string") return undefined
  const match = /^(\d+(?:\.\d+)?)s$/.exec(value.trim())
  return match === null ? undefined : Math.round(Number(match[1]) * 1000)
}

const detailsOf = (error: Readonly<Record<string, unknown>>, type: string): ReadonlyArray<Record<string, unknown>> =>
  Array.isArray(error.details)
    ? error.details.flatMap((d) => {
      const detail = record(d)
      return detail !== undefined && detail["@type"] === `type.googleapis.com/google.rpc.${type}` ? [detail] : []
    })
    : []

/**
 * Gemini. `RESOURCE_EXHAUSTED` is a rate limit, except when a `QuotaFailure` names a per-day quota: that
 * does not come back within any request's deadline, so it is `quota_exhausted` (fall back to another
 * credential scope, do not wait). An `ErrorInfo` reason `API_KEY_INVALID` (sent as 400 `INVALID_ARGUMENT`)
 * is an authentication failure.
 */
const google = (error: Readonly<Record<string, unknown>>): VendorVerdict | undefined => {
  const status = error.status
  if (!isMachineCode(status)) return undefined
  let kind = GOOGLE[status]
  if (kind === undefined) return undefined
  const reasons = detailsOf(error, "ErrorInfo").map((d) => d.reason).filter(isMachineCode)
  if (reasons.some((r) => r === "API_KEY_INVALID" || r === "API_KEY_EXPIRED")) kind = "authentication"
  const daily = detailsOf(error, "QuotaFailure").some((d) =>
    Array.isArray(d.violations) &&
    d.violations.some((v) => {
      const id = record(v)?.quotaId
      return typeof id === "string" && /PerDay/.test(id)
    })
  )
  if (kind === "rate_limited" && daily) kind = "quota_exhausted"
  const retryAfterMillis = detailsOf(error, "RetryInfo").map((d) => protoDurationMillis(d.retryDelay)).find((n) =>
    n !== undefined
  )
  return {
    kind,
    code: status,
    ...(retryAfterMillis !== undefined ? { retryAfterMillis } : {}),
    ...(typeof error.code === "number" ? { status: error.code } : {})
  }
}

/**
 * An HTTP status a server wrote into an error as its `code` (`503`, or `"503"`): an integer error status
 * (400–599), else not a status.
 *
 * @internal
 */
export const statusIn = (value: unknown): number | undefined => {
  const n = typeof value === "string" && /^\d{3}$/.test(value) ? Number(value) : value
  return typeof n === "number" && Number.isInteger(n) && n >= 400 && n <= 599 ? n : undefined
}

const openAi = (error: Readonly<Record<string, unknown>>): VendorVerdict | undefined => {
  const code = isMachineCode(error.code) ? error.code : undefined
  const type = isMachineCode(error.type) ? error.type : undefined
  const byCode = code === undefined ? undefined : OPENAI_CODES[code]
  if (byCode !== undefined) return { kind: byCode, code: code! }
  const byType = type === undefined ? undefined : OPENAI_TYPES[type]
  return byType === undefined ? undefined : { kind: byType, code: code ?? type!, generic: true }
}

/**
 * A numeric `error.code` that is an HTTP status: OpenRouter's shape (also inside a 200 stream), with
 * `metadata`, where a 403 with `metadata.reasons` is its moderation refusal; vLLM and llama.cpp send the
 * OpenAI shape with the status as its `code` (`{ code: 503, type: "server_error" }`), whose `type` then
 * names the failure (generic: the status decides the kind).
 */
const openRouter = (error: Readonly<Record<string, unknown>>): VendorVerdict | undefined => {
  const status = statusIn(error.code)
  if (status === undefined) return undefined
  const metadata = record(error.metadata)
  if (status === 403 && metadata !== undefined && Array.isArray(metadata.reasons)) {
    return { kind: "content_filtered", code: "moderation", status }
  }
  const named = openAi(error)
  if (named !== undefined) return { ...named, status }
  return { kind: Failure.classify({ status }), code: `http_${status}`, status }
}

/**
 * Reads a vendor error object: a whole error body (`{ error: … }`, `{ type: "error", error: … }`) or the
 * error of an in-stream event (`{ type: "overloaded_error", … }`, `{ type: "error", code, … }`).
 *
 * @internal
 */
export const verdictOf = (body: unknown): VendorVerdict | undefined => {
  const top = record(body)
  if (top === undefined) return undefined
  const inner = record(top.error)
  if (inner !== undefined) {
    // `{ type: "error", error: { type } }` is Anthropic; `{ error: { status } }` is Google; a numeric
    // `error.code` is OpenRouter; the rest is the OpenAI shape.
    if (top.type === "error" && typeof inner.type === "string") return anthropic(inner)
    return google(inner) ?? openRouter(inner) ?? openAi(inner)
  }
  // An event's own error object: Anthropic's `{ type: "overloaded_error" }`, OpenAI's `{ type: "error", code }`.
  return anthropic(top) ?? openAi(top)
}

/**
 * `verdictOf` a body text (JSON). Text that does not parse has no verdict.
 *
 * @internal
 */
export const verdictOfText = (text: string | undefined): VendorVerdict | undefined => {
  if (text === undefined || text === "") return undefined
  const decoded = decodeJson(text)
  return Either.isLeft(decoded) ? undefined : verdictOf(decoded.right)
}

const headerOf = (headers: Readonly<Record<string, string | undefined>>, name: string): string | undefined => {
  for (const key in headers) if (key.toLowerCase() === name) return headers[key]
  return undefined
}

/** OpenAI's reset durations: `"1s"`, `"6m0s"`, `"20ms"`, `"1h2m3.5s"`. */
const goDurationMillis = (text: string): number | undefined => {
  const parts = /^(?:(\d+)h)?(?:(\d+)m(?!s))?(?:(\d+(?:\.\d+)?)s)?(?:(\d+)ms)?$/.exec(text.trim())
  if (parts === null || text.trim() === "") return undefined
  const [, h, m, s, ms] = parts
  return Number(h ?? 0) * 3_600_000 + Number(m ?? 0) * 60_000 + Math.round(Number(s ?? 0) * 1000) + Number(ms ?? 0)
}

const RESET_DIMENSIONS = ["requests", "tokens", "input-tokens", "output-tokens"] as const

/** A reset further away than a day is not a wait hint (a skewed clock, a misread header). */
const MAX_RESET_MILLIS = 24 * 3_600_000

/**
 * A wait hint from the vendor's rate-limit headers, for a 429 without Retry-After: the latest reset among
 * the dimensions whose remaining count is 0. OpenAI / Azure send `x-ratelimit-remaining-*` with
 * `x-ratelimit-reset-*` as durations; Anthropic sends `anthropic-ratelimit-*-remaining` with
 * `anthropic-ratelimit-*-reset` as RFC 3339 instants (read against `nowMillis`, wall-clock).
 *
 * @internal
 */
export const rateLimitResetMillis = (
  headers: Readonly<Record<string, string | undefined>>,
  nowMillis: number
): number | undefined => {
  const waits: Array<number> = []
  for (const dimension of RESET_DIMENSIONS) {
    if (headerOf(headers, `x-ratelimit-remaining-${dimension}`)?.trim() === "0") {
      const reset = headerOf(headers, `x-ratelimit-reset-${dimension}`)
      const millis = reset === undefined ? undefined : goDurationMillis(reset)
      if (millis !== undefined) waits.push(millis)
    }
    if (headerOf(headers, `anthropic-ratelimit-${dimension}-remaining`)?.trim() === "0") {
      const reset = headerOf(headers, `anthropic-ratelimit-${dimension}-reset`)
      const at = reset === undefined ? Number.NaN : Date.parse(reset)
      if (Number.isFinite(at)) waits.push(Math.max(0, at - nowMillis))
    }
  }
  return waits.length === 0 ? undefined : Math.min(MAX_RESET_MILLIS, Math.max(...waits))
}

/**
 * A failure from an HTTP status (when there was one), the response headers and the vendor's error body.
 * The vendor table decides the kind when it knows the vendor's field; otherwise `Failure.fromEvidence`
 * classifies by status and the generic code. Wait hints: Retry-After first, then the body's (Gemini),
 * then the rate-limit reset headers on a 429.
 *
 * @internal
 */
export const failureOf = (evidence: {
  readonly status?: number | undefined
  readonly headers?: Readonly<Record<string, string | undefined>> | undefined
  readonly body: unknown
  readonly fallbackCode?: string | undefined
  readonly nowMillis: number
}): Failure.ProviderFailure => {
  const verdict = typeof evidence.body === "string" ? verdictOfText(evidence.body) : verdictOf(evidence.body)
  const headers = evidence.headers ?? {}
  const status = evidence.status ?? verdict?.status
  const decides = verdict !== undefined && !(verdict.generic === true && status !== undefined)
  // The kind is decided on the vendor's code as sent; only then is an undocumented code replaced.
  const code = decides ? verdict.code : verdict?.code ?? evidence.fallbackCode
  const kind = decides ? verdict.kind : Failure.classify({ status, code })
  const retryAfterMillis = Failure.parseRetryAfter(headers, evidence.nowMillis) ?? verdict?.retryAfterMillis ??
    (kind === "rate_limited" ? rateLimitResetMillis(headers, evidence.nowMillis) : undefined)
  return new Failure.ProviderFailure({
    kind,
    code: Failure.normaliseCode(decides ? { code: recordedCode(code) } : { status, code: recordedCode(code) }, kind),
    dispatched: true,
    ...(status !== undefined ? { status } : {}),
    ...(retryAfterMillis !== undefined ? { retryAfterMillis } : {})
  })
}
