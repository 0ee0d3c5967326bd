/**
 * Usage and cost. Usage a provider did not report stays `"unknown"`: it is never treated as zero, and a
 * cost computed from it is unknown too.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import type { Prices } from "./Catalog.js"

/**
 * Tokens a provider reported for one attempt.
 *
 * @category schemas
 * @since 0.1.0
 */
export const Tokens = Schema.Struct({ inputTokens: Schema.Number, outputTokens: Schema.Number })

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
