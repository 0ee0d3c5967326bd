/**
 * A team's programs run twice against the loopback server, once on the bare `@effect/ai` model and once
 * under `ReinLanguageModel` (one endpoint, the same vendor): the requests the server sees (but the output
 * bound Rein adds) and what the program gets back must be the same. Multi-message prompts, toolkits with
 * each tool choice, handlers failing in either failure mode, `generateObject`, `streamText` with tool calls,
 * a `Chat` across turns exported and restored, the caller's own output cap.
 */
import { Chat, LanguageModel, Tool, Toolkit } from "@effect/ai"
import { AnthropicClient, AnthropicLanguageModel } from "@effect/ai-anthropic"
import { OpenAiClient, OpenAiLanguageModel } from "@effect/ai-openai"
import type { HttpClient } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Catalog, Contract } from "@rein/core"
import { ReinLanguageModel } from "@rein/providers"
import { FaultServer } from "@rein/providers/testing"
import { Chunk, Effect, Layer, Redacted, Schema, Stream } from "effect"
import { withHttp } from "./fixtures.js"

const KEY = Redacted.make("sk-user-secret")
const caps = { contextWindow: 8_000, maxOutputTokens: 500, streaming: true, tools: true, structuredOutput: true }
const catalog = Catalog.make({
  endpoints: [
    {
      id: "oa",
      provider: "openai",
      model: "gpt-a",
      capabilities: caps,
      prices: { inputTokens: 1e-6, outputTokens: 2e-6 }
    },
    {
      id: "an",
      provider: "anthropic",
      model: "claude-a",
      capabilities: caps,
      prices: { inputTokens: 1e-6, outputTokens: 2e-6 }
    }
  ]
})
const Weather = Tool.make("weather", {
  description: "The weather in a city",
  parameters: { city: Schema.String },
  success: Schema.String,
  failure: Schema.Struct({ reason: Schema.String }),
  failureMode: "return"
})
const Time = Tool.make("time", { parameters: { zone: Schema.String }, success: Schema.Number })
const toolkit = Toolkit.make(Weather, Time)
const Strict = Tool.make("strict", {
  parameters: { n: Schema.Number },
  success: Schema.Number,
  failure: Schema.Struct({ _tag: Schema.Literal("Nope") })
})
const strictKit = Toolkit.make(Strict)
const strictHandlers = strictKit.toLayer({
  strict: ({ n }) => n > 1 ? Effect.fail({ _tag: "Nope" as const }) : Effect.succeed(n)
})
const handlers = toolkit.toLayer({
  weather: ({ city }) =>
    city === "Nowhere" ? Effect.fail({ reason: "no such city" }) : Effect.succeed(`sunny in ${city}`),
  time: () => Effect.succeed(12)
})
const call = (id: string, name: string, args: unknown) => ({ id, name, arguments: JSON.stringify(args) })

type Program = {
  readonly name: string
  readonly faults: ReadonlyArray<FaultServer.Fault>
  readonly run: Effect.Effect<unknown, unknown, LanguageModel.LanguageModel>
  /** Whether the output bound sent is compared too (only where the caller sets one). */
  readonly bound?: boolean
}
const toolCalls = FaultServer.ok({
  deltas: ["Checking"],
  toolCalls: [
    call("call_1", "weather", { city: "Oslo" }),
    call("call_2", "weather", { city: "Nowhere" }),
    call("call_3", "time", { zone: "UTC" })
  ]
})
const weatherCalls = FaultServer.ok({
  text: "",
  toolCalls: [call("call_1", "weather", { city: "Oslo" }), call("call_2", "weather", { city: "Nowhere" })]
})
/** A call to `time` (in the toolkit) under `oneOf: ["weather"]`, and calls the toolkit cannot take. */
const outsideOneOf = FaultServer.ok({
  deltas: ["Checking"],
  toolCalls: [call("call_1", "weather", { city: "Oslo" }), call("call_2", "time", { zone: "UTC" })]
})
const unknownTool = FaultServer.ok({
  deltas: ["Checking"],
  toolCalls: [call("call_1", "weather", { city: "Oslo" }), call("call_2", "nosuch", { x: 1 })]
})
const badParams = FaultServer.ok({
  deltas: ["Checking"],
  toolCalls: [call("call_1", "weather", { city: "Oslo" }), call("call_2", "weather", { city: 3 })]
})
const generated = (options: Omit<LanguageModel.GenerateTextOptions<typeof toolkit.tools>, "prompt" | "toolkit">) =>
  Effect.map(LanguageModel.generateText({ prompt: "weather?", toolkit, ...options }), (r) => r.content).pipe(
    Effect.provide(handlers)
  )
const streamed = (options: Omit<LanguageModel.GenerateTextOptions<typeof toolkit.tools>, "prompt" | "toolkit">) =>
  Effect.map(Stream.runCollect(LanguageModel.streamText({ prompt: "weather?", toolkit, ...options })), Chunk.toArray)
    .pipe(Effect.provide(handlers))
