/**
 * One attempt of a Rein-backed `LanguageModel` call on one endpoint's inner `@effect/ai` model: the outer
 * call's `ProviderOptions` become a Rein request (facts for the planner, the options as its opaque
 * payload); per attempt the inner model is called with tool-call resolution off and a handler-less
 * toolkit rebuilt from the options' tools. Its decoded parts go to the outer `generateText` as they are
 * (`generateText.ts`, which resolves tool calls once, with the caller's handlers); to the outer
 * `LanguageModel.make` (`generateObject`, `streamText`) as they are when its decode gives them back
 * unchanged (text, reasoning, finish, deltas), re-encoded otherwise.
 *
 * @internal
 */
import type { AiError, Prompt, Tool } from "@effect/ai"
import { LanguageModel, Response, Telemetry, Tokenizer } from "@effect/ai"
import * as AiModel from "@effect/ai/Model"
import { Failure } from "@rein/core"
import type { Outcome, Provider } from "@rein/core"
import { Context, Effect, Option, Schema, Stream } from "effect"
import type { ParseResult } from "effect"
import { classifyStreamError, guardedStream, oneShotCall } from "../EffectAi.js"
import { deltaLength } from "./answerBytes.js"
import { BODY_TOO_LARGE, DEFAULT_MAX_RESPONSE_BYTES, isByteBound, malformed, usageOf } from "./http.js"
import { isCap } from "./outputBound.js"
import { keepAnswer, reject, rejectedParts, TOOL_CALL_REJECTED, toolCallRejected, wholeToolkit } from "./rejected.js"
import * as Stages from "./stages.js"
import type { HandlerlessToolkit } from "./toolkit.js"
import { handlerless } from "./toolkit.js"

/**
 * The outer call, carried through Rein as the request's opaque payload. Its toolkit is the caller's whole
 * one (the offered tools and those a `oneOf` leaves out, see `rejected.ts`); its facts name the offered
 * tools only. @internal
 */
export class Call {
  readonly toolkit: HandlerlessToolkit
  readonly codecs: Codecs
  readonly facts: ReadonlyArray<Provider.Tool>
  constructor(readonly options: LanguageModel.ProviderOptions) {
    const whole = wholeToolkit(options)
    this.codecs = codecsOf(whole)
    this.toolkit = this.codecs.toolkit
    this.facts = whole === options.tools ? this.codecs.facts : factsOf(options.tools)
  }
}

/** The encoders of inner parts for one set of tools: compiled once per set, not once per call. */
interface Codecs {
  readonly tools: ReadonlyArray<Tool.Any>
  readonly toolkit: HandlerlessToolkit
  /** The tools as the Rein request names them (shared by every request of these tools; never mutated). */
  readonly facts: ReadonlyArray<Provider.Tool>
  readonly part: (
    part: Response.Part<Record<string, Tool.Any>>
  ) => Effect.Effect<Response.PartEncoded, ParseResult.ParseError>
}

const makeCodecs = (tools: ReadonlyArray<Tool.Any>): Codecs => {
  // The caller's tools without handlers: the inner call never resolves them (the outer `make` does).
  const toolkit = handlerless(tools)
  return {
    tools,
    toolkit,
    facts: factsOf(tools),
    part: Schema.encode(Response.Part(toolkit))
  }
}

/**
 * Decoded parts that the outer `make`'s decode turns back into equal parts (their schemas transform
 * nothing but `Usage`, a class of plain fields): handed over without encoding. The others (tool calls
 * and results, files, sources, response metadata) carry transformations and are encoded. Pinned by the
 * round-trip test in `ReinLanguageModelParts.test.ts`.
 */
const AS_IS = new Set<string>([
  "text",
  "reasoning",
  "finish",
  "text-start",
  "text-delta",
  "text-end",
  "reasoning-start",
  "reasoning-delta",
  "reasoning-end",
  "tool-params-start",
  "tool-params-delta",
  "tool-params-end"
])

/** Whether the outer `make` can decode `part` as it is (see `AS_IS`). @internal */
export const asIs = (part: { readonly type: string }): boolean => AS_IS.has(part.type)

const factsOf = (tools: ReadonlyArray<Tool.Any>): ReadonlyArray<Provider.Tool> =>
  Object.freeze(tools.map((tool) => ({ name: tool.name, vendor: vendorOf(tool) })))

/** The inner answer's parts as the outer `make` decodes them. */
const encodeParts = (
  codecs: Codecs,
  parts: Array<Response.Part<Record<string, Tool.Any>>>
): Effect.Effect<Array<Response.PartEncoded>, ParseResult.ParseError> =>
  parts.every(asIs)
    ? Effect.succeed(parts as Array<Response.PartEncoded>)
    : Effect.forEach(parts, (part) => asIs(part) ? Effect.succeed(part as Response.PartEncoded) : codecs.part(part))

