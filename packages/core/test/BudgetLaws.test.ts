import { describe, expect, it } from "@effect/vitest"
import { Budget } from "@rein/core"
import { BudgetLaws } from "@rein/core/testing"
import { Effect, FastCheck } from "effect"

// Each property run builds its own test environment (about 0.1 s on a loaded machine): 50 runs a law.
const runs = { fastCheck: { numRuns: 50 } }

describe("the budget laws, in memory (Budget.make)", () => {
  for (const law of BudgetLaws.laws(Budget.make)) {
    it.effect.prop(law.name, [law.cases], ([check]) => check, runs)
  }
})

describe("the budget laws, in memory through the effects only (no fast path)", () => {
  // What a remote store looks like to the executor: the same state, no synchronous members.
  const effectsOnly: BudgetLaws.Make = (limits) =>
    Effect.map(Budget.make(limits), ({ left, limits, release, reserve, settle }) => ({
      limits,
      left,
      reserve,
      settle,
      release
    }))
  for (const law of BudgetLaws.laws(effectsOnly)) {
    it.effect.prop(law.name, [law.cases], ([check]) => check, runs)
  }
})

describe("the budget laws can fail", () => {
  /** Whether some generated case of `law` fails against `make`. */
  const breaks = (make: BudgetLaws.Make, name: string) =>
    Effect.gen(function*() {
      const law = BudgetLaws.laws(make).find((l) => l.name.startsWith(name))!
      const results = yield* Effect.forEach(FastCheck.sample(law.cases, { numRuns: 200, seed: 7 }), Effect.either)
      return results.some((r) => r._tag === "Left")
    })

  it.effect("a budget that checks, yields, then commits (not atomic) breaks the over-commit law", () =>
    Effect.gen(function*() {
      const racy: BudgetLaws.Make = (limits) =>
        Effect.sync(() => {
          const used = { cost: 0, tokens: 0, calls: 0 }
          const fits = (r: { readonly cost: number | null; readonly tokens: number | null }) =>
            (limits.calls === undefined || used.calls + 1 <= limits.calls) &&
            (limits.cost === undefined || used.cost + (r.cost ?? 0) <= limits.cost) &&
            (limits.tokens === undefined || used.tokens + (r.tokens ?? 0) <= limits.tokens)
          const budget: Budget.Service = {
            limits: { cost: limits.cost ?? null, tokens: limits.tokens ?? null, calls: limits.calls ?? null },
            left: Effect.succeed({ cost: null, tokens: null, calls: null }),
            // Checks, lets other fibers run, then takes what it checked for.
            reserve: (r) =>
              fits(r)
                ? Effect.as(
                  Effect.zipRight(
                    Effect.yieldNow(),
                    Effect.sync(() => {
                      used.calls++
                      used.cost += r.cost ?? 0
                      used.tokens += r.tokens ?? 0
                    })
                  ),
                  { reservation: r }
                )
                : Effect.fail({ resource: "calls", needed: 1, left: 0 }),
            settle: (hold, charged) =>
              Effect.sync(() => {
                used.cost += charged.cost - (hold.reservation.cost ?? 0)
                used.tokens += charged.tokens - (hold.reservation.tokens ?? 0)
              }),
            release: (hold) =>
              Effect.sync(() => {
                used.calls--
                used.cost -= hold.reservation.cost ?? 0
                used.tokens -= hold.reservation.tokens ?? 0
              })
          }
          return budget
        })
      expect(yield* breaks(racy, "concurrent reservations")).toBe(true)
    }))

  it.effect("a budget whose settle refunds the call breaks the settle law", () =>
    Effect.gen(function*() {
      const refunding: BudgetLaws.Make = (limits) =>
        Effect.map(Budget.make(limits), (inner): Budget.Service => ({
          limits: inner.limits,
          left: inner.left,
          reserve: inner.reserve,
          release: inner.release,
          settle: (hold, charged) =>
            Effect.zipRight(inner.settle(hold, charged), inner.release({ reservation: { cost: 0, tokens: 0 } }))
        }))
      expect(yield* breaks(refunding, "settle charges")).toBe(true)
    }))
})
