/**
 * The budget service this package implements: core's `Budget.Service` and its shapes, re-exported so the
 * package's modules name them in one place.
 *
 * @internal
 */
export type { Charged, Hold, Left, Service, Shortfall } from "@rein/core/Budget"
export { SharedBudget } from "@rein/core/Budget"
export type { Reservation } from "@rein/core/Outcome"