let noTools: Codecs | undefined
const CODECS_KEPT = 32
const codecs = new Map<string, Codecs>()

/** The codecs of `tools` (the same tool objects: the cached ones). */
const codecsOf = (tools: ReadonlyArray<Tool.Any>): Codecs => {
  if (tools.length === 0) return noTools ??= makeCodecs([])
  // The last set asked for first: the calls of one program usually share their tools (no key built).
  if (lastCodecs !== undefined && sameTools(lastCodecs.tools, tools)) return lastCodecs
  const key = tools.map((t) => t.name).join("\u0000")
  let found = codecs.get(key)
  if (found === undefined || !sameTools(found.tools, tools)) {
    if (codecs.size >= CODECS_KEPT) codecs.clear()
    found = makeCodecs(tools)
    codecs.set(key, found)
  }
  return lastCodecs = found
}

let lastCodecs: Codecs | undefined

const sameTools = (a: ReadonlyArray<Tool.Any>, b: ReadonlyArray<Tool.Any>): boolean => {
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}

/**
 * The inner parts of a successful attempt, decoded, carried back as the completion's payload: handed to
 * `generateText` as they are, encoded for `LanguageModel.make` (`generateObject`). Parts the inner decode
 * rejected (`raw`) are the vendor's, as they came: the outer call validates them as bare does. @internal
 */
export class Parts {
  constructor(
    readonly parts: Array<Response.Part<Record<string, Tool.Any>>>,
    private readonly codecs: Codecs,
    readonly raw: boolean = false
  ) {}
  /** The parts as `LanguageModel.make` decodes them. */
  encoded(): Effect.Effect<Array<Response.PartEncoded>> {
    return this.raw
      ? Effect.succeed(this.parts as Array<Response.PartEncoded>)
      : Effect.orDie(encodeParts(this.codecs, this.parts))
  }
}

/** An inner answer whose parts its decode rejected: the vendor's parts, as they came (see `rejected.ts`). */
class Rejected extends LanguageModel.GenerateTextResponse<Record<string, Tool.Any>> {}

/** The vendor's parts of an answer the inner decode rejected, as an answer (any other error as it is). */
const recovered = (error: AiError.AiError) => {
  const parts = rejectedParts(error)
  return parts === undefined
    ? Effect.fail(error)
    : Effect.succeed(new Rejected(parts as Array<Response.Part<Record<string, Tool.Any>>>))
}

/** One inner stream part, decoded, carried as a stream part's payload (the outer `streamText` emits it). @internal */
export class StreamPart {
  constructor(readonly part: Response.StreamPart<Record<string, Tool.Any>>) {}
}

/** The vendor of a provider-defined tool (`openai.web_search` → `openai`). */
const vendorOf = (tool: Tool.Any): string | undefined => {
  if (!("providerName" in tool)) return undefined
  const dot = tool.id.indexOf(".")
  return dot > 0 ? tool.id.slice(0, dot) : tool.id
}

/** The Rein request for one provider-level call (the prompt goes as `messages`, never recorded). @internal */
export const requestOf = (
  options: LanguageModel.ProviderOptions,
  inputTokens: number | undefined,
  maxOutputTokens: number | undefined
): Provider.CompletionRequest => {
  const payload = new Call(options)
  return options.tools.length === 0
    ? {
      prompt: "",
      messages: options.prompt,
      inputTokens,
      maxOutputTokens,
      responseFormat: options.responseFormat.type,
      payload
    }
    : {
      prompt: "",
      messages: options.prompt,
      inputTokens,
      maxOutputTokens,
      tools: payload.facts,
      toolChoice: options.toolChoice,
      responseFormat: options.responseFormat.type,
      payload
    }
}

/** Per-attempt overrides of one vendor's `Config`: the endpoint's model and Rein's output bound. */
type Override = (context: Provider.AttemptContext) => Effect.Effect<Context.Context<never>>

/**
 * The vendor modules that know each provider's `Config`, loaded on demand: a model layer naming the
 * provider `openai` means `@effect/ai-openai` is installed and loaded, and no other vendor's package is
 * ever imported (they are optional peers).
 */
const vendors: Readonly<Record<string, () => Promise<{ readonly attemptConfig: Override }>>> = {
  openai: () => import("../EffectAiOpenAi.js"),
  anthropic: () => import("../EffectAiAnthropic.js"),
  google: () => import("../EffectAiGoogle.js"),
  openrouter: () => import("../EffectAiOpenRouter.js")
}

