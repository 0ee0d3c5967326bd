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
