/**
 * Pricing attempts for the run's soft cost cap. Without a cost function, an attempt costs what the catalog's
 * pinned prices say for its reported usage. A cost function prices it instead: it is called once per
 * finished attempt with known usage, must be synchronous and return a finite non-negative number; anything
 * else (it throws, returns NaN, a negative number, a Promise, a boolean) stops the run with
 * `budget_exceeded`, tokens are still counted, and `costComplete` becomes false. Its exception message is
 * never recorded.
 *
 * @since 0.1.0
 */
import type { Outcome, Usage } from "@rein/core"

/**
 * What a cost function is given: one finished attempt with reported usage.
 *
 * @example
 * ```ts
 * import type { Cost } from "@rein/batch"
 *
 * const tokens = (u: Cost.AttemptUsage) => u.usage.inputTokens + u.usage.outputTokens
 * ```
 * @category models
 * @since 0.1.0
 */
export interface AttemptUsage {
  readonly itemId: string
  readonly index: number
  /** The attempt number within the item (1 for the first). */
  readonly attempt: number
  readonly role: Outcome.AttemptRecord["role"]
  readonly endpoint: string
  readonly usage: Usage.Tokens
  readonly succeeded: boolean
  /** The cost at the catalog's pinned prices. */
  readonly catalogCost: number
}

/**
 * A cost function. Declared to return `unknown` on purpose: whatever it returns is checked.
 *
 * @example
 * ```ts
 * import type { Cost } from "@rein/batch"
 *
 * const price: Cost.CostFunction = (u) => (u.usage.inputTokens * 0.15 + u.usage.outputTokens * 0.6) / 1e6
 * ```
 * @category models
 * @since 0.1.0
 */
export type CostFunction = (usage: AttemptUsage) => unknown

const describe = (value: unknown): string => {
  if (typeof value === "number") return String(value)
  if (typeof value === "boolean") return `a boolean (${value})`
  if (typeof value === "object" && value !== null && typeof (value as { then?: unknown }).then === "function") {
    return "a Promise (it must be synchronous)"
  }
  return value === null ? "null" : `a ${typeof value}`
}

/**
 * Calls a cost function and checks what it returned: the cost, or why it is not one (never the exception's
 * message).
 *
 * @example
 * ```ts
 * import { Cost } from "@rein/batch"
 *
 * declare const usage: Cost.AttemptUsage
 * Cost.price(() => -1, usage) // { _tag: "Invalid", reason: "the cost function returned -1, not a finite non-negative number" }
 * ```
 * @category utils
 * @since 0.1.0
 */
export const price = (
  fn: CostFunction,
  usage: AttemptUsage
): { readonly _tag: "Cost"; readonly cost: number } | { readonly _tag: "Invalid"; readonly reason: string } => {
  let value: unknown
  try {
    value = fn(usage)
  } catch {
    return { _tag: "Invalid", reason: "the cost function threw" }
  }
  if (typeof value === "number" && Number.isFinite(value) && value >= 0) return { _tag: "Cost", cost: value }
  if (typeof value === "object" && value !== null && typeof (value as { then?: unknown }).then === "function") {
    // Do not leave a rejected promise unhandled: its reason is not ours to report.
    ;(value as PromiseLike<unknown>).then(undefined, () => undefined)
  }
  return { _tag: "Invalid", reason: `the cost function returned ${describe(value)}, not a finite non-negative number` }
}
