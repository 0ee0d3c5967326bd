/**
 * Test support, published apart from the library (`@rein/postgres/testing`): a throwaway PostgreSQL server on
 * loopback for tests and benchmarks.
 *
 * @since 0.1.0
 */

/**
 * A throwaway PostgreSQL server (`initdb` on a temporary directory, started on a free loopback port).
 *
 * @since 0.1.0
 */
export * as TestServer from "./testing/TestServer.js"
