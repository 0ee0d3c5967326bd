/**
 * Shared HTTP classification for the adapters: structured evidence only (status, provider error code from
 * the JSON body, errno from the socket error), never message prose.
 *
 * @internal
 */
import * as Sse from "@effect/experimental/Sse"
import type { HttpClientError } from "@effect/platform"
import type { HttpClientResponse } from "@effect/platform"
import { Failure } from "@rein/core"
import { Clock, Effect, Either, Option, Schema, Stream } from "effect"
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
const ErrorBody = Schema.Struct({
  error: Schema.optional(Schema.Union(ErrorDetail, Schema.Unknown)),
  code: Schema.optional(Schema.Unknown),
  type: Schema.optional(Schema.Unknown)
})

const decodeErrorBody = Schema.decodeUnknownEither(ErrorBody)
const decodeJson = Schema.decodeUnknownEither(Schema.parseJson())
const isMachineCode = Schema.is(MachineCode)

const pick = (...candidates: ReadonlyArray<unknown>): string | undefined => {
  for (const c of candidates) if (isMachineCode(c)) return c
  return undefined
}

/**
 * The structured evidence of a decoded error body: the provider's machine code (`error.code`, else `error.type`,
 * else the top-level `code` / `type`; a generic type such as `error` is kept, it classifies by status
 * anyway) and the HTTP status the server wrote into it as a number (`"code": 503`), as vLLM and llama.cpp
 * do in errors sent inside a stream.
 *
 * @internal
 */
export const evidenceOf = (value: unknown): { readonly status?: number; readonly code?: string } => {
  const decoded = decodeErrorBody(value)
  if (Either.isLeft(decoded)) return {}
  const body = decoded.right
  const detail = typeof body.error === "object" && body.error !== null
    ? body.error as { readonly code?: unknown; readonly type?: unknown }
    : {}
  const code = pick(detail.code, detail.type, body.code, body.type === "error" ? undefined : body.type)
  const status = Vendors.statusIn(detail.code) ?? Vendors.statusIn(body.code)
  return { ...(status !== undefined ? { status } : {}), ...(code !== undefined ? { code } : {}) }
}

/**
 * `evidenceOf` the JSON text of an error body; text that is not JSON is no evidence.
 *
 * @internal
 */
export const evidenceFromBody = (text: string | undefined): { readonly status?: number; readonly code?: string } => {
  if (text === undefined || text === "") return {}
  const json = decodeJson(text)
  return Either.isLeft(json) ? {} : evidenceOf(json.right)
}

/**
 * The provider's machine error code from an error body (see `evidenceOf`).
 *
 * @internal
 */
export const codeFromBody = (text: string | undefined): string | undefined => evidenceFromBody(text).code

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
 * The HTTP parser refused the response's headers as too large (Node's `--max-http-header-size`, 16 KiB by
 * default; undici's `maxHeaderSize`): absurd headers cost that bound, never more. The response arrived
 * and was unusable: a malformed response, not a transport failure.
 *
 * @internal
 */
const HEADER_OVERFLOW = new Set(["HPE_HEADER_OVERFLOW", "UND_ERR_HEADERS_OVERFLOW"])

/**
 * A failure from a transport-level error (no HTTP status). Connect-phase errors are not dispatched; headers
 * over the parser's bound are `malformed_response` / `headers_too_large`.
 *
 * @internal
 */
