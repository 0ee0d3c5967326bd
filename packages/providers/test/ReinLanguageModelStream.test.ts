import { LanguageModel, Telemetry, Tool, Toolkit } from "@effect/ai"
import type { Response } from "@effect/ai"
import { describe, expect, it } from "@effect/vitest"
import { Catalog, Contract } from "@rein/core"
import { ReinLanguageModel } from "@rein/providers"
import { Chunk, Effect, Layer, Schema, Stream } from "effect"

// Rein's `streamText` is `LanguageModel.make`'s minus its second decode (internal/streamText.ts): what a caller
// sees, tool results and the span transformer's content included, is what the same model gives directly.

const GetWeather = Tool.make("GetWeather", {
  parameters: { city: Schema.String },
  success: Schema.Struct({ celsius: Schema.Number })
})
const Weather = Toolkit.make(GetWeather)
const handlers = Weather.toLayer({ GetWeather: ({ city }) => Effect.succeed({ celsius: city.length }) })

const answer: Array<Response.StreamPartEncoded> = [
  { type: "text-start", id: "t" },
  { type: "text-delta", id: "t", delta: "Looking " },
  { type: "text-delta", id: "t", delta: "up." },
  { type: "text-end", id: "t" },
  { type: "tool-call", id: "c1", name: "GetWeather", params: { city: "Oslo" } },
  { type: "finish", reason: "tool-calls", usage: { inputTokens: 3, outputTokens: 2, totalTokens: 5 } }
]

const model = Layer.effect(
  LanguageModel.LanguageModel,
  LanguageModel.make({
    generateText: () => Effect.succeed([]),
    streamText: () => Stream.rechunk(Stream.fromIterable(answer), 1)
  })
)

const catalog = Catalog.make({
  endpoints: [{
    id: "a",
    provider: "memory",
    model: "model-a",
    capabilities: {
      contextWindow: 8_000,
      maxOutputTokens: 1_000,
      tools: true,
      structuredOutput: true,
      streaming: true
    },
    prices: { inputTokens: 1e-6, outputTokens: 2e-6 }
  }]
})
const rein = ReinLanguageModel.layer({
  contract: Contract.make({ deadline: "10 seconds", candidates: ["a"] }),
  catalog,
  models: { a: model },
  inputTokens: () => 50
})

/** The parts a caller collects, and the content the span transformer saw, under `layer`. */
const observe = (layer: Layer.Layer<LanguageModel.LanguageModel>, options: { readonly resolve: boolean }) =>
  Effect.gen(function*() {
    const seen: Array<ReadonlyArray<unknown>> = []
    const transformer: Telemetry.SpanTransformer = (o) => void seen.push(o.response)
    const parts = yield* LanguageModel.streamText({
      prompt: "weather in Oslo?",
      toolkit: Weather,
      disableToolCallResolution: !options.resolve
    }).pipe(
      Stream.runCollect,
      Effect.provide(layer),
      Effect.provide(handlers),
      Effect.provideService(Telemetry.CurrentSpanTransformer, transformer)
    )
    return { parts: Chunk.toReadonlyArray(parts), seen }
  })

describe("ReinLanguageModel streamText", () => {
  it.effect("tool calls are resolved with the caller's handlers, as the model's own streamText does", () =>
    Effect.gen(function*() {
      const direct = yield* observe(model, { resolve: true })
      const viaRein = yield* observe(rein, { resolve: true })
      expect(viaRein.parts.map((p) => p.type)).toEqual([
        "text-start",
        "text-delta",
        "text-delta",
        "text-end",
        "tool-call",
        "tool-result",
        "finish"
      ])
      expect(viaRein.parts).toEqual(direct.parts)
      expect(viaRein.parts.find((p) => p.type === "tool-result")).toMatchObject({ result: { celsius: 4 } })
      // The outer call's transformer sees what the direct call's does (the inner model's call, under Rein,
      // runs with the caller's transformer too, before it: as it did through `make`).
      expect(viaRein.seen.at(-1)).toEqual(direct.seen[0])
    }))

  it.effect("with resolution disabled, the tool call is handed over unresolved", () =>
    Effect.gen(function*() {
      const direct = yield* observe(model, { resolve: false })
      const viaRein = yield* observe(rein, { resolve: false })
      expect(viaRein.parts).toEqual(direct.parts)
      expect(viaRein.parts.some((p) => p.type === "tool-result")).toBe(false)
    }))
})
