/**
 * The `@effect/ai` bridge for OpenAI (the Responses API, `@effect/ai-openai`): a one-shot Rein provider,
 * and the one-shot `OpenAiClient` layer to build your own `OpenAiLanguageModel` on. The only module of
 * `@rein/providers` that imports `@effect/ai-openai` (an optional peer: install it to use this module).
 *
 * @since 0.1.0
 */
import { OpenAiClient, OpenAiLanguageModel } from "@effect/ai-openai"
import * as HttpClient from "@effect/platform/HttpClient"
import type { Provider } from "@rein/core"
import { Context, Effect, Layer } from "effect"
import * as EffectAi from "./EffectAi.js"
import { outputBound } from "./internal/outputBound.js"
import type { ProviderConfigError } from "./Transport.js"

/**
 * Options of the OpenAI bridge: the key, the API root (default `https://api.openai.com/v1`), and your own
 * `OpenAiLanguageModel.Config` (temperature, …), over which each attempt sets `model` and
 * `max_output_tokens`.
 *
 * @example
 * ```ts
 * import { Redacted } from "effect"
 * import type * as EffectAiOpenAi from "@rein/providers/EffectAiOpenAi"
 *
 * const options: EffectAiOpenAi.Options = { apiKey: Redacted.make("sk-…"), config: { temperature: 0 } }
 * ```
 * @category models
 * @since 0.1.0
 */
export interface Options extends EffectAi.VendorOptions {
  readonly config?: Omit<OpenAiLanguageModel.Config.Service, "model" | "max_output_tokens"> | undefined
}

const DEFAULT_URL = "https://api.openai.com/v1"

/**
 * An `OpenAiClient` whose every bridged call sends exactly one request (see `EffectAi.oneShot`).
 *
 * @example
 * ```ts
 * import { NodeHttpClient } from "@effect/platform-node"
 * import { Layer, Redacted } from "effect"
 * import * as EffectAiOpenAi from "@rein/providers/EffectAiOpenAi"
 *
 * const client = EffectAiOpenAi.clientLayer({ apiKey: Redacted.make("sk-…") }).pipe(
 *   Layer.provide(NodeHttpClient.layerUndici)
 * )
 * ```
 * @category layers
 * @since 0.1.0
 */
export const clientLayer = (
  options: EffectAi.VendorOptions
): Layer.Layer<OpenAiClient.OpenAiClient, ProviderConfigError, HttpClient.HttpClient> =>
  Layer.scoped(
    OpenAiClient.OpenAiClient,
    Effect.flatMap(EffectAi.vendorTransport(options, DEFAULT_URL), ({ apiUrl, http }) =>
      OpenAiClient.make({ apiKey: options.apiKey, apiUrl, transformClient: options.transformClient }).pipe(
        Effect.provideService(HttpClient.HttpClient, http)
      ))
  )

/**
 * A one-shot Rein provider over `@effect/ai-openai`. Each attempt sends the endpoint's `model` and Rein's
 * output bound as `max_output_tokens` (the caller's own, if smaller), over `options.config`.
 *
 * @example
 * ```ts
 * import { NodeHttpClient } from "@effect/platform-node"
 * import { Effect, Redacted } from "effect"
 * import * as EffectAiOpenAi from "@rein/providers/EffectAiOpenAi"
 *
 * const provider = EffectAiOpenAi.make({ apiKey: Redacted.make("sk-…") }).pipe(
 *   Effect.provide(NodeHttpClient.layerUndici)
 * )
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const make = (
  options: Options
): Effect.Effect<Provider.Provider, ProviderConfigError, HttpClient.HttpClient> =>
  Effect.scoped(Effect.gen(function*() {
    const client = Context.get(yield* Layer.build(clientLayer(options)), OpenAiClient.OpenAiClient)
    const languageModel = yield* OpenAiLanguageModel.make({ model: "unused-default" }).pipe(
      Effect.provideService(OpenAiClient.OpenAiClient, client)
    )
    return EffectAi.fromLanguageModel(languageModel, {
      maxResponseBytes: options.maxResponseBytes,
      toolkit: options.toolkit,
      configure: (ctx) => configOf(options.config, ctx),
      isFinalEvent
    })
  }))

/** Responses' final events: the answer's usage rides on them. */
const isFinalEvent = (event: unknown): boolean =>
  typeof event === "object" && event !== null && "type" in event &&
  (event.type === "response.completed" || event.type === "response.incomplete")

/** `config` with the endpoint's model and Rein's output bound (`config`'s own, if smaller). */
const configOf = (
  config: Options["config"] | OpenAiLanguageModel.Config.Service | undefined,
  context: Provider.AttemptContext
): Context.Context<OpenAiLanguageModel.Config> =>
  Context.make(OpenAiLanguageModel.Config, {
    ...config,
    model: context.endpoint.model,
    max_output_tokens: outputBound(
      config !== undefined && "max_output_tokens" in config ? config.max_output_tokens : undefined,
      context.maxOutputTokens
    )
  })

/**
 * The `OpenAiLanguageModel.Config` of one attempt: the caller's own (from the context, if any) with the
 * endpoint's `model` and Rein's output bound as `max_output_tokens` (the caller's own, if smaller). `ReinLanguageModel` loads this module on
 * demand, only for models of the `openai` provider, so other vendors' packages need not be installed.
 *
 * @example
 * ```ts
 * import type { Provider } from "@rein/core"
 * import * as EffectAiOpenAi from "@rein/providers/EffectAiOpenAi"
 *
 * declare const context: Provider.AttemptContext
 * const services = EffectAiOpenAi.attemptConfig(context) // Effect<Context<OpenAiLanguageModel.Config>>
 * ```
 * @category configuration
 * @since 0.1.0
 */
export const attemptConfig = (
  context: Provider.AttemptContext
): Effect.Effect<Context.Context<OpenAiLanguageModel.Config>> =>
  Effect.map(OpenAiLanguageModel.Config.getOrUndefined, (config) => configOf(config, context))
