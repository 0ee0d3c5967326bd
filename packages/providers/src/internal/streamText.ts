/**
 * The outer `streamText`. `LanguageModel.make` would decode every chunk the inner model has just decoded
 * (the inner parts encoded first, for it), with the very schema the inner model used, compiled again for
 * every call: per streamed part as much as the inner model's own decode. This is `make`'s own `streamText`
 * (`@effect/ai` 0.37: the same span, name and attributes, the same `ProviderOptions`, the toolkit resolved
 * and its tools offered as `make` offers them, tool calls resolved with the caller's handlers chunk by chunk
 * as `make` does, the span transformer applied to the content when the stream ends, `IdGenerator` provided,
 * a `ParseError` turned into `MalformedOutput`) minus that decode, as `generateText.ts` is for `generateText`.
 *
 * @internal
 */
import type { Tool } from "@effect/ai"
import { AiError, IdGenerator, LanguageModel, Prompt, Response } from "@effect/ai"
import { Chunk, Effect, Mailbox, Option, ParseResult, Schema, Stream } from "effect"
import type { Handled } from "./generateText.js"
import { atBuild, resolveToolCalls } from "./generateText.js"
import { recordWholeToolkit, rejectedParts } from "./rejected.js"

/** The parts of any toolkit's stream, as Rein carries them. */
type Part = Response.StreamPart<Record<string, Tool.Any>>

/** A call's decoded stream parts, from the outer call's `ProviderOptions` (the inner model decoded them). @internal */
export type Decoded = (options: LanguageModel.ProviderOptions) => Stream.Stream<Part, AiError.AiError>

/** The options of a call. @internal */
export type Options = LanguageModel.GenerateTextOptions<Record<string, Tool.Any>>

/** What `streamText` answers here (typed by `make`'s signature, as `generateText.ts`'s answer). @internal */
export type Answer = Stream.Stream<Part, unknown, unknown>

type MutableOptions = { -readonly [K in keyof LanguageModel.ProviderOptions]: LanguageModel.ProviderOptions[K] }

/** `make`'s decode of a chunk of a call whose tool calls it resolves. */
const decodeChunk = (toolkit: Handled) => Schema.decodeUnknown(Schema.Array(Response.StreamPart(toolkit)))

/** `make`'s `streamContent` for a call with a toolkit, over decoded parts. */
const withToolkit = (decoded: Decoded, options: Options, providerOptions: MutableOptions) =>
  Effect.gen(function*() {
    const toolChoice = options.toolChoice ?? "auto"
    const toolkitOf = options.toolkit!
    const toolkit: Handled = Effect.isEffect(toolkitOf) ? yield* toolkitOf : toolkitOf
    const all = Object.values(toolkit.tools)
    if (all.length === 0) return decoded(providerOptions)
    providerOptions.tools = typeof toolChoice === "object" && "oneOf" in toolChoice
      ? all.filter((tool) => toolChoice.oneOf.includes(tool.name))
      : all
    providerOptions.toolChoice = toolChoice
    recordWholeToolkit(providerOptions, all)
    if (options.disableToolCallResolution === true) return decoded(providerOptions)
    const mailbox = yield* Mailbox.make<Part, unknown>()
    // Arrays only, as `make` offers: `Mailbox.offerAll` of a `Chunk` after an array offers that array again
    // (effect 3.22: the array is appended to the chunk buffer but not cleared).
    yield* decoded(providerOptions).pipe(
      Stream.runForEachChunk((chunk) =>
        Effect.zipRight(
          mailbox.offerAll(Chunk.toArray(chunk)),
          Effect.flatMap(
            resolveToolCalls(chunk, toolkit, options.concurrency),
            (results) => mailbox.offerAll(results as Array<Part>)
          )
        )
      ),
      // A chunk the inner decode rejected (`rejected.ts`): decoded again as `make` decodes a chunk here, so
      // that the call fails with `make`'s error.
      Effect.catchAll((error) => {
        const parts = rejectedParts(error)
        return parts === undefined
          ? Effect.fail(error)
          : Effect.zipRight(decodeChunk(toolkit)(parts), Effect.fail(error))
      }),
      Mailbox.into(mailbox),
      Effect.forkScoped
    )
    return Mailbox.toStream(mailbox)
  })

/**
 * `make`'s `streamText`, over parts decoded already. Reads the span transformer and the `IdGenerator` at
 * build time as `make` does (a transformer in the call's context wins over the one at build). @internal
 */
export const make = (decoded: Decoded): Effect.Effect<(options: Options) => Answer> =>
  Effect.map(
    atBuild,
    ({ idGenerator, spanTransformer }) => (options: Options): Answer =>
      Stream.unwrapScoped(Effect.gen(function*() {
        const span = yield* Effect.makeSpanScoped("LanguageModel.streamText", {
          captureStackTrace: false,
          attributes: { concurrency: options.concurrency, toolChoice: options.toolChoice }
        })
        const providerOptions: MutableOptions = {
          prompt: Prompt.make(options.prompt),
          tools: [],
          toolChoice: "none",
          responseFormat: { type: "text" },
          span
        }
        const stream: Answer = options.toolkit === undefined
          ? decoded(providerOptions)
          : yield* withToolkit(decoded, options, providerOptions)
        const transformer = yield* spanTransformer
        if (Option.isNone(transformer)) return stream
        // Appended in place: a copy per chunk is quadratic in a long stream's parts (one part per chunk).
        const content: Array<Part> = []
        return stream.pipe(
          Stream.mapChunks((chunk) => {
            for (const part of chunk) content.push(part)
            return chunk
          }),
          Stream.ensuring(Effect.sync(() => transformer.value({ ...providerOptions, response: content })))
        )
      })).pipe(
        Stream.mapError((error) =>
          ParseResult.isParseError(error)
            ? AiError.MalformedOutput.fromParseError({ module: "LanguageModel", method: "streamText", error })
            : error
        ),
        Stream.provideService(IdGenerator.IdGenerator, idGenerator)
      )
  )
