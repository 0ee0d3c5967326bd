/**
 * A hard budget (cost, tokens, calls) shared by many processes through PostgreSQL, leased in slices.
 *
 * @since 0.1.0
 */
export * as PgBudget from "./PgBudget.js"

/**
 * The package's schema as versioned migrations, safe to run from many processes at once.
 *
 * @since 0.1.0
 */
export * as Migrations from "./Migrations.js"

/**
 * Endpoint health (breakers, fleet-wide probe slots, retry budgets) shared by many processes through PostgreSQL.
 *
 * @since 0.1.0
 */
export * as PgHealth from "./PgHealth.js"

/**
 * Batch run limits shared by many processes: soft caps and their totals, the stop, cooldowns, and the
 * requests- and tokens-per-minute buckets of a provider key.
 *
 * @since 0.1.0
 */
export * as PgRunLimits from "./PgRunLimits.js"

/**
 * Shared token buckets as `@effect/experimental`'s `RateLimiterStore`, leased in slices.
 *
 * @since 0.1.0
 */
export * as PgRateLimiterStore from "./PgRateLimiterStore.js"
