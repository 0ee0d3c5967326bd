/**
 * The outer `generateText` of a call without a toolkit. `LanguageModel.make` would decode the parts that
 * the inner model has just decoded, with the very schema the inner model used (`Response.Part` of the
 * empty toolkit), and compile that schema again for every call: the largest single cost of a Rein call.
 * This is `make`'s own no-toolkit path (`@effect/ai` 0.37: the same span, name and attributes, the same
 * `ProviderOptions`, the span transformer applied to the content, `IdGenerator` provided) minus that
 * decode. Calls with a toolkit, `generateObject` and `streamText` go through `make` unchanged.
 *
 * @internal
 */
import type { AiError, Response, Tool } from "@effect/ai"
import { IdGenerator, LanguageModel, Prompt, Telemetry } from "@effect/ai"
import { Effect, Option } from "effect"

/** A call's decoded parts, from the outer call's `ProviderOptions` (the inner model decoded them). @internal */
export type Decoded = (
  options: LanguageModel.ProviderOptions
) => Effect.Effect<Array<Response.Part<Record<string, Tool.Any>>>, AiError.AiError>

/** The options of a call without a toolkit. @internal */
export type Options = LanguageModel.GenerateTextOptions<Record<string, Tool.Any>>

/** What `generateText` answers here (a call without a toolkit fails with `AiError` only). @internal */
export type Answer = Effect.Effect<LanguageModel.GenerateTextResponse<Record<string, Tool.Any>>, AiError.AiError>

/**
 * `make`'s `generateText` for calls without a toolkit, over parts decoded already. Reads the span
 * transformer and the `IdGenerator` at build time as `make` does (a transformer in the call's context
 * wins over the one at build). @internal
 */
export const make = (decoded: Decoded): Effect.Effect<(options: Options) => Answer> =>
  Effect.gen(function*() {
    const parentSpanTransformer = yield* Effect.serviceOption(Telemetry.CurrentSpanTransformer)
    const spanTransformer = Effect.map(
      Effect.serviceOption(Telemetry.CurrentSpanTransformer),
      Option.orElse(() => parentSpanTransformer)
    )
    const idGenerator = Option.getOrElse(
      yield* Effect.serviceOption(IdGenerator.IdGenerator),
      () => IdGenerator.defaultIdGenerator
    )
    return (options) =>
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
            const content = yield* decoded(providerOptions)
            if (Option.isSome(transformer)) transformer.value({ ...providerOptions, response: content })
            return new LanguageModel.GenerateTextResponse(content)
          }).pipe(
            Effect.withParentSpan(span),
            Effect.provideService(IdGenerator.IdGenerator, idGenerator)
          )
      )
  })
