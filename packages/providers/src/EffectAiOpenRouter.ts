/**
 * The `@effect/ai` bridge for OpenRouter (`@effect/ai-openrouter`): the one-shot `OpenRouterClient` layer
 * to build your own `OpenRouterLanguageModel` on, and the per-attempt `Config` that `ReinLanguageModel`
 * applies to OpenRouter models. The only module of `@rein/providers` that imports `@effect/ai-openrouter`
 * (an optional peer: install it to use this module).
 *
 * @since 0.1.0
 */
import { OpenRouterClient, OpenRouterLanguageModel } from "@effect/ai-openrouter"
import * as HttpClient from "@effect/platform/HttpClient"
import type { Provider } from "@rein/core"
import { Context, Effect, Layer } from "effect"
import * as EffectAi from "./EffectAi.js"
import { outputBound } from "./internal/outputBound.js"
import type { ProviderConfigError } from "./Transport.js"

const DEFAULT_URL = "https://openrouter.ai/api/v1"

/**
 * An `OpenRouterClient` whose every call sends exactly one request (see `EffectAi.oneShot`).
 *
 * @example
 * ```ts
 * import { NodeHttpClient } from "@effect/platform-node"
 * import { Layer, Redacted } from "effect"
 * import * as EffectAiOpenRouter from "@rein/providers/EffectAiOpenRouter"
 *
 * const client = EffectAiOpenRouter.clientLayer({ apiKey: Redacted.make("sk-or-…") }).pipe(
 *   Layer.provide(NodeHttpClient.layerUndici)
 * )
 * ```
 * @category layers
 * @since 0.1.0
 */
export const clientLayer = (
  options: EffectAi.VendorOptions
): Layer.Layer<OpenRouterClient.OpenRouterClient, ProviderConfigError, HttpClient.HttpClient> =>
  Layer.scoped(
    OpenRouterClient.OpenRouterClient,
    Effect.flatMap(EffectAi.vendorTransport(options, DEFAULT_URL), ({ apiUrl, http }) =>
      OpenRouterClient.make({ apiKey: options.apiKey, apiUrl, transformClient: options.transformClient }).pipe(
        Effect.provideService(HttpClient.HttpClient, http)
      ))
  )

/**
 * The `OpenRouterLanguageModel.Config` of one attempt: the caller's own (from the context, if any) with
 * the endpoint's `model` and Rein's output bound as `max_tokens` (the caller's own, if smaller). `ReinLanguageModel` loads this module
 * on demand, only for models of the `openrouter` provider, so other vendors' packages need not be
 * installed.
 *
 * @example
 * ```ts
 * import type { Provider } from "@rein/core"
 * import * as EffectAiOpenRouter from "@rein/providers/EffectAiOpenRouter"
 *
 * declare const context: Provider.AttemptContext
 * const services = EffectAiOpenRouter.attemptConfig(context) // Effect<Context<OpenRouterLanguageModel.Config>>
 * ```
 * @category configuration
 * @since 0.1.0
 */
export const attemptConfig = (
  context: Provider.AttemptContext
): Effect.Effect<Context.Context<OpenRouterLanguageModel.Config>> =>
  Effect.map(OpenRouterLanguageModel.Config.getOrUndefined, (config) =>
    Context.make(OpenRouterLanguageModel.Config, {
      ...config,
      model: context.endpoint.model,
      max_tokens: outputBound(config?.max_tokens, context.maxOutputTokens)
    }))
