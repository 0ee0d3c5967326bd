/**
 * The `@effect/ai` bridge for Anthropic (the Messages API, `@effect/ai-anthropic`): a one-shot Rein provider,
 * and the one-shot `AnthropicClient` layer to build your own `AnthropicLanguageModel` on. The only module of
 * `@rein/providers` that imports `@effect/ai-anthropic` (an optional peer: install it to use this module).
 *
 * @since 0.1.0
 */
import { AnthropicClient, AnthropicLanguageModel } from "@effect/ai-anthropic"
import * as HttpClient from "@effect/platform/HttpClient"
import type { Provider } from "@rein/core"
import { Context, Effect, Layer } from "effect"
import * as EffectAi from "./EffectAi.js"
import { outputBound } from "./internal/outputBound.js"
import type { ProviderConfigError } from "./Transport.js"

/**
 * Options of the Anthropic bridge: the key (sent as `x-api-key`), the API root (default
 * `https://api.anthropic.com`), and your own
 * `AnthropicLanguageModel.Config` (temperature, …), over which each attempt sets `model` and
 * `max_tokens`.
 *
 * @example
 * ```ts
 * import { Redacted } from "effect"
 * import type * as EffectAiAnthropic from "@rein/providers/EffectAiAnthropic"
 *
 * const options: EffectAiAnthropic.Options = { apiKey: Redacted.make("sk-ant-…"), config: { temperature: 0 } }
 * ```
 * @category models
 * @since 0.1.0
 */
export interface Options extends EffectAi.VendorOptions {
  readonly config?: Omit<AnthropicLanguageModel.Config.Service, "model" | "max_tokens"> | undefined
}

const DEFAULT_URL = "https://api.anthropic.com"

/**
 * An `AnthropicClient` whose every bridged call sends exactly one request (see `EffectAi.oneShot`).
 *
 * @example
 * ```ts
 * import { NodeHttpClient } from "@effect/platform-node"
 * import { Layer, Redacted } from "effect"
 * import * as EffectAiAnthropic from "@rein/providers/EffectAiAnthropic"
 *
 * const client = EffectAiAnthropic.clientLayer({ apiKey: Redacted.make("sk-ant-…") }).pipe(
 *   Layer.provide(NodeHttpClient.layerUndici)
 * )
 * ```
 * @category layers
 * @since 0.1.0
 */
export const clientLayer = (
  options: EffectAi.VendorOptions
): Layer.Layer<AnthropicClient.AnthropicClient, ProviderConfigError, HttpClient.HttpClient> =>
  Layer.scoped(
    AnthropicClient.AnthropicClient,
    Effect.flatMap(EffectAi.vendorTransport(options, DEFAULT_URL), ({ apiUrl, http }) =>
      AnthropicClient.make({ apiKey: options.apiKey, apiUrl, transformClient: options.transformClient }).pipe(
        Effect.provideService(HttpClient.HttpClient, http)
      ))
  )

/**
 * A one-shot Rein provider over `@effect/ai-anthropic` (Anthropic Messages). Each attempt sends the endpoint's `model` and Rein's
 * output bound as `max_tokens` (the caller's own, if smaller), over `options.config`.
 *
 * @example
 * ```ts
 * import { NodeHttpClient } from "@effect/platform-node"
 * import { Effect, Redacted } from "effect"
 * import * as EffectAiAnthropic from "@rein/providers/EffectAiAnthropic"
 *
 * const provider = EffectAiAnthropic.make({ apiKey: Redacted.make("sk-ant-…") }).pipe(
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
    const client = Context.get(yield* Layer.build(clientLayer(options)), AnthropicClient.AnthropicClient)
    const languageModel = yield* AnthropicLanguageModel.make({ model: "unused-default" }).pipe(
      Effect.provideService(AnthropicClient.AnthropicClient, client)
    )
    return EffectAi.fromLanguageModel(languageModel, {
      maxResponseBytes: options.maxResponseBytes,
      toolkit: options.toolkit,
      configure: (ctx) => configOf(options.config, ctx)
    })
  }))

/** `config` with the endpoint's model and Rein's output bound (`config`'s own, if smaller). */
const configOf = (
  config: Options["config"] | AnthropicLanguageModel.Config.Service | undefined,
  context: Provider.AttemptContext
): Context.Context<AnthropicLanguageModel.Config> =>
  Context.make(AnthropicLanguageModel.Config, {
    ...config,
    model: context.endpoint.model,
    max_tokens: outputBound(
      config !== undefined && "max_tokens" in config ? config.max_tokens : undefined,
      context.maxOutputTokens
    )
  })

/**
 * The `AnthropicLanguageModel.Config` of one attempt: the caller's own (from the context, if any) with the
 * endpoint's `model` and Rein's output bound as `max_tokens` (the caller's own, if smaller). `ReinLanguageModel` loads this module on
 * demand, only for models of the `anthropic` provider, so other vendors' packages need not be installed.
 *
 * @example
 * ```ts
 * import type { Provider } from "@rein/core"
 * import * as EffectAiAnthropic from "@rein/providers/EffectAiAnthropic"
 *
 * declare const context: Provider.AttemptContext
 * const services = EffectAiAnthropic.attemptConfig(context) // Effect<Context<AnthropicLanguageModel.Config>>
 * ```
 * @category configuration
 * @since 0.1.0
 */
export const attemptConfig = (
  context: Provider.AttemptContext
): Effect.Effect<Context.Context<AnthropicLanguageModel.Config>> =>
  Effect.map(AnthropicLanguageModel.Config.getOrUndefined, (config) => configOf(config, context))
