/**
 * The laws of a hard budget (`Budget.Service`), for every implementation: the in-memory `Budget.make`, and
 * any store shared by many processes. Register them in a test file:
 *
 * ```ts
 * import { it } from "@effect/vitest"
 * import { Budget } from "@rein/core"
 * import { BudgetLaws } from "@rein/core/testing"
 *
 * for (const law of BudgetLaws.laws(Budget.make)) it.effect.prop(law.name, [law.cases], ([check]) => check)
 * ```
 *
 * @since 0.1.0
 */
import { Effect, Either, FastCheck as fc } from "effect"
import * as Budget from "../Budget.js"
import type { Reservation } from "../Outcome.js"
import type { Law, LawBroken } from "./Laws.js"
import { close, expect } from "./Laws.js"

/**
 * The limits a budget is made with (absent: unlimited).
 *
 * @category models
 * @since 0.1.0
 */
export type Limits = Parameters<typeof Budget.make>[0]

/**
 * Makes a fresh, empty budget over `limits`: the implementation under test.
 *
 * @category models
 * @since 0.1.0
 */
export type Make = (limits: Limits) => Effect.Effect<Budget.Service>

const limitsArb: fc.Arbitrary<Limits> = fc.record({
  cost: fc.double({ min: 0.001, max: 1, noNaN: true }),
  tokens: fc.integer({ min: 1, max: 10_000 }),
  calls: fc.integer({ min: 1, max: 12 })
}, { requiredKeys: [] })

const reservationArb: fc.Arbitrary<Reservation> = fc.record({
  cost: fc.option(fc.double({ min: 0, max: 0.5, noNaN: true }), { nil: null }),
  tokens: fc.option(fc.integer({ min: 0, max: 5_000 }), { nil: null })
})

const fraction = fc.double({ min: 0, max: 1, noNaN: true })

/** What an attempt is charged when it used `frac` of its worst case (never more). */
const chargedOf = (r: Reservation, frac: number): Budget.Charged => ({
  cost: (r.cost ?? 0) * frac,
  tokens: Math.floor((r.tokens ?? 0) * frac)
})

const minus = (left: number | null, used: number | null): number | null =>
  left === null ? null : Math.max(0, left - (used ?? 0))

const sameLeft = (a: Budget.Left, b: Budget.Left): boolean =>
  close(a.cost, b.cost) && close(a.tokens, b.tokens) && a.calls === b.calls

const show = (left: Budget.Left): string => JSON.stringify(left)

/** Whether the shortfall is real: the resource it names is short of what was asked, as `left` says. */
const genuine = (s: Budget.Shortfall, r: Reservation, left: Budget.Left): boolean =>
  s.resource === "calls"
    ? left.calls !== null && left.calls < 1
    : s.resource === "cost"
    ? left.cost !== null && r.cost !== null && r.cost > left.cost
    : left.tokens !== null && r.tokens !== null && r.tokens > left.tokens

/** Concurrent holders never commit more than a cap, whatever the interleaving. */
const neverOverCommits = (make: Make): Law => {
  const name = "concurrent reservations never commit more than a cap (charged + reserved ≤ cap, at every moment)"
  const op = fc.record({
    reservation: reservationArb,
    end: fc.constantFrom("settle", "release"),
    frac: fraction,
    yields: fc.integer({ min: 0, max: 3 })
  })
  return {
    name,
    cases: fc.tuple(limitsArb, fc.array(op, { minLength: 1, maxLength: 24 })).map(([limits, ops]) =>
      Effect.gen(function*() {
        const budget = yield* make(limits)
        // A lower bound of what the budget has committed: added once a reservation is held, taken off before
        // it is given back. Above a cap, the budget is above it too.
        const committed = { cost: 0, tokens: 0, calls: 0 }
        let broken: string | null = null
        const observe = () => {
          if (limits.cost !== undefined && committed.cost > limits.cost + 1e-9) broken ??= `cost ${committed.cost}`
          if (limits.tokens !== undefined && committed.tokens > limits.tokens) broken ??= `tokens ${committed.tokens}`
          if (limits.calls !== undefined && committed.calls > limits.calls) broken ??= `calls ${committed.calls}`
        }
        const holder = (o: typeof ops[number]) =>
          Effect.gen(function*() {
            const held = yield* Effect.either(budget.reserve(o.reservation))
            if (Either.isLeft(held)) return
            const r = o.reservation
            committed.cost += r.cost ?? 0
            committed.tokens += r.tokens ?? 0
            committed.calls += 1
            observe()
            for (let i = 0; i < o.yields; i++) yield* Effect.yieldNow()
            if (o.end === "release") {
              committed.cost -= r.cost ?? 0
              committed.tokens -= r.tokens ?? 0
              committed.calls -= 1
              yield* budget.release(held.right)
            } else {
              const charged = chargedOf(r, o.frac)
              committed.cost += charged.cost - (r.cost ?? 0)
              committed.tokens += charged.tokens - (r.tokens ?? 0)
              yield* budget.settle(held.right, charged)
            }
          })
        yield* Effect.forEach(ops, holder, { concurrency: "unbounded", discard: true })
        yield* expect(name, broken === null, () => `committed above the cap ${JSON.stringify(limits)}: ${broken}`)
      })
    )
  }
}

