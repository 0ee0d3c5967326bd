/**
 * Hard admission budgets. An attempt is admitted only after its worst-case cost and tokens are reserved
 * and a call is taken from the cap, in one atomic step, so concurrent requests sharing a budget can never
 * each see the last unit. After the attempt, the reservation is settled:
 *
 * - reported usage → charged at actual; the rest is released (actual above the reservation is charged
 *   too and flagged `billingBoundViolation`, never hidden);
 * - failed before the request could have been sent → nothing charged;
 * - failed, timed out or interrupted after it may have been sent with usage unknown → the full
 *   reservation stays charged.
 *
 * A call taken from the cap is never refunded by a settlement; only `release` (the attempt never started)
 * gives it back. A charge that is not a finite number ≥ 0 (NaN, ±Infinity, negative) is no charge a budget
 * can count: it is charged as the hold's whole reservation (fail closed), never let into the counters, where
 * a NaN would make every later comparison with the cap false and the cap would never refuse again.
 *
 * A budget is a service (`Service`): the required members are effects, so a remote store (a database
 * shared by many processes) can implement them; the `unsafe*` members are an optional synchronous fast
 * path that the executor takes only when present. `make` is the in-memory implementation: every
 * check-and-update is one synchronous step (JavaScript runs one fiber at a time), so it is atomic without a
 * transaction and costs no effect on the hot path.
 *
 * @since 0.1.0
 */
import { Context, Effect, Either } from "effect"
import type { BudgetLimits } from "./Contract.js"
import { keepMap } from "./internal/maps.js"
import type { Reservation } from "./Outcome.js"
import { isCount, type Tokens } from "./Usage.js"

/**
 * What is left of a budget (`null`: unlimited).
 *
 * @category models
 * @since 0.1.0
 */
export interface Left {
  readonly cost: number | null
  readonly tokens: number | null
  readonly calls: number | null
}

/**
 * Why a reservation was refused: the first resource short, what the reservation needed and what was left.
 * `reason` says whether the budget is spent (`"exhausted"`, the default when absent) or could not be
 * consulted (`"unavailable"`: a remote store that did not answer, which fails closed). The executor stops
 * a request refused as `"unavailable"` at once with `BudgetExhausted` marked `unavailable`, rather than
 * deciding again on a reading of what is left that it cannot trust.
 *
 * @example
 * ```ts
 * import type { Budget } from "@rein/core"
 *
 * const noDatabase: Budget.Shortfall = { resource: "cost", needed: 0.02, left: 0.01, reason: "unavailable" }
 * ```
 * @category models
 * @since 0.1.0
 */
export interface Shortfall {
  readonly resource: "cost" | "tokens" | "calls"
  readonly needed: number
  readonly left: number
  /** `"exhausted"` when absent. */
  readonly reason?: "exhausted" | "unavailable"
}

/**
 * What a successful reservation holds until it is settled or released. Opaque to the executor: an
 * implementation may carry more (a lease, the holds of a composed budget).
 *
 * @category models
 * @since 0.1.0
 */
export interface Hold {
  /** The attempt's worst case (cost or tokens `null`: not bounded). */
  readonly reservation: Reservation
}

/**
 * What an attempt is actually charged when its hold is settled.
 *
 * @category models
 * @since 0.1.0
 */
export interface Charged {
  readonly cost: number
  readonly tokens: number
}

/**
 * A budget: limits, and what has been committed against them (charged plus reserved).
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Budget } from "@rein/core"
 *
 * // A budget that refuses everything: what a store that is down might answer.
 * const closed: Budget.Service = {
 *   limits: { cost: 0, tokens: 0, calls: 0 },
 *   left: Effect.succeed({ cost: 0, tokens: 0, calls: 0 }),
 *   reserve: () => Effect.fail({ resource: "calls", needed: 1, left: 0 }),
 *   settle: () => Effect.void,
 *   release: () => Effect.void
 * }
 * ```
 * @category services
 * @since 0.1.0
 */