export const fromTransport = (errno: string | undefined): Failure.ProviderFailure =>
  errno !== undefined && HEADER_OVERFLOW.has(errno)
    ? Failure.fromEvidence({ code: "headers_too_large", malformed: true }, { dispatched: true })
    : Failure.fromEvidence(
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
 * A failure from an error sent inside a stream whose HTTP status was 2xx (the event's JSON text, or the
 * decoded error `@effect/ai` hands over), classified like the same error sent as an HTTP status: the
 * vendor tables decide from the structured fields (Anthropic `overloaded_error`, an OpenAI / Azure `code`,
 * Gemini's `status`, OpenRouter's numeric code), and an HTTP status the server wrote into the error as its
 * `code` (`503`, as vLLM and llama.cpp do; see `evidenceOf`) counts as that status. Never the prose; an
 * error with neither status nor code is `unknown` / `stream_error_event`.
 *
 * @internal
 */
export const fromStreamError = (error: unknown): Effect.Effect<Failure.ProviderFailure> =>
  Effect.map(Clock.currentTimeMillis, (nowMillis) => {
    const evidence = typeof error === "string" ? evidenceFromBody(error) : evidenceOf(error)
    return Vendors.failureOf({
      status: evidence.status,
      body: error,
      fallbackCode: evidence.code ?? "stream_error_event",
      nowMillis
    })
  })

/**
 * The largest error body read for classification. Reading stops there and the connection is closed (the
 * caller's request scope aborts it): the rest is never transferred.
 *
 * @internal
 */
export const MAX_ERROR_BODY = 64 * 1024

/**
 * The default bound of an answer: a whole non-streamed body, one event of a stream, the text of a streamed
 * answer. Over it the call fails `malformed_response` / `body_too_large`.
 *
 * @internal
 */
export const DEFAULT_MAX_RESPONSE_BYTES = 8 * 1024 * 1024

/** A valid byte bound: a positive integer. @internal */
export const isByteBound = (n: unknown): n is number => typeof n === "number" && Number.isSafeInteger(n) && n > 0

/** The code of an answer over its byte bound. @internal */
export const BODY_TOO_LARGE = "body_too_large"

/** A body read up to a bound: its text and whether it ended within the bound. @internal */
export interface Bounded {
  readonly text: string
  readonly complete: boolean
}

/**
 * Reads a body stream up to `limit` bytes and stops pulling there: a body over the bound costs `limit`
 * bytes, whatever its size. `complete` is false when bytes beyond `limit` arrived; the first `limit` bytes
 * are then the text with `truncated: "keep"` (an error body, read for its code), else dropped unread.
 *
 * @internal
 */
export const readAtMost = <E>(
  body: Stream.Stream<Uint8Array, E>,
  limit: number,
  truncated: "keep" | "drop"
): Effect.Effect<Bounded, E> =>
  Effect.suspend(() => {
    const parts: Array<Uint8Array> = []
    let size = 0
    let over = false
    return body.pipe(
      Stream.runForEachWhile((chunk) =>
        Effect.sync(() => {
          const room = limit - size
          if (chunk.length > room) {
            parts.push(chunk.subarray(0, room))
            size = limit
            over = true
            return false
          }
          parts.push(chunk)
          size += chunk.length
          return true
        })
      ),
      Effect.map(() => {
        if (over && truncated === "drop") return { text: "", complete: false }
        const bytes = new Uint8Array(size)
        let at = 0
        for (const part of parts) {
          bytes.set(part, at)
          at += part.length
        }
        return { text: new TextDecoder().decode(bytes), complete: !over }
      })
    )
  })

/**
 * Bounds each event of an SSE byte stream (the bytes since the last blank line, any line ending) to `limit`:
 * over it the stream fails with `onTooLarge()` before the oversized event reaches a parser, so a single
 * endless line or event costs at most `limit` bytes.
 *
 * @internal
 */
export const boundEvents =
  <E2>(limit: number, onTooLarge: () => E2) =>
  <E>(body: Stream.Stream<Uint8Array, E>): Stream.Stream<Uint8Array, E | E2> =>
    Stream.suspend(() => {
      let size = 0
      let lineStart = true
      let afterCr = false
      return Stream.mapEffect(body, (chunk) => {
        for (let i = 0; i < chunk.length; i++) {
          const byte = chunk[i]!
          if (byte === 10 && afterCr) {
            afterCr = false
            continue
          }
          afterCr = byte === 13
          if (byte === 10 || byte === 13) {
            if (lineStart) size = 0
            lineStart = true
          } else {
            lineStart = false
            size += 1
            if (size > limit) return Effect.fail(onTooLarge())
          }
        }
        return Effect.succeed(chunk)
      })
    })

const RETRY_FIELD = new TextEncoder().encode("retry:")

/**
 * Drops the `retry:` lines of an SSE byte stream, for SSE parsers we do not own (`@effect/ai`'s): a
 * `retry:` field is a reconnection hint for `EventSource`, and the platform channel sleeps for it
 * mid-stream, however absurd its value. Other bytes pass unchanged.
 *
 * @internal
 */
export const dropSseRetry = <E>(body: Stream.Stream<Uint8Array, E>): Stream.Stream<Uint8Array, E> =>
  Stream.suspend(() => {
    // At a line start, `matched` bytes of "retry:" are held back until the line proves to be one or not.
    let matched = 0
    let lineStart = true
    let dropping = false
    let afterDroppedCr = false
    return Stream.map(body, (chunk) => {
      const out = new Uint8Array(chunk.length + RETRY_FIELD.length)
      let n = 0
      for (let i = 0; i < chunk.length; i++) {
        const byte = chunk[i]!
        const terminator = byte === 10 || byte === 13
        if (afterDroppedCr) {
          afterDroppedCr = false
          if (byte === 10) continue
        }
        if (dropping) {
          if (terminator) {
            dropping = false
            lineStart = true
            afterDroppedCr = byte === 13
          }
          continue
        }
        if (lineStart && !terminator && byte === RETRY_FIELD[matched]) {
          matched += 1
          if (matched === RETRY_FIELD.length) {
            dropping = true
            matched = 0
          }
          continue
        }
        // A held-back prefix only (a `subarray` per byte was most of a streamed answer's allocation).
        if (matched > 0) {
          out.set(RETRY_FIELD.subarray(0, matched), n)
          n += matched
          matched = 0
        }
        lineStart = terminator
        out[n++] = byte
      }
      return out.subarray(0, n)
    })
  })

/** The bytes of `parts` as one array (the one part itself when there is one). */
const joined = (parts: ReadonlyArray<Uint8Array>): Uint8Array => {
  if (parts.length === 1) return parts[0]!
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0))
  let at = 0
  for (const p of parts) {
    out.set(p, at)
    at += p.length
  }
  return out
}

