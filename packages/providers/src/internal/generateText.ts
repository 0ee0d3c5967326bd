/**
 * The outer `generateText`. `LanguageModel.make` would decode the parts that the inner model has just
 * decoded, with the very schema the inner model used (`Response.Part` of the same tools), and compile
 * that schema again for every call: the largest single cost of a Rein call. This is `make`'s own
 * `generateText` (`@effect/ai` 0.37: the same span, name and attributes, the same `ProviderOptions`, the
 * toolkit resolved and its tools offered as `make` offers them, tool calls resolved with the caller's
 * handlers as `make`'s `resolveToolCalls` does, the span transformer applied to the content,
 * `IdGenerator` provided, a `ParseError` turned into `MalformedOutput`) minus that decode; and a
 * `Toolkit`'s resolution is kept while the call's context gives its tools the same handlers (`make`
 * resolves it, and compiles its schemas, again on every call).
 * `generateObject` and `streamText` go through `make` unchanged.
 *
 * @internal
 */
import type { Tool } from "@effect/ai"
import { AiError, IdGenerator, LanguageModel, Prompt, Response, Telemetry, Toolkit } from "@effect/ai"
import { Effect, Either, Option, Predicate, Schema, SchemaAST } from "effect"
import type { Context } from "effect"
import type { ParseResult } from "effect"
import { recordWholeToolkit } from "./rejected.js"

/** The parts of any toolkit's calls, as Rein carries them. @internal */
type Parts = Array<Response.Part<Record<string, Tool.Any>>>

/**
 * A call's parts, from the outer call's `ProviderOptions`: decoded by the inner model, or the vendor's as they
 * came when the inner decode rejected them (`raw`, see `rejected.ts`). @internal
 */
export type Decoded = (
  options: LanguageModel.ProviderOptions
) => Effect.Effect<{ readonly parts: Parts; readonly raw: boolean }, AiError.AiError>

/** The options of a call. @internal */
export type Options = LanguageModel.GenerateTextOptions<Record<string, Tool.Any>>

/**
 * What `generateText` answers here: a call without a toolkit fails with `AiError` only; with one, also
 * with its handlers' errors and the toolkit's own, and needs their context (typed by `make`'s signature).
 * @internal
 */
export type Answer = Effect.Effect<LanguageModel.GenerateTextResponse<Record<string, Tool.Any>>, unknown, unknown>

/** A resolved toolkit with its handlers. @internal */
export type Handled = Toolkit.WithHandler<Record<string, Tool.Any>>

/** The encoders of one tool's parameters: compiled once per tool, not once per call. */
interface Encoders {
  /** Synchronous: a `Left` for a failure, and for a schema with an asynchronous (or effectful) step. */
  readonly now: (params: unknown) => Either.Either<unknown, ParseResult.ParseError>
  readonly effect: (params: unknown) => Effect.Effect<unknown, ParseResult.ParseError>
}

const encoders = new WeakMap<Tool.Any, Encoders>()

const encodersOf = (tool: Tool.Any): Encoders => {
  let found = encoders.get(tool)
  if (found === undefined) {
    const schema = tool.parametersSchema as Schema.Schema<unknown, unknown>
    // A schema without transformations (its encoded side is itself: no refinement, no transformation, at any
    // depth) encodes parameters it decoded into equal ones: handed over as they are.
    const identity = SchemaAST.encodedAST(schema.ast) === schema.ast
    found = {
      now: identity ? Either.right : Schema.encodeUnknownEither(schema),
      effect: Schema.encodeUnknown(schema)
    }
    encoders.set(tool, found)
  }
  return found
}

/** One call's parameters encoded as an effect (an unknown tool's as they are); a failure is a defect. */
const encodedParam = (call: Response.ToolCallPart<string, unknown>, tools: Handled["tools"]) => {
  const tool = tools[call.name]
  return tool === undefined ? Effect.succeed(call.params) : Effect.orDie(encodersOf(tool).effect(call.params))
}

/**
 * The parameters of `calls` as the provider sent them, encoded in order, the first failure a defect:
 * synchronously, without fiber steps, until an encoder answers `Left`; from that call on as effects (which
 * fail as the synchronous encoder did, or run the asynchronous step it could not).
 */
const encodedParams = (
  calls: ReadonlyArray<Response.ToolCallPart<string, unknown>>,
  tools: Handled["tools"]
): Effect.Effect<Array<unknown>> => {
  const params: Array<unknown> = []
  for (let i = 0; i < calls.length; i++) {
    const call = calls[i]!
    const tool = tools[call.name]
    const encoded = tool === undefined ? Either.right(call.params) : encodersOf(tool).now(call.params)
    if (Either.isLeft(encoded)) {
      return Effect.map(Effect.forEach(calls.slice(i), (rest) => encodedParam(rest, tools)), (rest) => [
        ...params,
        ...rest
      ])
    }
    params.push(encoded.right)
  }
  return Effect.succeed(params)
}