export interface Service {
  /** The configured caps (`null`: unlimited). */
  readonly limits: Left
  /** What is left now (caps minus charged minus reserved). */
  readonly left: Effect.Effect<Left>
  /**
   * Reserves the worst case and takes one call from the cap, or fails with the first shortfall. The executor
   * bounds this effect by the request's deadline (a remote store that hangs ends as `DeadlineExceeded`).
   */
  readonly reserve: (reservation: Reservation) => Effect.Effect<Hold, Shortfall>
  /**
   * Replaces the hold by what is actually charged (the call stays taken). A charged cost or token count that
   * is not a finite number ≥ 0 is charged as the hold's reservation of that resource.
   */
  readonly settle: (hold: Hold, charged: Charged) => Effect.Effect<void>
  /** Gives the hold back entirely, call included: the attempt never started (e.g. a shortfall elsewhere). */
  readonly release: (hold: Hold) => Effect.Effect<void>
  /** Optional fast path: `reserve` as one synchronous step; `undefined` means "take the effectful path". */
  readonly unsafeReserve?: (reservation: Reservation) => Either.Either<Hold, Shortfall> | undefined
  /** Optional fast path: `settle` as one synchronous step. */
  readonly unsafeSettle?: (hold: Hold, charged: Charged) => void
  /** Optional fast path: `left` as one synchronous read. */
  readonly unsafeLeft?: () => Left
}

/**
 * A budget shared by many requests (for instance one batch run, or one tenant): when present in the
 * context, every attempt reserves against it too, after the request's own budget (see `both`).
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Budget } from "@rein/core"
 *
 * const shared = Effect.map(Budget.make({ cost: 5 }), (b) => Budget.SharedBudget.of(b))
 * ```
 * @category services
 * @since 0.1.0
 */
export class SharedBudget extends Context.Tag("@rein/core/SharedBudget")<SharedBudget, Service>() {}

const orNull = (n: number | undefined): number | null => (n === undefined ? null : n)

const EPSILON = 1e-12

const isCharge = (n: number): boolean => Number.isFinite(n) && n >= 0

/** What a settlement charges of one resource: `charged` when it is a count, else the whole reservation. */
const chargedOr = (charged: number, reserved: number | null): number => isCharge(charged) ? charged : reserved ?? 0

/** The synchronous release of the budgets made here (what `both` needs to undo its first half at once). */
const releasers = new WeakMap<Service, (hold: Hold) => void>()

/**
 * Makes an in-memory budget over the given limits (absent limits are unlimited), at once. A reservation whose
 * worst case is not an amount (NaN, ±Infinity) is refused, naming that resource.
 *
 * @example
 * ```ts
 * import { Budget } from "@rein/core"
 *
 * const budget = Budget.unsafeMake({ cost: 0.01, calls: 3 })
 * budget.unsafeReserve?.({ cost: 0.004, tokens: null })
 * budget.unsafeLeft?.() // { cost: 0.006, tokens: null, calls: 2 }
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const unsafeMake = (input: Partial<Pick<BudgetLimits, "cost" | "tokens" | "calls">>): Service => {
  const budget = new InMemory(input)
  const unsafeLeft = (): Left => budget.unsafeLeft()
  const unsafeReserve = (r: Reservation): Either.Either<Hold, Shortfall> => budget.unsafeReserve(r)
  const unsafeSettle = (hold: Hold, charged: Charged): void => budget.unsafeSettle(hold, charged)
  const unsafeRelease = (hold: Hold): void => budget.unsafeRelease(hold)
  const service: Service = {
    limits: budget.limits,
    left: Effect.sync(unsafeLeft),
    reserve: (r) => Effect.suspend(() => unsafeReserve(r)),
    settle: (hold, charged) => Effect.sync(() => unsafeSettle(hold, charged)),
    release: (hold) => Effect.sync(() => unsafeRelease(hold)),
    unsafeReserve,
    unsafeSettle,
    unsafeLeft
  }
  releasers.set(service, unsafeRelease)
  return service
}

/**
 * The in-memory budget itself, as one object: what a request's own budget is (the executor makes one per
 * request with limits). `unsafeMake` wraps one in a record of functions, which a caller may take apart; this
 * class's members are methods and must be called on it. One object and no closures per request: the
 * closures' budget was ten objects, a `WeakMap` entry, and object literals that V8 pretenured (#22).
 *
 * @internal
 */
