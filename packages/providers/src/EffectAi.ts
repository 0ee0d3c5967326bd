/**
 * A bridge from `@effect/ai`'s `LanguageModel` to a one-shot Rein provider, so OpenAI, Anthropic and the
 * other official Effect provider packages plug into Rein. Failures are classified from what `AiError`
 * carries as data — the HTTP status, the response headers (Retry-After) and the provider's error code in
 * the JSON body — never from its message. Usage comes from the response; usage the provider did not report
 * stays `"unknown"`.
 *
 * No retries in the client. `@effect/ai` clients take a `transformClient`, which may add
 * `HttpClient.retry`; such retries are invisible to Rein and multiply calls. A retrying function cannot be
 * recognised by looking at it, so the bridge enforces one physical request per call at run time instead:
 * the HTTP client under every transform is wrapped by `oneShot`, which refuses a second request within
 * one call (no traffic) and fails the call with `unknown` / `hidden_retry` — never retried, never fallen
 * back from, visible in the attempt records. The vendor bridges wire this for you, each in its own module so
 * that a user installs only the `@effect/ai-*` package of the vendors they use (optional peers):
 * `@rein/providers/EffectAiOpenAi` (Responses API), `@rein/providers/EffectAiAnthropic`,
 * `@rein/providers/EffectAiGoogle` (Gemini); for any other `LanguageModel`, build it on
 * `EffectAi.oneShotLayer`. This module imports no vendor package.
 *
 * @since 0.1.0
 */
import type { AiError, LanguageModel, Response, Tool, Toolkit } from "@effect/ai"
import type { HttpClientResponse } from "@effect/platform"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientError from "@effect/platform/HttpClientError"
import { Failure } from "@rein/core"
import type { Provider } from "@rein/core"
import { Chunk, Clock, Context, Data, Effect, Either, Exit, Layer, Option, Stream } from "effect"
import type { Redacted } from "effect"
import { deltaLength } from "./internal/answerBytes.js"
import * as Internal from "./internal/http.js"
import * as Spans from "./internal/spans.js"
import * as Stages from "./internal/stages.js"
import type { HandlerlessToolkit } from "./internal/toolkit.js"
import { handlerless } from "./internal/toolkit.js"
import * as Vendors from "./internal/vendors.js"
import { checkBaseUrl, ProviderConfigError } from "./Transport.js"

/**
 * The marker a second request within one call fails with (before any traffic).
 *
 * @example
 * ```ts
 * import { EffectAi } from "@rein/providers"
 *
 * const marker = new EffectAi.HiddenRetry()
 * ```
 * @category errors
 * @since 0.1.0
 */
export class HiddenRetry extends Data.TaggedError("HiddenRetry")<{}> {}

/**
 * Requests sent in the current bridged call. A context service rather than a FiberRef so that it also
 * reaches the effects of a provider's stream, wherever it is pulled.
 */
interface Ticket {
  sent: number
  /** The errno of the response body's stream, when it failed (the socket went away mid-body). */
  bodyErrno?: string | undefined
  /** The status and headers of the response, for errors the vendor client could not decode. */
  response?: { readonly status: number; readonly headers: Readonly<Record<string, string | undefined>> } | undefined
  /** The largest answer read (see `BridgeOptions.maxResponseBytes`). */
  readonly maxResponseBytes: number
  /** An answer went over `maxResponseBytes`: the call is `malformed_response` / `body_too_large`. */
  tooLarge?: boolean | undefined
  /** Whether to keep `lastData`: a stream whose bridge asks `isFinalEvent` (no other call reads it). */
  readonly keepsLastData: boolean
  /** The last `data:` line of a streamed answer (read only when the stream ended without its finish). */
  lastData?: Uint8Array | undefined
}

class CallTicket extends Context.Tag("@rein/providers/EffectAi/CallTicket")<CallTicket, Ticket>() {}

const FORM_READERS = new Set<PropertyKey>(["formData", "urlParamsBody"])
const DATA = new TextEncoder().encode("data:")
const isData = (line: Uint8Array): boolean => {
  for (let i = 0; i < DATA.length; i++) if (line[i] !== DATA[i]) return false
  return true
}

