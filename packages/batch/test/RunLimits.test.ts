import { describe, it } from "@effect/vitest"
import { RunLimits } from "@rein/batch"
import { RunLimitsLaws } from "@rein/batch/testing"

// The laws any RunLimits implementation must pass, run against the in-memory one: through its effectful
// members, and through its synchronous fast paths (what a batch run uses when they are present).
describe("RunLimits laws: in memory", () => {
  for (const law of RunLimitsLaws.laws(RunLimits.memory)) {
    it.effect(law.name, () => law.check, 60_000)
  }
})

describe("RunLimits laws: in memory, through the fast paths", () => {
  for (const law of RunLimitsLaws.laws(RunLimitsLaws.viaFastPaths(RunLimits.memory), { numRuns: 50 })) {
    it.effect(law.name, () => law.check, 60_000)
  }
})
