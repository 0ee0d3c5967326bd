/**
 * A one-shot Rein provider for OpenAI-compatible chat-completions servers (OpenAI itself, vLLM, Ollama,
 * llama.cpp, …), on `@effect/platform`'s `HttpClient`. One call is one HTTP request: the adapter never
 * retries (Rein owns every retry). Requests and responses are decoded with `Schema`; failures are
 * classified by `Failure.classify` from the HTTP status, the provider's error code and the socket errno;
 * Retry-After (`retry-after-ms`, `retry-after` seconds or date) is passed to Rein; usage the server did
 * not report stays `"unknown"`.
 *
 * Interruption reaches the socket: every request runs in its own scope with an abort signal, so when Rein
 * interrupts an attempt (deadline, attempt timeout, caller) the connection is closed, whether the
 * response headers arrived or not.
 *
 * @since 0.1.0
 */
import type { HttpClientResponse } from "@effect/platform"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { Failure } from "@rein/core"
import type { Provider } from "@rein/core"
import { describe, NonNegativeInt, PositiveInt } from "@rein/core/Input"
import { Effect, Either, Redacted, Schema, Stream } from "effect"
import { configError } from "./internal/config.js"
import * as Internal from "./internal/http.js"
import { checkBaseUrl, ProviderConfigError } from "./Transport.js"

/**
 * Options of the adapter. The model sent is the endpoint's `model` from the catalog.
 *
 * @example
 * ```ts
 * import { Redacted } from "effect"
 * import type { OpenAiCompatible } from "@rein/providers"
 *
 * const options: OpenAiCompatible.Options = { baseUrl: "https://api.openai.com/v1", apiKey: Redacted.make("sk-…") }
 * ```
 * @category models
 * @since 0.1.0
 */
export interface Options {
  /** The API root, e.g. `https://api.openai.com/v1` or `http://127.0.0.1:8080/v1`. */
  readonly baseUrl: string
  /** Sent as a bearer token. Never logged nor recorded. */
  readonly apiKey?: Redacted.Redacted<string> | undefined
  /** Allow plain `http://` to a non-loopback host with a key. Off by default. */
  readonly allowInsecureHttp?: boolean | undefined
  /** The request field for the output bound: `max_tokens` (default) or `max_completion_tokens`. */
  readonly maxTokensField?: "max_tokens" | "max_completion_tokens" | undefined
  /** Extra non-secret headers. */
  readonly headers?: Readonly<Record<string, string>> | undefined
  /** The header that carries the key: a bearer token in `authorization` (default), or this header (Azure: `api-key`). */
  readonly apiKeyHeader?: string | undefined
  /** Query parameters sent with every call (Azure: `api-version`). */
  readonly urlParams?: Readonly<Record<string, string>> | undefined
  /**
   * The path of one call under `baseUrl`, from the endpoint's model (Azure: `/openai/deployments/<model>/chat/completions`).
   * Default `/chat/completions`.
   */
  readonly pathFor?: ((model: string) => string) | undefined
  /**
   * The largest answer read, in bytes: a whole non-streamed body, one SSE event, the text of a streamed
   * answer (counted in UTF-16 units). Over it the call fails `malformed_response` (code `body_too_large`) and the connection is
   * closed without reading the rest. Default 8 MiB. Error bodies are always read up to 64 KiB only.
   */
  readonly maxResponseBytes?: number | undefined
}

/** A header name as HTTP defines one (a token): what undici would refuse on every call is refused here, once. */
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/

/** A header value that cannot end the header early or start another (no CR, LF or NUL). */
const HeaderValue = Schema.String.pipe(Schema.pattern(/^[^\r\n\0]*$/)).annotations({
  message: (issue) => ({
    message: `Expected a header value without CR, LF or NUL, actual ${describe(issue.actual)}`,
    override: true
  })
})

/** The key goes in a header too; its message never shows it (a trailing newline from a file is the usual cause). */
const ApiKey = Schema.String.pipe(Schema.pattern(/^[^\r\n\0]*$/)).annotations({
  message: () => ({ message: "Expected a key without CR, LF or NUL (not shown)", override: true })
})

