/**
 * Hard admission budgets. An attempt is admitted only after its worst-case cost and tokens are reserved
 * and a call is taken from the cap, in one STM transaction, so concurrent requests sharing a budget can
 * never each see the last unit. After the attempt, the reservation is settled:
 *
 * - reported usage → charged at actual; the rest is released (actual above the reservation is charged
 *   too and flagged `billingBoundViolation`, never hidden);
 * - failed before the request could have been sent → nothing charged;
 * - failed, timed out or interrupted after it may have been sent with usage unknown → the full
 *   reservation stays charged.
 *
 * A call taken from the cap is never refunded.
 *
 * @since 0.1.0
 */
import { Context, Effect, STM, TRef } from "effect"
import type { BudgetLimits } from "./Contract.js"
import type { Reservation } from "./Outcome.js"
import type { Tokens } from "./Usage.js"

/**
 * What is left of a budget (`null`: unlimited).
 *
 * @since 0.1.0
 */
export interface Left {
  readonly cost: number | null
  readonly tokens: number | null
  readonly calls: number | null
}

interface State {
  readonly cost: number
  readonly tokens: number
  readonly calls: number
}

/**
 * Why a reservation was refused.
 *
 * @since 0.1.0
 */
export interface Shortfall {
  readonly resource: "cost" | "tokens" | "calls"
  readonly needed: number
  readonly left: number
}

/**
 * A budget: limits and what has been committed against them (charged plus reserved).
 *
 * @since 0.1.0
 */
export interface Budget {
  readonly limits: Left
  readonly left: STM.STM<Left>
  /** Reserves a worst case and takes one call, or fails with the first shortfall. Atomic. */
  readonly reserve: (reservation: Reservation) => STM.STM<void, Shortfall>
  /** Replaces a reservation by what is actually charged. */
  readonly settle: (
    reservation: Reservation,
    charged: { readonly cost: number; readonly tokens: number }
  ) => STM.STM<void>
}

/**
 * A budget shared by many requests (for instance one batch run, or one tenant): when present in the
 * context, every attempt reserves against it too, in the same transaction as the request's own budget.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Budget } from "@rein/core"
 *
 * const shared = Effect.map(Budget.make({ cost: 5 }), (b) => Budget.SharedBudget.of(b))
 * ```
 * @since 0.1.0
 */
export class SharedBudget extends Context.Tag("@rein/core/SharedBudget")<SharedBudget, Budget>() {}

const orNull = (n: number | undefined): number | null => (n === undefined ? null : n)

const EPSILON = 1e-12

/**
 * Makes a budget over the given limits (absent limits are unlimited).
 *
 * @example
 * ```ts
 * import { Effect, STM } from "effect"
 * import { Budget } from "@rein/core"
 *
 * const program = Effect.gen(function*() {
 *   const budget = yield* Budget.make({ cost: 0.01, calls: 3 })
 *   yield* STM.commit(budget.reserve({ cost: 0.004, tokens: null }))
 *   return yield* STM.commit(budget.left) // { cost: 0.006, tokens: null, calls: 2 }
 * })
 * ```
 * @since 0.1.0
 */
export const make = (limits: Partial<Pick<BudgetLimits, "cost" | "tokens" | "calls">>): Effect.Effect<Budget> =>
  Effect.map(STM.commit(TRef.make<State>({ cost: 0, tokens: 0, calls: 0 })), (ref) => fromRef(ref, limits))

const fromRef = (ref: TRef.TRef<State>, input: Partial<Pick<BudgetLimits, "cost" | "tokens" | "calls">>): Budget => {
  const limits: Left = { cost: orNull(input.cost), tokens: orNull(input.tokens), calls: orNull(input.calls) }
  const leftOf = (s: State): Left => ({
    cost: limits.cost === null ? null : Math.max(0, limits.cost - s.cost),
    tokens: limits.tokens === null ? null : Math.max(0, limits.tokens - s.tokens),
    calls: limits.calls === null ? null : Math.max(0, limits.calls - s.calls)
  })
  return {
    limits,
    left: STM.map(TRef.get(ref), leftOf),
    reserve: (r) =>
      STM.flatMap(TRef.get(ref), (s): STM.STM<void, Shortfall> => {
        if (limits.calls !== null && s.calls + 1 > limits.calls) {
          return STM.fail({ resource: "calls", needed: 1, left: Math.max(0, limits.calls - s.calls) } as const)
        }
        if (limits.cost !== null && r.cost !== null && s.cost + r.cost > limits.cost + EPSILON) {
          return STM.fail({ resource: "cost", needed: r.cost, left: Math.max(0, limits.cost - s.cost) } as const)
        }
        if (limits.tokens !== null && r.tokens !== null && s.tokens + r.tokens > limits.tokens) {
          return STM.fail(
            { resource: "tokens", needed: r.tokens, left: Math.max(0, limits.tokens - s.tokens) } as const
          )
        }
        return TRef.set(ref, {
          cost: s.cost + (r.cost ?? 0),
          tokens: s.tokens + (r.tokens ?? 0),
          calls: s.calls + 1
        })
      }),
    settle: (r, charged) =>
      TRef.update(ref, (s) => ({
        cost: s.cost - (r.cost ?? 0) + charged.cost,
        tokens: s.tokens - (r.tokens ?? 0) + charged.tokens,
        calls: s.calls
      }))
  }
}

/**
 * A budget with no limits: reserves and settles nothing.
 *
 * @since 0.1.0
 */
export const unlimited: Budget = {
  limits: { cost: null, tokens: null, calls: null },
  left: STM.succeed({ cost: null, tokens: null, calls: null }),
  reserve: () => STM.void,
  settle: () => STM.void
}

/**
 * Takes the tighter of two budgets' remainders.
 *
 * @since 0.1.0
 */
export const minLeft = (a: Left, b: Left): Left => ({
  cost: a.cost === null ? b.cost : b.cost === null ? a.cost : Math.min(a.cost, b.cost),
  tokens: a.tokens === null ? b.tokens : b.tokens === null ? a.tokens : Math.min(a.tokens, b.tokens),
  calls: a.calls === null ? b.calls : b.calls === null ? a.calls : Math.min(a.calls, b.calls)
})

/**
 * What an attempt is charged when it ends (see the module summary for the rules).
 *
 * @since 0.1.0
 */
export const charge = (
  reservation: Reservation,
  outcome: { readonly dispatched: boolean; readonly usage: Tokens | "unknown"; readonly actualCost: number | null }
): { readonly cost: number; readonly tokens: number; readonly violation: boolean } => {
  if (outcome.usage !== "unknown") {
    const tokens = outcome.usage.inputTokens + outcome.usage.outputTokens
    const cost = outcome.actualCost ?? 0
    const violation = (reservation.cost !== null && cost > reservation.cost + EPSILON) ||
      (reservation.tokens !== null && tokens > reservation.tokens)
    return { cost, tokens, violation }
  }
  if (!outcome.dispatched) return { cost: 0, tokens: 0, violation: false }
  return { cost: reservation.cost ?? 0, tokens: reservation.tokens ?? 0, violation: false }
}
