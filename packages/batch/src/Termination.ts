/**
 * How a run ended. `completed` when the source ran dry and every accepted item got its result; otherwise
 * the one guardrail that stopped it (the first stop wins): the batch deadline, fail-fast (with the category
 * and item that tripped it), a soft cap (or a cost function that misbehaved), or an artifact that could not
 * be written. Caller interruption is not a termination: it propagates as interruption. A Schema, so it
 * serialises into summaries and artifacts.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import { Category } from "./Category.js"

/**
 * The source ran dry and every accepted item got its result.
 *
 * @example
 * ```ts
 * import { Termination } from "@rein/batch"
 *
 * const done = Termination.Completed.make({ kind: "completed", reason: "all 10 accepted items finished" })
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const Completed = Schema.TaggedStruct("Completed", {
  kind: Schema.Literal("completed"),
  reason: Schema.String
})

/**
 * The batch deadline expired.
 *
 * @example
 * ```ts
 * import { Termination } from "@rein/batch"
 *
 * const late = Termination.BatchTimeout.make({ kind: "batch_timeout", reason: "the batch deadline of 3600000 ms expired" })
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const BatchTimeout = Schema.TaggedStruct("BatchTimeout", {
  kind: Schema.Literal("batch_timeout"),
  reason: Schema.String
})

/**
 * An item failed terminally with a configured category.
 *
 * @example
 * ```ts
 * import { Termination } from "@rein/batch"
 *
 * const stopped = Termination.FailFast.make({ kind: "fail_fast", reason: "fail-fast", itemId: "7", category: "authentication" })
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const FailFast = Schema.TaggedStruct("FailFast", {
  kind: Schema.Literal("fail_fast"),
  reason: Schema.String,
  itemId: Schema.String,
  category: Category
})

/**
 * A soft cap was reached (`tokens`, `cost`), or the cost function returned something other than a finite
 * non-negative number (`cost_function`), or a hard budget shared by the run's workers could admit no more
 * (`tokens`, `cost`, `calls`: a distributed run's, see `@rein/postgres`' `PgWorker`).
 *
 * @example
 * ```ts
 * import { Termination } from "@rein/batch"
 *
 * const capped = Termination.BudgetExceeded.make({ kind: "budget_exceeded", reason: "cost cap reached: 25 of 25", resource: "cost" })
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const BudgetExceeded = Schema.TaggedStruct("BudgetExceeded", {
  kind: Schema.Literal("budget_exceeded"),
  reason: Schema.String,
  resource: Schema.Literal("tokens", "cost", "calls", "cost_function")
})

/**
 * An item's record could not be appended to the artifact.
 *
 * @example
 * ```ts
 * import { Termination } from "@rein/batch"
 *
 * const lost = Termination.ArtifactFailure.make({ kind: "artifact_error", reason: "disk full", itemId: "7" })
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const ArtifactFailure = Schema.TaggedStruct("ArtifactFailure", {
  kind: Schema.Literal("artifact_error"),
  reason: Schema.String,
  itemId: Schema.String
})

/**
 * How a run ended.
 *
 * @example
 * ```ts
 * import { Schema } from "effect"
 * import { Termination } from "@rein/batch"
 *
 * const json = Schema.encodeSync(Termination.Termination)({
 *   _tag: "BudgetExceeded",
 *   kind: "budget_exceeded",
 *   reason: "token cap reached: 100 of 10 tokens",
 *   resource: "tokens"
 * })
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const Termination = Schema.Union(Completed, BatchTimeout, FailFast, BudgetExceeded, ArtifactFailure)

/**
 * @category models
 * @since 0.1.0
 */
export type Termination = typeof Termination.Type

/**
 * The termination kinds.
 *
 * @category models
 * @since 0.1.0
 */
export type Kind = Termination["kind"]

/**
 * The terminations that stop a run early.
 *
 * @category models
 * @since 0.1.0
 */
export type Stop = Exclude<Termination, { readonly kind: "completed" }>
