import { describe, it } from "@effect/vitest"
import { Health } from "@rein/core"
import * as HealthLaws from "@rein/core/testing/HealthLaws"
import { Effect } from "effect"

// Each property run builds its own test environment (about 0.1 s on a loaded machine): 50 runs a law.
const runs = { fastCheck: { numRuns: 50 } }

describe("the health laws, in process (Health.make)", () => {
  for (const law of HealthLaws.laws(Health.make)) {
    it.effect.prop(law.name, [law.cases], ([check]) => check, runs)
  }
})

describe("the health laws, in process through the effects only (no fast path)", () => {
  // What a shared store looks like to the executor: the same state, no synchronous members.
  const effectsOnly: HealthLaws.Make = (config) =>
    Effect.map(Health.make(config), ({ acquire, breaker, complete, config, degrade, view }) => ({
      config,
      view,
      acquire,
      complete,
      degrade,
      breaker
    }))
  for (const law of HealthLaws.laws(effectsOnly)) {
    it.effect.prop(law.name, [law.cases], ([check]) => check, runs)
  }
})