/** Extra headers: each name a token, each value on one line (a key that is not a name is named, not dropped). */
const Headers = Schema.Record({ key: Schema.String, value: HeaderValue }).pipe(
  Schema.filter((headers) => {
    const bad = Object.keys(headers).find((name) => !HEADER_NAME.test(name))
    return bad === undefined ||
      {
        path: [bad],
        message: `Expected a header name (letters, digits and !#$%&'*+-.^_\`|~), actual ${describe(bad)}`
      }
  })
)

const OptionsSchema = Schema.Struct({
  baseUrl: Schema.String,
  apiKey: Schema.optional(Schema.RedactedFromSelf(ApiKey)),
  allowInsecureHttp: Schema.optional(Schema.Boolean),
  maxTokensField: Schema.optional(
    Schema.Literal("max_tokens", "max_completion_tokens").annotations({
      message: (issue) => ({
        message: `Expected "max_tokens" or "max_completion_tokens", actual ${describe(issue.actual)}`,
        override: true
      })
    })
  ),
  headers: Schema.optional(Headers),
  apiKeyHeader: Schema.optional(
    Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9-]{1,64}$/)).annotations({
      message: (issue) => ({
        message: `Expected a header name (1 to 64 letters, digits or -), actual ${describe(issue.actual)}`,
        override: true
      })
    })
  ),
  urlParams: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.String })),
  maxResponseBytes: Schema.optional(PositiveInt)
})

/**
 * Token usage in the chat-completions shape.
 *
 * @example
 * ```ts
 * import { Schema } from "effect"
 * import { OpenAiCompatible } from "@rein/providers"
 *
 * Schema.decodeUnknownSync(OpenAiCompatible.ChatUsage)({ prompt_tokens: 12, completion_tokens: 3 })
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const ChatUsage = Schema.Struct({
  prompt_tokens: NonNegativeInt,
  completion_tokens: NonNegativeInt
})

/**
 * The part of a chat-completions response the adapter reads.
 *
 * @example
 * ```ts
 * import { Schema } from "effect"
 * import { OpenAiCompatible } from "@rein/providers"
 *
 * Schema.decodeUnknownSync(OpenAiCompatible.ChatCompletion)({ choices: [{ message: { content: "hi" } }] })
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const ChatCompletion = Schema.Struct({
  choices: Schema.NonEmptyArray(Schema.Struct({
    message: Schema.Struct({ content: Schema.optional(Schema.NullOr(Schema.String)) }),
    finish_reason: Schema.optional(Schema.NullOr(Schema.String))
  })),
  usage: Schema.optional(Schema.NullOr(ChatUsage))
})

/**
 * One streamed chunk (`data:` line) of a chat-completions stream.
 *
 * @example
 * ```ts
 * import { Schema } from "effect"
 * import { OpenAiCompatible } from "@rein/providers"
 *
 * Schema.decodeUnknownSync(OpenAiCompatible.ChatChunk)({ choices: [{ delta: { content: "Hel" } }] })
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const ChatChunk = Schema.Struct({
  choices: Schema.optionalWith(
    Schema.Array(Schema.Struct({
      delta: Schema.optional(Schema.NullOr(Schema.Struct({ content: Schema.optional(Schema.NullOr(Schema.String)) }))),
      finish_reason: Schema.optional(Schema.NullOr(Schema.String))
    })),
    { default: () => [] }
  ),
  usage: Schema.optional(Schema.NullOr(ChatUsage)),
  error: Schema.optional(Schema.Unknown),
  /** `"error"` in vLLM's older in-stream error shape (`{ object: "error", code: 503, type, message }`). */
  object: Schema.optional(Schema.Unknown)
})

const decodeCompletion = Schema.decodeUnknownEither(Schema.parseJson(ChatCompletion))
const decodeChunk = Schema.decodeUnknownEither(Schema.parseJson(ChatChunk))

const FILTERED = "content_filter"

/**
 * The request body sent for one call: the endpoint's model, the prompt (and system message), and the
 * output bound Rein reserved for.
 *
 * @example
 * ```ts
 * import { OpenAiCompatible } from "@rein/providers"
 *
 * OpenAiCompatible.requestBody({ prompt: "hi" }, "llama3", 256, "max_tokens", false)
 * // { model: "llama3", messages: [{ role: "user", content: "hi" }], max_tokens: 256 }
 * ```
 * @category encoding
 * @since 0.1.0
 */