/**
 * `make`'s `resolveToolCalls`, over decoded parts: every call the provider did not execute itself goes to
 * `toolkit.handle` with its parameters as the provider sent them (encoded again with the schema that
 * decoded them, all before any handler runs, as `make` gets them from an encoded answer), with `make`'s
 * concurrency; the results are `make`'s tool-result parts. @internal
 */
export const resolveToolCalls = (
  content: Iterable<Response.AnyPart>,
  toolkit: Handled,
  concurrency: LanguageModel.GenerateTextOptions<{}>["concurrency"]
) => {
  const calls: Array<Response.ToolCallPart<string, unknown>> = []
  for (const part of content) {
    if (part.type === "tool-call" && part.providerExecuted !== true) calls.push(part)
  }
  if (calls.length === 0) return Effect.succeed([])
  return Effect.flatMap(
    encodedParams(calls, toolkit.tools),
    (params) =>
      Effect.forEach(calls, (call, i) => Effect.map(toolkit.handle(call.name, params[i] as never), resultOf(call)), {
        concurrency
      })
  )
}

/** `make`'s tool-result part of a handled call. */
const resultOf =
  (call: { readonly id: string; readonly name: string; readonly providerName?: string | undefined }) =>
  ({ encodedResult, isFailure, result }: Tool.HandlerResult<Tool.Any>) =>
    Response.makePart("tool-result", {
      id: call.id,
      name: call.name,
      result,
      encodedResult,
      isFailure,
      providerExecuted: false,
      ...(call.providerName !== undefined ? { providerName: call.providerName } : {})
    })

/**
 * `make`'s `generateContent` over the vendor's parts, as they came (an answer the inner decode rejected, see
 * `rejected.ts`): every call not executed by the provider goes to `toolkit.handle` with its parameters as
 * sent (an unknown tool, parameters that do not decode, fail there), then the parts are decoded against the
 * whole toolkit (`Toolkit.empty` without one); `resolve: false` only decodes.
 */
const fromRaw = (
  raw: ReadonlyArray<Response.PartEncoded>,
  toolkit: Handled | undefined,
  resolve: boolean,
  concurrency: Options["concurrency"]
): Effect.Effect<Parts, unknown, unknown> => {
  const decode = Schema.decodeUnknown(Schema.mutable(Schema.Array(Response.Part(toolkit ?? Toolkit.empty))))
  if (toolkit === undefined || !resolve) return decode(raw) as Effect.Effect<Parts, ParseResult.ParseError>
  const calls = raw.filter((part): part is Response.ToolCallPartEncoded =>
    part.type === "tool-call" && part.providerExecuted !== true
  )
  return Effect.flatMap(
    Effect.forEach(calls, (call) => Effect.map(toolkit.handle(call.name, call.params as never), resultOf(call)), {
      concurrency
    }),
    (results) => Effect.map(decode(raw), (content) => [...content, ...results] as Parts)
  )
}

/** The parts of an answer: the inner model's, or the vendor's validated as `make` does (`fromRaw`). */
const contentOf = (
  answer: { readonly parts: Parts; readonly raw: boolean },
  toolkit: Handled | undefined,
  options: Options
): Effect.Effect<Parts, unknown, unknown> =>
  answer.raw
    ? fromRaw(
      answer.parts as ReadonlyArray<Response.PartEncoded>,
      toolkit,
      options.disableToolCallResolution !== true,
      options.concurrency
    )
    : Effect.succeed(answer.parts)

/** The `commit` every `Toolkit.make` / `merge` / `empty` shares: a toolkit whose resolution is known. */
const toolkitCommit: unknown = (Toolkit.empty as unknown as { readonly commit: unknown }).commit

/** A toolkit resolved with the handlers found in a call's context (`Toolkit.toLayer`'s entries, by tool id). */
interface Resolved {
  readonly entries: ReadonlyArray<unknown>
  readonly handled: Handled
}

/** The last resolution of each toolkit (held while the toolkit is). */
const resolvedToolkits = new WeakMap<object, Resolved>()

/** Whether `tools` find the very `entries` in `context` (no array built on the way). */
const sameEntries = (
  entries: ReadonlyArray<unknown>,
  tools: ReadonlyArray<Tool.Any>,
  context: Context.Context<never>
): boolean => {
  if (entries.length !== tools.length) return false
  for (let i = 0; i < tools.length; i++) if (context.unsafeMap.get(tools[i]!.id) !== entries[i]) return false
  return true
}

/**
 * The toolkit with its handlers. Resolving a `Toolkit` (its `commit`) reads only the handler entries of its
 * tools from the context, and makes a new `handle` whose schemas (parameter decoder, result validator and
 * encoder) are compiled again on its first use: once per call under `make`. Here a toolkit whose tools find
 * the very same entries as at its last resolution reuses that resolution, the handlers, their contexts and
 * the compiled schemas being the same; any other toolkit value (an `Effect` of one, one resolved already) is
 * used as `make` uses it.
 */