/** One reservation's life, step by step, against `left`. */
const arithmetic = (make: Make): ReadonlyArray<Law> => {
  const cases = fc.tuple(limitsArb, reservationArb, fraction)
  const holds = "a reservation holds its worst case and one call"
  const settles = "settle charges what was used and keeps the call (a call is never refunded by a settlement)"
  const releases = "release gives the whole hold back, call included"
  const refuses = "a shortfall names a resource that is short, and changes nothing"
  /** Runs `then` with a held reservation, or checks the shortfall. */
  const withHold = (
    limits: Limits,
    r: Reservation,
    then: (budget: Budget.Service, before: Budget.Left, hold: Budget.Hold) => Effect.Effect<void, LawBroken>
  ) =>
    Effect.gen(function*() {
      const budget = yield* make(limits)
      const before = yield* budget.left
      const held = yield* Effect.either(budget.reserve(r))
      if (Either.isLeft(held)) {
        const after = yield* budget.left
        yield* expect(refuses, genuine(held.left, r, before), () => `${JSON.stringify(held.left)} with ${show(before)}`)
        return yield* expect(refuses, sameLeft(before, after), () => `${show(before)} became ${show(after)}`)
      }
      yield* then(budget, before, held.right)
    })
  return [
    {
      name: holds,
      cases: cases.map(([limits, r]) =>
        withHold(limits, r, (budget, before) =>
          Effect.flatMap(budget.left, (during) => {
            const expected: Budget.Left = {
              cost: minus(before.cost, r.cost),
              tokens: minus(before.tokens, r.tokens),
              calls: minus(before.calls, 1)
            }
            return expect(holds, sameLeft(during, expected), () => `left ${show(during)}, expected ${show(expected)}`)
          }))
      )
    },
    {
      name: settles,
      cases: cases.map(([limits, r, frac]) =>
        withHold(limits, r, (budget, before, hold) =>
          Effect.gen(function*() {
            const charged = chargedOf(r, frac)
            yield* budget.settle(hold, charged)
            const after = yield* budget.left
            const expected: Budget.Left = {
              cost: minus(before.cost, charged.cost),
              tokens: minus(before.tokens, charged.tokens),
              calls: minus(before.calls, 1)
            }
            yield* expect(settles, sameLeft(after, expected), () => `left ${show(after)}, expected ${show(expected)}`)
          }))
      )
    },
    {
      name: releases,
      cases: cases.map(([limits, r]) =>
        withHold(limits, r, (budget, before, hold) =>
          Effect.gen(function*() {
            yield* budget.release(hold)
            const after = yield* budget.left
            yield* expect(releases, sameLeft(after, before), () => `left ${show(after)}, expected ${show(before)}`)
          }))
      )
    },
    { name: refuses, cases: cases.map(([limits, r]) => withHold(limits, r, () => Effect.void)) }
  ]
}

/** A settle's charge that is no count at all. */
const notACount = fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, -1, -1e-9)

