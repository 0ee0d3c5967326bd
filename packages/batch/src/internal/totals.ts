/**
 * Running totals of tokens and cost, and the stops they can trip: a cap reached, or a sum that is no longer
 * finite. Each value added is finite; their sum may not be (two values near `Number.MAX_VALUE`). A sum that
 * is no longer finite is not taken: the total keeps its last finite value and the run stops.
 *
 * @internal
 */
import { Format } from "@rein/core"
import type { Stop } from "../Termination.js"

/** A number as a reason shows it: integers as they are, others to six significant digits. @internal */
export const fmt: (n: number) => string = Format.number

/** `total + value` when that is finite, else `undefined` (the total stays). @internal */
export const addFinite = (total: number, value: number): number | undefined => {
  const sum = total + value
  return Number.isFinite(sum) ? sum : undefined
}

/** The stop of a total that overflowed. @internal */
export const overflowed = (resource: "tokens" | "cost", total: number, value: number): Stop => ({
  _tag: "BudgetExceeded",
  kind: "budget_exceeded",
  resource,
  reason: `the running ${resource === "tokens" ? "token" : "cost"} total overflowed: ${fmt(total)} + ${
    fmt(value)
  } is not finite`
})

/**
 * The stop of a charge that is not a count (NaN, ±Infinity, negative), or `undefined` for one that is. Such a
 * charge is not added (a NaN total would never reach a cap again, a negative one would give the cap back):
 * the run stops, failing closed as an overflow does. @internal
 */
export const notACount = (usage: { readonly tokens: number; readonly cost: number }): Stop | undefined => {
  const resource = !isCount(usage.cost) ? "cost" : !isCount(usage.tokens) ? "tokens" : undefined
  if (resource === undefined) return undefined
  return {
    _tag: "BudgetExceeded",
    kind: "budget_exceeded",
    resource,
    reason: `an attempt's ${resource === "tokens" ? "token count" : "cost"} is not a finite number ≥ 0: ${
      fmt(usage[resource])
    }`
  }
}

const isCount = (n: number): boolean => typeof n === "number" && Number.isFinite(n) && n >= 0

/** The stop of a reached token cap. @internal */
export const tokenCapReached = (used: number, cap: number): Stop => ({
  _tag: "BudgetExceeded",
  kind: "budget_exceeded",
  resource: "tokens",
  reason: `token cap reached: ${fmt(used)} of ${fmt(cap)} tokens`
})

/** The stop of a reached cost cap. @internal */
export const costCapReached = (used: number, cap: number): Stop => ({
  _tag: "BudgetExceeded",
  kind: "budget_exceeded",
  resource: "cost",
  reason: `cost cap reached: ${fmt(used)} of ${fmt(cap)}`
})
