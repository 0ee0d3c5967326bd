/**
 * The dialects against the real `@effect/ai` vendor clients: what `generateObject`, tools and finish
 * reasons put on the wire reaches the server, and what the server answers decodes as the vendor's client
 * expects. The clients are built on the bridge's one-shot client layers (`EffectAi*.clientLayer`).
 */
import { LanguageModel, Tool, Toolkit } from "@effect/ai"
import { AnthropicLanguageModel } from "@effect/ai-anthropic"
import { GoogleLanguageModel } from "@effect/ai-google"
import { OpenAiLanguageModel } from "@effect/ai-openai"
import { OpenRouterClient, OpenRouterLanguageModel } from "@effect/ai-openrouter"
import type { HttpClient } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import * as EffectAiAnthropic from "@rein/providers/EffectAiAnthropic"
import * as EffectAiGoogle from "@rein/providers/EffectAiGoogle"
import * as EffectAiOpenAi from "@rein/providers/EffectAiOpenAi"
import { FaultServer } from "@rein/providers/testing"
import { Chunk, Effect, Layer, Schema, Stream } from "effect"
import { at, KEY } from "./dialects.js"
import { withHttp } from "./fixtures.js"

const Weather = Tool.make("weather", {
  description: "The weather in a city",
  parameters: { city: Schema.String },
  success: Schema.String
})
const toolkit = Toolkit.make(Weather)
const handlers = toolkit.toLayer({ weather: ({ city }) => Effect.succeed(`sunny in ${city}`) })
const Forecast = Schema.Struct({ city: Schema.String, degrees: Schema.Number })
const forecastJson = JSON.stringify({ city: "Oslo", degrees: 21 })
const weatherCall = { id: "call_1", name: "weather", arguments: JSON.stringify({ city: "Oslo" }) }

interface Vendor {
  readonly name: string
  readonly model: (
    server: FaultServer.FaultServer
  ) => Layer.Layer<LanguageModel.LanguageModel, unknown, HttpClient.HttpClient>
  /** The request body asked for JSON output. */
  readonly asksJson: (body: unknown) => boolean
  /** The tool names the request body declares. */
  readonly toolNames: (body: unknown) => ReadonlyArray<string>
  /** How the vendor answers a structured-output request. */
  readonly structured: FaultServer.Fault
}

const names = (tools: unknown, ...path: ReadonlyArray<string | number>): ReadonlyArray<string> =>
  Array.isArray(tools) ? tools.map((t) => String(at(t, ...path))) : []

const vendors: ReadonlyArray<Vendor> = [
  {
    name: "OpenAI Responses",
    model: (server) =>
      OpenAiLanguageModel.layer({ model: "gpt-test" }).pipe(
        Layer.provide(EffectAiOpenAi.clientLayer({ apiUrl: server.baseUrl, apiKey: KEY }))
      ),
    asksJson: (body) => at(body, "text", "format", "type") === "json_schema",
    toolNames: (body) => names(at(body, "tools"), "name"),
    structured: FaultServer.ok({ text: forecastJson })
  },
  {
    name: "Anthropic Messages",
    model: (server) =>
      AnthropicLanguageModel.layer({ model: "claude-test" }).pipe(
        Layer.provide(EffectAiAnthropic.clientLayer({ apiUrl: server.url, apiKey: KEY }))
      ),
    // Anthropic's JSON mode is a forced tool named after the object.
    asksJson: (body) => at(body, "tool_choice", "type") === "tool" && at(body, "tool_choice", "name") === "forecast",
    toolNames: (body) => names(at(body, "tools"), "name"),
    structured: FaultServer.ok({ text: "", toolCalls: [{ id: "toolu_1", name: "forecast", arguments: forecastJson }] })
  },
  {
    name: "Gemini",
    model: (server) =>
      GoogleLanguageModel.layer({ model: "gemini-test", config: { toolConfig: {} } }).pipe(
        Layer.provide(EffectAiGoogle.clientLayer({ apiUrl: server.url, apiKey: KEY }))
      ),
    asksJson: (body) => at(body, "generationConfig", "responseMimeType") === "application/json",
    // The REST reference has `tools: [{ functionDeclarations }]`; @effect/ai-google 0.15 sends the one Tool
    // object without the array. Both are read here; see the report of the dialects work.
    toolNames: (body) =>
      names(at(body, "tools", "functionDeclarations") ?? at(body, "tools", 0, "functionDeclarations"), "name"),
    structured: FaultServer.ok({ text: forecastJson })
  },
  {
    // @effect/ai-openrouter 0.10 declares peers @effect/ai ^0.35 / platform ^0.96; it runs on 0.37 / 0.97.
    name: "OpenRouter (chat completions, @effect/ai-openrouter)",
    model: (server) =>
      OpenRouterLanguageModel.layer({ model: "vendor/model-test" }).pipe(
        Layer.provide(OpenRouterClient.layer({ apiUrl: `${server.url}/api/v1`, apiKey: KEY }))
      ),
    asksJson: (body) => at(body, "response_format", "type") === "json_schema",
    toolNames: (body) => names(at(body, "tools"), "function", "name"),
    structured: FaultServer.ok({ text: forecastJson })
  }
]