/** A charge that is not a count fails closed: the hold's whole reservation of that resource, never NaN. */
const invalidCharge = (make: Make): Law => {
  const name = "a settle whose charge is not a count (NaN, ±Infinity, negative) charges the hold's whole " +
    "reservation of that resource, and the cap still refuses"
  const charge = fc.oneof(fc.record({ bad: notACount }), fc.record({ frac: fraction }))
  const cases = fc.tuple(limitsArb, reservationArb, charge, charge).filter(([, , c, t]) => "bad" in c || "bad" in t)
  return {
    name,
    cases: cases.map(([limits, r, c, t]) =>
      Effect.gen(function*() {
        const budget = yield* make(limits)
        const before = yield* budget.left
        const held = yield* Effect.either(budget.reserve(r))
        if (Either.isLeft(held)) return
        const valid = chargedOf(r, "frac" in c ? c.frac : 0)
        const tokens = chargedOf(r, "frac" in t ? t.frac : 0)
        const charged: Budget.Charged = {
          cost: "bad" in c ? c.bad : valid.cost,
          tokens: "bad" in t ? t.bad : tokens.tokens
        }
        yield* budget.settle(held.right, charged)
        const after = yield* budget.left
        const expected: Budget.Left = {
          cost: minus(before.cost, "bad" in c ? r.cost : valid.cost),
          tokens: minus(before.tokens, "bad" in t ? r.tokens : tokens.tokens),
          calls: minus(before.calls, 1)
        }
        yield* expect(name, sameLeft(after, expected), () =>
          `charged ${String(charged.cost)} / ${String(charged.tokens)}: left ${show(after)}, expected ${
            show(expected)
          }`)
        if (after.cost !== null) {
          const more = yield* Effect.either(budget.reserve({ cost: after.cost + 0.01, tokens: null }))
          yield* expect(name, Either.isLeft(more), () =>
            `reserved ${after.cost! + 0.01} with ${show(after)} left`)
        }
      })
    )
  }
}

/** `Budget.both` over two budgets of this implementation: a shortfall in either leaves the other whole. */
const composition = (make: Make): ReadonlyArray<Law> => {
  const shared = "both(own, shared): a shortfall in shared releases own's hold (call included)"
  const own = "both(own, shared): a shortfall in own never touches shared"
  const settles = "both(own, shared): settle charges both"
  const worstCase = fc.double({ min: 0.01, max: 0.5, noNaN: true })
  const short = fc.constantFrom("cost" as const, "calls" as const)
  /** A budget that `r` does not fit, by `resource`. */
  const tight = (resource: "cost" | "calls", cost: number) =>
    resource === "cost"
      ? make({ cost: cost / 2 })
      : Effect.tap(make({ calls: 1 }), (b) => Effect.orDie(b.reserve({ cost: null, tokens: null })))
  return [
    {
      name: shared,
      cases: fc.tuple(worstCase, short).map(([cost, resource]) =>
        Effect.gen(function*() {
          const first = yield* make({ cost: 1, calls: 5 })
          const second = yield* tight(resource, cost)
          const before = yield* first.left
          const held = yield* Effect.either(Budget.both(first, second).reserve({ cost, tokens: null }))
          const after = yield* first.left
          yield* expect(shared, Either.isLeft(held) && held.left.resource === resource, () => `reserved: ${held._tag}`)
          yield* expect(shared, sameLeft(before, after), () => `own ${show(before)} became ${show(after)}`)
        })
      )
    },
    {
      name: own,
      cases: fc.tuple(worstCase, short).map(([cost, resource]) =>
        Effect.gen(function*() {
          const first = yield* tight(resource, cost)
          const second = yield* make({ cost: 1, calls: 5 })
          const before = yield* second.left
          const held = yield* Effect.either(Budget.both(first, second).reserve({ cost, tokens: null }))
          const after = yield* second.left
          yield* expect(own, Either.isLeft(held) && held.left.resource === resource, () => `reserved: ${held._tag}`)
          yield* expect(own, sameLeft(before, after), () => `shared ${show(before)} became ${show(after)}`)
        })
      )
    },
    {
      name: settles,
      cases: fc.tuple(worstCase, fraction).map(([cost, frac]) =>
        Effect.gen(function*() {
          const first = yield* make({ cost: 1, calls: 5 })
          const second = yield* make({ cost: 2, calls: 3 })
          const both = Budget.both(first, second)
          const hold = yield* Effect.orDie(both.reserve({ cost, tokens: null }))
          yield* both.settle(hold, { cost: cost * frac, tokens: 0 })
          const [a, b] = yield* Effect.all([first.left, second.left])
          const expected = [{ cost: 1 - cost * frac, tokens: null, calls: 4 }, {
            cost: 2 - cost * frac,
            tokens: null,
            calls: 2
          }] as const
          yield* expect(
            settles,
            sameLeft(a, expected[0]) && sameLeft(b, expected[1]),
            () => `left ${show(a)} and ${show(b)}`
          )
        })
      )
    }
  ]
}

