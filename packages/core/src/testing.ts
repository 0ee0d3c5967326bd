/**
 * Test support, published apart from the library (`@rein/core/testing`): hostile input for property tests of
 * decoders at the edge.
 *
 * @since 0.1.0
 */

/**
 * Hostile input for property tests of decoders at the edge.
 *
 * @since 0.1.0
 */
export * as Hostile from "./testing/Hostile.js"

/**
 * The laws every `Budget.Service` implementation must pass, as property cases to register with a runner.
 *
 * @since 0.1.0
 */
export * as BudgetLaws from "./testing/BudgetLaws.js"

/**
 * The laws every `Health` implementation must pass, as property cases to register with a runner.
 *
 * @since 0.1.0
 */
export * as HealthLaws from "./testing/HealthLaws.js"

/**
 * The shape of a law: a name and its property cases.
 *
 * @since 0.1.0
 */
export * as Laws from "./testing/Laws.js"

/**
 * Clocks for tests of long waits: a clock on which a sleep past the longest timer never ends, as on Effect's
 * live clock.
 *
 * @since 0.1.0
 */
export * as Clocks from "./testing/Clocks.js"