export class InMemory implements Service {
  declare readonly limits: Left
  // Committed: charged plus reserved. Replaced only by the synchronous steps below.
  declare private cost: number
  declare private tokens: number
  declare private calls: number
  constructor(input: Partial<Pick<BudgetLimits, "cost" | "tokens" | "calls">>) {
    this.limits = new Limits(orNull(input.cost), orNull(input.tokens), orNull(input.calls))
    this.cost = 0
    this.tokens = 0
    this.calls = 0
  }
  get left(): Effect.Effect<Left> {
    return Effect.sync(() => this.unsafeLeft())
  }
  reserve(r: Reservation): Effect.Effect<Hold, Shortfall> {
    return Effect.suspend(() => this.unsafeReserve(r))
  }
  settle(hold: Hold, charged: Charged): Effect.Effect<void> {
    return Effect.sync(() => this.unsafeSettle(hold, charged))
  }
  release(hold: Hold): Effect.Effect<void> {
    return Effect.sync(() => this.unsafeRelease(hold))
  }
  unsafeLeft(): Left {
    const { calls, cost, limits, tokens } = this
    return {
      cost: limits.cost === null ? null : Math.max(0, limits.cost - cost),
      tokens: limits.tokens === null ? null : Math.max(0, limits.tokens - tokens),
      calls: limits.calls === null ? null : Math.max(0, limits.calls - calls)
    }
  }
  unsafeReserve(r: Reservation): Either.Either<Hold, Shortfall> {
    const { calls, cost, limits, tokens } = this
    // A worst case that is not an amount is refused: a NaN would make every later comparison false (admitting
    // anything), an infinity would leave the counters at infinity.
    if (r.cost !== null && !Number.isFinite(r.cost)) {
      return Either.left({ resource: "cost", needed: r.cost, left: this.unsafeLeft().cost ?? Number.POSITIVE_INFINITY })
    }
    if (r.tokens !== null && !Number.isFinite(r.tokens)) {
      return Either.left({
        resource: "tokens",
        needed: r.tokens,
        left: this.unsafeLeft().tokens ?? Number.POSITIVE_INFINITY
      })
    }
    if (limits.calls !== null && calls + 1 > limits.calls) {
      return Either.left({ resource: "calls", needed: 1, left: Math.max(0, limits.calls - calls) })
    }
    if (limits.cost !== null && r.cost !== null && cost + r.cost > limits.cost + EPSILON) {
      return Either.left({ resource: "cost", needed: r.cost, left: Math.max(0, limits.cost - cost) })
    }
    if (limits.tokens !== null && r.tokens !== null && tokens + r.tokens > limits.tokens) {
      return Either.left({ resource: "tokens", needed: r.tokens, left: Math.max(0, limits.tokens - tokens) })
    }
    this.cost = cost + (r.cost ?? 0)
    this.tokens = tokens + (r.tokens ?? 0)
    this.calls = calls + 1
    return Either.right(new Held(r))
  }
  unsafeSettle(hold: Hold, charged: Charged): void {
    this.cost += chargedOr(charged.cost, hold.reservation.cost) - (hold.reservation.cost ?? 0)
    this.tokens += chargedOr(charged.tokens, hold.reservation.tokens) - (hold.reservation.tokens ?? 0)
  }
  unsafeRelease(hold: Hold): void {
    this.cost -= hold.reservation.cost ?? 0
    this.tokens -= hold.reservation.tokens ?? 0
    this.calls -= 1
  }
}

/** A budget's limits (a class: its instances are made per request, see `InMemory`). */
class Limits implements Left {
  declare readonly cost: number | null
  declare readonly tokens: number | null
  declare readonly calls: number | null
  constructor(cost: number | null, tokens: number | null, calls: number | null) {
    this.cost = cost
    this.tokens = tokens
    this.calls = calls
  }
}

/** A reservation held (a class, as `Limits`). */
class Held implements Hold {
  declare readonly reservation: Reservation
  constructor(
    reservation: Reservation
  ) {
    this.reservation = reservation
  }
}

