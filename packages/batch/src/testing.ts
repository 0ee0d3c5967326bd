/**
 * Test support, published apart from the library (`@rein/batch/testing`): the laws every `RunLimits`
 * implementation must pass.
 *
 * @since 0.1.0
 */

/**
 * The `RunLimits` laws, as property suites to run against an implementation.
 *
 * @since 0.1.0
 */
export * as RunLimitsLaws from "./testing/RunLimitsLaws.js"