export const requestBody = (
  request: Provider.CompletionRequest,
  model: string,
  maxOutputTokens: number,
  maxTokensField: "max_tokens" | "max_completion_tokens",
  stream: boolean
): Record<string, unknown> => ({
  model,
  messages: [
    ...(request.system !== undefined ? [{ role: "system", content: request.system }] : []),
    { role: "user", content: request.prompt }
  ],
  [maxTokensField]: maxOutputTokens,
  ...(stream ? { stream: true, stream_options: { include_usage: true } } : {})
})

/**
 * Builds the provider from an `HttpClient` in context. Fails with `ProviderConfigError` (naming the
 * field) when the options do not decode, or when a key would be sent over plain `http://` to a
 * non-loopback host without `allowInsecureHttp`.
 *
 * @example
 * ```ts
 * import { NodeHttpClient } from "@effect/platform-node"
 * import { Effect, Redacted } from "effect"
 * import { OpenAiCompatible } from "@rein/providers"
 *
 * const provider = OpenAiCompatible.make({
 *   baseUrl: "http://127.0.0.1:11434/v1",
 *   apiKey: Redacted.make("sk-local")
 * }).pipe(Effect.provide(NodeHttpClient.layerUndici))
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const make = (
  options: Options
): Effect.Effect<Provider.Provider, ProviderConfigError, HttpClient.HttpClient> =>
  Effect.gen(function*() {
    const decoded = Schema.decodeUnknownEither(OptionsSchema, { errors: "all" })(options)
    if (Either.isLeft(decoded)) return yield* configError("OpenAiCompatible", decoded.left)
    const config = decoded.right
    const url = yield* checkBaseUrl(config.baseUrl, {
      field: "baseUrl",
      credentialed: config.apiKey !== undefined,
      allowInsecureHttp: config.allowInsecureHttp === true
    })
    const base = url.href.replace(/\/+$/, "")
    const pathFor = options.pathFor ?? (() => "/chat/completions")
    const apiKey = config.apiKey
    const withKey = apiKey === undefined
      ? (r: HttpClientRequest.HttpClientRequest) => r
      : config.apiKeyHeader === undefined
      ? HttpClientRequest.bearerToken(apiKey)
      : HttpClientRequest.setHeader(config.apiKeyHeader, Redacted.value(apiKey))
    const maxTokensField = config.maxTokensField ?? "max_tokens"
    const maxResponseBytes = config.maxResponseBytes ?? Internal.DEFAULT_MAX_RESPONSE_BYTES
    // Each request gets its own scope and abort signal: closing the scope (success, failure or
    // interruption) aborts the socket if it is still open.
    const client = HttpClient.withScope(yield* HttpClient.HttpClient)

    const httpRequest = (request: Provider.CompletionRequest, ctx: Provider.AttemptContext, stream: boolean) =>
      HttpClientRequest.post(`${base}${pathFor(ctx.endpoint.model)}`).pipe(
        HttpClientRequest.setHeaders(config.headers ?? {}),
        HttpClientRequest.setUrlParams(config.urlParams ?? {}),
        HttpClientRequest.acceptJson,
        withKey,
        HttpClientRequest.bodyUnsafeJson(
          requestBody(request, ctx.endpoint.model, ctx.maxOutputTokens, maxTokensField, stream)
        )
      )

    const send = (request: HttpClientRequest.HttpClientRequest) =>
      Effect.mapError(client.execute(request), (e) =>
        e._tag === "RequestError"
          ? Internal.fromRequestError(e)
          : Internal.fromTransport(Internal.errnoOf(e.cause)))

    const call = (
      request: Provider.CompletionRequest,
      ctx: Provider.AttemptContext
    ): Effect.Effect<Provider.ProviderResponse, Failure.ProviderFailure> =>
      Effect.scoped(Effect.gen(function*() {
        const response = yield* send(httpRequest(request, ctx, false))
        if (response.status < 200 || response.status >= 300) {
          return yield* Effect.flip(Internal.fromErrorResponse(response))
        }
        const text = yield* Internal.readBody(response, maxResponseBytes)
        const body = decodeCompletion(text)
        if (Either.isLeft(body)) return yield* Effect.fail(Internal.malformed(response.status, "malformed_body"))
        const usage = body.right.usage == null
          ? "unknown" as const
          : Internal.usageOf(body.right.usage.prompt_tokens, body.right.usage.completion_tokens)
        const choice = body.right.choices[0]
        if (choice.finish_reason === FILTERED) {
          return yield* Effect.fail(
            Failure.fromEvidence({ status: response.status, code: FILTERED }, {
              dispatched: true,
              ...(usage !== "unknown" ? { usage } : {})
            })
          )
        }
        return { text: choice.message.content ?? "", usage }
      }))

    const stream = (
      request: Provider.CompletionRequest,
      ctx: Provider.AttemptContext
    ): Stream.Stream<Provider.StreamPart, Failure.ProviderFailure> =>
      Stream.unwrapScoped(Effect.gen(function*() {
        const response = yield* send(httpRequest(request, ctx, true))
        if (response.status < 200 || response.status >= 300) {
          return yield* Effect.flip(Internal.fromErrorResponse(response))
        }
        return decodeStream(response, maxResponseBytes)
      }))

    return { internalMaxAttempts: 1, call, stream }
  })

/**
 * Decodes a chat-completions SSE body into stream parts. The last part has `done: true` and carries the
 * usage (or `"unknown"`); a body that ends before `data: [DONE]` fails, it never ends cleanly.
 *
 * @internal
 */
