/**
 * The failure taxonomy. Every provider failure is classified into exactly one kind, from structured data
 * only (HTTP status, provider error codes, exception types), never from message prose. The kind decides,
 * through one table, whether the same endpoint may be retried, whether another endpoint may be tried, and
 * whether the failure counts against the endpoint's health.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"

/**
 * The kinds of provider failure.
 *
 * @example
 * ```ts
 * import { Failure } from "@rein/core"
 *
 * const kind: Failure.FailureKind = "rate_limited"
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const FailureKind = Schema.Literal(
  "timeout",
  "transport",
  "rate_limited",
  "overloaded",
  "server_error",
  "malformed_response",
  "context_length",
  "truncated",
  "content_filtered",
  "authentication",
  "permission_denied",
  "insufficient_balance",
  "quota_exhausted",
  "invalid_request",
  "unknown"
)

/**
 * @category models
 * @since 0.1.0
 */
export type FailureKind = typeof FailureKind.Type

/**
 * Where a fallback may go after a failure of a given kind.
 *
 * - `any`: any other legal candidate;
 * - `larger_window`: only a candidate with a larger context window than the one that failed;
 * - `larger_output`: only a candidate with a larger output limit than the one that failed (the limit it
 *   would be sent: a request's own bound is the same for all, so under one there is no such candidate);
 * - `other_scope`: only a candidate with another credential scope;
 * - `none`: nowhere.
 *
 * @category schemas
 * @since 0.1.0
 */
export const FallbackRule = Schema.Literal("any", "larger_window", "larger_output", "other_scope", "none")

/**
 * @category models
 * @since 0.1.0
 */
export type FallbackRule = typeof FallbackRule.Type

/**
 * One row of the failure table: whether the kind is retried, where it may fall back, and whether it is
 * provider-attributed (counts against the endpoint's health).
 *
 * @example
 * ```ts
 * import { Schema } from "effect"
 * import { Failure } from "@rein/core"
 *
 * const rule = Schema.decodeUnknownSync(Failure.Rule)({ retry: true, fallback: "any", health: true })
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const Rule = Schema.Struct({
  retry: Schema.Boolean,
  fallback: FallbackRule,
  health: Schema.Boolean
})

/**
 * @category models
 * @since 0.1.0
 */
export interface Rule extends Schema.Schema.Type<typeof Rule> {}

/**
 * The default failure table of the design. A contract may narrow it, and may widen retry only to
 * `malformed_response` and `content_filtered` (and fallback only to `content_filtered`).
 *
 * @example
 * ```ts
 * import { Failure } from "@rein/core"
 *
 * Failure.defaultTable.rate_limited // { retry: true, fallback: "any", health: true }
 * ```
 * @category defaults
 * @since 0.1.0
 */
export const defaultTable: { readonly [K in FailureKind]: Rule } = {
  timeout: { retry: true, fallback: "any", health: false },
  transport: { retry: true, fallback: "any", health: false },
  rate_limited: { retry: true, fallback: "any", health: true },
  overloaded: { retry: true, fallback: "any", health: true },
  server_error: { retry: true, fallback: "any", health: true },
  malformed_response: { retry: false, fallback: "any", health: true },
  context_length: { retry: false, fallback: "larger_window", health: false },
  // The answer was cut at the output limit: the same endpoint would cut it again.
  truncated: { retry: false, fallback: "larger_output", health: false },
  content_filtered: { retry: false, fallback: "none", health: false },
  authentication: { retry: false, fallback: "other_scope", health: false },
  permission_denied: { retry: false, fallback: "other_scope", health: false },
  insufficient_balance: { retry: false, fallback: "other_scope", health: false },
  quota_exhausted: { retry: false, fallback: "other_scope", health: false },
  invalid_request: { retry: false, fallback: "none", health: false },
  unknown: { retry: false, fallback: "none", health: false }
}

/**
 * Kinds a contract may add to the retry set (everything else can only be narrowed).
 *
 * @category schemas
 * @since 0.1.0
 */
export const RetryWidenable = Schema.Literal("malformed_response", "content_filtered")

/**
 * Kinds a contract may add to the fallback set.
 *
 * @category schemas
 * @since 0.1.0
 */
export const FallbackWidenable = Schema.Literal("content_filtered")

/**
 * A failure as a provider reports it: one physical attempt failed. Carries no message text on purpose:
 * provider prose may hold prompts or secrets and is never recorded. `code` is a normalised machine code
 * (`http_503`, `context_length_exceeded`, `ECONNRESET`), `dispatched` says whether the request may have
 * reached the provider (a connect-phase failure is `false` and costs nothing).
 *
 * @example
 * ```ts
 * import { Failure } from "@rein/core"
 *
 * const failure = new Failure.ProviderFailure({ kind: "overloaded", code: "http_503", dispatched: true })
 * ```
 * @category errors
 * @since 0.1.0
 */
export class ProviderFailure extends Schema.TaggedError<ProviderFailure>()("ProviderFailure", {
  kind: FailureKind,
  code: Schema.String,
  dispatched: Schema.Boolean,
  status: Schema.optional(Schema.Number),
  retryAfterMillis: Schema.optional(Schema.Number),
  usage: Schema.optional(Schema.Struct({ inputTokens: Schema.Number, outputTokens: Schema.Number }))
}) {}

