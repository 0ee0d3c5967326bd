/**
 * Usage and cost. Usage a provider did not report stays `"unknown"`: it is never treated as zero, and a
 * cost computed from it is unknown too.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import type { Prices } from "./Catalog.js"
import { NonNegativeNumber } from "./internal/decode.js"

/**
 * Tokens a provider reported for one attempt: counts, each finite and ≥ 0. A record, journal line or
 * artifact saying `-5` or `1e400` is malformed (the executor never writes one: see `isCount`).
 *
 * @example
 * ```ts
 * import { Schema } from "effect"
 * import { Usage } from "@rein/core"
 *
 * Schema.decodeUnknownEither(Usage.Tokens)({ inputTokens: -5, outputTokens: 1 })
 * // Left: inputTokens: Expected a non-negative finite number, actual -5
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const Tokens = Schema.Struct({ inputTokens: NonNegativeNumber, outputTokens: NonNegativeNumber })

/**
 * @category models
 * @since 0.1.0
 */
export type Tokens = typeof Tokens.Type

/**
 * Reported usage, or `"unknown"`.
 *
 * @example
 * ```ts
 * import { Usage } from "@rein/core"
 *
 * const known: Usage.Usage = { inputTokens: 900, outputTokens: 120 }
 * const unknown: Usage.Usage = "unknown"
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const Usage = Schema.Union(Tokens, Schema.Literal("unknown"))

/**
 * @category models
 * @since 0.1.0
 */
export type Usage = typeof Usage.Type

const isTokenCount = (n: unknown): boolean => typeof n === "number" && Number.isFinite(n) && n >= 0

/**
 * Whether what a provider reported as usage is tokens Rein can charge: each count a finite number ≥ 0, and
 * their sum finite. Anything else (NaN, ±Infinity, a negative count, a missing field, `null`) is usage the
 * provider did not really report: the executor records it as `"unknown"` (so the whole reservation stays
 * charged) and marks the attempt record `invalidUsage`, rather than let it into the budget's counters.
 *
 * @example
 * ```ts
 * import { Usage } from "@rein/core"
 *
 * Usage.isCount({ inputTokens: 900, outputTokens: 120 }) // true
 * Usage.isCount({ inputTokens: Number.NaN, outputTokens: 120 }) // false
 * Usage.isCount({ inputTokens: -1, outputTokens: 120 }) // false
 * ```
 * @category guards
 * @since 0.1.0
 */
export const isCount = (usage: unknown): usage is Tokens => {
  if (typeof usage !== "object" || usage === null) return false
  const { inputTokens, outputTokens } = usage as Record<string, unknown>
  return isTokenCount(inputTokens) && isTokenCount(outputTokens) &&
    Number.isFinite((inputTokens as number) + (outputTokens as number))
}

/**
 * Cost of reported tokens at pinned prices (including the per-request price).
 *
 * @example
 * ```ts
 * import { Usage } from "@rein/core"
 *
 * Usage.cost({ inputTokens: 1000, outputTokens: 100 }, { inputTokens: 1e-6, outputTokens: 2e-6, request: 0 })
 * // 0.0012
 * ```
 * @category accounting
 * @since 0.1.0
 */
export const cost = (tokens: Tokens, prices: Prices): number =>
  tokens.inputTokens * prices.inputTokens + tokens.outputTokens * prices.outputTokens + prices.request

/**
 * Total tokens of a usage, or `undefined` when unknown.
 *
 * @category accounting
 * @since 0.1.0
 */
export const total = (usage: Usage): number | undefined =>
  usage === "unknown" ? undefined : usage.inputTokens + usage.outputTokens
