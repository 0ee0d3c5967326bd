/**
 * Azure OpenAI: chat completions on a resource's deployments, over the OpenAI-compatible adapter (no
 * vendor package). Each endpoint's `model` is the deployment name; a call goes to
 * `<resourceUrl>/openai/deployments/<deployment>/chat/completions?api-version=<apiVersion>` with the key
 * in the `api-key` header (a `Redacted`, never logged nor recorded). Azure's errors are classified like
 * OpenAI's (`content_filter`, `context_length_exceeded`, 429 with `retry-after-ms`).
 *
 * @since 0.1.0
 */
import type * as HttpClient from "@effect/platform/HttpClient"
import type { Provider } from "@rein/core"
import type { Effect, Redacted } from "effect"
import * as OpenAiCompatible from "./OpenAiCompatible.js"
import type { ProviderConfigError } from "./Transport.js"

/**
 * Options of the Azure OpenAI provider.
 *
 * @example
 * ```ts
 * import { Redacted } from "effect"
 * import type { Azure } from "@rein/providers"
 *
 * const options: Azure.Options = {
 *   resourceUrl: "https://my-resource.openai.azure.com",
 *   apiKey: Redacted.make("…"),
 *   apiVersion: "2024-10-21"
 * }
 * ```
 * @category models
 * @since 0.1.0
 */
export interface Options {
  /** `https://<resource>.openai.azure.com` */
  readonly resourceUrl: string
  readonly apiKey: Redacted.Redacted<string>
  /** The `api-version` query parameter, e.g. `2024-10-21`. */
  readonly apiVersion: string
  /** Allow plain `http://` to a non-loopback host. Off by default. */
  readonly allowInsecureHttp?: boolean | undefined
  /** The request field for the output bound (newer models want `max_completion_tokens`). */
  readonly maxTokensField?: "max_tokens" | "max_completion_tokens" | undefined
  /** The largest answer read, in bytes (see `OpenAiCompatible.Options.maxResponseBytes`). Default 8 MiB. */
  readonly maxResponseBytes?: number | undefined
}

/**
 * The provider, from an `HttpClient` in context. Fails with `ProviderConfigError` as
 * `OpenAiCompatible.make` does (a key over plain `http://` to a non-loopback host, options that do not
 * decode).
 *
 * @example
 * ```ts
 * import { NodeHttpClient } from "@effect/platform-node"
 * import { Effect, Redacted } from "effect"
 * import { Azure } from "@rein/providers"
 *
 * const provider = Azure.make({
 *   resourceUrl: "https://my-resource.openai.azure.com",
 *   apiKey: Redacted.make("…"),
 *   apiVersion: "2024-10-21"
 * }).pipe(Effect.provide(NodeHttpClient.layerUndici))
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const make = (
  options: Options
): Effect.Effect<Provider.Provider, ProviderConfigError, HttpClient.HttpClient> =>
  OpenAiCompatible.make({
    baseUrl: options.resourceUrl,
    apiKey: options.apiKey,
    apiKeyHeader: "api-key",
    urlParams: { "api-version": options.apiVersion },
    pathFor: (deployment) => `/openai/deployments/${encodeURIComponent(deployment)}/chat/completions`,
    allowInsecureHttp: options.allowInsecureHttp,
    maxTokensField: options.maxTokensField,
    maxResponseBytes: options.maxResponseBytes
  })
