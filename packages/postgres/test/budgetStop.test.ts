// When an item's budget refusal is the run's budget exhausted (the run then stops) and when it is the
// request's own per-request budget, or a budget other holders could still grant the item from (it does not).
import { describe, expect, it } from "@effect/vitest"
import { Resume } from "@rein/batch"
import { Contract, Outcome } from "@rein/core"
import * as fc from "effect/FastCheck"
import * as BudgetStop from "../src/internal/budgetStop.js"
import * as Grantable from "../src/internal/grantable.js"

const vec = (tokens: number) => ({ calls: 0, cost: 0, tokens })

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

const refused = (resource: "cost" | "tokens" | "calls", needed?: number) =>
  new Outcome.BudgetExhausted({
    resource,
    reason: "no room",
    lastFailure: null,
    attempts: [],
    ...(needed === undefined ? {} : { needed })
  })

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
    "with a per-request cap: the run stops exactly when the shared budget had no more left than the request " +
      "and cannot grant the call",
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
        refused("calls", 1),
        {
          cost: null,
          tokens: null,
          calls: shared
        }
      )
      expect(stop !== undefined).toBe(shared <= own && shared < 1)
    },
    { fastCheck: { seed: 19 } }
  )

  it.prop(
    "the run stops exactly when no holder of the budget could grant the refused reservation, nor more than " +
      "the request's own budget had left",
    {
      cap: fc.integer({ min: 0, max: 1_000 }),
      spent: fc.integer({ min: 0, max: 1_000 }),
      leases: fc.array(
        fc.record({ live: fc.boolean(), leased: fc.nat(300), used: fc.nat(300), exposed: fc.nat(300) }),
        { maxLength: 5 }
      ),
      own: fc.option(fc.nat(4), { nil: undefined }),
      ownUsed: fc.nat(300),
      needed: fc.integer({ min: 1, max: 200 }),
      perRequest: fc.option(fc.integer({ min: 1, max: 400 }), { nil: undefined }),
      itemUsed: fc.nat(400)
    },
    ({ cap, itemUsed, leases, needed, own, ownUsed, perRequest, spent }) => {
      // A database snapshot as the budget keeps it: the leases never hold more than the cap less what is spent.
      const rows = leases.map((l, i) => ({
        id: `l${i}`,
        live: l.live,
        leased: vec(l.leased),
        used: vec(Math.min(l.used, l.leased)),
        exposed: vec(Math.min(l.exposed, l.leased))
      }))
      const held = rows.reduce((n, l) => n + l.leased.tokens, 0)
      const holdings = {
        caps: { cost: null, calls: null, tokens: Math.max(cap, spent + held) },
        spent: vec(spent),
        leases: rows
      }
      const ownId = own === undefined ? "none" : `l${own}`
      const ownRow = rows.find((l) => l.id === ownId)
      const ownNow = ownRow === undefined ? 0 : Math.min(ownUsed, ownRow.leased.tokens)
      const left = Grantable.grantable(holdings, { id: ownId, used: vec(ownNow) })
      const stop = BudgetStop.stopFor(
        contractWith(perRequest === undefined ? {} : { tokens: perRequest }),
        record(0, 0, Math.min(itemUsed, perRequest ?? itemUsed)),
        refused("tokens", needed),
        left
      )
      // Independently: the pool once the expired leases are reclaimed, and what each live holder could top up.
      const pool = holdings.caps.tokens - spent -
        rows.reduce((n, l) => n + (l.live ? l.leased.tokens : l.exposed.tokens), 0)
      const free = rows.filter((l) => l.live).map((l) => l.leased.tokens - (l.id === ownId ? ownNow : l.used.tokens))
      const someoneAdmits = pool >= needed || free.some((f) => pool + f >= needed)
      const ownLeft = perRequest === undefined ? Infinity : perRequest - Math.min(itemUsed, perRequest)
      const largest = Math.max(pool, ...free.map((f) => pool + f))
      expect(stop !== undefined).toBe(!someoneAdmits && largest <= ownLeft)
      // Never more than what is really left, whoever holds it.
      const total = pool + free.reduce((n, f) => n + f, 0)
      expect(left.tokens).toBeLessThanOrEqual(Math.max(0, total))
    },
    { fastCheck: { numRuns: 2_000, seed: 19 } }
  )

  it("a refusal of unknown size stops only a budget with nothing left", () => {
    const shared = (calls: number) => ({ cost: null, tokens: null, calls })
    const contract = contractWith({})
    expect(BudgetStop.stopFor(contract, record(0, 0, 0), refused("calls"), shared(0))).toBeDefined()
    expect(BudgetStop.stopFor(contract, record(0, 0, 0), refused("calls"), shared(1))).toBeUndefined()
    // A dollar amount a float's noise above what is left still fits (the budget counts nano-dollars).
    const cost = (left: number) => ({ cost: left, tokens: null, calls: null })
    expect(BudgetStop.stopFor(contract, record(0, 0, 0), refused("cost", 0.1 + 0.2), cost(0.3))).toBeUndefined()
    expect(BudgetStop.stopFor(contract, record(0, 0, 0), refused("cost", 0.31), cost(0.3))).toBeDefined()
  })

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
        lastFailure: null,
        attempts: [],
        unavailable: true
      })
    ))).toBeUndefined()
  })
})
