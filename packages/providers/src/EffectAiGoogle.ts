/**
 * The `@effect/ai` bridge for Google Gemini (`generateContent`, `@effect/ai-google`): a one-shot Rein provider,
 * and the one-shot `GoogleClient` layer to build your own `GoogleLanguageModel` on. The only module of
 * `@rein/providers` that imports `@effect/ai-google` (an optional peer: install it to use this module).
 *
 * @since 0.1.0
 */
import { GoogleClient, GoogleLanguageModel } from "@effect/ai-google"
import * as HttpClient from "@effect/platform/HttpClient"
import type { Provider } from "@rein/core"
import { Context, Effect, Layer } from "effect"
import * as EffectAi from "./EffectAi.js"
import { outputBound } from "./internal/outputBound.js"
import type { ProviderConfigError } from "./Transport.js"

/**
 * Options of the Gemini bridge: the key (sent as `x-goog-api-key`), the API root (default
 * `https://generativelanguage.googleapis.com`), and your own `GoogleLanguageModel.Config`, over which each
 * attempt sets `model` and `generationConfig.maxOutputTokens`.
 *
 * @example
 * ```ts
 * import { Redacted } from "effect"
 * import type * as EffectAiGoogle from "@rein/providers/EffectAiGoogle"
 *
 * const options: EffectAiGoogle.Options = { apiKey: Redacted.make("AIza…"), config: { generationConfig: { temperature: 0 } } }
 * ```
 * @category models
 * @since 0.1.0
 */
export interface Options extends EffectAi.VendorOptions {
  readonly config?: Partial<Omit<GoogleLanguageModel.Config.Service, "model">> | undefined
}

const DEFAULT_URL = "https://generativelanguage.googleapis.com"

/**
 * An `GoogleClient` whose every bridged call sends exactly one request (see `EffectAi.oneShot`).
 *
 * @example
 * ```ts
 * import { NodeHttpClient } from "@effect/platform-node"
 * import { Layer, Redacted } from "effect"
 * import * as EffectAiGoogle from "@rein/providers/EffectAiGoogle"
 *
 * const client = EffectAiGoogle.clientLayer({ apiKey: Redacted.make("AIza…") }).pipe(
 *   Layer.provide(NodeHttpClient.layerUndici)
 * )
 * ```
 * @category layers
 * @since 0.1.0
 */
export const clientLayer = (
  options: EffectAi.VendorOptions
): Layer.Layer<GoogleClient.GoogleClient, ProviderConfigError, HttpClient.HttpClient> =>
  Layer.scoped(
    GoogleClient.GoogleClient,
    Effect.flatMap(EffectAi.vendorTransport(options, DEFAULT_URL), ({ apiUrl, http }) =>
      GoogleClient.make({ apiKey: options.apiKey, apiUrl, transformClient: options.transformClient }).pipe(
        Effect.provideService(HttpClient.HttpClient, http)
      ))
  )

/**
 * A one-shot Rein provider over `@effect/ai-google`. Each attempt sends the endpoint's `model` and Rein's
 * output bound as `generationConfig.maxOutputTokens` (the caller's own, if smaller), over `options.config`.
 *
 * @example
 * ```ts
 * import { NodeHttpClient } from "@effect/platform-node"
 * import { Effect, Redacted } from "effect"
 * import * as EffectAiGoogle from "@rein/providers/EffectAiGoogle"
 *
 * const provider = EffectAiGoogle.make({ apiKey: Redacted.make("AIza…") }).pipe(
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
    const client = Context.get(yield* Layer.build(clientLayer(options)), GoogleClient.GoogleClient)
    const languageModel = yield* GoogleLanguageModel.make({ model: "unused-default" }).pipe(
      Effect.provideService(GoogleClient.GoogleClient, client)
    )
    return EffectAi.fromLanguageModel(languageModel, {
      maxResponseBytes: options.maxResponseBytes,
      toolkit: options.toolkit,
      configure: (ctx) => configOf(options.config, ctx)
    })
  }))

/** `config` with the endpoint's model and Rein's output bound (`config`'s own, if smaller). */
const configOf = (
  config: Options["config"] | GoogleLanguageModel.Config.Service | undefined,
  context: Provider.AttemptContext
): Context.Context<GoogleLanguageModel.Config> =>
  Context.make(GoogleLanguageModel.Config, {
    ...config,
    toolConfig: config?.toolConfig ?? {},
    model: context.endpoint.model,
    generationConfig: {
      ...config?.generationConfig,
      maxOutputTokens: outputBound(config?.generationConfig?.maxOutputTokens, context.maxOutputTokens)
    }
  })

/**
 * The `GoogleLanguageModel.Config` of one attempt: the caller's own (from the context, if any) with the
 * endpoint's `model` and Rein's output bound as `generationConfig.maxOutputTokens` (the caller's own, if smaller). `ReinLanguageModel` loads this module on
 * demand, only for models of the `google` provider, so other vendors' packages need not be installed.
 *
 * @example
 * ```ts
 * import type { Provider } from "@rein/core"
 * import * as EffectAiGoogle from "@rein/providers/EffectAiGoogle"
 *
 * declare const context: Provider.AttemptContext
 * const services = EffectAiGoogle.attemptConfig(context) // Effect<Context<GoogleLanguageModel.Config>>
 * ```
 * @category configuration
 * @since 0.1.0
 */
export const attemptConfig = (
  context: Provider.AttemptContext
): Effect.Effect<Context.Context<GoogleLanguageModel.Config>> =>
  Effect.map(GoogleLanguageModel.Config.getOrUndefined, (config) => configOf(config, context))