/** Keeps each read's last `data:` line, if any, on the ticket: one look per read, not per line. */
const keepLastData = (ticket: Ticket) => (lines: Chunk.Chunk<Uint8Array>): Chunk.Chunk<Uint8Array> => {
  for (let i = lines.length - 1; i >= 0; i--) {
    const line = Chunk.unsafeGet(lines, i)
    if (isData(line)) {
      ticket.lastData = line
      break
    }
  }
  return lines
}

/**
 * How a stream that ended without its finish part failed: `malformed_output` when its last event was the
 * vendor's final one (`isFinalEvent`), which the vendor client skipped as undecodable (`@effect/ai-openai`
 * skips any event it cannot decode: a `response.completed` with a usage that is not a count), as the same
 * answer unstreamed fails; else `stream_truncated`.
 */
const unfinished = (ticket: Ticket, isFinalEvent: ((event: unknown) => boolean) | undefined) => {
  const line = ticket.lastData
  let final = false
  if (isFinalEvent !== undefined && line !== undefined) {
    try {
      final = isFinalEvent(JSON.parse(new TextDecoder().decode(line).slice(5)))
    } catch {
      final = false
    }
  }
  return Failure.fromEvidence({ code: final ? "malformed_output" : "stream_truncated", malformed: true }, {
    dispatched: true
  })
}

/**
 * Watches a response's body within a bridged call, and bounds it. `@effect/ai` reads bodies whole (an error
 * body twice: once for the description, once for the body), so every read goes through one bounded read
 * of the stream, shared by later reads: an error body stops at `MAX_ERROR_BODY` bytes, an answer fails at
 * `maxResponseBytes` (`tooLarge` on the ticket), a streamed answer fails at an event over that bound.
 * Stopping the read ends the platform's response stream, which aborts the request: the rest of the body
 * is never transferred. `retry:` lines of a stream are dropped (`@effect/ai`'s SSE channel would sleep
 * on them). A failed streaming body also records its errno on the ticket (`@effect/ai` drops the cause),
 * and a second read of a consumed stream fails at once instead of hanging.
 */
const watch = (
  response: HttpClientResponse.HttpClientResponse,
  ticket: Ticket
): HttpClientResponse.HttpClientResponse => {
  let streamed = false
  let read: Exit.Exit<Internal.Bounded, HttpClientError.ResponseError> | undefined
  const ok = response.status >= 200 && response.status < 300
  // Errors carry the proxy, never the raw response: `@effect/ai` reads the body again from the error's.
  const decodeError = () =>
    new HttpClientError.ResponseError({ request: response.request, response: proxy, reason: "Decode" })
  const tooLarge = () => {
    ticket.tooLarge = true
    return decodeError()
  }
  // A body that failed at the socket: its errno on the ticket, the error on the proxy.
  const bodyFailed = (error: HttpClientError.ResponseError) => {
    ticket.bodyErrno = Internal.errnoOf(error.cause) ?? "ECONNRESET"
    return new HttpClientError.ResponseError({
      request: error.request,
      response: proxy,
      reason: error.reason,
      cause: error.cause
    })
  }
  const text = Effect.suspend(() =>
    read !== undefined ? read : Effect.onExit(
      Effect.mapError(
        ok
          ? Internal.readAtMost(response.stream, ticket.maxResponseBytes, "drop")
          : Internal.readAtMost(response.stream, Internal.MAX_ERROR_BODY, "keep"),
        bodyFailed
      ),
      (exit) => Effect.sync(() => void (read = exit))
    )
  ).pipe(
    Effect.filterOrFail((body) => body.complete || !ok, tooLarge),
    Effect.map((body) => body.text)
  )
  const readers: Record<PropertyKey, Effect.Effect<unknown, HttpClientError.ResponseError>> = {
    text,
    json: Effect.flatMap(text, (body) => Effect.try({ try: () => JSON.parse(body) as unknown, catch: decodeError })),
    arrayBuffer: Effect.map(text, (body) => new TextEncoder().encode(body).buffer)
  }
  const proxy: HttpClientResponse.HttpClientResponse = new Proxy(response, {
    get(target, property) {
      if (property === "stream") {
        streamed = true
        const lines = target.stream.pipe(
          Stream.mapError(bodyFailed),
          Internal.boundEvents(ok ? ticket.maxResponseBytes : Internal.MAX_ERROR_BODY, tooLarge),
          Internal.dropSseRetry,
          Internal.wholeLines
        )
        return ticket.keepsLastData ? Stream.mapChunks(lines, keepLastData(ticket)) : lines
      }
      const reader = typeof property === "string" && Object.hasOwn(readers, property) ? readers[property] : undefined
      if (streamed && (reader !== undefined || FORM_READERS.has(property))) return Effect.fail(decodeError())
      if (reader !== undefined) return reader
      return Reflect.get(target, property, target)
    }
  })
  return proxy
}

