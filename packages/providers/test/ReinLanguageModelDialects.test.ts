/**
 * The user's path, per vendor dialect: `LanguageModel.generateText` / `generateObject` / `streamText` with
 * `ReinLanguageModel.layer` swapped in, over the real `@effect/ai-*` models, against the loopback server
 * speaking that vendor's wire format. (Azure has no `@effect/ai` model: its adapter is `Azure.make`,
 * tested under `Rein.execute` in Dialects.test.ts.)
 */
import { LanguageModel, Tool, Toolkit } from "@effect/ai"
import { AnthropicClient, AnthropicLanguageModel } from "@effect/ai-anthropic"
import { GoogleClient, GoogleLanguageModel } from "@effect/ai-google"
import { OpenAiClient, OpenAiLanguageModel } from "@effect/ai-openai"
import { OpenRouterClient, OpenRouterLanguageModel } from "@effect/ai-openrouter"
import { HttpClient } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Catalog, Contract } from "@rein/core"
import type { Health } from "@rein/core"
import { ReinLanguageModel } from "@rein/providers"
import { FaultServer } from "@rein/providers/testing"
import { Chunk, Effect, Either, Fiber, Schema, Stream, TestClock } from "effect"
import type { Layer } from "effect"
import { at, awaitSleepAt, cases, KEY } from "./dialects.js"
import { withHttp } from "./fixtures.js"

type Transform = (client: HttpClient.HttpClient) => HttpClient.HttpClient

const capabilities = (maxOutputTokens: number) => ({
  contextWindow: 8_000,
  maxOutputTokens,
  streaming: true,
  tools: true,
  structuredOutput: true
})
/**
 * Two endpoints of one vendor: `a` (model-a) and `b` (model-b, a larger output limit), their model names
 * under the vendor's `prefix` (OpenRouter's are `vendor/model`).
 */
const catalogOf = (provider: string, prefix = "") =>
  Catalog.make({
    endpoints: [
      {
        id: "a",
        provider,
        model: `${prefix}model-a`,
        capabilities: capabilities(1_000),
        prices: { inputTokens: 1e-6, outputTokens: 2e-6 }
      },
      {
        id: "b",
        provider,
        model: `${prefix}model-b`,
        capabilities: capabilities(4_000),
        prices: { inputTokens: 1e-6, outputTokens: 2e-6 }
      }
    ]
  })
const contractOf = (overrides: Partial<Contract.ContractInput> = {}) =>
  Contract.make({
    deadline: "10 seconds",
    attemptTimeout: "2 seconds",
    candidates: ["a", "b"],
    retry: { perEndpoint: 0, base: "10 millis", max: "50 millis", jitter: 0 },
    ...overrides
  })

interface Setup {
  readonly contract: Contract.Contract
  readonly transformClient?: Transform | undefined
  readonly health?: false | undefined
}

interface Vendor {
  readonly name: string
  /** Before each model name (the scripts below say `model-a`, `model-b`). */
  readonly prefix: string
  /** The dialect whose faults (429, overload) Dialects.test.ts spells. */
  readonly dialect: string
  readonly layer: (
    server: FaultServer.FaultServer,
    setup: Setup
  ) => Layer.Layer<LanguageModel.LanguageModel, never, HttpClient.HttpClient>
  /** Where Rein's output bound is in the body. */
  readonly maxTokens: (body: unknown) => unknown
  /** The caller's own output cap on one call, the vendor's way (`withConfigOverride`, or its `Config`). */
  readonly cap: (tokens: number) => <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  readonly asksJson: (body: unknown) => boolean
  readonly toolNames: (body: unknown) => ReadonlyArray<string>
  readonly structured: FaultServer.Fault
  /** An overload sent inside a 200 stream, before any delta, in the vendor's in-stream error shape. */
  readonly inStreamOverload: FaultServer.Fault
}

const Forecast = Schema.Struct({ city: Schema.String, degrees: Schema.Number })
const forecastJson = JSON.stringify({ city: "Oslo", degrees: 21 })
const names = (tools: unknown, ...path: ReadonlyArray<string | number>): ReadonlyArray<string> =>
  Array.isArray(tools) ? tools.map((t) => String(at(t, ...path))) : []
const health = (setup: Setup): { readonly health?: Partial<Health.Config> | false } =>
  setup.health === false ? { health: false } : {}

