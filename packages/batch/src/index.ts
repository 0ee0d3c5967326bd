export * as ArtifactStore from "./ArtifactStore.js"

/**
 * What makes two runs' results interchangeable: provider, model, prompt, parser and application
 * versions, extras; given explicitly or derived from a contract and its catalog.
 *
 * @since 0.1.0
 */
export * as Identity from "./Identity.js"

/**
 * SHA-256 fingerprints of canonical JSON: of an identity, a prompt, a whole input item.
 *
 * @since 0.1.0
 */
export * as Fingerprint from "./Fingerprint.js"

/**
 * The embedded artifact store: a crash-safe JSONL file on `@effect/platform`'s `FileSystem`.
 *
 * @since 0.1.0
 */
export * as JsonlStore from "./JsonlStore.js"

/**
 * Resume policies (`none`, `reuse-successes`, `reuse-all`) and the lookup of records to reuse.
 *
 * @since 0.1.0
 */
export * as Resume from "./Resume.js"

/**
 * The batch item a fiber works for, as a `FiberRef`: services around Rein's read it to name the item.
 *
 * @since 0.1.0
 */
export * as CurrentItem from "./CurrentItem.js"

/**
 * Batch runs: `run` collects, `stream` yields each result as it happens; guardrails around every item.
 *
 * @since 0.1.0
 */
export * as Batch from "./Batch.js"

/**
 * The run-wide guardrails as a Schema: concurrency, deadlines, abort mode, fail-fast, caps, rate limits.
 *
 * @since 0.1.0
 */
export * as Guardrails from "./Guardrails.js"

/**
 * Run limits: the state a run shares between workers (and processes) — soft caps, rate limits, capacity,
 * cooldowns, the stop — behind one service with an in-memory default.
 *
 * @since 0.1.0
 */
export * as RunLimits from "./RunLimits.js"

/**
 * Error categories: failure kinds, executor outcomes and the run's collateral categories.
 *
 * @since 0.1.0
 */
export * as Category from "./Category.js"

/**
 * The terminal result of one item, and the collateral errors of a stopped run.
 *
 * @since 0.1.0
 */
export * as Result from "./Result.js"

/**
 * How a run ended: completed, batch_timeout, fail_fast, budget_exceeded or artifact_error.
 *
 * @since 0.1.0
 */
export * as Termination from "./Termination.js"

/**
 * What a run did: counts by outcome and category, tokens, cost, unknown usage, retries, waits.
 *
 * @since 0.1.0
 */
export * as Stats from "./Stats.js"

/**
 * Events for observers and a progress value a CLI can draw.
 *
 * @since 0.1.0
 */
export * as Events from "./Events.js"

/**
 * Pricing attempts for the soft cost cap; the cost function's checks.
 *
 * @since 0.1.0
 */
export * as Cost from "./Cost.js"

/**
 * Where items come from: arrays, iterables, async iterables, Streams; pulled one at a time.
 *
 * @since 0.1.0
 */
export * as Source from "./Source.js"

/**
 * A checkpointed, resumable batch run: `Batch` over an artifact store with a resume policy.
 *
 * @since 0.1.0
 */
export * as Checkpoint from "./Checkpoint.js"