/**
 * Wraps an `HttpClient` so that, inside one bridged call, only the first request goes out; any further
 * one (a retry added by a `transformClient` above it) fails at once with a transport `RequestError`
 * whose cause is `HiddenRetry`. Outside bridged calls it is transparent.
 *
 * @example
 * ```ts
 * import { HttpClient } from "@effect/platform"
 * import { Effect } from "effect"
 * import { EffectAi } from "@rein/providers"
 *
 * const guarded = Effect.map(HttpClient.HttpClient, EffectAi.oneShot)
 * ```
 * @category combinators
 * @since 0.1.0
 */
export const oneShot = <E, R>(
  client: HttpClient.HttpClient.With<E, R>
): HttpClient.HttpClient.With<E | HttpClientError.RequestError, R> =>
  HttpClient.transform(client, (effect, request) =>
    Effect.flatMap(Effect.serviceOption(CallTicket), (
      ticket
    ): Effect.Effect<HttpClientResponse.HttpClientResponse, E | HttpClientError.RequestError, R> => {
      if (Option.isNone(ticket)) return effect
      const counter = ticket.value
      counter.sent += 1
      return counter.sent === 1
        ? Effect.map(effect, (response) => {
          counter.response = { status: response.status, headers: response.headers }
          return watch(response, counter)
        })
        : Effect.fail(new HttpClientError.RequestError({ request, reason: "Transport", cause: new HiddenRetry() }))
    }))

/**
 * The `HttpClient` in context, wrapped by `oneShot`: build an `@effect/ai` provider's client on it.
 *
 * @example
 * ```ts
 * import { NodeHttpClient } from "@effect/platform-node"
 * import { Layer } from "effect"
 * import { EffectAi } from "@rein/providers"
 *
 * const http = EffectAi.oneShotLayer.pipe(Layer.provide(NodeHttpClient.layerUndici))
 * ```
 * @category layers
 * @since 0.1.0
 */
export const oneShotLayer: Layer.Layer<HttpClient.HttpClient, never, HttpClient.HttpClient> = Layer.effect(
  HttpClient.HttpClient,
  Effect.map(HttpClient.HttpClient, oneShot)
)

const hasHiddenRetry = (cause: unknown, depth = 0): boolean =>
  depth <= 5 && typeof cause === "object" && cause !== null &&
  (cause instanceof HiddenRetry || hasHiddenRetry((cause as { readonly cause?: unknown }).cause, depth + 1))

const HIDDEN_RETRY = new Failure.ProviderFailure({ kind: "unknown", code: "hidden_retry", dispatched: true })

/**
 * Classifies an `AiError` from its structured fields. A 2xx `Decode` is ambiguous in `@effect/ai` (a body
 * that did not parse and a socket cut mid-body look alike; the response error carries no cause) and is
 * classified `malformed_response`, the choice that does not retry the same endpoint.
 *
 * @example
 * ```ts
 * import type { AiError } from "@effect/ai"
 * import { Effect } from "effect"
 * import { EffectAi } from "@rein/providers"
 *
 * declare const error: AiError.AiError
 * const failure = EffectAi.classify(error) // Effect<ProviderFailure>
 * ```
 * @category classification
 * @since 0.1.0
 */
