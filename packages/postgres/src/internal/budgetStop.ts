/**
 * A distributed run's hard budget, exhausted, as the run's stop. The single-process batch stops a run whose
 * soft cap is reached (`budget_exceeded`) and gives the items it did not run `batch_budget_exceeded`; a
 * worker of a distributed run does the same when the run's shared budget (`SharedBudget`, `PgBudget`) can no
 * longer admit an item: an item that ended `BudgetExhausted` (not `unavailable`: a store that did not answer
 * says nothing of what is left) is the run's stop only when, read in the database after the refusal, the
 * largest reservation the whole budget could still grant (`grantable`: the pool once expired leases are
 * reclaimed, plus the freest slice, this worker's own from memory) both
 * - is less than what the refused reservation needed of that resource (`needed`, with a float's tolerance;
 *   unknown: nothing left at all), so no worker could admit the item: one worker's refusal alone proves
 *   nothing, since the units other workers lease and have not used are in no `left` of its own; and
 * - is no more than what the request's own budget had left (the contract's per-request cap, less what the item
 *   used; no cap: unlimited), so it was the run's budget, not the request's own cap, that refused it.
 * Otherwise the item stays `budget_exhausted` and the run goes on; a later refusal, once the other workers
 * have spent their slices, stops it. A read that fails (the database unavailable) stops nothing. (The worker
 * reads again for a while before it gives up on the stop, `grantableElsewhere`, unless the units came back to
 * the pool, `admitsHere`: see `PgWorker`.)
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

/** Float noise of a dollar amount (as the planner's budget verdict allows it). */
const EPSILON = 1e-12

/** Whether `grantable` of the refused resource can admit the refused reservation (`needed`: unknown). */
const admits = (grantable: number, needed: number | undefined): boolean =>
  needed === undefined ? grantable > 0 : grantable + EPSILON >= needed

/**
 * What the shared budget (`grantable`: the largest reservation it could still grant, per resource, `null` for
 * no cap) says of a refusal: `"own"` when the request's own budget, not the run's, was the limit (or the
 * resource has no run cap); `"held"` when the run's budget could still grant the item elsewhere (units another
 * worker leases and has not used, as last reported); `"spent"` when it can grant it nowhere.
 */
const verdict = (
  contract: Contract.Contract,
  record: ArtifactStore.ItemRecord,
  refused: Outcome.BudgetExhausted,
  grantable: Left
): "own" | "held" | "spent" => {
  const left = grantable[refused.resource]
  if (left === null || left > ownLeft(contract, record, refused.resource)) return "own"
  return admits(left, refused.needed) ? "held" : "spent"
}

/**
 * Whether the refusal was the run's budget and the budget could still grant the item elsewhere. @internal
 */
export const grantableElsewhere = (
  contract: Contract.Contract,
  record: ArtifactStore.ItemRecord,
  refused: Outcome.BudgetExhausted,
  grantable: Left
): boolean => verdict(contract, record, refused, grantable) === "held"

/**
 * Whether this worker's own budget (`left`: the pool as just read plus its own slice, less what it used) could
 * now admit the refused reservation: the units held elsewhere came back to the pool, where it gets them.
 * @internal
 */
export const admitsHere = (left: Left, refused: Outcome.BudgetExhausted): boolean => {
  const here = left[refused.resource]
  return here === null || admits(here, refused.needed)
}

/**
 * The run's stop when the shared budget (`grantable`) is what refused the item and can admit it no more,
 * else `undefined`. @internal
 */
export const stopFor = (
  contract: Contract.Contract,
  record: ArtifactStore.ItemRecord,
  refused: Outcome.BudgetExhausted,
  grantable: Left
): Termination.Stop | undefined => {
  if (verdict(contract, record, refused, grantable) !== "spent") return undefined
  const resource = refused.resource
  return {
    _tag: "BudgetExceeded",
    kind: "budget_exceeded",
    resource,
    reason: `the run's ${resource} budget is exhausted (item ${
      JSON.stringify(record.itemId)
    } refused: ${refused.reason})`
  }
}
