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
 * A bridge from `@effect/ai`'s LanguageModel (OpenAI, Anthropic, …) to a one-shot Rein provider.
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
 * A real HTTP server on loopback with scripted faults, for tests and demos.
 *
 * @since 0.1.0
 */
export * as FaultServer from "./testing/FaultServer.js"

/**
 * An `@effect/ai` `LanguageModel` backed by Rein: one Layer puts an existing program under a contract.
 *
 * @since 0.1.0
 */
export * as ReinLanguageModel from "./ReinLanguageModel.js"
