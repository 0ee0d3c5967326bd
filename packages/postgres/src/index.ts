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