const handledOf = (toolkitOf: NonNullable<Options["toolkit"]>): Effect.Effect<Handled, unknown, unknown> => {
  if (!Effect.isEffect(toolkitOf)) return Effect.succeed(toolkitOf)
  if (!(Predicate.hasProperty(toolkitOf, "commit") && toolkitOf.commit === toolkitCommit)) return toolkitOf
  const toolkit = toolkitOf as unknown as Toolkit.Any & Effect.Effect<Handled>
  return Effect.flatMap(Effect.context<never>(), (context) => {
    const tools = Object.values(toolkit.tools)
    const kept = resolvedToolkits.get(toolkit)
    if (kept !== undefined && sameEntries(kept.entries, tools, context)) return Effect.succeed(kept.handled)
    const entries = tools.map((tool) => context.unsafeMap.get(tool.id))
    return Effect.tap(toolkit, (handled) => void resolvedToolkits.set(toolkit, { entries, handled }))
  })
}

/** `make`'s `generateContent` for a call with a toolkit, over decoded parts. */
const withToolkit = (
  decoded: Decoded,
  options: Options,
  toolkitOf: NonNullable<Options["toolkit"]>,
  providerOptions: { -readonly [K in keyof LanguageModel.ProviderOptions]: LanguageModel.ProviderOptions[K] }
) =>
  Effect.gen(function*() {
    const toolChoice = options.toolChoice ?? "auto"
    const toolkit = yield* handledOf(toolkitOf)
    const all = Object.values(toolkit.tools)
    if (all.length === 0) return yield* contentOf(yield* decoded(providerOptions), undefined, options)
    providerOptions.tools = typeof toolChoice === "object" && "oneOf" in toolChoice
      ? all.filter((tool) => toolChoice.oneOf.includes(tool.name))
      : all
    providerOptions.toolChoice = toolChoice
    recordWholeToolkit(providerOptions, all)
    const answer = yield* decoded(providerOptions)
    if (answer.raw) return yield* contentOf(answer, toolkit, options)
    const content = answer.parts
    if (options.disableToolCallResolution === true) return content
    const results = yield* resolveToolCalls(content, toolkit, options.concurrency)
    return [...content, ...results] as Parts
  })

/**
 * What `make` reads at build time: the span transformer (one in the call's context wins over the one at
 * build) and the `IdGenerator`. @internal
 */
export const atBuild: Effect.Effect<{
  readonly spanTransformer: Effect.Effect<Option.Option<Telemetry.SpanTransformer>>
  readonly idGenerator: IdGenerator.Service
}> = Effect.gen(function*() {
  const parentSpanTransformer = yield* Effect.serviceOption(Telemetry.CurrentSpanTransformer)
  const spanTransformer = Effect.map(
    Effect.serviceOption(Telemetry.CurrentSpanTransformer),
    Option.orElse(() => parentSpanTransformer)
  )
  const idGenerator = Option.getOrElse(
    yield* Effect.serviceOption(IdGenerator.IdGenerator),
    () => IdGenerator.defaultIdGenerator
  )
  return { spanTransformer, idGenerator }
})

/**
 * `make`'s `generateText`, over parts decoded already. Reads the span transformer and the `IdGenerator`
 * at build time as `make` does (a transformer in the call's context wins over the one at build). @internal
 */
export const make = (decoded: Decoded): Effect.Effect<(options: Options) => Answer> =>
  Effect.map(atBuild, ({ idGenerator, spanTransformer }) => (options: Options): Answer =>
    Effect.useSpan(
      "LanguageModel.generateText",
      {
        captureStackTrace: false,
        attributes: { concurrency: options.concurrency, toolChoice: options.toolChoice }
      },
      (span) =>
        Effect.gen(function*() {
          const transformer = yield* spanTransformer
          const providerOptions: LanguageModel.ProviderOptions = {
            prompt: Prompt.make(options.prompt),
            tools: [],
            toolChoice: "none",
            responseFormat: { type: "text" },
            span
          }
          const content = options.toolkit === undefined
            ? yield* contentOf(yield* decoded(providerOptions), undefined, options)
            : yield* withToolkit(decoded, options, options.toolkit, providerOptions)
          if (Option.isSome(transformer)) transformer.value({ ...providerOptions, response: content })
          return new LanguageModel.GenerateTextResponse(content)
        }).pipe(
          // As `make`'s `Effect.catchTag("ParseError", …)`: any failure tagged so (a handler's included).
          Effect.catchIf(
            (error): error is ParseResult.ParseError => Predicate.isTagged(error, "ParseError"),
            (error) =>
              AiError.MalformedOutput.fromParseError({ module: "LanguageModel", method: "generateText", error })
          ),
          Effect.withParentSpan(span),
          Effect.provideService(IdGenerator.IdGenerator, idGenerator)
        )
    ))