export const classify = (error: AiError.AiError): Effect.Effect<Failure.ProviderFailure> => {
  switch (error._tag) {
    case "HttpRequestError": {
      if (hasHiddenRetry(error.cause)) return Effect.succeed(HIDDEN_RETRY)
      if (error.reason !== "Transport") {
        return Effect.succeed(
          Failure.fromEvidence({ status: 400, code: `request_${error.reason.toLowerCase()}` }, { dispatched: false })
        )
      }
      return Effect.succeed(Internal.fromTransport(Internal.errnoOf(error.cause)))
    }
    case "HttpResponseError": {
      const status = error.response.status
      if (status >= 200 && status < 300) {
        return Effect.succeed(Internal.malformed(status, `response_${error.reason.toLowerCase()}`))
      }
      // The vendor's structured error (Anthropic `error.type`, OpenAI `error.code`, Gemini `error.status`
      // and details, OpenRouter's numeric code) decides the kind; see internal/vendors.
      return Effect.map(Clock.currentTimeMillis, (nowMillis) =>
        Vendors.failureOf({
          status,
          headers: error.response.headers,
          body: error.body ?? error.description,
          fallbackCode: Internal.codeFromBody(error.description) ?? Internal.codeFromBody(error.body),
          nowMillis
        }))
    }
    case "MalformedOutput":
      return Effect.succeed(Failure.fromEvidence({ code: "malformed_output", malformed: true }, { dispatched: true }))
    case "MalformedInput":
      return Effect.succeed(Failure.fromEvidence({ status: 400, code: "malformed_input" }, { dispatched: false }))
    case "UnknownError":
      return Effect.succeed(Failure.fromEvidence({ code: "ai_unknown_error" }, { dispatched: true }))
  }
}

/**
 * Classifies an in-stream error part (`@effect/ai` delivers a vendor's SSE error event as an `error` part,
 * not a failure) like the same error sent as an HTTP status: Anthropic's `overloaded_error`, an OpenAI
 * `error` event's `code`, … by the vendor tables, an HTTP status written into the error as its `code`
 * (`503`) as that status; anything else is `unknown` / `stream_error_event`.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { EffectAi } from "@rein/providers"
 *
 * const failure = EffectAi.classifyStreamError({ type: "overloaded_error", message: "…" })
 * // Effect<ProviderFailure> of kind "overloaded"
 * ```
 * @category classification
 * @since 0.1.0
 */
export const classifyStreamError = (error: unknown): Effect.Effect<Failure.ProviderFailure> =>
  Internal.fromStreamError(error)

const usageOf = (usage: Response.Usage): Provider.ProviderResponse["usage"] =>
  Internal.usageOf(usage.inputTokens, usage.outputTokens)

const promptOf = (request: Provider.CompletionRequest) =>
  request.messages !== undefined
    ? request.messages
    : request.system === undefined
    ? request.prompt
    : [
      { role: "system" as const, content: request.system },
      { role: "user" as const, content: request.prompt }
    ]

/**
 * Per-attempt settings around one `@effect/ai` call, as services to provide: typically the endpoint's
 * model and Rein's output bound (`OpenAiLanguageModel.Config`: `{ model, max_output_tokens }`).
 *
 * @example
 * ```ts
 * import { OpenAiLanguageModel } from "@effect/ai-openai"
 * import { Context } from "effect"
 * import type { EffectAi } from "@rein/providers"
 *
 * const configure: EffectAi.Configure<OpenAiLanguageModel.Config> = (ctx) =>
 *   Context.make(OpenAiLanguageModel.Config, { model: ctx.endpoint.model, max_output_tokens: ctx.maxOutputTokens })
 * ```
 * @category models
 * @since 0.1.0
 */
export type Configure<R> = (context: Provider.AttemptContext) => Context.Context<R>