const vendors: ReadonlyArray<Vendor> = [
  {
    name: "OpenAI Responses",
    prefix: "",
    dialect: "openai-responses",
    layer: (server, setup) =>
      ReinLanguageModel.layer({
        contract: setup.contract,
        catalog: catalogOf("openai"),
        models: { a: OpenAiLanguageModel.model, b: OpenAiLanguageModel.model },
        clients: OpenAiClient.layer({
          apiKey: KEY,
          apiUrl: server.baseUrl,
          ...(setup.transformClient === undefined ? {} : { transformClient: setup.transformClient })
        }),
        ...health(setup)
      }),
    maxTokens: (body) => at(body, "max_output_tokens"),
    cap: (tokens) => OpenAiLanguageModel.withConfigOverride({ max_output_tokens: tokens }),
    asksJson: (body) => at(body, "text", "format", "type") === "json_schema",
    toolNames: (body) => names(at(body, "tools"), "name"),
    structured: FaultServer.ok({ text: forecastJson }),
    inStreamOverload: FaultServer.streamError({ status: 503, code: "server_error", type: "server_error" })
  },
  {
    name: "Anthropic Messages",
    prefix: "",
    dialect: "anthropic",
    layer: (server, setup) =>
      ReinLanguageModel.layer({
        contract: setup.contract,
        catalog: catalogOf("anthropic"),
        models: { a: AnthropicLanguageModel.model, b: AnthropicLanguageModel.model },
        clients: AnthropicClient.layer({ apiKey: KEY, apiUrl: server.url, transformClient: setup.transformClient }),
        ...health(setup)
      }),
    maxTokens: (body) => at(body, "max_tokens"),
    cap: (tokens) => AnthropicLanguageModel.withConfigOverride({ max_tokens: tokens }),
    // Anthropic's JSON mode is a forced tool named after the object.
    asksJson: (body) => at(body, "tool_choice", "type") === "tool" && at(body, "tool_choice", "name") === "forecast",
    toolNames: (body) => names(at(body, "tools"), "name"),
    structured: FaultServer.ok({ text: "", toolCalls: [{ id: "toolu_1", name: "forecast", arguments: forecastJson }] }),
    inStreamOverload: FaultServer.streamError({ status: 529, type: "overloaded_error" })
  },
  {
    name: "Gemini",
    prefix: "",
    dialect: "gemini",
    layer: (server, setup) =>
      ReinLanguageModel.layer({
        contract: setup.contract,
        catalog: catalogOf("google"),
        models: { a: GoogleLanguageModel.model, b: GoogleLanguageModel.model },
        clients: GoogleClient.layer({
          apiKey: KEY,
          apiUrl: server.url,
          transformClient: setup.transformClient
        }),
        ...health(setup)
      }),
    maxTokens: (body) => at(body, "generationConfig", "maxOutputTokens"),
    cap: (tokens) =>
      Effect.provideService(GoogleLanguageModel.Config, {
        toolConfig: {},
        generationConfig: { maxOutputTokens: tokens }
      }),
    asksJson: (body) => at(body, "generationConfig", "responseMimeType") === "application/json",
    toolNames: (body) =>
      names(at(body, "tools", "functionDeclarations") ?? at(body, "tools", 0, "functionDeclarations"), "name"),
    structured: FaultServer.ok({ text: forecastJson }),
    inStreamOverload: FaultServer.streamError({ status: 503, code: "UNAVAILABLE" })
  },
  {
    name: "OpenRouter (@effect/ai-openrouter)",
    // OpenRouter's answers name the model `vendor/model` (its client refuses anything else).
    prefix: "acme/",
    dialect: "openrouter",
    layer: (server, setup) =>
      ReinLanguageModel.layer({
        contract: setup.contract,
        catalog: catalogOf("openrouter", "acme/"),
        models: { a: (m) => OpenRouterLanguageModel.model(m), b: (m) => OpenRouterLanguageModel.model(m) },
        clients: OpenRouterClient.layer({
          apiKey: KEY,
          apiUrl: `${server.url}/api/v1`,
          transformClient: setup.transformClient
        }),
        ...health(setup)
      }),
    maxTokens: (body) => at(body, "max_tokens"),
    cap: (tokens) => OpenRouterLanguageModel.withConfigOverride({ max_tokens: tokens }),
    asksJson: (body) => at(body, "response_format", "type") === "json_schema",
    toolNames: (body) => names(at(body, "tools"), "function", "name"),
    structured: FaultServer.ok({ text: forecastJson }),
    inStreamOverload: FaultServer.streamError({ status: 503 })
  }
]