// Their maps outlive a full collection between runs (see `internal/maps.ts`), with fields of the real kinds.
keepMap(new InMemory({ cost: 0.5, tokens: 1, calls: 1 })).unsafeReserve({ cost: 0.5, tokens: 1 })
keepMap(new Held({ cost: 0.5, tokens: 1 }))

/**
 * Makes an in-memory budget over the given limits (absent limits are unlimited).
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Budget } from "@rein/core"
 *
 * const program = Effect.gen(function*() {
 *   const budget = yield* Budget.make({ cost: 0.01, calls: 3 })
 *   const hold = yield* budget.reserve({ cost: 0.004, tokens: null })
 *   yield* budget.settle(hold, { cost: 0.001, tokens: 0 })
 *   return yield* budget.left // { cost: 0.009, tokens: null, calls: 2 }
 * })
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const make = (limits: Partial<Pick<BudgetLimits, "cost" | "tokens" | "calls">>): Effect.Effect<Service> =>
  Effect.sync(() => unsafeMake(limits))

const UNLIMITED: Left = { cost: null, tokens: null, calls: null }

/**
 * A budget with no limits: every reservation succeeds, nothing is counted.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Budget } from "@rein/core"
 *
 * const left = Budget.unlimited.left // Effect<{ cost: null, tokens: null, calls: null }>
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const unlimited: Service = {
  limits: UNLIMITED,
  left: Effect.succeed(UNLIMITED),
  reserve: (reservation) => Effect.succeed({ reservation }),
  settle: () => Effect.void,
  release: () => Effect.void,
  unsafeReserve: (reservation) => Either.right({ reservation }),
  unsafeSettle: () => {},
  unsafeLeft: () => UNLIMITED
}

/** The hold of a composed budget: one of each. */
interface BothHold extends Hold {
  readonly own: Hold
  readonly shared: Hold
}

// `both` hands out only its own holds, so the one it is given back is one of them.
const split = (hold: Hold): BothHold => hold as BothHold

/**
 * A request's own budget composed with a shared one: what the executor reserves against when both apply.
 *
 * - `reserve`: reserves against `own`, then against `shared`; a shortfall in `own` is reported without
 *   touching `shared`, and on a shortfall in `shared` the `own` hold is released (call included) before the
 *   shortfall is reported. Interruption between the two halves releases `own` too.
 * - `settle` and `release` apply to both, own first.
 * - `left` and `limits` are the tighter of the two (`minLeft`).
 *
 * The synchronous fast path is present when both budgets have it and `own` can be released synchronously
 * (a budget from `make` or `unsafeMake`).
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Budget } from "@rein/core"
 *
 * const program = Effect.gen(function*() {
 *   const run = yield* Budget.make({ cost: 1 })
 *   const request = yield* Budget.make({ cost: 0.1, calls: 3 })
 *   const budget = Budget.both(request, run)
 *   const hold = yield* budget.reserve({ cost: 0.05, tokens: null })
 *   yield* budget.settle(hold, { cost: 0.01, tokens: 0 })
 * })
 * ```
 * @category combinators
 * @since 0.1.0
 */
