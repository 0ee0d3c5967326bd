/**
 * A distributed run's hard budget, exhausted, as the run's stop. The single-process batch stops a run whose
 * soft cap is reached (`budget_exceeded`) and gives the items it did not run `batch_budget_exceeded`; a
 * worker of a distributed run does the same when the run's shared budget (`SharedBudget`, `PgBudget`) can no
 * longer admit an item: an item that ended `BudgetExhausted` (not `unavailable`: a store that did not answer
 * says nothing of what is left) on a resource where the shared budget had no more left than the request's
 * own budget (the contract's per-request cap, less what the item used; no cap: unlimited). Then it was the
 * run's budget that refused the item, and no later item can be admitted by it either.
 *
 * @internal
 */
import type { ArtifactStore, Result, Termination } from "@rein/batch"
import type { Contract } from "@rein/core"
import type { Outcome } from "@rein/core"
import type { Left } from "./budgetService.js"

type Resource = "cost" | "tokens" | "calls"

/** What the request's own budget had left on `resource` when the item ended (`Infinity`: no own cap). */
const ownLeft = (contract: Contract.Contract, record: ArtifactStore.ItemRecord, resource: Resource): number => {
  const cap = contract.budget[resource]
  if (cap === undefined) return Number.POSITIVE_INFINITY
  switch (resource) {
    case "calls":
      return cap - record.attempts
    case "cost":
      return record.cost === "unknown" ? 0 : cap - record.cost
    case "tokens":
      return record.usage === "unknown" ? 0 : cap - record.usage.inputTokens - record.usage.outputTokens
  }
}

/** The refusal of an item by a budget that was consulted (`BudgetExhausted`, not `unavailable`). @internal */
export const refusal = (
  result: Result.Succeeded<unknown> | Result.Failed<unknown>
): Outcome.BudgetExhausted | undefined =>
  result._tag === "Failed" && result.error._tag === "BudgetExhausted" && result.error.unavailable !== true
    ? result.error
    : undefined

/**
 * The run's stop when the shared budget (`shared`: what it has left now) is what refused the item, else
 * `undefined`. @internal
 */
export const stopFor = (
  contract: Contract.Contract,
  record: ArtifactStore.ItemRecord,
  refused: Outcome.BudgetExhausted,
  shared: Left
): Termination.Stop | undefined => {
  const resource = refused.resource
  const left = shared[resource]
  if (left === null || left > ownLeft(contract, record, resource)) return undefined
  return {
    _tag: "BudgetExceeded",
    kind: "budget_exceeded",
    resource,
    reason: `the run's ${resource} budget is exhausted (item ${
      JSON.stringify(record.itemId)
    } refused: ${refused.reason})`
  }
}