const FILTERED = Failure.fromEvidence({ code: "content_filter" }, { dispatched: true })

/**
 * Options of `fromLanguageModel`.
 *
 * @example
 * ```ts
 * import type { EffectAi } from "@rein/providers"
 *
 * const options: EffectAi.BridgeOptions = { maxResponseBytes: 1024 * 1024 }
 * ```
 * @category models
 * @since 0.1.0
 */
export interface BridgeOptions<R = never> {
  /** Per-attempt services: the endpoint's model and Rein's output bound. */
  readonly configure?: Configure<R> | undefined
  /**
   * The largest answer read, in bytes (a positive integer; anything else is the default, 8 MiB): a whole
   * body, one SSE event, the deltas of a streamed answer (its text, reasoning and tool-call parameters,
   * together). Over it the call fails `malformed_response` /
   * `body_too_large` and the connection is closed. Error bodies are read up to 64 KiB only. Bounded only
   * when the model's HTTP client is built on `oneShotLayer` (or `oneShot`), which reads every body.
   */
  readonly maxResponseBytes?: number | undefined
  /**
   * Whether a streamed event (its `data:` JSON) is the vendor's final event of an answer. A stream that ends
   * without its finish part, its last event a final one, had that event skipped by the vendor client as
   * undecodable (a usage that is not a count): it fails `malformed_response` / `malformed_output`, as the
   * same answer unstreamed does, not `stream_truncated`. `EffectAiOpenAi` gives Responses'
   * `response.completed` and `response.incomplete`.
   */
  readonly isFinalEvent?: ((event: unknown) => boolean) | undefined
  /**
   * The definitions of the tools requests may name (`CompletionRequest.tools`, by name): a request's tools
   * are sent with its `toolChoice`, and the model's tool calls come back on the answer (`toolCalls`),
   * never resolved here — the caller runs them. A request naming a tool not in it fails
   * `invalid_request` / `unknown_tool` before anything is sent.
   */
  readonly toolkit?: Toolkit.Any | undefined
}

/**
 * Classifies an error of a guarded call. An answer over the bound is `body_too_large`, whatever `@effect/ai`
 * made of the failed read; a 2xx body whose stream failed at the socket is a transport failure, not a
 * malformed response; an error status whose body the vendor client could not decode (`@effect/ai-anthropic`
 * 0.27 has no schema for a 413 `request_too_large`) is classified by that status, not as a malformed answer.
 */
const classifyGuarded = (ticket: Ticket) => (error: AiError.AiError) =>
  ticket.tooLarge === true
    ? Effect.succeed(Internal.malformed(200, Internal.BODY_TOO_LARGE))
    : error._tag === "HttpResponseError" && ticket.bodyErrno !== undefined && error.response.status < 300
    ? Effect.succeed(Internal.fromTransport(ticket.bodyErrno))
    : error._tag === "MalformedOutput" && ticket.response !== undefined && ticket.response.status >= 400
    ? Internal.fromStatus(ticket.response.status, ticket.response.headers, undefined)
    : classify(error)

/**
 * What Rein keeps of an answer: text, usage, the finish reason (so the contract's `truncation` applies)
 * and the tool calls, if the request sent tools.
 */
const responseOf = <Tools extends Record<string, Tool.Any>>(
  response: LanguageModel.GenerateTextResponse<Tools>
): Provider.ProviderResponse => {
  const calls = response.toolCalls
  return {
    text: response.text,
    usage: usageOf(response.usage),
    finishReason: response.finishReason,
    ...(calls.length === 0 ? {} : { toolCalls: calls.map((c) => ({ id: c.id, name: c.name, params: c.params })) })
  }
}

const unknownTool = new Failure.ProviderFailure({ kind: "invalid_request", code: "unknown_tool", dispatched: false })

