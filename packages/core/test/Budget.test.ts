import { describe, expect, it } from "@effect/vitest"
import { Budget } from "@rein/core"
import { Effect, Either, FastCheck } from "effect"

// The in-memory budget's exact answers at its boundaries, and how `both` and `charge` combine them: each
// expectation is a number a wrong comparison or a wrong sign in `Budget.ts` would change.

const reservation = (cost: number | null, tokens: number | null) => ({ cost, tokens })

describe("an in-memory budget", () => {
  it.effect("reserving exactly what is left succeeds; one more token, one more call or a cost beyond rounding fails", () =>
    Effect.gen(function*() {
      const budget = yield* Budget.make({ cost: 1, tokens: 100, calls: 2 })
      expect(budget.limits).toEqual({ cost: 1, tokens: 100, calls: 2 })
      const first = yield* budget.reserve(reservation(0.4, 40))
      expect(yield* budget.left).toEqual({ cost: 0.6, tokens: 60, calls: 1 })
      expect(yield* Effect.flip(budget.reserve(reservation(0.6, 61)))).toEqual({
        resource: "tokens",
        needed: 61,
        left: 60
      })
      expect(yield* Effect.flip(budget.reserve(reservation(0.6 + 1e-9, 10)))).toEqual({
        resource: "cost",
        needed: 0.6 + 1e-9,
        left: 0.6
      })
      // Within 1e-12 of the cap is at the cap (ten charges of 0.1 sum to 0.9999…).
      yield* budget.reserve(reservation(0.6 + 1e-13, 60))
      expect(yield* budget.left).toEqual({ cost: 0, tokens: 0, calls: 0 })
      expect(yield* Effect.flip(budget.reserve(reservation(0, 0)))).toEqual({ resource: "calls", needed: 1, left: 0 })
      yield* budget.release(first)
      expect(yield* budget.left).toMatchObject({ tokens: 40, calls: 1 })
    }))

  it.effect("a reservation of exactly the cost cap plus the 1e-12 rounding allowance fits", () =>
    Effect.gen(function*() {
      const budget = yield* Budget.make({ cost: 1 })
      yield* budget.reserve(reservation(1 + 1e-12, 0))
      expect(yield* budget.left).toEqual({ cost: 0, tokens: null, calls: null })
    }))

  it.effect("the call cap is checked first, then cost, then tokens", () =>
    Effect.gen(function*() {
      const none = yield* Budget.make({ cost: 0, tokens: 0, calls: 0 })
      expect(yield* Effect.flip(none.reserve(reservation(1, 1)))).toMatchObject({ resource: "calls" })
      const poor = yield* Budget.make({ cost: 0, tokens: 0, calls: 1 })
      expect(yield* Effect.flip(poor.reserve(reservation(1, 1)))).toEqual({ resource: "cost", needed: 1, left: 0 })
      expect(yield* Effect.flip(poor.reserve(reservation(null, 1)))).toEqual({ resource: "tokens", needed: 1, left: 0 })
      // An unbounded reservation passes the bounded caps and takes a call.
      yield* poor.reserve(reservation(null, null))
      expect(yield* poor.left).toEqual({ cost: 0, tokens: 0, calls: 0 })
    }))

  it.effect("a worst case that is not an amount is refused naming the resource, what it needed and what is left", () =>
    Effect.gen(function*() {
      const budget = yield* Budget.make({ cost: 1, tokens: 100, calls: 2 })
      yield* budget.reserve(reservation(0.25, 10))
      expect(yield* Effect.flip(budget.reserve(reservation(Number.NaN, 10)))).toEqual({
        resource: "cost",
        needed: Number.NaN,
        left: 0.75
      })
      expect(yield* Effect.flip(budget.reserve(reservation(0.1, Number.POSITIVE_INFINITY)))).toEqual({
        resource: "tokens",
        needed: Number.POSITIVE_INFINITY,
        left: 90
      })
      // A resource with no cap has an unlimited amount left, said as Infinity (a shortfall's left is a number).
      const uncapped = yield* Budget.make({ calls: 5 })
      expect(yield* Effect.flip(uncapped.reserve(reservation(Number.NEGATIVE_INFINITY, null)))).toEqual({
        resource: "cost",
        needed: Number.NEGATIVE_INFINITY,
        left: Number.POSITIVE_INFINITY
      })
      expect(yield* Effect.flip(uncapped.reserve(reservation(null, Number.NaN)))).toEqual({
        resource: "tokens",
        needed: Number.NaN,
        left: Number.POSITIVE_INFINITY
      })
      // Nothing was taken by the refusals.
      expect(yield* budget.left).toEqual({ cost: 0.75, tokens: 90, calls: 1 })
      expect(yield* uncapped.left).toEqual({ cost: null, tokens: null, calls: 5 })
    }))

  it.effect("settling replaces the hold by the charge, and may leave less than nothing shown as 0", () =>
    Effect.gen(function*() {
      const budget = yield* Budget.make({ cost: 1, tokens: 100 })
      expect(budget.limits).toEqual({ cost: 1, tokens: 100, calls: null })
      const hold = yield* budget.reserve(reservation(0.5, 50))
      yield* budget.settle(hold, { cost: 0.2, tokens: 30 })
      expect(yield* budget.left).toEqual({ cost: 0.8, tokens: 70, calls: null })
      const over = yield* budget.reserve(reservation(0.1, 10))
      yield* budget.settle(over, { cost: 5, tokens: 500 })
      expect(yield* budget.left).toEqual({ cost: 0, tokens: 0, calls: null })
      // The overrun is remembered, not clamped: even a reservation of nothing is over the cost cap now.
      expect(yield* Effect.flip(budget.reserve(reservation(0, 0)))).toEqual({ resource: "cost", needed: 0, left: 0 })
      // A reservation that bounds neither resource is not compared with them: it still takes a call.
      yield* budget.reserve(reservation(null, null))
    }))

  it.effect("an unbounded hold settles and releases as zero", () =>
    Effect.gen(function*() {
      const budget = yield* Budget.make({ cost: 1, tokens: 100, calls: 3 })
      const hold = yield* budget.reserve(reservation(null, null))
      yield* budget.settle(hold, { cost: 0.25, tokens: 10 })
      expect(yield* budget.left).toEqual({ cost: 0.75, tokens: 90, calls: 2 })
      const other = yield* budget.reserve(reservation(null, null))
      yield* budget.release(other)
      expect(yield* budget.left).toEqual({ cost: 0.75, tokens: 90, calls: 2 })
      const bounded = yield* budget.reserve(reservation(0.5, 50))
      yield* budget.release(bounded)
      expect(yield* budget.left).toEqual({ cost: 0.75, tokens: 90, calls: 2 })
    }))

  it("the synchronous fast paths answer what the effects answer", () => {
    const budget = Budget.unsafeMake({ tokens: 10, calls: 1 })
    expect(budget.unsafeLeft!()).toEqual({ cost: null, tokens: 10, calls: 1 })
    const hold = budget.unsafeReserve!(reservation(3, 4))
    expect(Either.isRight(hold!)).toBe(true)
    expect(budget.unsafeReserve!(reservation(0, 0))).toEqual(Either.left({ resource: "calls", needed: 1, left: 0 }))
    budget.unsafeSettle!(Either.getOrThrow(hold!), { cost: 1, tokens: 1 })
    expect(budget.unsafeLeft!()).toEqual({ cost: null, tokens: 9, calls: 0 })
  })

  it.effect("the unlimited budget never refuses and stays unlimited", () =>
    Effect.gen(function*() {
      const u = Budget.unlimited
      const hold = yield* u.reserve(reservation(1e9, 1e9))
      expect(hold).toEqual({ reservation: reservation(1e9, 1e9) })
      yield* u.settle(hold, { cost: 1e9, tokens: 1e9 })
      yield* u.release(hold)
      expect(yield* u.left).toEqual({ cost: null, tokens: null, calls: null })
      expect(u.limits).toEqual({ cost: null, tokens: null, calls: null })
      expect(u.unsafeReserve!(reservation(1, 1))).toEqual(Either.right({ reservation: reservation(1, 1) }))
      expect(u.unsafeLeft!()).toEqual({ cost: null, tokens: null, calls: null })
      u.unsafeSettle!(hold, { cost: 1, tokens: 1 })
    }))
})