/**
 * Structured evidence about a failure: everything classification may look at. Message prose is
 * deliberately absent.
 *
 * @category models
 * @since 0.1.0
 */
export interface Evidence {
  /** HTTP status, when there was a response. */
  readonly status?: number | undefined
  /** The provider's machine error code or type (`context_length_exceeded`, `insufficient_quota`, …). */
  readonly code?: string | undefined
  /** A Node / system error code (`ECONNREFUSED`, `ECONNRESET`, `ETIMEDOUT`, …). */
  readonly errno?: string | undefined
  /** The body was received but could not be decoded. */
  readonly malformed?: boolean | undefined
}

/**
 * The provider error codes `classify` reads, by the kind each one decides: the codes Rein knows the meaning
 * of, whichever vendor sends them. `classify` matches them case-insensitively (they are listed in lower
 * case). The codes of `context_length`, `quota_exhausted`, `insufficient_balance` and `content_filtered`
 * decide before the HTTP status; the others only when no status decided (a 503 `rate_limit_error` is
 * `overloaded`). An adapter that records a vendor's code only when it is a known one, never the vendor's
 * free text, reads its list from here, so a code the classifier learns is recorded as itself too. Frozen,
 * and `classify` reads its own copy: the export is for reading only.
 *
 * @example
 * ```ts
 * import { Failure } from "@rein/core"
 *
 * Failure.classifierCodes.context_length.includes("context_length_exceeded") // true
 * const known: ReadonlyArray<string> = Object.values(Failure.classifierCodes).flat()
 * ```
 * @category classification
 * @since 0.1.0
 */
export const classifierCodes: {
  readonly context_length: ReadonlyArray<string>
  readonly quota_exhausted: ReadonlyArray<string>
  readonly insufficient_balance: ReadonlyArray<string>
  readonly content_filtered: ReadonlyArray<string>
  readonly rate_limited: ReadonlyArray<string>
  readonly overloaded: ReadonlyArray<string>
  readonly authentication: ReadonlyArray<string>
  readonly permission_denied: ReadonlyArray<string>
} = Object.freeze({
  context_length: Object.freeze([
    "context_length_exceeded",
    "context_window_exceeded",
    "string_above_max_length",
    "max_tokens_exceeded",
    "request_too_large"
  ]),
  quota_exhausted: Object.freeze([
    "insufficient_quota",
    "quota_exceeded",
    "quota_exhausted",
    "billing_hard_limit_reached"
  ]),
  insufficient_balance: Object.freeze([
    "insufficient_balance",
    "insufficient_funds",
    "payment_required",
    "billing_not_active"
  ]),
  content_filtered: Object.freeze([
    "content_filter",
    "content_policy_violation",
    "content_filtered",
    "safety",
    "refusal"
  ]),
  rate_limited: Object.freeze(["rate_limit_exceeded", "rate_limit_error", "too_many_requests"]),
  overloaded: Object.freeze(["overloaded_error", "overloaded", "server_overloaded", "engine_overloaded"]),
  authentication: Object.freeze(["invalid_api_key", "authentication_error", "unauthorized"]),
  permission_denied: Object.freeze(["permission_error", "permission_denied", "forbidden"])
})

const CONTEXT_CODES: ReadonlySet<string> = new Set(classifierCodes.context_length)
const QUOTA_CODES: ReadonlySet<string> = new Set(classifierCodes.quota_exhausted)
const BALANCE_CODES: ReadonlySet<string> = new Set(classifierCodes.insufficient_balance)
const FILTER_CODES: ReadonlySet<string> = new Set(classifierCodes.content_filtered)
const RATE_CODES: ReadonlySet<string> = new Set(classifierCodes.rate_limited)
const OVERLOAD_CODES: ReadonlySet<string> = new Set(classifierCodes.overloaded)
const AUTH_CODES: ReadonlySet<string> = new Set(classifierCodes.authentication)
const PERMISSION_CODES: ReadonlySet<string> = new Set(classifierCodes.permission_denied)
const TRANSPORT_ERRNOS = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EPIPE",
  "ECONNABORTED",
  "UND_ERR_SOCKET",
  "UND_ERR_CONNECT_TIMEOUT",
  "CERT_HAS_EXPIRED",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "ERR_TLS_CERT_ALTNAME_INVALID"
])

/**
 * Classifies structured evidence into a failure kind. Provider codes are consulted before the status
 * (a 400 with `context_length_exceeded` is `context_length`, a 429 with `insufficient_quota` is
 * `quota_exhausted`); anything unrecognised is `unknown`, which is never retried nor fallen back from.
 *
 * @example
 * ```ts
 * import { Failure } from "@rein/core"
 *
 * Failure.classify({ status: 429 })                                // "rate_limited"
 * Failure.classify({ status: 400, code: "context_length_exceeded" }) // "context_length"
 * Failure.classify({ errno: "ECONNRESET" })                        // "transport"
 * ```
 * @category classification
 * @since 0.1.0
 */