/** The request's tools from the bridge's toolkit (none named: `undefined`, nothing sent). */
const toolsOf = (
  toolkit: Toolkit.Any | undefined,
  request: Provider.CompletionRequest
): Either.Either<HandlerlessToolkit | undefined, Failure.ProviderFailure> => {
  const named = request.tools
  if (named === undefined || named.length === 0) return Either.right(undefined)
  const tools: Array<Tool.Any> = []
  for (const { name } of named) {
    const tool = toolkit !== undefined && Object.hasOwn(toolkit.tools, name) ? toolkit.tools[name] : undefined
    if (tool === undefined) return Either.left(unknownTool)
    tools.push(tool)
  }
  return Either.right(handlerless(tools))
}

/** What one bridged call sends: the prompt, and the request's tools (reported, never resolved here). */
const optionsOf = (request: Provider.CompletionRequest, toolkit: HandlerlessToolkit | undefined) =>
  toolkit === undefined
    ? { prompt: promptOf(request) }
    : {
      prompt: promptOf(request),
      toolkit,
      toolChoice: choiceOf(request.toolChoice ?? "auto"),
      disableToolCallResolution: true as const
    }

/** Rein's tool choice as `@effect/ai` spells it (no `mode: undefined` key). */
const choiceOf = (choice: Provider.ToolChoice): LanguageModel.ToolChoice<string> =>
  typeof choice === "object" && "oneOf" in choice
    ? choice.mode === undefined ? { oneOf: choice.oneOf } : { mode: choice.mode, oneOf: choice.oneOf }
    : choice

/** Tool-call parts are visible output: they commit a stream like text does. */
const TOOL_PARTS = new Set<string>(["tool-params-start", "tool-params-delta", "tool-params-end", "tool-call"])

/**
 * Turns a `LanguageModel` into a one-shot Rein provider. Build the model's HTTP client on
 * `oneShotLayer` so a retrying `transformClient` is refused (see the module summary); `configure` applies
 * the endpoint's model and Rein's output bound per attempt.
 *
 * @example
 * ```ts
 * import { LanguageModel } from "@effect/ai"
 * import { Effect } from "effect"
 * import { EffectAi } from "@rein/providers"
 *
 * const provider = Effect.map(LanguageModel.LanguageModel, (languageModel) =>
 *   EffectAi.fromLanguageModel(languageModel))
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const fromLanguageModel = <R = never>(
  languageModel: LanguageModel.Service,
  options: BridgeOptions<R> = {}
): Provider.Provider => {
  const maxResponseBytes = Internal.isByteBound(options.maxResponseBytes)
    ? options.maxResponseBytes
    : Internal.DEFAULT_MAX_RESPONSE_BYTES
  const ticketOf = (streamed: boolean): Ticket => ({
    sent: 0,
    maxResponseBytes,
    keepsLastData: streamed && options.isFinalEvent !== undefined
  })
  const configure = (ctx: Provider.AttemptContext, ticket: Ticket): Context.Context<R | CallTicket> =>
    Context.add(
      options.configure === undefined ? Context.empty() as Context.Context<R> : options.configure(ctx),
      CallTicket,
      ticket
    )
  const call = (
    request: Provider.CompletionRequest,
    ctx: Provider.AttemptContext
  ): Effect.Effect<Provider.ProviderResponse, Failure.ProviderFailure> =>
    Effect.suspend(() => {
      const tools = toolsOf(options.toolkit, request)
      if (Either.isLeft(tools)) return Effect.fail(tools.left)
      const ticket = ticketOf(false)
      return languageModel.generateText(optionsOf(request, tools.right)).pipe(
        Effect.provide(configure(ctx, ticket)),
        Spans.quiet,
        Effect.catchAll((error) => Effect.flip(classifyGuarded(ticket)(error)))
      )
    }).pipe(
      Effect.flatMap((response) =>
        response.finishReason === "content-filter"
          ? Effect.fail(FILTERED)
          : Effect.succeed(responseOf(response))
      )
    )

  const stream = (
    request: Provider.CompletionRequest,
    ctx: Provider.AttemptContext
  ): Stream.Stream<Provider.StreamPart, Failure.ProviderFailure> =>
    Stream.suspend(() => {
      const tools = toolsOf(options.toolkit, request)
      if (Either.isLeft(tools)) return Stream.fail(tools.left)
      let done = false
      let answerLength = 0
      const ticket = ticketOf(true)
      const parts = languageModel.streamText(optionsOf(request, tools.right)).pipe(
        (stream) => Stages.provideSomeContext(stream, configure(ctx, ticket)),
        Spans.quietStream,
        Stream.catchAll((error) => Stream.fromEffect(Effect.flip(classifyGuarded(ticket)(error)))),
        Stream.mapEffect((part): Effect.Effect<Option.Option<Provider.StreamPart>, Failure.ProviderFailure> => {
          // The answer's deltas together (text, reasoning, tool-call parameters) are bounded.
          if ((answerLength += deltaLength(part)) > maxResponseBytes) {
            return Effect.fail(Internal.malformed(200, Internal.BODY_TOO_LARGE))
          }
          switch (part.type) {
            case "text-delta":
              return Effect.succeed(part.delta === "" ? Option.none() : Option.some({ delta: part.delta }))
            case "finish":
              if (part.reason === "content-filter") return Effect.fail(FILTERED)
              done = true
              return Effect.succeed(
                Option.some({ delta: "", usage: usageOf(part.usage), done: true, finishReason: part.reason })
              )
            case "error":
              return Effect.flip(classifyStreamError(part.error))
            default:
              return Effect.succeed(
                TOOL_PARTS.has(part.type) ? Option.some({ delta: "", visible: true }) : Option.none()
              )
          }
        }),
        Stream.filterMap((part) => part),
        Stream.takeUntil((part) => part.done === true)
      )
      // A stream that ends without its finish part was truncated (or its final event did not decode): a
      // failure, never a clean end.
      return Stream.concat(
        parts,
        Stream.suspend(() => done ? Stream.empty : Stream.fail(unfinished(ticket, options.isFinalEvent)))
      )
    })

  return { internalMaxAttempts: 1, call, stream }
}

/**
 * What every vendor bridge (`EffectAiOpenAi`, `EffectAiAnthropic`, `EffectAiGoogle`) takes: the key (a
 * `Redacted`, never logged nor recorded), the API root, and a `transformClient` applied above the one-shot
 * guard (a transform that retries is refused at run time).
 *
 * @example
 * ```ts
 * import { Redacted } from "effect"
 * import type { EffectAi } from "@rein/providers"
 *
 * const options: EffectAi.VendorOptions = { apiKey: Redacted.make("sk-…"), apiUrl: "https://api.openai.com/v1" }
 * ```
 * @category models
 * @since 0.1.0
 */
