// When an item's budget refusal is the run's budget exhausted (the run then stops) and when it is the
// request's own per-request budget (it does not).
import { describe, expect, it } from "@effect/vitest"
import { Resume } from "@rein/batch"
import { Contract, Outcome } from "@rein/core"
import * as fc from "effect/FastCheck"
import * as BudgetStop from "../src/internal/budgetStop.js"

const record = (attempts: number, cost: number, tokens: number) =>
  Resume.makeRecord({
    itemId: "i",
    index: 0,
    promptFingerprint: "p",
    inputFingerprint: "f",
    identityFingerprint: "x",
    outcome: "failure",
    category: "budget_exhausted",
    usage: { inputTokens: tokens, outputTokens: 0 },
    cost,
    attempts,
    durationMillis: 0
  })

const refused = (resource: "cost" | "tokens" | "calls") =>
  new Outcome.BudgetExhausted({ resource, reason: "no room", cause: null, attempts: [] })

const contractWith = (budget: { cost?: number; tokens?: number; calls?: number }) =>
  Contract.make({ deadline: "1 minute", candidates: ["fake/a"], allowSimulated: true, budget })

describe("a budget refusal as the run's stop", () => {
  it("with no per-request cap on the resource, a shared budget that caps it is what refused", () => {
    const stop = BudgetStop.stopFor(contractWith({}), record(0, 0, 0), refused("calls"), {
      cost: null,
      tokens: null,
      calls: 0
    })
    expect(stop).toMatchObject({ kind: "budget_exceeded", resource: "calls" })
    // A shared budget with no cap on that resource refused nothing.
    expect(BudgetStop.stopFor(contractWith({}), record(0, 0, 0), refused("cost"), {
      cost: null,
      tokens: null,
      calls: 3
    })).toBeUndefined()
  })

  it.prop(
    "with a per-request cap: the run stops exactly when the shared budget had no more left than the request",
    {
      cap: fc.integer({ min: 1, max: 10 }),
      used: fc.integer({ min: 0, max: 10 }),
      shared: fc.integer({ min: 0, max: 20 })
    },
    ({ cap, shared, used }) => {
      const own = Math.max(0, cap - used)
      const stop = BudgetStop.stopFor(
        contractWith({ calls: cap }),
        record(Math.min(used, cap), 0, 0),
        refused("calls"),
        {
          cost: null,
          tokens: null,
          calls: shared
        }
      )
      expect(stop !== undefined).toBe(shared <= own)
    }
  )

  it("a refusal because the store was unavailable is no refusal of the budget", () => {
    const failed = (error: Outcome.BudgetExhausted) => ({
      _tag: "Failed" as const,
      index: 0,
      itemId: "i",
      item: "x",
      category: "budget_exhausted" as const,
      error,
      durationMillis: 0
    })
    expect(BudgetStop.refusal(failed(refused("cost")))).toBeDefined()
    expect(BudgetStop.refusal(failed(
      new Outcome.BudgetExhausted({
        resource: "cost",
        reason: "down",
        cause: null,
        attempts: [],
        unavailable: true
      })
    ))).toBeUndefined()
  })
})