describe("two budgets at once (own and shared)", () => {
  it("what is left is the smaller of the two, per resource; null (unlimited) yields to a number", () => {
    expect(Budget.minLeft({ cost: 1, tokens: null, calls: 3 }, { cost: 2, tokens: 5, calls: null })).toEqual({
      cost: 1,
      tokens: 5,
      calls: 3
    })
    expect(Budget.minLeft({ cost: 2, tokens: 7, calls: 1 }, { cost: 1, tokens: 5, calls: 4 })).toEqual({
      cost: 1,
      tokens: 5,
      calls: 1
    })
    expect(Budget.minLeft({ cost: null, tokens: null, calls: null }, { cost: null, tokens: null, calls: null }))
      .toEqual({ cost: null, tokens: null, calls: null })
  })

  it("per resource, the smaller of two numbers, the number when the other is unlimited, and symmetric", () => {
    const left = FastCheck.option(FastCheck.integer({ min: 0, max: 1_000 }), { nil: null })
    const side = FastCheck.record({ cost: left, tokens: left, calls: left })
    const expected = (x: number | null, y: number | null) => x === null ? y : y === null ? x : Math.min(x, y)
    FastCheck.assert(
      FastCheck.property(side, side, (a, b) => {
        const both = Budget.minLeft(a, b)
        expect(both).toEqual({
          cost: expected(a.cost, b.cost),
          tokens: expected(a.tokens, b.tokens),
          calls: expected(a.calls, b.calls)
        })
        expect(Budget.minLeft(b, a)).toEqual(both)
      }),
      { numRuns: 300, seed: 23 }
    )
  })

  const pair = Effect.gen(function*() {
    const own = yield* Budget.make({ tokens: 100, calls: 5 })
    const shared = yield* Budget.make({ cost: 1, tokens: 50 })
    return { own, shared, both: Budget.both(own, shared) }
  })

  it.effect("a reservation takes from both; a shortfall in the shared one gives the own one back", () =>
    Effect.gen(function*() {
      const { both, own, shared } = yield* pair
      expect(both.limits).toEqual({ cost: 1, tokens: 50, calls: 5 })
      const hold = yield* both.reserve(reservation(0.5, 30))
      expect(yield* own.left).toEqual({ cost: null, tokens: 70, calls: 4 })
      expect(yield* shared.left).toEqual({ cost: 0.5, tokens: 20, calls: null })
      expect(yield* both.left).toEqual({ cost: 0.5, tokens: 20, calls: 4 })
      expect(yield* Effect.flip(both.reserve(reservation(0.1, 30)))).toEqual({
        resource: "tokens",
        needed: 30,
        left: 20
      })
      expect(yield* own.left).toEqual({ cost: null, tokens: 70, calls: 4 })
      yield* both.settle(hold, { cost: 0.1, tokens: 10 })
      expect(yield* own.left).toEqual({ cost: null, tokens: 90, calls: 4 })
      expect(yield* shared.left).toEqual({ cost: 0.9, tokens: 40, calls: null })
      const second = yield* both.reserve(reservation(0.1, 10))
      yield* both.release(second)
      expect(yield* both.left).toEqual({ cost: 0.9, tokens: 40, calls: 4 })
    }))

  it.effect("the fast paths of both do the same, and exist only when both sides have them", () =>
    Effect.gen(function*() {
      const { both, own, shared } = yield* pair
      expect(both.unsafeLeft!()).toEqual({ cost: 1, tokens: 50, calls: 5 })
      const hold = both.unsafeReserve!(reservation(0.5, 30))!
      expect(Either.isRight(hold)).toBe(true)
      expect(both.unsafeReserve!(reservation(0.1, 30))).toEqual(
        Either.left({ resource: "tokens", needed: 30, left: 20 })
      )
      expect(own.unsafeLeft!()).toEqual({ cost: null, tokens: 70, calls: 4 })
      const ownFirst = Budget.both(yield* Budget.make({ calls: 0 }), shared)
      expect(ownFirst.unsafeReserve!(reservation(0, 0))).toEqual(Either.left({ resource: "calls", needed: 1, left: 0 }))
      expect(shared.unsafeLeft!()).toEqual({ cost: 0.5, tokens: 20, calls: null })
      both.unsafeSettle!(Either.getOrThrow(hold), { cost: 0, tokens: 0 })
      expect(both.unsafeLeft!()).toEqual({ cost: 1, tokens: 50, calls: 4 })
      const { left, limits, release, reserve, settle } = shared
      const effectsOnly: Budget.Service = { left, limits, release, reserve, settle }
      const mixed = Budget.both(own, effectsOnly)
      expect([mixed.unsafeReserve, mixed.unsafeSettle, mixed.unsafeLeft]).toEqual([undefined, undefined, undefined])
      // An own budget whose hold cannot be given back synchronously (not one of `make`'s) has no fast path.
      expect(Budget.both(Budget.unlimited, shared).unsafeReserve).toBeUndefined()
      const reversed = Budget.both(effectsOnly, own)
      expect([reversed.unsafeReserve, reversed.unsafeSettle, reversed.unsafeLeft]).toEqual([
        undefined,
        undefined,
        undefined
      ])
    }))

  it("a request's own budget (an InMemory, whose fast paths are methods) answers in both as make's budget does", () => {
    // The executor makes a request's own budget as `Budget.InMemory` and combines it with a shared one by `both`:
    // every step, through the fast paths and through the effects, must answer as with `unsafeMake`'s budget.
    const amount = FastCheck.oneof(FastCheck.constant(null), FastCheck.integer({ min: 0, max: 40 }))
    const op = FastCheck.oneof(
      FastCheck.record({ kind: FastCheck.constant("reserve" as const), cost: amount, tokens: amount }),
      FastCheck.record({
        kind: FastCheck.constant("settle" as const),
        cost: FastCheck.integer({ min: 0, max: 40 }),
        tokens: FastCheck.integer({ min: 0, max: 40 })
      }),
      FastCheck.constant({ kind: "release" as const }),
      FastCheck.constant({ kind: "effects" as const })
    )
    const limit = FastCheck.option(FastCheck.integer({ min: 0, max: 100 }), { nil: undefined })
    const limits = FastCheck.record({ cost: limit, tokens: limit, calls: limit })
    FastCheck.assert(
      FastCheck.property(limits, limits, FastCheck.array(op, { maxLength: 30 }), (ownLimits, sharedLimits, ops) => {
        const run = (own: Budget.Service) => {
          const both = Budget.both(own, Budget.unsafeMake(sharedLimits))
          const holds: Array<Budget.Hold> = []
          const answers: Array<unknown> = [both.limits]
          for (const o of ops) {
            if (o.kind === "reserve") {
              const got = both.unsafeReserve!(reservation(o.cost, o.tokens))!
              if (Either.isRight(got)) holds.push(got.right)
              answers.push(Either.isRight(got) ? "held" : got.left)
            } else if (o.kind === "effects") {
              const got = Effect.runSync(Effect.either(both.reserve(reservation(1, 1))))
              if (Either.isRight(got)) Effect.runSync(both.release(got.right))
              answers.push(Either.isRight(got) ? "held" : got.left, Effect.runSync(both.left))
            } else {
              const hold = holds.pop()
              if (hold !== undefined && o.kind === "settle") {
                both.unsafeSettle!(hold, { cost: o.cost, tokens: o.tokens })
              }
              if (hold !== undefined && o.kind === "release") Effect.runSync(both.release(hold))
            }
            answers.push(both.unsafeLeft!(), Effect.runSync(own.left))
          }
          return answers
        }
        expect(run(new Budget.InMemory(ownLimits))).toEqual(run(Budget.unsafeMake(ownLimits)))
      }),
      { numRuns: 300, seed: 29 }
    )
  })

  it.effect("a shared budget whose fast path declines makes the fast path of both decline, with the own hold given back", () =>
    Effect.gen(function*() {
      const own = yield* Budget.make({ calls: 1 })
      const shared = yield* Budget.make({ cost: 1 })
      const declining: Budget.Service = { ...shared, unsafeReserve: () => undefined }
      const both = Budget.both(own, declining)
      expect(both.unsafeReserve!(reservation(0.1, 1))).toBeUndefined()
      expect(yield* own.left).toEqual({ cost: null, tokens: null, calls: 1 })
      // The effectful path still works, and takes the call.
      yield* both.reserve(reservation(0.1, 1))
      expect(yield* own.left).toEqual({ cost: null, tokens: null, calls: 0 })
    }))
})