export interface VendorOptions {
  readonly apiKey?: Redacted.Redacted<string> | undefined
  /** The vendor's API root (each bridge has its default). */
  readonly apiUrl?: string | undefined
  /** Allow plain `http://` to a non-loopback host with a key. Off by default. */
  readonly allowInsecureHttp?: boolean | undefined
  /** Applied above the one-shot guard: a transform that retries is refused at run time. */
  readonly transformClient?: ((client: HttpClient.HttpClient) => HttpClient.HttpClient) | undefined
  /**
   * The largest answer read, in bytes (see `BridgeOptions.maxResponseBytes`), by the bridge's `make`; a
   * value that is not a positive integer is a `ProviderConfigError`. Default 8 MiB.
   */
  readonly maxResponseBytes?: number | undefined
  /** The definitions of the tools requests may name, for the bridge's `make` (see `BridgeOptions.toolkit`). */
  readonly toolkit?: Toolkit.Any | undefined
}

/**
 * The checked API root (no trailing slash) and the one-shot `HttpClient` a vendor bridge builds its
 * `@effect/ai` client on. Fails with `ProviderConfigError` when a key would go over plain `http://` to a
 * non-loopback host without `allowInsecureHttp`.
 *
 * @example
 * ```ts
 * import { NodeHttpClient } from "@effect/platform-node"
 * import { Effect } from "effect"
 * import { EffectAi } from "@rein/providers"
 *
 * const transport = EffectAi.vendorTransport({ apiUrl: "http://127.0.0.1:8080" }, "https://api.example.com").pipe(
 *   Effect.provide(NodeHttpClient.layerUndici)
 * )
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const vendorTransport = (
  options: VendorOptions,
  defaultUrl: string
): Effect.Effect<
  { readonly apiUrl: string; readonly http: HttpClient.HttpClient },
  ProviderConfigError,
  HttpClient.HttpClient
> =>
  Effect.gen(function*() {
    const checked = checkBaseUrl(options.apiUrl ?? defaultUrl, {
      field: "apiUrl",
      credentialed: options.apiKey !== undefined,
      allowInsecureHttp: options.allowInsecureHttp === true
    })
    if (Either.isLeft(checked)) return yield* checked.left
    if (options.maxResponseBytes !== undefined && !Internal.isByteBound(options.maxResponseBytes)) {
      return yield* new ProviderConfigError({
        field: "maxResponseBytes",
        message: "maxResponseBytes: Expected a positive integer number of bytes"
      })
    }
    return { apiUrl: checked.right.href.replace(/\/+$/, ""), http: oneShot(yield* HttpClient.HttpClient) }
  })

/**
 * Runs one `@effect/ai` call as one physical attempt: under the `oneShot` guard (a second HTTP request
 * within the call is refused, with no traffic) and with its `AiError` classified (`classify`).
 *
 * @example
 * ```ts
 * import { LanguageModel } from "@effect/ai"
 * import { EffectAi } from "@rein/providers"
 *
 * const attempt = EffectAi.oneShotCall(LanguageModel.generateText({ prompt: "hi" }))
 * ```
 * @category execution
 * @since 0.1.0
 */
