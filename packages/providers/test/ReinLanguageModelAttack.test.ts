/**
 * An attacker's and a real user's pass on `ReinLanguageModel`, against the loopback server speaking the
 * OpenAI Responses wire format: hostile tool calls, structured output that does not match its schema, agent
 * loops under one shared contract, streams cut after a tool call, cancellation, and what reaches the journal,
 * spans and logs.
 */
import { LanguageModel, Prompt, Tool, Toolkit } from "@effect/ai"
import { OpenAiClient, OpenAiLanguageModel } from "@effect/ai-openai"
import { describe, expect, it } from "@effect/vitest"
import { Budget, Catalog, Contract, Journal, Refine } from "@rein/core"
import { ReinLanguageModel } from "@rein/providers"
import { FaultServer } from "@rein/providers/testing"
import { Effect, Either, Schema } from "effect"
import { KEY } from "./dialects.js"
import { withHttp } from "./fixtures.js"

const capabilities = {
  contextWindow: 8_000,
  maxOutputTokens: 1_000,
  streaming: true,
  tools: true,
  structuredOutput: true
}
const prices = { inputTokens: 1e-6, outputTokens: 2e-6 }
const catalog = Catalog.make({
  endpoints: [
    { id: "a", provider: "openai", model: "model-a", capabilities, prices },
    { id: "b", provider: "openai", model: "model-b", capabilities, prices }
  ]
})
const contract = Contract.make({
  deadline: "10 seconds",
  attemptTimeout: "2 seconds",
  candidates: ["a", "b"],
  retry: { perEndpoint: 0, base: "10 millis", max: "50 millis", jitter: 0 }
})
/** Every call is bounded at 100 input tokens: a reservation of 100 + 1,000 tokens. */
const underRein = (server: FaultServer.FaultServer) =>
  ReinLanguageModel.layer({
    contract,
    catalog,
    models: { a: OpenAiLanguageModel.model, b: OpenAiLanguageModel.model },
    clients: OpenAiClient.layer({ apiKey: KEY, apiUrl: server.baseUrl }),
    inputTokens: () => 100
  })

const records = Effect.flatMap(Journal.MemoryJournal, (j) => j.records)

/** Runs `f` against a fresh server with `scripts`, under Rein, with a shared budget of 1M tokens to read. */
const run = <A, E>(
  scripts: Readonly<Record<string, ReadonlyArray<FaultServer.Fault>>>,
  f: Effect.Effect<A, E, LanguageModel.LanguageModel>
) =>
  Effect.scoped(Effect.gen(function*() {
    const server = yield* FaultServer.make({ scripts })
    const budget = yield* Budget.make({ tokens: 1_000_000 })
    const result = yield* f.pipe(
      Refine.sharing(contract),
      Effect.provideService(Budget.SharedBudget, budget),
      ReinLanguageModel.withOutcomes,
      Effect.either,
      Effect.provide(underRein(server))
    )
    const left = yield* budget.left
    return { result, charged: 1_000_000 - left.tokens!, seen: yield* server.requests, records: yield* records }
  })).pipe(withHttp, Effect.provide(Journal.layerMemory))

const Forecast = Schema.Struct({ city: Schema.String, degrees: Schema.Number })

describe("ReinLanguageModel under attack (loopback OpenAI Responses)", () => {
  it.live("generateObject whose JSON does not match the schema: malformed, falls back, charged its reported usage", () =>
    Effect.gen(function*() {
      const { charged, records: [record], result } = yield* run(
        {
          "model-a": [
            FaultServer.ok({ text: JSON.stringify({ city: "Oslo" }), usage: { inputTokens: 7, outputTokens: 4 } })
          ],
          "model-b": [
            FaultServer.ok({
              text: JSON.stringify({ city: "Oslo", degrees: 21 }),
              usage: { inputTokens: 9, outputTokens: 3 }
            })
          ]
        },
        LanguageModel.generateObject({ prompt: "forecast?", schema: Forecast, objectName: "forecast" })
      )
      expect(Either.isRight(result) && result.right.value).toEqual({ city: "Oslo", degrees: 21 })
      expect(record!.attempts.map((a) => [a.endpoint, a.failure, a.usage])).toEqual([
        ["a", "malformed_response", { inputTokens: 7, outputTokens: 4 }],
        ["b", null, { inputTokens: 9, outputTokens: 3 }]
      ])
      // The usage the vendor reported, not the 1,100-token worst case of an answer of unknown usage.
      expect(charged).toBe(7 + 4 + 9 + 3)
    }))
})
