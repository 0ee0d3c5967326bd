/**
 * Test support, published apart from the adapters (`@rein/providers/testing`): a real HTTP server on loopback
 * that speaks each vendor's wire format with scripted faults, and the dialects it speaks. Programs under test
 * point an adapter at it; nothing here is needed to call a provider.
 *
 * @since 0.1.0
 */

/**
 * A real HTTP server on loopback with scripted faults, for tests and demos.
 *
 * @since 0.1.0
 */
export * as FaultServer from "./testing/FaultServer.js"

/**
 * What a dialect of the fault server is: how it claims a path, reads a request and writes answers and errors.
 *
 * @since 0.1.0
 */
export * as Dialect from "./testing/dialects/Dialect.js"

/**
 * The dialects the fault server speaks, in the order it tries them.
 *
 * @since 0.1.0
 */
export * as Dialects from "./testing/dialects/index.js"

/**
 * Anthropic Messages.
 *
 * @since 0.1.0
 */
export * as anthropic from "./testing/dialects/anthropic.js"

/**
 * Azure OpenAI deployments.
 *
 * @since 0.1.0
 */
export * as azure from "./testing/dialects/azure.js"

/**
 * Google Gemini.
 *
 * @since 0.1.0
 */
export * as gemini from "./testing/dialects/gemini.js"

/**
 * OpenAI chat completions.
 *
 * @since 0.1.0
 */
export * as openaiChat from "./testing/dialects/openaiChat.js"

/**
 * OpenAI Responses.
 *
 * @since 0.1.0
 */
export * as openaiResponses from "./testing/dialects/openaiResponses.js"

/**
 * OpenRouter's chat completions.
 *
 * @since 0.1.0
 */
export * as openRouter from "./testing/dialects/openRouter.js"