const run = <A, E>(
  vendor: Vendor,
  faults: ReadonlyArray<FaultServer.Fault>,
  f: (server: FaultServer.FaultServer) => Effect.Effect<A, E, LanguageModel.LanguageModel>
) =>
  Effect.scoped(Effect.gen(function*() {
    const server = yield* FaultServer.make({ faults })
    const value = yield* f(server).pipe(Effect.provide(vendor.model(server)))
    return { value, seen: yield* server.requests }
  })).pipe(withHttp)

for (const vendor of vendors) {
  describe(`${vendor.name} on the loopback dialect`, () => {
    it.live("generateObject sends a JSON response format and decodes the answer", () =>
      Effect.gen(function*() {
        const { seen, value } = yield* run(vendor, [vendor.structured], () =>
          LanguageModel.generateObject({ prompt: "forecast?", schema: Forecast, objectName: "forecast" }))
        expect(value.value).toEqual({ city: "Oslo", degrees: 21 })
        expect(vendor.asksJson(seen[0]!.body)).toBe(true)
      }))

    it.live("the toolkit's tools reach the request, and the vendor's tool call comes back with its params", () =>
      Effect.gen(function*() {
        const { seen, value } = yield* run(
          vendor,
          [FaultServer.ok({ text: "", toolCalls: [weatherCall] })],
          () => LanguageModel.generateText({ prompt: "weather in Oslo?", toolkit }).pipe(Effect.provide(handlers))
        )
        expect(vendor.toolNames(seen[0]!.body)).toEqual(["weather"])
        expect(value.toolCalls.map((c) => [c.name, c.params])).toEqual([["weather", { city: "Oslo" }]])
        expect(value.toolResults.map((r) => r.result)).toEqual(["sunny in Oslo"])
        expect(value.finishReason).toBe("tool-calls")
        expect(seen.length).toBe(1)
      }))

    it.live("an answer cut at the output limit is reported as finish reason length, streamed or not", () =>
      Effect.gen(function*() {
        const cut = FaultServer.ok({ deltas: ["cut at the ", "lim"], finish: "length" })
        const { value } = yield* run(vendor, [cut, cut], () =>
          Effect.all([
            Effect.map(LanguageModel.generateText({ prompt: "long" }), (r) => [r.text, r.finishReason]),
            Effect.map(Stream.runCollect(LanguageModel.streamText({ prompt: "long" })), (parts) =>
              Chunk.toReadonlyArray(parts).flatMap((p) => p.type === "finish" ? [p.reason] : []))
          ]))
        expect(value).toEqual([["cut at the lim", "length"], ["length"]])
      }))

    it.live("a complete answer is finish reason stop", () =>
      Effect.gen(function*() {
        const { value } = yield* run(vendor, [FaultServer.ok({ text: "done" })], () =>
          LanguageModel.generateText({ prompt: "short" }))
        expect([value.text, value.finishReason]).toEqual(["done", "stop"])
      }))
  })
}
