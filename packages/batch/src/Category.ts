/**
 * Error categories: one word for why an item ended, the vocabulary of fail-fast configuration, stats and
 * artifact records. A terminal outcome of the executor maps to a category from its tag and, where the plan
 * ran out because of a provider failure, from that failure's kind (so an item stopped by a 401 is
 * `authentication`, whatever the planner's wording). The `batch_*` categories are collateral: the run
 * stopped, not the item.
 *
 * @since 0.1.0
 */
import { Failure, Input } from "@rein/core"
import type { Outcome } from "@rein/core"
import { Schema } from "effect"

/**
 * Categories of an item that ended because the run stopped (collateral), or whose record could not be kept.
 *
 * @example
 * ```ts
 * import { Category } from "@rein/batch"
 *
 * Category.RunCategory.literals // ["batch_deadline_exceeded", "batch_aborted", "batch_budget_exceeded", "artifact_error"]
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const RunCategory = Schema.Literal(
  "batch_deadline_exceeded",
  "batch_aborted",
  "batch_budget_exceeded",
  "artifact_error"
)

/**
 * @category models
 * @since 0.1.0
 */
export type RunCategory = typeof RunCategory.Type

/**
 * Categories of the executor's terminal outcomes that carry no provider failure kind.
 *
 * @example
 * ```ts
 * import { Category } from "@rein/batch"
 *
 * Category.OutcomeCategory.literals.includes("deadline_exceeded") // true
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const OutcomeCategory = Schema.Literal(
  "deadline_exceeded",
  "budget_exhausted",
  "plan_exhausted",
  "failed_safe",
  "refused"
)

/**
 * @category models
 * @since 0.1.0
 */
export type OutcomeCategory = typeof OutcomeCategory.Type

/**
 * Every failure category: a provider failure kind (`authentication`, `rate_limited`, `timeout`, …), an
 * outcome category, or a run category.
 *
 * @example
 * ```ts
 * import { Schema } from "effect"
 * import { Category } from "@rein/batch"
 *
 * Schema.decodeUnknownSync(Category.Category)("authentication") // "authentication"
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const Category = Schema.Union(Failure.FailureKind, OutcomeCategory, RunCategory).annotations({
  identifier: "Category",
  message: (issue) => ({
    message: `Expected an error category (a failure kind, an outcome or a batch category), actual ${
      Input.describe(issue.actual)
    }`,
    override: true
  })
})

/**
 * @category models
 * @since 0.1.0
 */
export type Category = typeof Category.Type

const RUN: ReadonlySet<string> = new Set(RunCategory.literals)

/**
 * Whether a category is collateral (the run stopped, not the item). Collateral failures never trip
 * fail-fast.
 *
 * @example
 * ```ts
 * import { Category } from "@rein/batch"
 *
 * Category.isCollateral("batch_aborted") // true
 * Category.isCollateral("authentication") // false
 * ```
 * @category guards
 * @since 0.1.0
 */
export const isCollateral = (category: Category): category is RunCategory => RUN.has(category)

/**
 * The category of a terminal outcome of the executor. `DeadlineExceeded` is `deadline_exceeded` whatever
 * failure preceded it (the item's own deadline ended it); a plan that ran out because of a provider failure
 * takes that failure's kind; `Halted` has no category of its own (the run decides: see `Batch`), so it maps
 * to `batch_aborted` here.
 *
 * @example
 * ```ts
 * import { Outcome } from "@rein/core"
 * import { Category } from "@rein/batch"
 *
 * const e = new Outcome.PlanExhausted({
 *   reason: "no candidate left",
 *   lastFailure: { kind: "authentication", code: "401", endpoint: "a" },
 *   attempts: []
 * })
 * Category.ofTerminal(e) // "authentication"
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const ofTerminal = (error: Outcome.Terminal): Category => {
  switch (error._tag) {
    case "DeadlineExceeded":
      return "deadline_exceeded"
    case "BudgetExhausted":
      return "budget_exhausted"
    case "Refused":
      return "refused"
    case "PlanExhausted":
      return error.lastFailure === null ? "plan_exhausted" : error.lastFailure.kind
    case "FailedSafe":
      return error.lastFailure.endpoint === "" ? "failed_safe" : error.lastFailure.kind
    case "Halted":
      return "batch_aborted"
  }
}