const toolCallChecks: ReadonlyArray<Program> = [
  ...([["generateText", generated], ["streamText", streamed]] as const).flatMap(([method, run]) => [
    {
      name: `${method}: a call to a toolkit tool outside toolChoice.oneOf`,
      faults: [outsideOneOf],
      run: run({ toolChoice: { oneOf: ["weather"] } })
    },
    {
      name: `${method}: a call outside toolChoice.oneOf, resolution off`,
      faults: [outsideOneOf],
      run: run({ toolChoice: { oneOf: ["weather"] }, disableToolCallResolution: true })
    },
    {
      name: `${method}: a call to a tool not in the toolkit`,
      faults: [unknownTool],
      run: run({})
    },
    {
      name: `${method}: a call to a tool not in the toolkit, resolution off`,
      faults: [unknownTool],
      run: run({ disableToolCallResolution: true })
    },
    {
      name: `${method}: a call whose parameters do not decode`,
      faults: [badParams],
      run: run({})
    },
    {
      name: `${method}: a call whose parameters do not decode, resolution off`,
      faults: [badParams],
      run: run({ disableToolCallResolution: true })
    }
  ])
]
const programsOf = (structured: FaultServer.Fault): ReadonlyArray<Program> => [
  {
    name: "multi-message prompt",
    faults: [FaultServer.ok({ text: "fine" })],
    run: Effect.map(
      LanguageModel.generateText({
        prompt: [
          { role: "system", content: "Be terse." },
          { role: "user", content: "hi" },
          { role: "assistant", content: "hello" },
          { role: "user", content: [{ type: "text", text: "how are you" }] }
        ]
      }),
      (r) => r.content
    )
  },
  ...(["auto", "required", "none", { tool: "time" }, { oneOf: ["weather"], mode: "required" }] as const).map((
    toolChoice
  ) => ({
    name: `toolkit, toolChoice ${JSON.stringify(toolChoice)}`,
    faults: [typeof toolChoice === "object" ? weatherCalls : toolCalls],
    run: Effect.map(
      LanguageModel.generateText({ prompt: "weather?", toolkit, toolChoice: toolChoice as never }),
      (r) => r.content
    ).pipe(Effect.provide(handlers))
  })),
  ...toolCallChecks,
  {
    name: "a handler failing in error mode (generateText)",
    faults: [FaultServer.ok({ text: "", toolCalls: [call("c1", "strict", { n: 1 }), call("c2", "strict", { n: 2 })] })],
    run: Effect.map(LanguageModel.generateText({ prompt: "n?", toolkit: strictKit }), (r) => r.content).pipe(
      Effect.provide(strictHandlers)
    )
  },
  {
    name: "a handler failing in error mode (streamText)",
    faults: [FaultServer.ok({ text: "", toolCalls: [call("c1", "strict", { n: 1 }), call("c2", "strict", { n: 2 })] })],
    run: Effect.map(Stream.runCollect(LanguageModel.streamText({ prompt: "n?", toolkit: strictKit })), Chunk.toArray)
      .pipe(Effect.provide(strictHandlers))
  },
  {
    name: "an empty toolkit",
    faults: [FaultServer.ok({ text: "plain" })],
    run: Effect.map(LanguageModel.generateText({ prompt: "n?", toolkit: Toolkit.empty }), (r) => r.content)
  },
  {
    name: "the caller's own output cap (withConfigOverride)",
    bound: true,
    faults: [FaultServer.ok({ text: "short" }), FaultServer.ok({ deltas: ["short"] })],
    run: Effect.zip(
      LanguageModel.generateText({ prompt: "briefly" }),
      Stream.runCollect(LanguageModel.streamText({ prompt: "briefly" }))
    ).pipe(
      OpenAiLanguageModel.withConfigOverride({ max_output_tokens: 50 }),
      AnthropicLanguageModel.withConfigOverride({ max_tokens: 50 })
    )
  },
  {
    name: "disableToolCallResolution",
    faults: [toolCalls],
    run: Effect.map(
      LanguageModel.generateText({ prompt: "weather?", toolkit, disableToolCallResolution: true }),
      (r) => r.content
    ).pipe(Effect.provide(handlers))
  },
  {
    name: "generateObject",
    faults: [structured],
    run: Effect.map(
      LanguageModel.generateObject({
        prompt: "forecast",
        objectName: "forecast",
        schema: Schema.Struct({ city: Schema.String, degrees: Schema.Number })
      }),
      (r) => [r.value, r.content]
    )
  },
  {
    name: "generateObject with a toolkit",
    faults: [structured],
    run: Effect.map(
      LanguageModel.generateObject({
        prompt: "forecast",
        toolkit,
        objectName: "forecast",
        schema: Schema.Struct({ city: Schema.String, degrees: Schema.Number })
      }),
      (r) => [r.value, r.content]
    ).pipe(Effect.provide(handlers))
  },
  {
    name: "streamText with tools",
    faults: [toolCalls],
    run: Effect.map(Stream.runCollect(LanguageModel.streamText({ prompt: "weather?", toolkit })), Chunk.toArray).pipe(
      Effect.provide(handlers)
    )
  },
  {
    name: "streamText plain",
    faults: [FaultServer.ok({ deltas: ["a", "b", "c"] })],
    run: Effect.map(Stream.runCollect(LanguageModel.streamText({ prompt: "letters" })), Chunk.toArray)
  },
  {
    name: "Chat: tool turn, answer turn, export, streamed turn",
    faults: [toolCalls, FaultServer.ok({ text: "Oslo is sunny" }), FaultServer.ok({ deltas: ["and", " more"] })],
    run: Effect.gen(function*() {
      const chat = yield* Chat.fromPrompt([{ role: "system", content: "Be terse." }])
      yield* chat.generateText({ prompt: "weather?", toolkit })
      yield* chat.generateText({ prompt: [], toolkit })
      yield* Stream.runDrain(chat.streamText({ prompt: "more?" }))
      const json = yield* chat.exportJson
      const again = yield* Chat.fromJson(json)
      yield* Stream.runDrain(again.streamText({ prompt: "again?" }))
      return [json, yield* again.exportJson]
    }).pipe(Effect.provide(handlers))
  }
]