/** The override of a provider name (only the table's own keys: `constructor` is no vendor). */
const overrideOf = (vendor: string | undefined): Effect.Effect<Override | undefined> => {
  if (vendor === undefined || !Object.hasOwn(vendors, vendor)) return Effect.succeed(undefined)
  const load = vendors[vendor]!
  return Effect.map(Effect.promise(load), (module) => module.attemptConfig)
}

/**
 * Where each vendor's `Config` holds the caller's own output cap: the tag's key (read by key: no vendor
 * package is imported) and the field's path in the service.
 */
const CAPS: Readonly<Record<string, { readonly key: string; readonly path: ReadonlyArray<string> }>> = {
  openai: { key: "@effect/ai-openai/OpenAiLanguageModel/Config", path: ["max_output_tokens"] },
  anthropic: { key: "@effect/ai-anthropic/AnthropicLanguageModel/Config", path: ["max_tokens"] },
  google: { key: "@effect/ai-google/GoogleLanguageModel/Config", path: ["generationConfig", "maxOutputTokens"] },
  openrouter: { key: "@effect/ai-openrouter/OpenRouterLanguageModel/Config", path: ["max_tokens"] }
}

/** Whether Rein knows where `inner`'s vendor keeps the caller's output cap. @internal */
export const knowsCap = (inner: Inner): boolean => inner.vendor !== undefined && Object.hasOwn(CAPS, inner.vendor)

/**
 * The output cap the caller set for `inner`'s vendor in `context` (`withConfigOverride`): a positive
 * integer, else `undefined` (no cap, or a vendor Rein does not know). @internal
 */
export const callerCap = (inner: Inner, context: Context.Context<never>): number | undefined => {
  if (!knowsCap(inner)) return undefined
  const { key, path } = CAPS[inner.vendor!]!
  let value: unknown = context.unsafeMap.get(key)
  for (const field of path) value = typeof value === "object" && value !== null ? Reflect.get(value, field) : undefined
  return isCap(value) ? value : undefined
}

/** One endpoint's inner model, built. @internal */
export interface Inner {
  readonly model: LanguageModel.Service
  /** The provider name its model layer gave (`openai`, …), if any. */
  readonly vendor: string | undefined
  readonly tokenizer: Tokenizer.Service | undefined
  /** Applies the vendor's per-attempt `Config` (merged over the caller's), when the vendor is known. */
  readonly override: Override | undefined
  /** The largest answer read: a whole body, one SSE event, a streamed answer's text. */
  readonly maxResponseBytes: number
}

/** Reads what a built model layer provides (loading its vendor's module, if Rein knows the vendor). @internal */
export const innerOf = (
  context: Context.Context<LanguageModel.LanguageModel>,
  tag: Context.Tag<LanguageModel.LanguageModel, LanguageModel.Service>,
  maxResponseBytes: number | undefined
): Effect.Effect<Inner> =>
  Effect.suspend(() => {
    const vendor = Option.getOrUndefined(Context.getOption(context as Context.Context<unknown>, AiModel.ProviderName))
    return Effect.map(overrideOf(vendor), (override) => ({
      model: Context.get(context, tag),
      vendor,
      tokenizer: Option.getOrUndefined(Context.getOption(context as Context.Context<unknown>, Tokenizer.Tokenizer)),
      override,
      maxResponseBytes: isByteBound(maxResponseBytes) ? maxResponseBytes : DEFAULT_MAX_RESPONSE_BYTES
    }))
  })

const FILTERED = Failure.fromEvidence({ code: "content_filter" }, { dispatched: true })
const TOO_LONG = malformed(200, BODY_TOO_LARGE)

const configured = <A, E>(inner: Inner, context: Provider.AttemptContext, effect: Effect.Effect<A, E>) =>
  inner.override === undefined
    ? effect
    : Effect.flatMap(inner.override(context), (config) => Effect.provide(effect, config))

/**
 * The caller's prompt, tools and choice, for an inner call that leaves tool calls to the caller. Without
 * tools there is no toolkit to resolve: the inner `make` then sends no tools and `toolChoice: "none"`, as
 * it does for an empty toolkit. The toolkit is the caller's whole one: the inner `make` offers it under the
 * choice as bare's does, and decodes the answer against all of it.
 */
const innerOptions = (call: Call) =>
  call.codecs.tools.length === 0
    ? { prompt: call.options.prompt }
    : {
      prompt: call.options.prompt,
      toolkit: call.toolkit,
      toolChoice: call.options.toolChoice,
      disableToolCallResolution: true as const
    }

