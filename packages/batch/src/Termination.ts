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

/** What to look at when items fail with a category, before the run is started again. */
const categoryFixes: Partial<Record<Category, string>> = {
  authentication: "check the endpoint's credentials (its API key and credential scope)",
  permission_denied: "check that the credentials may use the model",
  insufficient_balance: "top up the provider account",
  quota_exhausted: "raise the provider quota, or wait for it to reset",
  rate_limited: "lower --concurrency, --rpm or --tpm (guardrails concurrency, requestsPerMinute, tokensPerMinute)",
  context_length: "shorten the inputs, or list a candidate with a larger context window",
  invalid_request: "fix the request the items make (its prompt shape, tools, output bound)",
  deadline_exceeded: "give items more time (--item-deadline, the contract's deadline)",
  budget_exhausted: "raise the contract's budget, or lower the request's maxOutputTokens",
  refused: "see the item's error: it names the refusal's own fix"
}

/** What to change for a budget stop: a cap or shared budget reached, or totals that could not be counted. */
const budgetFix = (stop: typeof BudgetExceeded.Type): string => {
  const r = stop.resource
  if (r === "cost_function") return "make the cost function return a finite number ≥ 0 for every usage it is given"
  if (r === "calls") {
    return "start the run with a larger shared call budget (--budget-calls), or make items retry less (the contract's retry)"
  }
  // The caps' and the shared budgets' stops (the memory limits', `PgRunLimits`' and `PgWorker`'s words).
  const reached = stop.reason.startsWith(`${r === "tokens" ? "token" : "cost"} cap reached`)
  const shared = stop.reason.startsWith(`the run's ${r} budget`)
  if (!reached && !shared) {
    return "an attempt's usage or cost could not be counted (not a finite number ≥ 0, an overflowing total, or " +
      "shared totals that could not be written): check the provider's usage, the prices and the cost function, " +
      "or the store"
  }
  const flag = r === "tokens"
    ? shared ? "--budget-tokens, when the run starts" : "guardrails maxTotalTokens, --max-total-tokens"
    : shared
    ? "--budget-cost, when the run starts"
    : "guardrails maxTotalCost, --max-total-cost"
  return `if this spend is expected, raise the ${r === "tokens" ? "token" : "cost"} limit (${flag}); else ` +
    "lower what an item may use (the request's maxOutputTokens, the contract's retry)"
}

/**
 * What to change so that a run stopped by `stop` gets further: a person's next step, for where the stop is
 * shown (the CLI's summary and status). `rein batch --resume` then reuses the items already done.
 *
 * @example
 * ```ts
 * import { Termination } from "@rein/batch"
 *
 * Termination.fix({ _tag: "BatchTimeout", kind: "batch_timeout", reason: "the batch deadline of 60000 ms expired" })
 * // "give the run more time (guardrails batchDeadline, --batch-deadline) or more concurrency (--concurrency) …"
 * ```
 * @category formatting
 * @since 0.1.0
 */
export const fix = (stop: Stop): string => {
  const resume = "; then rein batch --resume reuses the items already done"
  switch (stop.kind) {
    case "batch_timeout":
      return "give the run more time (guardrails batchDeadline, --batch-deadline) or more concurrency " +
        `(--concurrency), or split the input${resume}`
    case "fail_fast": {
      const first = categoryFixes[stop.category]
      return `${first === undefined ? `find why items fail with ${stop.category}` : first}, or let the run go on ` +
        `past ${stop.category} failures (remove it from guardrails abortOn, --abort-on)${resume}`
    }
    case "budget_exceeded":
      return `${budgetFix(stop)}${resume}`
    case "artifact_error":
      return `make the artifact writable (disk space, permissions, the file's directory)${resume}`
  }
}

/**
 * A termination as people read it: its reason, then (for a stop) what to change. The `reason` itself stays as
 * recorded (a shared run's store, artifacts and comparisons hold it byte for byte); only this text adds the fix.
 *
 * @example
 * ```ts
 * import { Termination } from "@rein/batch"
 *
 * Termination.describe({ _tag: "BudgetExceeded", kind: "budget_exceeded", reason: "cost cap reached: 25 of 25", resource: "cost" })
 * // "cost cap reached: 25 of 25; if this spend is expected, raise the cost limit (guardrails maxTotalCost, …"
 * ```
 * @category formatting
 * @since 0.1.0
 */
export const describe = (termination: Termination): string =>
  termination.kind === "completed" ? termination.reason : `${termination.reason}; ${fix(termination)}`
