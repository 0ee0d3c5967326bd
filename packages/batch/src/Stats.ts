/**
 * What a run did, counted as it happened: items by outcome and by category, what finished attempts used
 * (tokens, cost, and the attempts whose usage the provider did not report, counted apart and never as 0),
 * retries, fallbacks, 429s and admission waits. Counted from each attempt as it ends, the same observation
 * the soft caps and the tokens-per-minute limiter use. A Schema, so a summary serialises.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"

/**
 * The counters of one run.
 *
 * @example
 * ```ts
 * import type { Stats } from "@rein/batch"
 *
 * const line = (s: Stats.Stats) => `${s.succeeded}/${s.accepted} ok, ${s.tokensUsed} tokens, cost ${s.costUsed}`
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const Stats = Schema.Struct({
  /** Items taken from the source (all of a collection's): each gets exactly one result. */
  accepted: Schema.Number,
  succeeded: Schema.Number,
  failed: Schema.Number,
  reused: Schema.Number,
  /** Items walked by a dry run (no call made). */
  planned: Schema.Number,
  /** Results by category (`ok` for successes). */
  byCategory: Schema.Record({ key: Schema.String, value: Schema.Number }),
  /** Provider attempts admitted. */
  attempts: Schema.Number,
  retries: Schema.Number,
  fallbacks: Schema.Number,
  rateLimited: Schema.Number,
  /** Tokens reported by finished attempts (success or failure, retries included). */
  tokensUsed: Schema.Number,
  /** Cost of finished attempts with reported usage (the cost function, or the catalog's prices). */
  costUsed: Schema.Number,
  /** False once the cost function failed: `costUsed` then misses what it could not price. */
  costComplete: Schema.Boolean,
  /** Attempts that may have reached the provider but whose usage is unknown (not in the totals). */
  unknownUsageAttempts: Schema.Number,
  /** Admissions that had to wait (rate limits, capacity, cooldown, ramp), and the total time waited. */
  admissionWaits: Schema.Number,
  admissionWaitMillis: Schema.Number
})

/**
 * @category models
 * @since 0.1.0
 */
export type Stats = typeof Stats.Type

/**
 * Counters before anything happened.
 *
 * @example
 * ```ts
 * import { Stats } from "@rein/batch"
 *
 * Stats.empty().accepted // 0
 * ```
 * @category utils
 * @since 0.1.0
 */
export const empty = (): { -readonly [K in keyof Stats]: Stats[K] } => ({
  accepted: 0,
  succeeded: 0,
  failed: 0,
  reused: 0,
  planned: 0,
  byCategory: {},
  attempts: 0,
  retries: 0,
  fallbacks: 0,
  rateLimited: 0,
  tokensUsed: 0,
  costUsed: 0,
  costComplete: true,
  unknownUsageAttempts: 0,
  admissionWaits: 0,
  admissionWaitMillis: 0
})
