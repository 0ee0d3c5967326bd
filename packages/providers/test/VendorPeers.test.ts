/**
 * The `@effect/ai-*` packages are optional peers: a user of one vendor installs that one only. Here the
 * other vendors' packages are absent (importing them fails, as `ERR_MODULE_NOT_FOUND` would), and a
 * program through `@rein/providers` with OpenAI models only still loads, runs, and sends Rein's output
 * bound through `OpenAiLanguageModel.Config` (the OpenAI module is loaded on demand).
 */
import { LanguageModel } from "@effect/ai"
import { OpenAiClient, OpenAiLanguageModel } from "@effect/ai-openai"
import { describe, expect, it } from "@effect/vitest"
import { Catalog, Contract } from "@rein/core"
import { Effect, Redacted } from "effect"
import { vi } from "vitest"
import { withHttp } from "./fixtures.js"

// (vi.mock is hoisted above every declaration: each factory stands alone.)
vi.mock("@effect/ai-anthropic", () => {
  throw new Error("Cannot find package '@effect/ai-anthropic' (not installed: an optional peer)")
})
vi.mock("@effect/ai-google", () => {
  throw new Error("Cannot find package '@effect/ai-google' (not installed: an optional peer)")
})
vi.mock("@effect/ai-openrouter", () => {
  throw new Error("Cannot find package '@effect/ai-openrouter' (not installed: an optional peer)")
})

const catalog = Catalog.make({
  endpoints: [{
    id: "a",
    provider: "openai",
    model: "model-a",
    capabilities: { contextWindow: 8_000, maxOutputTokens: 700, streaming: true },
    prices: { inputTokens: 1e-6, outputTokens: 2e-6 }
  }]
})
const KEY = Redacted.make("sk-one-vendor")
const contract = Contract.make({ deadline: "10 seconds", candidates: ["a"] })

describe("optional vendor peers", () => {
  it("the other vendors' packages really are absent here", async () => {
    await expect(import("@effect/ai-anthropic")).rejects.toThrow(/error when mocking/)
    await expect(import("@effect/ai-google")).rejects.toThrow(/error when mocking/)
    await expect(import("@effect/ai-openrouter")).rejects.toThrow(/error when mocking/)
  })

  it.live("a program with OpenAI models only loads @rein/providers and runs under ReinLanguageModel", () =>
    Effect.gen(function*() {
      const { ReinLanguageModel } = yield* Effect.promise(() => import("@rein/providers"))
      const { FaultServer } = yield* Effect.promise(() => import("@rein/providers/testing"))
      return yield* Effect.scoped(Effect.gen(function*() {
        const server = yield* FaultServer.make({ scripts: { "model-a": [FaultServer.ok({ text: "one vendor" })] } })
        const answer = yield* LanguageModel.generateText({ prompt: "hello" }).pipe(
          Effect.provide(ReinLanguageModel.layer({
            contract,
            catalog,
            models: { a: OpenAiLanguageModel.model },
            clients: OpenAiClient.layer({ apiKey: KEY, apiUrl: server.baseUrl })
          }))
        )
        const seen = yield* server.requests
        expect(answer.text).toBe("one vendor")
        expect([seen.length, seen[0]!.model, (seen[0]!.body as { max_output_tokens?: unknown }).max_output_tokens])
          .toEqual([1, "model-a", 700])
      }))
    }).pipe(withHttp))
})