/**
 * Re-cuts an SSE byte stream into whole lines (each piece ends at a line end: `\n`, or a `\r` not followed by
 * `\n`; the last may have none), a line split across reads joined once. The platform's SSE parser rescans its
 * whole buffer for every line of a piece and re-flattens a partial line on every read: fed whole lines it is
 * linear, where a hostile read of many short lines, or one long line in many reads, costs quadratic time.
 * Bytes pass unchanged; bound the events first (`boundEvents`), as the held partial line is not.
 *
 * @internal
 */
export const wholeLines = <E>(body: Stream.Stream<Uint8Array, E>): Stream.Stream<Uint8Array, E> =>
  Stream.suspend(() => {
    let partial: Array<Uint8Array> = []
    const line = (last: Uint8Array): Uint8Array => {
      const out = joined([...partial, last])
      partial = []
      return out
    }
    const cut = (chunk: Uint8Array): Array<Uint8Array> => {
      const out: Array<Uint8Array> = []
      const held = partial.at(-1)
      if (held !== undefined && held[held.length - 1] === 13 && chunk.length > 0 && chunk[0] !== 10) {
        out.push(line(new Uint8Array(0)))
      }
      let from = 0
      for (let i = 0; i < chunk.length; i++) {
        const byte = chunk[i]!
        if (byte === 10 || (byte === 13 && i + 1 < chunk.length && chunk[i + 1] !== 10)) {
          out.push(line(chunk.subarray(from, i + 1)))
          from = i + 1
        }
      }
      if (from < chunk.length) partial.push(chunk.subarray(from))
      return out
    }
    return Stream.concat(
      Stream.mapConcat(body, cut),
      Stream.suspend(() => partial.length === 0 ? Stream.empty : Stream.make(line(new Uint8Array(0))))
    )
  })

/**
 * Parses SSE text into its events, each bounded to `maxEventBytes` (over it: `onTooLarge()`). A `retry:`
 * field is ignored: it is a reconnection hint for `EventSource`, and a one-shot call never reconnects (the
 * platform channel would sleep for it mid-stream, however absurd its value).
 *
 * @internal
 */
export const parseSse =
  <E2>(maxEventBytes: number, onTooLarge: () => E2) =>
  <E>(text: Stream.Stream<string, E>): Stream.Stream<Sse.Event, E | E2> =>
    Stream.suspend(() => {
      let events: Array<Sse.Event> = []
      const parser = Sse.makeParser((event) => {
        if (event._tag === "Event") events.push(event)
      }, { maxEventSize: maxEventBytes })
      return text.pipe(
        Stream.mapEffect((chunk) => {
          if (parser.feed(chunk) !== undefined) return Effect.fail(onTooLarge())
          const parsed = events
          events = []
          return Effect.succeed(parsed)
        }),
        Stream.flattenIterables
      )
    })

/**
 * Reads a non-2xx response (at most `MAX_ERROR_BODY` bytes) and classifies it. A body that cannot be read
 * still classifies by status.
 *
 * @internal
 */
export const fromErrorResponse = (
  response: HttpClientResponse.HttpClientResponse
): Effect.Effect<Failure.ProviderFailure> =>
  Effect.flatMap(
    Effect.option(readAtMost(response.stream, MAX_ERROR_BODY, "keep")),
    (body) => fromStatus(response.status, response.headers, Option.getOrUndefined(body)?.text)
  )

/**
 * Reads a 2xx body as text, at most `limit` bytes: a longer body fails `malformed_response` /
 * `body_too_large` without reading the rest. A read that fails is a transport failure after dispatch (the
 * socket went away mid-body), never a malformed response.
 *
 * @internal
 */
export const readBody = (
  response: HttpClientResponse.HttpClientResponse,
  limit: number
): Effect.Effect<string, Failure.ProviderFailure> =>
  readAtMost(response.stream, limit, "drop").pipe(
    Effect.mapError((error) => fromTransport(errnoOf(error.cause))),
    Effect.filterOrFail((body) => body.complete, () => malformed(response.status, BODY_TOO_LARGE)),
    Effect.map((body) => body.text)
  )

/**
 * A 2xx body that did not decode.
 *
 * @internal
 */
export const malformed = (status: number, code: string): Failure.ProviderFailure =>
  Failure.fromEvidence({ status, code, malformed: true }, { dispatched: true })

const isTokenCount = (n: number | null | undefined): n is number => Number.isSafeInteger(n) && (n as number) >= 0

/**
 * A usage pair, or `"unknown"` unless both are token counts: integers ≥ 0 a double holds exactly (a server's
 * `-5`, `1e300`, `NaN` or a fraction is usage it did not really report, never a cost to charge).
 *
 * @internal
 */
export const usageOf = (
  input: number | null | undefined,
  output: number | null | undefined
): { readonly inputTokens: number; readonly outputTokens: number } | "unknown" =>
  isTokenCount(input) && isTokenCount(output) && Number.isSafeInteger(input + output)
    ? { inputTokens: input, outputTokens: output }
    : "unknown"