const decodeStream = (
  response: HttpClientResponse.HttpClientResponse,
  maxResponseBytes: number
): Stream.Stream<Provider.StreamPart, Failure.ProviderFailure> =>
  Stream.suspend(() => {
    let usage: Provider.StreamPart["usage"] = "unknown"
    let done = false
    let textLength = 0
    const status = response.status
    const tooLarge = () => Internal.malformed(status, Internal.BODY_TOO_LARGE)
    const parts = response.stream.pipe(
      Stream.mapError((e) => Internal.fromTransport(Internal.errnoOf(e.cause))),
      Internal.boundEvents(maxResponseBytes, tooLarge),
      Internal.wholeLines,
      Stream.decodeText(),
      Internal.parseSse(maxResponseBytes, tooLarge),
      Stream.mapEffect((event): Effect.Effect<ReadonlyArray<Provider.StreamPart>, Failure.ProviderFailure> => {
        if (event.data.trim() === "[DONE]") {
          done = true
          return Effect.succeed([{ delta: "", usage, done: true }])
        }
        const chunk = decodeChunk(event.data)
        if (Either.isLeft(chunk)) return Effect.fail(Internal.malformed(status, "malformed_chunk"))
        // An error sent inside the stream (HTTP 200 already went out) classifies as the same error sent as a
        // status: by the vendor tables and the body's structured code and status, never its message.
        if (chunk.right.error !== undefined || chunk.right.object === "error") {
          return Effect.flip(Internal.fromStreamError(event.data))
        }
        if (chunk.right.usage != null) {
          usage = Internal.usageOf(chunk.right.usage.prompt_tokens, chunk.right.usage.completion_tokens)
        }
        const out: Array<Provider.StreamPart> = []
        for (const choice of chunk.right.choices) {
          if (choice.finish_reason === FILTERED) {
            return Effect.fail(Failure.fromEvidence({ status, code: FILTERED }, { dispatched: true }))
          }
          const delta = choice.delta?.content
          if (typeof delta === "string" && delta !== "") out.push({ delta })
          textLength += delta?.length ?? 0
        }
        return textLength > maxResponseBytes ? Effect.fail(tooLarge()) : Effect.succeed(out)
      }),
      // Stop reading at the terminator.
      Stream.takeUntil(() => done),
      Stream.flattenIterables
    )
    // A stream that ends without its terminator was truncated: a failure, never a clean end.
    return Stream.concat(
      parts,
      Stream.suspend(() => done ? Stream.empty : Stream.fail(Internal.malformed(status, "stream_truncated")))
    )
  })