export const classify = (evidence: Evidence): FailureKind => {
  const code = evidence.code?.toLowerCase()
  if (code !== undefined) {
    if (CONTEXT_CODES.has(code)) return "context_length"
    if (QUOTA_CODES.has(code)) return "quota_exhausted"
    if (BALANCE_CODES.has(code)) return "insufficient_balance"
    if (FILTER_CODES.has(code)) return "content_filtered"
  }
  if (evidence.errno !== undefined && TRANSPORT_ERRNOS.has(evidence.errno)) return "transport"
  if (evidence.errno === "ETIMEDOUT") return "timeout"
  const status = evidence.status
  if (status !== undefined) {
    if (status >= 200 && status < 300) return evidence.malformed === true ? "malformed_response" : "unknown"
    switch (status) {
      case 401:
        return "authentication"
      case 402:
        return "insufficient_balance"
      case 403:
        return "permission_denied"
      case 408:
        return "timeout"
      case 413:
        return "context_length"
      case 429:
        return "rate_limited"
      case 500:
      case 502:
      case 504:
        return "server_error"
      case 503:
      case 529:
        return "overloaded"
    }
    if (status >= 400 && status < 500) return "invalid_request"
    if (status >= 500 && status < 600) return "server_error"
  }
  if (code !== undefined) {
    if (RATE_CODES.has(code)) return "rate_limited"
    if (OVERLOAD_CODES.has(code)) return "overloaded"
    if (AUTH_CODES.has(code)) return "authentication"
    if (PERMISSION_CODES.has(code)) return "permission_denied"
  }
  if (evidence.malformed === true) return "malformed_response"
  return "unknown"
}

/**
 * A normalised machine code for a failure: the provider code when known, else `http_<status>`, else the
 * errno, else the kind. Always short ASCII; never provider prose.
 *
 * @category classification
 * @since 0.1.0
 */
export const normaliseCode = (evidence: Evidence, kind: FailureKind): string => {
  const raw = evidence.code ?? (evidence.status !== undefined ? `http_${evidence.status}` : evidence.errno) ?? kind
  return raw.replace(/[^A-Za-z0-9_.:-]/g, "_").slice(0, 64)
}

/**
 * Parses a server's wait hint, in milliseconds: `retry-after-ms` first, then `retry-after` as seconds or
 * as an HTTP date (relative to `nowMillis`, wall-clock). Negative, `NaN` or unparsable values are ignored;
 * a past date is 0; a value too large for a number is the largest safe integer. Header names are matched
 * case-insensitively. No form is capped here: the executor clamps every hint, whichever form and whichever
 * provider it came from, to the contract's `retry.maxRetryAfter` (10 minutes by default).
 *
 * @example
 * ```ts
 * import { Failure } from "@rein/core"
 *
 * Failure.parseRetryAfter({ "retry-after": "2" }, 0)       // 2000
 * Failure.parseRetryAfter({ "retry-after-ms": "300" }, 0)  // 300
 * ```
 * @category classification
 * @since 0.1.0
 */
export const parseRetryAfter = (
  headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>,
  nowMillis: number
): number | undefined => {
  let ms: string | undefined
  let seconds: string | undefined
  for (const key in headers) {
    const value = headers[key]
    const text = Array.isArray(value) ? value[0] : value
    if (typeof text !== "string") continue
    const lower = key.toLowerCase()
    if (lower === "retry-after-ms") ms = text
    else if (lower === "retry-after") seconds = text
  }
  if (ms !== undefined) {
    const n = Number(ms.trim())
    if (ms.trim() !== "" && n >= 0) return finite(n)
  }
  if (seconds !== undefined) {
    const trimmed = seconds.trim()
    if (/^\d+(\.\d+)?$/.test(trimmed)) return finite(Number(trimmed) * 1000)
    const date = Date.parse(trimmed)
    if (Number.isFinite(date) && /[a-z]/i.test(trimmed)) return finite(Math.max(0, date - nowMillis))
  }
  return undefined
}

const finite = (millis: number): number => Math.min(millis, Number.MAX_SAFE_INTEGER)

/**
 * Builds a `ProviderFailure` from structured evidence: the one way adapters should make failures.
 *
 * @example
 * ```ts
 * import { Failure } from "@rein/core"
 *
 * const failure = Failure.fromEvidence({ status: 503 }, { dispatched: true })
 * failure.kind // "overloaded"
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const fromEvidence = (
  evidence: Evidence,
  options: {
    readonly dispatched: boolean
    readonly retryAfterMillis?: number | undefined
    readonly usage?: { readonly inputTokens: number; readonly outputTokens: number } | undefined
  }
): ProviderFailure => {
  const kind = classify(evidence)
  return new ProviderFailure({
    kind,
    code: normaliseCode(evidence, kind),
    dispatched: options.dispatched,
    ...(evidence.status !== undefined ? { status: evidence.status } : {}),
    ...(options.retryAfterMillis !== undefined ? { retryAfterMillis: options.retryAfterMillis } : {}),
    ...(options.usage !== undefined ? { usage: options.usage } : {})
  })
}