export const oneShotCall = <A, R>(
  effect: Effect.Effect<A, AiError.AiError, R>,
  maxResponseBytes: number = Internal.DEFAULT_MAX_RESPONSE_BYTES
): Effect.Effect<A, Failure.ProviderFailure, R> =>
  Effect.suspend(() => {
    const ticket: Ticket = { sent: 0, maxResponseBytes, keepsLastData: false }
    return effect.pipe(
      Effect.provideService(CallTicket, ticket),
      Spans.quiet,
      Effect.catchAll((error) => Effect.flip(classifyGuarded(ticket)(error)))
    )
  })

/**
 * `oneShotCall` for a stream: one physical streamed call, guarded and classified.
 *
 * @example
 * ```ts
 * import { LanguageModel } from "@effect/ai"
 * import { EffectAi } from "@rein/providers"
 *
 * const parts = EffectAi.oneShotStream(LanguageModel.streamText({ prompt: "hi" }))
 * ```
 * @category execution
 * @since 0.1.0
 */
export const oneShotStream = <A, R>(
  stream: Stream.Stream<A, AiError.AiError, R>,
  maxResponseBytes: number = Internal.DEFAULT_MAX_RESPONSE_BYTES
): Stream.Stream<A, Failure.ProviderFailure, R> => guardedStream(stream, maxResponseBytes, undefined)

/**
 * `oneShotStream` whose `first` classifies an error before the guard does (its `undefined`: the guard's
 * classification), in the same catch; an answer over the bound stays `body_too_large`. @internal
 */
export const guardedStream = <A, R>(
  stream: Stream.Stream<A, AiError.AiError, R>,
  maxResponseBytes: number,
  first: ((error: AiError.AiError) => Failure.ProviderFailure | undefined) | undefined
): Stream.Stream<A, Failure.ProviderFailure, R> =>
  Stream.suspend(() => {
    const ticket: Ticket = { sent: 0, maxResponseBytes, keepsLastData: false }
    return stream.pipe(
      (parts) => Stages.provideService(parts, CallTicket, ticket),
      Spans.quietStream,
      Stream.catchAll((error) => {
        const failure = ticket.tooLarge === true ? undefined : first?.(error)
        return failure !== undefined
          ? Stream.fail(failure)
          : Stream.fromEffect(Effect.flip(classifyGuarded(ticket)(error)))
      })
    )
  })