/** A reservation whose worst case is not an amount is refused, naming that resource, and counts nothing. */
const invalidReservation = (make: Make): Law => {
  const name = "a reservation whose worst case is not an amount (NaN, ±Infinity) is refused naming that resource, " +
    "and changes nothing"
  const notAmount = fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY)
  return {
    name,
    cases: fc.tuple(limitsArb, notAmount, fc.constantFrom("cost" as const, "tokens" as const)).map(
      ([limits, bad, resource]) =>
        Effect.gen(function*() {
          const budget = yield* make(limits)
          const before = yield* budget.left
          const r: Reservation = resource === "cost" ? { cost: bad, tokens: 1 } : { cost: 0.001, tokens: bad }
          const fast = budget.unsafeReserve?.(r)
          const held = fast ?? (yield* Effect.either(budget.reserve(r)))
          const after = yield* budget.left
          yield* expect(name, Either.isLeft(held) && held.left.resource === resource, () =>
            `reserve ${JSON.stringify(String(bad))} ${resource} with ${show(before)}: ` +
            (Either.isLeft(held) ? `refused naming ${held.left.resource}` : "admitted"))
          yield* expect(name, sameLeft(before, after), () =>
            `${show(before)} became ${show(after)}`)
        })
    )
  }
}

/** The optional fast path does what the effects do. */
const fastPathAgrees = (make: Make): Law => {
  const name = "the synchronous fast path (when present) agrees with the effects"
  const op = fc.record({
    reservation: reservationArb,
    end: fc.constantFrom("settle", "release", "keep"),
    frac: fraction
  })
  return {
    name,
    cases: fc.tuple(limitsArb, fc.array(op, { maxLength: 16 })).map(([limits, ops]) =>
      Effect.gen(function*() {
        const slow = yield* make(limits)
        const fast = yield* make(limits)
        const { unsafeLeft, unsafeReserve, unsafeSettle } = fast
        if (unsafeReserve === undefined || unsafeSettle === undefined || unsafeLeft === undefined) return
        for (const o of ops) {
          const a = yield* Effect.either(slow.reserve(o.reservation))
          const b = unsafeReserve(o.reservation) ?? (yield* Effect.either(fast.reserve(o.reservation)))
          yield* expect(name, a._tag === b._tag, () => `reserve: ${a._tag} by effect, ${b._tag} by the fast path`)
          if (Either.isRight(a) && Either.isRight(b)) {
            if (o.end === "settle") {
              yield* slow.settle(a.right, chargedOf(o.reservation, o.frac))
              unsafeSettle(b.right, chargedOf(o.reservation, o.frac))
            } else if (o.end === "release") {
              yield* slow.release(a.right)
              yield* fast.release(b.right)
            }
          }
          const [x, y] = [yield* slow.left, unsafeLeft()]
          yield* expect(name, sameLeft(x, y), () => `left ${show(x)} by effect, ${show(y)} by the fast path`)
        }
      })
    )
  }
}

/**
 * Every budget law, for the implementation `make` builds.
 *
 * @example
 * ```ts
 * import { Budget } from "@rein/core"
 * import { BudgetLaws } from "@rein/core/testing"
 *
 * const laws = BudgetLaws.laws(Budget.make)
 * laws.map((law) => law.name)
 * ```
 * @category laws
 * @since 0.1.0
 */
export const laws = (make: Make): ReadonlyArray<Law> => [
  neverOverCommits(make),
  ...arithmetic(make),
  invalidCharge(make),
  invalidReservation(make),
  ...composition(make),
  fastPathAgrees(make)
]
