import { describe, it } from "@effect/vitest"
import { Budget } from "@rein/core"
import * as BudgetLaws from "@rein/core/testing/BudgetLaws"
import { Effect } from "effect"

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