interface Vendor {
  readonly name: string
  readonly model: string
  readonly structured: FaultServer.Fault
  readonly bare: (
    server: FaultServer.FaultServer
  ) => Layer.Layer<LanguageModel.LanguageModel, never, HttpClient.HttpClient>
  readonly rein: (
    server: FaultServer.FaultServer
  ) => Layer.Layer<LanguageModel.LanguageModel, never, HttpClient.HttpClient>
}
const vendors: ReadonlyArray<Vendor> = [
  {
    name: "openai",
    model: "gpt-a",
    structured: FaultServer.ok({ text: JSON.stringify({ city: "Oslo", degrees: 3 }) }),
    bare: (server) =>
      OpenAiLanguageModel.model("gpt-a").pipe(
        Layer.provide(OpenAiClient.layer({ apiKey: KEY, apiUrl: server.baseUrl }))
      ),
    rein: (server) =>
      ReinLanguageModel.layer({
        contract: Contract.make({ deadline: "10 seconds", candidates: ["oa"], retry: { perEndpoint: 0 } }),
        catalog,
        models: { oa: OpenAiLanguageModel.model },
        clients: OpenAiClient.layer({ apiKey: KEY, apiUrl: server.baseUrl }),
        inputTokens: () => 100
      })
  },
  {
    name: "anthropic",
    model: "claude-a",
    structured: FaultServer.ok({ text: "", toolCalls: [call("toolu_1", "forecast", { city: "Oslo", degrees: 3 })] }),
    bare: (server) =>
      AnthropicLanguageModel.model("claude-a").pipe(
        Layer.provide(AnthropicClient.layer({ apiKey: KEY, apiUrl: server.url }))
      ),
    rein: (server) =>
      ReinLanguageModel.layer({
        contract: Contract.make({ deadline: "10 seconds", candidates: ["an"], retry: { perEndpoint: 0 } }),
        catalog,
        models: { an: AnthropicLanguageModel.model },
        clients: AnthropicClient.layer({ apiKey: KEY, apiUrl: server.url }),
        inputTokens: () => 100
      })
  }
]

const BOUNDS = ["max_output_tokens", "max_tokens"]
/** A body without its output bound (Rein sends its own; Anthropic's model its default 4096). */
const withoutBound = (body: unknown) =>
  Object.fromEntries(Object.entries(body as Record<string, unknown>).filter(([k]) => !BOUNDS.includes(k)))
const norm = (v: unknown) => JSON.parse(JSON.stringify(v, (k, x) => k === "timestamp" ? undefined : x))

describe("the same program, bare and under Rein", () => {
  for (const vendor of vendors) {
    for (const program of programsOf(vendor.structured)) {
      it.live(`${vendor.name}: ${program.name}`, () =>
        Effect.scoped(Effect.gen(function*() {
          const runOn = (
            layer: (
              s: FaultServer.FaultServer
            ) => Layer.Layer<LanguageModel.LanguageModel, never, HttpClient.HttpClient>
          ) =>
            Effect.scoped(Effect.gen(function*() {
              const server = yield* FaultServer.make()
              yield* server.script(vendor.model, ...program.faults)
              const result = yield* program.run.pipe(Effect.provide(layer(server)), Effect.either)
              const seen = yield* server.requests
              return { result: norm(result), bodies: seen.map((s) => s.body) }
            }))
          const bare = yield* runOn(vendor.bare)
          const rein = yield* runOn(vendor.rein)
          const bodies = program.bound === true
            ? (b: typeof bare) => b.bodies
            : (b: typeof bare) => b.bodies.map(withoutBound)
          expect(bodies(rein)).toEqual(bodies(bare))
          expect(rein.result).toEqual(bare.result)
        })).pipe(withHttp))
    }
  }
})
