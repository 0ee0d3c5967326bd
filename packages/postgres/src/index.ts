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

/**
 * One batch run shared by many worker processes: the run, its items as a work queue, its status.
 *
 * @since 0.1.0
 */
export * as PgBatchRun from "./PgBatchRun.js"

/**
 * A worker of a distributed batch run: leases items, runs them, writes each record fenced by its lease.
 *
 * @since 0.1.0
 */
export * as PgWorker from "./PgWorker.js"

/**
 * Batch's artifact store on PostgreSQL: a run's manifest and records.
 *
 * @since 0.1.0
 */
export * as PgArtifactStore from "./PgArtifactStore.js"

/**
 * A `PgClient` from your own `pg` pool whose listening connection connects the way the pool does (its stream).
 *
 * @since 0.1.0
 */
export * as PgFromPool from "./PgFromPool.js"