describe("what an attempt is charged", () => {
  const worst = reservation(0.5, 100)

  it("reported usage is charged as reported, and exceeding the reservation is a violation", () => {
    const usage = (inputTokens: number, outputTokens: number) => ({ inputTokens, outputTokens })
    expect(Budget.charge(worst, { dispatched: true, usage: usage(30, 70), actualCost: 0.5 })).toEqual({
      cost: 0.5,
      tokens: 100,
      violation: false
    })
    expect(Budget.charge(worst, { dispatched: true, usage: usage(30, 71), actualCost: 0.1 })).toEqual({
      cost: 0.1,
      tokens: 101,
      violation: true
    })
    expect(Budget.charge(worst, { dispatched: true, usage: usage(1, 1), actualCost: 0.5 + 1e-13 }).violation).toBe(
      false
    )
    // Exactly at the rounding allowance is still within the reservation.
    const atAllowance = Budget.charge(worst, { dispatched: true, usage: usage(1, 1), actualCost: 0.5 + 1e-12 })
    expect(atAllowance.violation).toBe(false)
    expect(Budget.charge(worst, { dispatched: true, usage: usage(1, 1), actualCost: 0.5 + 1e-9 }).violation).toBe(true)
    expect(Budget.charge(worst, { dispatched: false, usage: usage(1, 1), actualCost: null })).toEqual({
      cost: 0,
      tokens: 2,
      violation: false
    })
    expect(Budget.charge(reservation(null, null), { dispatched: true, usage: usage(9e9, 1), actualCost: 9e9 }))
      .toEqual({ cost: 9e9, tokens: 9e9 + 1, violation: false })
  })

  it("usage that is not a count, or an actual cost that is not a finite number ≥ 0, is charged as unknown usage", () => {
    const notACount = FastCheck.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, -1, -1e-9)
    const count = FastCheck.integer({ min: 0, max: 1_000 })
    // Each count alone fine but their sum overflows: no count either.
    const overflowing = FastCheck.constant({ inputTokens: Number.MAX_VALUE, outputTokens: Number.MAX_VALUE })
    const badUsage = FastCheck.oneof(
      FastCheck.record({ inputTokens: notACount, outputTokens: count }),
      FastCheck.record({ inputTokens: count, outputTokens: notACount }),
      overflowing
    )
    const goodUsage = FastCheck.record({ inputTokens: count, outputTokens: count })
    const goodCost = FastCheck.option(FastCheck.double({ min: 0, max: 0.4, noNaN: true }), { nil: null })
    const outcome = FastCheck.oneof(
      FastCheck.record({ usage: badUsage, actualCost: goodCost }),
      FastCheck.record({ usage: goodUsage, actualCost: notACount })
    )
    FastCheck.assert(
      FastCheck.property(outcome, FastCheck.boolean(), ({ actualCost, usage }, dispatched) => {
        expect(Budget.charge(worst, { dispatched, usage, actualCost })).toEqual(
          dispatched ? { cost: 0.5, tokens: 100, violation: false } : { cost: 0, tokens: 0, violation: false }
        )
      }),
      { numRuns: 300, seed: 23 }
    )
  })

  it("unknown usage charges the whole reservation if the request was sent, nothing if it was not", () => {
    expect(Budget.charge(worst, { dispatched: true, usage: "unknown", actualCost: null })).toEqual({
      cost: 0.5,
      tokens: 100,
      violation: false
    })
    expect(Budget.charge(worst, { dispatched: false, usage: "unknown", actualCost: 3 })).toEqual({
      cost: 0,
      tokens: 0,
      violation: false
    })
    expect(Budget.charge(reservation(null, null), { dispatched: true, usage: "unknown", actualCost: null })).toEqual({
      cost: 0,
      tokens: 0,
      violation: false
    })
  })
})
