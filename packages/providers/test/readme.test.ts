// The README's "Put an existing @effect/ai program under Rein", compiled and run against the loopback
// fault server (it speaks the OpenAI Responses API). The code between the markers is the README's,
// verbatim: a test below checks that the README still shows exactly it.
import { LanguageModel } from "@effect/ai"
import { OpenAiClient, OpenAiLanguageModel } from "@effect/ai-openai"
import { describe, expect, it } from "@effect/vitest"
import { Catalog, Contract } from "@rein/core"
import { ReinLanguageModel } from "@rein/providers"
import { FaultServer } from "@rein/providers/testing"
import { Config, ConfigProvider, Effect, Layer } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { withHttp } from "./fixtures.js"

// The existing program, its client, and the tour's catalog and contract.
const program = LanguageModel.generateText({ prompt: "Summarise the incident report" })
const openAiClient = OpenAiClient.layerConfig({
  apiKey: Config.redacted("OPENAI_API_KEY"),
  apiUrl: Config.string("OPENAI_API_URL")
})
const catalog = Catalog.make({
  endpoints: [{
    id: "openai/mini",
    provider: "openai",
    model: "gpt-4.1-mini",
    capabilities: { contextWindow: 128_000, maxOutputTokens: 16_384, tools: true, structuredOutput: true },
    prices: { inputTokens: 0.4e-6, outputTokens: 1.6e-6 }
  }]
})
const contract = Contract.make({
  deadline: "30 seconds",
  attemptTimeout: "10 seconds",
  budget: { cost: 0.1, calls: 6 },
  candidates: ["openai/mini"]
})

// --- README example starts here ---
// Before: program.pipe(Effect.provide(OpenAiLanguageModel.model("gpt-4.1-mini")), Effect.provide(openAiClient))
const governed = program.pipe(
  Effect.provide(ReinLanguageModel.layer({
    contract,
    catalog,
    models: { "openai/mini": OpenAiLanguageModel.model }, // the model name is the catalog's
    clients: openAiClient, // built one-shot: a client that retries is refused before any call
    inputTokens: () => 2_000 // or a model's Tokenizer (OpenAiLanguageModel.modelWithTokenizer), if it knows the model
  }))
)
// --- README example ends here ---

const readmeSnippet = (): string => {
  const source = fs.readFileSync(fileURLToPath(import.meta.url), "utf8")
  const start = source.indexOf("// --- README example starts here ---\n")
  const end = source.indexOf("// --- README example ends here ---")
  return source.slice(start + "// --- README example starts here ---\n".length, end)
}

describe("README: Put an existing @effect/ai program under Rein", () => {
  it.live("the program runs under the contract, its call sites unchanged", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FaultServer.make({
        faults: [FaultServer.faults.unavailable, FaultServer.ok({ text: "All systems nominal." })]
      })
      const config = ConfigProvider.fromMap(
        new Map([["OPENAI_API_KEY", "sk-test"], ["OPENAI_API_URL", server.baseUrl]])
      )
      const response = yield* governed.pipe(Effect.provide(Layer.setConfigProvider(config)))
      expect(response.text).toBe("All systems nominal.")
      const seen = yield* server.requests
      expect(seen.map((r) => (r.body as { model?: string }).model)).toEqual(["gpt-4.1-mini", "gpt-4.1-mini"])
    })).pipe(withHttp))

  it("the README shows this code verbatim, in at most 10 lines", () => {
    const readme = fs.readFileSync(
      path.join(path.dirname(fileURLToPath(import.meta.url)), "../../../README.md"),
      "utf8"
    )
    const snippet = readmeSnippet()
    expect(readme).toContain(snippet)
    expect(snippet.trim().split("\n").length).toBeLessThanOrEqual(10)
  })
})
