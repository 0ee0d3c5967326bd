/**
 * A scenario's price changes are checked against the catalog before a simulation starts: one naming an endpoint
 * the catalog lacks, or re-pinning prices whose worst case for one call overflows, is bad input naming the change.
 */
import { describe, expect, it } from "@effect/vitest"
import { Catalog } from "@rein/core"
import { Effect, Either } from "effect"
import { checkCapacity, checkPrices, checkScenario, repriced } from "../src/internal/againstCatalog.js"
import * as Scenario from "../src/Scenario.js"

const catalog = Catalog.make({
  endpoints: [{
    id: "fake/a",
    provider: "fake",
    model: "m",
    capabilities: { contextWindow: 8_000, maxOutputTokens: 1_000 },
    prices: { inputTokens: 1e-6, outputTokens: 2e-6 }
  }]
})

const scenarioWith = (prices: ReadonlyArray<object>, endpoints: object = {}) =>
  Either.getOrThrow(Scenario.decode({
    description: "prices",
    duration: "10 seconds",
    rate: 1,
    default: { kind: "ok", latency: 10, outputTokens: 10 },
    request: { inputTokens: 100, maxOutputTokens: 100 },
    endpoints,
    prices
  }))

const messageOf = (prices: ReadonlyArray<object>) =>
  Effect.map(Effect.flip(checkPrices("s.json", scenarioWith(prices), catalog)), (e) => e.message)

describe("a scenario's price changes", () => {
  it.effect("one naming an endpoint the catalog lacks is bad input, not ignored", () =>
    Effect.gen(function*() {
      expect(
        yield* messageOf([{ at: 0, endpoint: "fake/a", outputTokens: 1e-5 }, {
          at: 1_000,
          endpoint: "fake/typo",
          outputTokens: 0.5
        }])
      ).toBe("s.json: prices.1.endpoint: \"fake/typo\" is not in the catalog")
    }))

  it.effect("one whose prices overflow the endpoint's worst case for one call is bad input, naming it", () =>
    Effect.gen(function*() {
      expect(yield* messageOf([{ at: 0, endpoint: "fake/a", inputTokens: 1e308 }])).toBe(
        "s.json: prices.0: fake/a's worst case for one call at these prices (contextWindow × inputTokens + " +
          "maxOutputTokens × outputTokens + request) is Infinity, not a finite cost"
      )
    }))

  it.effect("prices that keep it finite pass, and re-pin the endpoint from their moment on", () =>
    Effect.gen(function*() {
      const scenario = scenarioWith([{ at: 1_000, endpoint: "fake/a", inputTokens: 1e300, outputTokens: 1e300 }])
      yield* checkPrices("s.json", scenario, catalog)
      expect(repriced(catalog, scenario, 0).byId.get("fake/a")?.prices.inputTokens).toBe(1e-6)
      expect(repriced(catalog, scenario, 1_000).byId.get("fake/a")?.prices.inputTokens).toBe(1e300)
    }))
})

describe("ids that must be the catalog's (every command that reads them: run, batch, worker, simulate)", () => {
  it.effect("a scenario's endpoints and price changes", () =>
    Effect.gen(function*() {
      const stall = [{ behaviour: { kind: "stall" } }]
      const typo = yield* Effect.flip(checkScenario("s.json", scenarioWith([], { "fake/typo": stall }), catalog))
      expect(typo.message).toBe("s.json: endpoints: \"fake/typo\" is not in the catalog")
      const price = yield* Effect.flip(
        checkScenario("s.json", scenarioWith([{ at: 0, endpoint: "fake/b", outputTokens: 1 }]), catalog)
      )
      expect(price.message).toBe("s.json: prices.0.endpoint: \"fake/b\" is not in the catalog")
      yield* checkScenario("s.json", scenarioWith([{ at: 0, endpoint: "fake/a" }], { "fake/a": stall }), catalog)
    }))

  it.effect("a guardrail's capacity, named by where it came from", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(checkCapacity({ "fake/a": 2, "fake/typo": 1 }, catalog, "g.json"))
      expect(error.message).toBe("g.json: capacity: \"fake/typo\" is not in the catalog")
      const inline = yield* Effect.flip(checkCapacity({ "fake/typo": 1 }, catalog, undefined))
      expect(inline.message).toBe("guardrails: capacity: \"fake/typo\" is not in the catalog")
      yield* checkCapacity({ "fake/a": 2 }, catalog, "g.json")
      yield* checkCapacity(undefined, catalog, "g.json")
    }))
})