/** One attempt of `generateText` / `generateObject` on an inner model. @internal */
export const generate = (
  inner: Inner,
  call: Call,
  context: Provider.AttemptContext
): Effect.Effect<Provider.ProviderResponse, Failure.ProviderFailure> => {
  const format = call.options.responseFormat
  const response: Effect.Effect<LanguageModel.GenerateTextResponse<Record<string, Tool.Any>>, AiError.AiError> =
    format.type === "json"
      ? inner.model.generateObject({
        ...innerOptions(call),
        objectName: format.objectName,
        schema: format.schema as Schema.Schema<unknown, Record<string, unknown>>
      })
      : inner.model.generateText(innerOptions(call))
  const attempt = oneShotCall(configured(inner, context, Effect.catchAll(response, recovered)), inner.maxResponseBytes)
  return (format.type === "json" ? finishSeen(attempt) : attempt).pipe(
    Effect.flatMap((r) =>
      r.finishReason === "content-filter"
        ? Effect.fail(FILTERED)
        : r instanceof Rejected
        ? rejectedAnswer(call, r)
        : Effect.succeed(answerOf(r, new Parts(r.content, call.codecs)))
    )
  )
}

/**
 * An answer the inner decode rejected: a malformed answer (the plan goes on), kept for the outer call in case
 * the plan ends on it (`rejected.ts`).
 */
const rejectedAnswer = (call: Call, r: Rejected): Effect.Effect<never, Failure.ProviderFailure> => {
  keepAnswer(call.options, new Parts(r.content, call.codecs, true))
  return Effect.fail(toolCallRejected(usageOf(r.usage.inputTokens, r.usage.outputTokens)))
}

/**
 * `generateObject` that fails to decode loses its finish reason and usage; the span transformer sees the
 * parts just before the decode (`LanguageModel.make` calls it first: pinned by a test). A JSON answer cut
 * at the output limit is then the failure `truncated`, with its usage, rather than an unexplained
 * malformed response; any other answer whose object does not decode (not JSON, or not the schema's) stays
 * `malformed_response` but carries the usage the vendor reported, so it is settled to that usage rather
 * than charged the whole reservation as an answer of unknown usage. The caller's own transformer, if any,
 * still runs.
 */
const finishSeen = <A>(
  effect: Effect.Effect<A, Failure.ProviderFailure>
): Effect.Effect<A, Failure.ProviderFailure> =>
  Effect.flatMap(Effect.serviceOption(Telemetry.CurrentSpanTransformer), (outer) => {
    let finish: Response.FinishPart | undefined
    const transformer: Telemetry.SpanTransformer = (options) => {
      for (const part of options.response) if (part.type === "finish") finish = part
      if (Option.isSome(outer)) outer.value(options)
    }
    return effect.pipe(
      Effect.provideService(Telemetry.CurrentSpanTransformer, transformer),
      Effect.catchAll((failure) =>
        Effect.fail(
          failure.kind !== "malformed_response" || finish === undefined
            ? failure
            : finish.reason === "length"
            ? truncatedJson(finish)
            : withUsage(failure, finish)
        )
      )
    )
  })

/** `failure` with the usage its answer's finish reported (unchanged when the vendor reported none). */
const withUsage = (failure: Failure.ProviderFailure, finish: Response.FinishPart): Failure.ProviderFailure => {
  const usage = usageOf(finish.usage.inputTokens, finish.usage.outputTokens)
  if (usage === "unknown" || failure.usage !== undefined) return failure
  return new Failure.ProviderFailure({
    kind: failure.kind,
    code: failure.code,
    dispatched: failure.dispatched,
    ...(failure.status === undefined ? {} : { status: failure.status }),
    ...(failure.retryAfterMillis === undefined ? {} : { retryAfterMillis: failure.retryAfterMillis }),
    usage
  })
}

const truncatedJson = (finish: Response.FinishPart): Failure.ProviderFailure => {
  const usage = usageOf(finish.usage.inputTokens, finish.usage.outputTokens)
  return new Failure.ProviderFailure({
    kind: "truncated",
    code: "finish_length",
    dispatched: true,
    ...(usage === "unknown" ? {} : { usage })
  })
}

/**
 * What Rein keeps of an inner answer (records keep only the finish reason and tool-call counts): the
 * response's `text`, `toolCalls`, `reasoning`, `finishReason` and `usage` getters, read in one pass over its
 * parts (each getter walks them again). @internal
 */
