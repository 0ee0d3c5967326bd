import { describe, expect, it } from "@effect/vitest"
import { Health } from "@rein/core"
import { HealthLaws } from "@rein/core/testing"
import { Effect, FastCheck } from "effect"

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

describe("the health laws can fail", () => {
  const breaks = (make: HealthLaws.Make, name: string) =>
    Effect.gen(function*() {
      const law = HealthLaws.laws(make).find((l) => l.name.startsWith(name))!
      const results = yield* Effect.forEach(FastCheck.sample(law.cases, { numRuns: 100, seed: 7 }), Effect.either)
      return results.some((r) => r._tag === "Left")
    })

  it.effect("a health that counts failures as neutral breaks the tripping law", () =>
    Effect.gen(function*() {
      const forgiving: HealthLaws.Make = (config) =>
        Effect.map(Health.make(config), (inner): Health.Service => ({
          config: inner.config,
          view: inner.view,
          acquire: inner.acquire,
          degrade: inner.degrade,
          breaker: inner.breaker,
          complete: (permit) => inner.complete(permit, { _tag: "neutral" })
        }))
      expect(yield* breaks(forgiving, "k consecutive")).toBe(true)
    }))

  it.effect("a health that never takes a retry token breaks the retry-budget law", () =>
    Effect.gen(function*() {
      const generous: HealthLaws.Make = (config) =>
        Effect.map(Health.make(config), (inner): Health.Service => ({
          ...inner,
          acquire: (endpoint, _role, options) => inner.acquire(endpoint, "first", options)
        }))
      expect(yield* breaks(generous, "retries and fallbacks")).toBe(true)
    }))
})
