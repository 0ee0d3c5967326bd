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
