/**
 * Shared HTTP classification for the adapters: structured evidence only (status, provider error code from
 * the JSON body, errno from the socket error), never message prose.
 *
 * @internal
 */
import type { HttpClientError } from "@effect/platform"
import type { HttpClientResponse } from "@effect/platform"
import { Failure } from "@rein/core"
import { Clock, Effect, Either, Option, Schema } from "effect"
import * as Vendors from "./vendors.js"

/** A machine code: short, no spaces. Anything else in a `code` field is prose and is ignored. @internal */
const MachineCode = Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9_.:-]{1,64}$/))

const ErrorDetail = Schema.Struct({
  code: Schema.optional(Schema.Unknown),
  type: Schema.optional(Schema.Unknown)
})

/**
 * Error bodies as OpenAI (`{ error: { code, type } }`), Anthropic (`{ type: "error", error: { type } }`)
 * and compatible servers (`{ code, type }` at the top level) send them.
 *
 * @internal
 */
const ErrorBody = Schema.parseJson(Schema.Struct({
  error: Schema.optional(Schema.Union(ErrorDetail, Schema.Unknown)),
  code: Schema.optional(Schema.Unknown),
  type: Schema.optional(Schema.Unknown)
}))

const decodeErrorBody = Schema.decodeUnknownEither(ErrorBody)
const isMachineCode = Schema.is(MachineCode)

const pick = (...candidates: ReadonlyArray<unknown>): string | undefined => {
  for (const c of candidates) if (isMachineCode(c)) return c
  return undefined
}

/**
 * The provider's machine error code from an error body: `error.code`, else `error.type`, else the top-level
 * `code` / `type`. A generic type (`error`, `invalid_request_error`) is kept: it classifies by status anyway.
 *
 * @internal
 */
export const codeFromBody = (text: string | undefined): string | undefined => {
  if (text === undefined || text === "") return undefined
  const decoded = decodeErrorBody(text)
  if (Either.isLeft(decoded)) return undefined
  const body = decoded.right
  const detail = typeof body.error === "object" && body.error !== null
    ? body.error as { readonly code?: unknown; readonly type?: unknown }
    : {}
  return pick(detail.code, detail.type, body.code, body.type === "error" ? undefined : body.type)
}

const ERRNO = /^[A-Z][A-Z0-9_]{1,40}$/

/**
 * The system error code (`ECONNREFUSED`, `ECONNRESET`, …) of a transport error, looking through `cause`
 * chains. Only the structured `code` property is read.
 *
 * @internal
 */
export const errnoOf = (cause: unknown, depth = 0): string | undefined => {
  if (depth > 5 || typeof cause !== "object" || cause === null) return undefined
  const code = (cause as { readonly code?: unknown }).code
  if (typeof code === "string" && ERRNO.test(code)) return code
  return errnoOf((cause as { readonly cause?: unknown }).cause, depth + 1)
}

/**
 * Errors that happen before a request could have been sent: the connection never opened.
 *
 * @internal
 */
export const CONNECT_PHASE = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EADDRNOTAVAIL",
  "UND_ERR_CONNECT_TIMEOUT",
  "CERT_HAS_EXPIRED",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "ERR_TLS_CERT_ALTNAME_INVALID"
])

/**
 * A failure from a transport-level error (no HTTP status). Connect-phase errors are not dispatched.
 *
 * @internal
 */
export const fromTransport = (errno: string | undefined): Failure.ProviderFailure =>
  Failure.fromEvidence(
    { errno: errno ?? "ECONNRESET" },
    { dispatched: errno === undefined || !CONNECT_PHASE.has(errno) }
  )

/**
 * A failure from a platform `RequestError`: `Transport` → by errno; `InvalidUrl` / `Encode` → the request
 * never left (`invalid_request`, not dispatched).
 *
 * @internal
 */
export const fromRequestError = (error: HttpClientError.RequestError): Failure.ProviderFailure =>
  error.reason === "Transport"
    ? fromTransport(errnoOf(error.cause))
    : Failure.fromEvidence({ status: 400, code: `request_${error.reason.toLowerCase()}` }, { dispatched: false })

/**
 * A failure from an HTTP status, its headers (Retry-After) and its body text (the provider code).
 *
 * @internal
 */
export const fromStatus = (
  status: number,
  headers: Readonly<Record<string, string | undefined>>,
  bodyText: string | undefined
): Effect.Effect<Failure.ProviderFailure> =>
  Effect.map(
    Clock.currentTimeMillis,
    (nowMillis) =>
      Vendors.failureOf({ status, headers, body: bodyText, fallbackCode: codeFromBody(bodyText), nowMillis })
  )

/**
 * A failure from an error inside a 2xx stream (an SSE `data:` with an `error` object: OpenAI, Azure, and
 * OpenRouter with its numeric status code), by the vendor tables.
 *
 * @internal
 */
export const fromStreamError = (data: string): Effect.Effect<Failure.ProviderFailure> =>
  Effect.map(
    Clock.currentTimeMillis,
    (nowMillis) => Vendors.failureOf({ body: data, fallbackCode: codeFromBody(data), nowMillis })
  )

/** The largest error body read for classification; the rest is never read. @internal */
const MAX_ERROR_BODY = 64 * 1024

/**
 * Reads a non-2xx response and classifies it. A body that cannot be read still classifies by status.
 *
 * @internal
 */
export const fromErrorResponse = (
  response: HttpClientResponse.HttpClientResponse
): Effect.Effect<Failure.ProviderFailure> =>
  Effect.flatMap(
    Effect.option(response.text),
    (text) =>
      fromStatus(
        response.status,
        response.headers,
        Option.getOrUndefined(Option.map(text, (t) => t.slice(0, MAX_ERROR_BODY)))
      )
  )

/**
 * Reads a 2xx body as text. A read that fails is a transport failure after dispatch (the socket went away
 * mid-body), never a malformed response.
 *
 * @internal
 */
export const readBody = (
  response: HttpClientResponse.HttpClientResponse
): Effect.Effect<string, Failure.ProviderFailure> =>
  Effect.mapError(response.text, (error) => fromTransport(errnoOf(error.cause)))

/**
 * A 2xx body that did not decode.
 *
 * @internal
 */
export const malformed = (status: number, code: string): Failure.ProviderFailure =>
  Failure.fromEvidence({ status, code, malformed: true }, { dispatched: true })

/**
 * A usage pair, or `"unknown"` unless both numbers are present.
 *
 * @internal
 */
export const usageOf = (
  input: number | null | undefined,
  output: number | null | undefined
): { readonly inputTokens: number; readonly outputTokens: number } | "unknown" =>
  typeof input === "number" && typeof output === "number" && Number.isFinite(input) && Number.isFinite(output)
    ? { inputTokens: input, outputTokens: output }
    : "unknown"
