/**
 * The provider registry: each catalog provider name runs on its registered constructor, every other name
 * on the scripted fake, and `plan` labels each as it would run without constructing it.
 */
import { describe, expect, it } from "@effect/vitest"
import { Catalog } from "@rein/core"
import { Effect, Either, Option } from "effect"
import * as Providers from "../src/internal/providers.js"

const catalog = Either.getOrThrow(Catalog.decode({
  endpoints: [
    {
      id: "local/a",
      provider: "openai-compatible",
      model: "m",
      capabilities: { contextWindow: 1000, maxOutputTokens: 100 },
      prices: { inputTokens: 0, outputTokens: 0 }
    },
    {
      id: "fake/a",
      provider: "fake",
      model: "m",
      capabilities: { contextWindow: 1000, maxOutputTokens: 100 },
      prices: { inputTokens: 0, outputTokens: 0 }
    }
  ]
}))

describe("the provider registry", () => {
  it("plans each provider name as its entry runs: the real adapter not simulated, any other name the fake", () => {
    const planned = Providers.forPlanning(catalog)
    expect([...planned.keys()]).toEqual(["openai-compatible", "fake"])
    expect(planned.get("openai-compatible")?.simulated).toBe(false)
    expect(planned.get("fake")?.simulated).toBe(true)
    expect(Providers.entryFor("anything-else")).toBe(Providers.fake)
  })

  it.scoped("constructs each name through its entry: the real adapter asks for its base URL", () =>
    Effect.gen(function*() {
      const context = { scenario: undefined, originMillis: 0, baseUrl: Option.none() }
      const error = yield* Effect.flip(Providers.forCalls(catalog, context))
      expect(error.message).toMatch(/the catalog names provider "openai-compatible": give its base URL/)
      const providers = yield* Providers.forCalls(catalog, { ...context, baseUrl: Option.some("http://127.0.0.1:9") })
      expect(providers.has("openai-compatible")).toBe(true)
      expect(providers.get("openai-compatible")?.simulated ?? false).toBe(false)
      expect(providers.get("fake")?.simulated).toBe(true)
    }))
})