const faultsOf = (vendor: Vendor) => {
  const c = cases.find((x) => x.dialect === vendor.dialect)
  if (c === undefined) throw new Error(`no dialect case ${vendor.dialect}`)
  return c
}

/** The scripts as the vendor's server sees them: keyed by its model names. */
const scriptsOf = (
  vendor: Vendor,
  scripts: Readonly<Record<string, ReadonlyArray<FaultServer.Fault>>>
): Record<string, ReadonlyArray<FaultServer.Fault>> =>
  Object.fromEntries(Object.entries(scripts).map(([model, faults]) => [vendor.prefix + model, faults]))

/** The requests a server saw, their models without the vendor's prefix. */
const seenBy = (vendor: Vendor, server: FaultServer.FaultServer) =>
  Effect.map(
    server.requests,
    (seen) => seen.map((r) => ({ ...r, model: r.model?.slice(vendor.prefix.length) ?? null }))
  )

const run = <A, E>(
  vendor: Vendor,
  scripts: Readonly<Record<string, ReadonlyArray<FaultServer.Fault>>>,
  setup: Partial<Setup>,
  f: Effect.Effect<A, E, LanguageModel.LanguageModel>
) =>
  Effect.scoped(Effect.gen(function*() {
    const server = yield* FaultServer.make({ scripts: scriptsOf(vendor, scripts) })
    const value = yield* f.pipe(
      Effect.provide(vendor.layer(server, { contract: contractOf(), ...setup }))
    )
    return { value, seen: yield* seenBy(vendor, server) }
  })).pipe(withHttp)