export const both = (own: Service, shared: Service): Service => {
  const reserve = (reservation: Reservation): Effect.Effect<Hold, Shortfall> =>
    Effect.uninterruptibleMask((restore) =>
      Effect.flatMap(restore(own.reserve(reservation)), (ownHold) =>
        Effect.onExit(
          restore(shared.reserve(reservation)),
          (exit) => exit._tag === "Success" ? Effect.void : own.release(ownHold)
        ).pipe(Effect.map((sharedHold): Hold => {
          const hold: BothHold = { reservation, own: ownHold, shared: sharedHold }
          return hold
        })))
    )
  // The fast paths are called on their services (an `InMemory`'s are methods), never taken apart.
  const inMemory = own instanceof InMemory ? own : undefined
  const releaseOwn = inMemory === undefined ? releasers.get(own) : undefined
  const unsafeReserve = (inMemory === undefined && releaseOwn === undefined) || own.unsafeReserve === undefined ||
      shared.unsafeReserve === undefined
    ? undefined
    : (reservation: Reservation): Either.Either<Hold, Shortfall> | undefined => {
      const ownHold = own.unsafeReserve!(reservation)
      if (ownHold === undefined || Either.isLeft(ownHold)) return ownHold
      const sharedHold = shared.unsafeReserve!(reservation)
      if (sharedHold === undefined || Either.isLeft(sharedHold)) {
        if (inMemory !== undefined) inMemory.unsafeRelease(ownHold.right)
        else releaseOwn!(ownHold.right)
        return sharedHold
      }
      const hold: BothHold = { reservation, own: ownHold.right, shared: sharedHold.right }
      return Either.right(hold)
    }
  return {
    limits: minLeft(own.limits, shared.limits),
    left: Effect.zipWith(own.left, shared.left, minLeft),
    reserve,
    settle: (hold, charged) => {
      const { own: a, shared: b } = split(hold)
      return Effect.zipRight(own.settle(a, charged), shared.settle(b, charged))
    },
    release: (hold) => {
      const { own: a, shared: b } = split(hold)
      return Effect.zipRight(own.release(a), shared.release(b))
    },
    ...(unsafeReserve === undefined ? {} : { unsafeReserve }),
    ...(own.unsafeSettle === undefined || shared.unsafeSettle === undefined ? {} : {
      unsafeSettle: (hold: Hold, charged: Charged) => {
        const { own: a, shared: b } = split(hold)
        own.unsafeSettle!(a, charged)
        shared.unsafeSettle!(b, charged)
      }
    }),
    ...(own.unsafeLeft === undefined || shared.unsafeLeft === undefined
      ? {}
      : { unsafeLeft: () => minLeft(own.unsafeLeft!(), shared.unsafeLeft!()) })
  }
}

/**
 * Takes the tighter of two budgets' remainders.
 *
 * @example
 * ```ts
 * import { Budget } from "@rein/core"
 *
 * Budget.minLeft({ cost: 1, tokens: null, calls: 3 }, { cost: 2, tokens: 10, calls: null })
 * // { cost: 1, tokens: 10, calls: 3 }
 * ```
 * @category combinators
 * @since 0.1.0
 */
export const minLeft = (a: Left, b: Left): Left => ({
  cost: a.cost === null ? b.cost : b.cost === null ? a.cost : Math.min(a.cost, b.cost),
  tokens: a.tokens === null ? b.tokens : b.tokens === null ? a.tokens : Math.min(a.tokens, b.tokens),
  calls: a.calls === null ? b.calls : b.calls === null ? a.calls : Math.min(a.calls, b.calls)
})

/**
 * What an attempt is charged when it ends (see the module summary for the rules). Usage that is not a count
 * (`Usage.isCount`), or an actual cost that is not a finite number ≥ 0, is charged as unknown usage.
 *
 * @example
 * ```ts
 * import { Budget } from "@rein/core"
 *
 * Budget.charge({ cost: 0.01, tokens: 100 }, { dispatched: true, usage: "unknown", actualCost: null })
 * // { cost: 0.01, tokens: 100, violation: false }: sent, usage unknown, the whole reservation stays charged
 * ```
 * @category accounting
 * @since 0.1.0
 */
export const charge = (
  reservation: Reservation,
  outcome: { readonly dispatched: boolean; readonly usage: Tokens | "unknown"; readonly actualCost: number | null }
): { readonly cost: number; readonly tokens: number; readonly violation: boolean } => {
  const actual = outcome.actualCost
  if (outcome.usage !== "unknown" && isCount(outcome.usage) && (actual === null || isCharge(actual))) {
    const tokens = outcome.usage.inputTokens + outcome.usage.outputTokens
    const cost = actual ?? 0
    const violation = (reservation.cost !== null && cost > reservation.cost + EPSILON) ||
      (reservation.tokens !== null && tokens > reservation.tokens)
    return { cost, tokens, violation }
  }
  if (!outcome.dispatched) return { cost: 0, tokens: 0, violation: false }
  return { cost: reservation.cost ?? 0, tokens: reservation.tokens ?? 0, violation: false }
}