export const answerOf = (
  response: LanguageModel.GenerateTextResponse<Record<string, Tool.Any>>,
  payload: Parts
): Provider.ProviderResponse => {
  let text = ""
  let calls: Array<Outcome.ToolCall> | undefined
  let reasoning: Array<string> | undefined
  let finish: Response.FinishPart | undefined
  for (const part of response.content) {
    switch (part.type) {
      case "text":
        text += part.text
        break
      case "tool-call":
        ;(calls ??= []).push({ id: part.id, name: part.name, params: part.params })
        break
      case "reasoning":
        ;(reasoning ??= []).push(part.text)
        break
      case "finish":
        finish ??= part
    }
  }
  const usage = usageOf(finish?.usage.inputTokens, finish?.usage.outputTokens)
  const finishReason = finish === undefined ? "unknown" : finish.reason
  return calls === undefined && reasoning === undefined
    ? { text, usage, finishReason, payload }
    : {
      text,
      usage,
      finishReason,
      ...(calls === undefined ? {} : { toolCalls: calls }),
      ...(reasoning === undefined ? {} : { reasoning }),
      payload
    }
}

/** Parts a caller sees: they commit the stream (metadata and starts do not). */
const VISIBLE = new Set<string>([
  "text-delta",
  "reasoning-delta",
  "tool-params-start",
  "tool-params-delta",
  "tool-params-end",
  "tool-call",
  "tool-result",
  "file",
  "source"
])

/**
 * One attempt of `streamText` on an inner model. A vendor's error sent inside the stream (an `error` part:
 * Anthropic's `overloaded_error`, an OpenAI `error` event) is classified by the vendor tables, as the
 * `EffectAi` bridge does: an overload before the first delta retries or falls back. The answer's deltas
 * (text, reasoning, tool-call parameters) are bounded by `maxResponseBytes` together (each event is bounded
 * by the one-shot client). @internal
 */
export const stream = (
  inner: Inner,
  call: Call,
  context: Provider.AttemptContext
): Stream.Stream<Provider.StreamPart, Failure.ProviderFailure> => {
  const parts: Stream.Stream<Response.StreamPart<Record<string, Tool.Any>>, AiError.AiError> = inner.model
    .streamText(innerOptions(call))
  // Stages without a per-delta cost (`stages.ts`): the config provided, and the parts mapped, in one pass each.
  const configuredParts = inner.override === undefined
    ? parts
    : Stages.unwrap(Effect.map(inner.override(context), (config) => Stages.provideSomeContext(parts, config)))
  return Stream.suspend(() => {
    let answerLength = 0
    const tooLong = (part: Response.StreamPart<Record<string, Tool.Any>>) =>
      (answerLength += deltaLength(part)) > inner.maxResponseBytes
    return Stages.mapParts(
      guardedStream(configuredParts, inner.maxResponseBytes, (error) => rejecting(call, error)),
      (part): Provider.StreamPart | Effect.Effect<never, Failure.ProviderFailure> =>
        part.type === "error"
          ? Effect.flip(classifyStreamError(part.error))
          : part.type === "finish" && part.reason === "content-filter"
          ? Effect.fail(FILTERED)
          : tooLong(part)
          ? Effect.fail(TOO_LONG)
          : streamPartOf(part, new StreamPart(part))
    )
  })
}

/** A chunk the inner decode rejected: its error kept for the outer stream, the attempt `tool_call_rejected`. */
const rejecting = (call: Call, error: AiError.AiError): Failure.ProviderFailure | undefined => {
  if (rejectedParts(error) === undefined) return undefined
  reject(call.options, error)
  return TOOL_CALL_REJECTED
}

const streamPartOf = (
  part: Response.StreamPart<Record<string, Tool.Any>>,
  payload: StreamPart
): Provider.StreamPart => {
  switch (part.type) {
    case "text-delta":
      return { delta: part.delta, visible: true, payload }
    case "finish":
      return {
        delta: "",
        done: true,
        usage: usageOf(part.usage.inputTokens, part.usage.outputTokens),
        finishReason: part.reason,
        payload
      }
    default:
      return { delta: "", visible: VISIBLE.has(part.type), payload }
  }
}

/** The input-token bound of a prompt: the largest count of the models' tokenizers (none: `undefined`). @internal */
export const tokensOf = (
  tokenizers: ReadonlyArray<Tokenizer.Service>,
  prompt: Prompt.Prompt
): Effect.Effect<number | undefined> =>
  tokenizers.length === 0
    ? Effect.succeed(undefined)
    : Effect.map(
      Effect.forEach(tokenizers, (t) =>
        Effect.orElseSucceed(Effect.map(t.tokenize(prompt), (ts) => ts.length), () => -1)),
      (counts) => {
        const max = Math.max(...counts)
        return max < 0 ? undefined : max
      }
    )