for (const vendor of vendors) {
  describe(`ReinLanguageModel over ${vendor.name} (loopback dialect)`, () => {
    it.live("generateText answers with the vendor's usage; the catalog's model and Rein's bound are sent", () =>
      Effect.gen(function*() {
        const { seen, value } = yield* run(
          vendor,
          {
            "model-a": [FaultServer.ok({ text: "dialect ok", usage: { inputTokens: 9, outputTokens: 3 } })]
          },
          {},
          LanguageModel.generateText({ prompt: "hello" })
        )
        expect([value.text, value.usage.inputTokens, value.usage.outputTokens]).toEqual(["dialect ok", 9, 3])
        expect([seen.length, seen[0]!.dialect, seen[0]!.model]).toEqual([1, vendor.dialect, "model-a"])
        expect(vendor.maxTokens(seen[0]!.body)).toBe(1_000)
      }))

    it.live("the caller's own output cap is sent when smaller than Rein's bound (generateText and streamText)", () =>
      Effect.gen(function*() {
        const { seen } = yield* run(
          vendor,
          { "model-a": [FaultServer.ok({ text: "short" }), FaultServer.ok({ deltas: ["long"] })] },
          {},
          Effect.zip(
            LanguageModel.generateText({ prompt: "hello" }).pipe(vendor.cap(50)),
            Stream.runDrain(LanguageModel.streamText({ prompt: "hello" })).pipe(vendor.cap(5_000))
          )
        )
        // As without Rein, the call capped at 50 asks for 50 (it was sent Rein's 1000); 5000 is bounded to 1000.
        expect(seen.map((r) => vendor.maxTokens(r.body))).toEqual([50, 1_000])
      }))

    it.live("an answer cut at the caller's own cap is truncated at once: no fallback to a larger endpoint", () =>
      Effect.gen(function*() {
        const { seen, value } = yield* run(
          vendor,
          { "model-a": [FaultServer.ok({ text: "cut at fif", finish: "length" })] },
          {},
          LanguageModel.generateText({ prompt: "hello" }).pipe(
            vendor.cap(50),
            ReinLanguageModel.withOutcomes,
            Effect.either
          )
        )
        // b's larger limit does not help: the cap binds there too (it was asked, and cut at 50 again).
        expect(Either.isLeft(value) && value.left).toMatchObject({ lastFailure: { kind: "truncated" } })
        expect(seen.map((r) => [r.model, vendor.maxTokens(r.body)])).toEqual([["model-a", 50]])
      }))

    it.live("a tools round trip: the tools reach the server, the caller's handler runs exactly once", () =>
      Effect.gen(function*() {
        let handled = 0
        const Weather = Tool.make("weather", {
          description: "The weather in a city",
          parameters: { city: Schema.String },
          success: Schema.String
        })
        const toolkit = Toolkit.make(Weather)
        const handlers = toolkit.toLayer({
          weather: ({ city }) => Effect.sync(() => `sunny in ${city} (${++handled})`)
        })
        const { seen, value } = yield* run(
          vendor,
          {
            "model-a": [FaultServer.ok({
              text: "",
              toolCalls: [{ id: "call_1", name: "weather", arguments: JSON.stringify({ city: "Oslo" }) }]
            })]
          },
          {},
          LanguageModel.generateText({ prompt: "weather?", toolkit }).pipe(Effect.provide(handlers))
        )
        expect(handled).toBe(1)
        expect(value.toolCalls.map((c) => [c.name, c.params])).toEqual([["weather", { city: "Oslo" }]])
        expect(value.toolResults.map((r) => r.result)).toEqual(["sunny in Oslo (1)"])
        expect(seen.length).toBe(1)
        expect(vendor.toolNames(seen[0]!.body)).toEqual(["weather"])
      }))

    it.live("generateObject sends the JSON response format and decodes the answer", () =>
      Effect.gen(function*() {
        const { seen, value } = yield* run(
          vendor,
          { "model-a": [vendor.structured] },
          {},
          LanguageModel.generateObject({ prompt: "forecast?", schema: Forecast, objectName: "forecast" })
        )
        expect(value.value).toEqual({ city: "Oslo", degrees: 21 })
        expect(vendor.asksJson(seen[0]!.body)).toBe(true)
      }))

    it.live("finish length with truncation fail: falls back to the larger output limit", () =>
      Effect.gen(function*() {
        const { seen, value } = yield* run(
          vendor,
          {
            "model-a": [FaultServer.ok({ text: "cut at the lim", finish: "length" })],
            "model-b": [FaultServer.ok({ text: "whole answer" })]
          },
          {},
          LanguageModel.generateText({ prompt: "hello" })
        )
        expect(value.text).toBe("whole answer")
        expect(seen.map((r) => r.model)).toEqual(["model-a", "model-b"])
      }))

    it.live("finish length with truncation fail and no larger candidate: fails truncated", () =>
      Effect.gen(function*() {
        const { value } = yield* run(
          vendor,
          {
            "model-a": [FaultServer.ok({ text: "cut at the lim", finish: "length" })]
          },
          { contract: contractOf({ candidates: ["a"] }) },
          LanguageModel.generateText({ prompt: "hello" }).pipe(
            ReinLanguageModel.withOutcomes,
            Effect.either
          )
        )
        expect(Either.isLeft(value) && value.left).toMatchObject({ lastFailure: { kind: "truncated" } })
      }))

    it.live("finish length with truncation accept: an annotated success", () =>
      Effect.gen(function*() {
        const { seen, value } = yield* run(
          vendor,
          {
            "model-a": [FaultServer.ok({ text: "cut at the lim", finish: "length" })]
          },
          { contract: contractOf({ truncation: "accept" }) },
          LanguageModel.generateText({ prompt: "hello" })
        )
        expect([value.text, value.finishReason]).toEqual(["cut at the lim", "length"])
        expect(seen.length).toBe(1)
      }))

    it.effect("a 429 asking for 3 s is waited exactly that long on the clock, then the retry succeeds", () =>
      Effect.scoped(Effect.gen(function*() {
        const server = yield* FaultServer.make({
          scripts: scriptsOf(vendor, {
            "model-a": [faultsOf(vendor).rateLimited(3), FaultServer.ok({ text: "after the wait" })]
          })
        })
        const contract = contractOf({
          deadline: "60 seconds",
          attemptTimeout: "30 seconds",
          candidates: ["a"],
          retry: { perEndpoint: 2, base: "10 millis", max: "50 millis", jitter: 0 }
        })
        const fiber = yield* Effect.fork(
          LanguageModel.generateText({ prompt: "hello" }).pipe(
            Effect.provide(vendor.layer(server, { contract, health: false }))
          )
        )
        yield* awaitSleepAt(3_000)
        yield* TestClock.adjust("2999 millis")
        expect((yield* server.requests).length).toBe(1)
        yield* TestClock.adjust("1 millis")
        expect((yield* Fiber.join(fiber)).text).toBe("after the wait")
        expect((yield* server.requests).length).toBe(2)
      })).pipe(withHttp))

    it.live("overload falls back to the next endpoint", () =>
      Effect.gen(function*() {
        const { seen, value } = yield* run(
          vendor,
          {
            "model-a": [faultsOf(vendor).overloaded],
            "model-b": [FaultServer.ok({ text: "from b" })]
          },
          {},
          LanguageModel.generateText({ prompt: "hello" })
        )
        expect(value.text).toBe("from b")
        expect(seen.map((r) => r.model)).toEqual(["model-a", "model-b"])
      }))

    it.live(
      "streamText: a cut before the first delta falls back; a cut after it is terminal, nothing spliced",
      () =>
        Effect.scoped(Effect.gen(function*() {
          const server = yield* FaultServer.make({
            scripts: scriptsOf(vendor, {
              "model-a": [
                { _tag: "CutStream", deltas: [], clean: false },
                { _tag: "CutStream", deltas: ["partial "], clean: false }
              ],
              "model-b": [FaultServer.ok({ deltas: ["from ", "b"] }), FaultServer.ok({ deltas: ["never"] })]
            })
          })
          const layer = vendor.layer(server, { contract: contractOf() })
          const deltas = (parts: Chunk.Chunk<{ readonly type: string }>) =>
            Chunk.toReadonlyArray(parts).flatMap((p) =>
              "delta" in p && p.type === "text-delta" ? [String(p.delta)] : []
            )
          const before = yield* LanguageModel.streamText({ prompt: "hello" }).pipe(
            Stream.runCollect,
            Effect.provide(layer)
          )
          expect(deltas(before).join("")).toBe("from b")
          const seenAfter: Array<string> = []
          const after = yield* LanguageModel.streamText({ prompt: "hello" }).pipe(
            Stream.tap((p) => Effect.sync(() => p.type === "text-delta" && seenAfter.push(p.delta))),
            Stream.runCollect,
            ReinLanguageModel.withOutcomes,
            Effect.either,
            Effect.provide(layer)
          )
          expect(Either.isLeft(after)).toBe(true)
          expect(seenAfter).toEqual(["partial "])
          expect((yield* seenBy(vendor, server)).filter((r) => r.model === "model-b").length).toBe(1)
        })).pipe(withHttp)
    )

    it.live("streamText: an overload sent inside the stream before the first delta falls back", () =>
      Effect.gen(function*() {
        const { seen, value } = yield* run(
          vendor,
          {
            "model-a": [vendor.inStreamOverload, FaultServer.ok({ deltas: ["never"] })],
            "model-b": [FaultServer.ok({ deltas: ["from ", "b"] })]
          },
          {},
          LanguageModel.streamText({ prompt: "hello" }).pipe(
            Stream.runCollect,
            ReinLanguageModel.withOutcomes,
            Effect.either
          )
        )
        const deltas = Either.isRight(value)
          ? Chunk.toReadonlyArray(value.right).flatMap((p) => p.type === "text-delta" ? [p.delta] : [])
          : value.left
        expect(deltas).toEqual(["from ", "b"])
        expect(seen.map((r) => r.model)).toEqual(["model-a", "model-b"])
      }))

    it.live("a retrying client is refused before any request: zero HTTP calls reach the server", () =>
      Effect.gen(function*() {
        const { seen, value } = yield* run(
          vendor,
          {
            "model-a": [faultsOf(vendor).serverError, FaultServer.ok()]
          },
          { transformClient: HttpClient.retryTransient({ times: 2 }) },
          LanguageModel.generateText({ prompt: "hello" }).pipe(
            ReinLanguageModel.withOutcomes,
            Effect.either
          )
        )
        expect(Either.isLeft(value) && value.left).toMatchObject({ _tag: "Refused", refusal: "nested_retries" })
        expect(seen.length).toBe(0)
      }))
  })
}
