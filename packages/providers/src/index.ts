/**
 * Rein providers: one-shot adapters for real model APIs, and a loopback fault server to test them.
 *
 * @since 0.1.0
 */

/**
 * Where adapters may send credentials: https:// except loopback, unless overridden.
 *
 * @since 0.1.0
 */
export * as Transport from "./Transport.js"

/**
 * OpenAI-compatible chat completions on `@effect/platform`'s HttpClient, with SSE streaming.
 *
 * @since 0.1.0
 */
export * as OpenAiCompatible from "./OpenAiCompatible.js"

/**
 * Azure OpenAI deployments (`api-version`, the `api-key` header) over the OpenAI-compatible adapter.
 *
 * @since 0.1.0
 */
export * as Azure from "./Azure.js"

/**
 * A bridge from `@effect/ai`'s LanguageModel to a one-shot Rein provider. It imports no vendor package:
 * the vendor bridges are the subpath modules `@rein/providers/EffectAiOpenAi`, `…/EffectAiAnthropic` and
 * `…/EffectAiGoogle`, each needing only its own `@effect/ai-*` package (optional peers).
 *
 * @since 0.1.0
 */
export * as EffectAi from "./EffectAi.js"

/**
 * A subprocess provider: absolute path, no shell, empty environment, process-group kill.
 *
 * @since 0.1.0
 */
export * as Subprocess from "./Subprocess.js"

/**
 * An `@effect/ai` `LanguageModel` backed by Rein: one Layer puts an existing program under a contract.
 *
 * @since 0.1.0
 */
export * as ReinLanguageModel from "./ReinLanguageModel.js"
