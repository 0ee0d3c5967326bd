import { AiError, LanguageModel, Response, Telemetry, Tool, Toolkit } from "@effect/ai"
import { describe, expect, it } from "@effect/vitest"
import { Catalog, Contract } from "@rein/core"
import { ReinLanguageModel } from "@rein/providers"
import { Arbitrary, Cause, Effect, Either, Exit, FastCheck, Layer, Option, Schema, Stream } from "effect"
import { asIs } from "../src/internal/languageModel.js"

const GetWeather = Tool.make("GetWeather", {
  parameters: { city: Schema.NumberFromString },
  success: Schema.Struct({ celsius: Schema.Number }),
  failure: Schema.Struct({ reason: Schema.String })
})
const Weather = Toolkit.make(GetWeather)

/**
 * The property behind handing decoded parts over: for every part `asIs` lets through, the outer
 * `make`'s decode gives back an equal part. Generated from the encoded schema (every part type, tools
 * included), decoded once as the inner model does.
 */
const roundTrips = <A, I>(schema: Schema.Schema<A, I>) => {
  const decode = Schema.decodeUnknownEither(schema)
  return FastCheck.property(Arbitrary.make(Schema.encodedSchema(schema)), (encoded) => {
    const inner = decode(encoded)
    if (Either.isLeft(inner) || !asIs(inner.right as { readonly type: string })) return
    const outer = decode(inner.right)
    expect(Either.isRight(outer)).toBe(true)
    expect(Either.getOrThrow(outer)).toEqual(inner.right)
  })
}

describe("ReinLanguageModel: parts handed over without a Schema round trip", () => {
  it("a decoded part let through as is decodes to an equal part (every part type, generated)", () => {
    FastCheck.assert(roundTrips(Response.Part(Weather)), { numRuns: 400, seed: 16 })
    FastCheck.assert(roundTrips(Response.StreamPart(Weather)), { numRuns: 400, seed: 16 })
  })

  it("the parts with transformations are encoded: decoding them as they are would fail", () => {
    const decode = Schema.decodeUnknownEither(Response.Part(Weather))
    const parts: Array<Response.PartEncoded> = [
      { type: "response-metadata", id: "r1", modelId: "m", timestamp: "2025-01-01T00:00:00.000Z" },
      { type: "tool-call", id: "c1", name: "GetWeather", params: { city: "12" } },
      { type: "source", sourceType: "url", id: "s1", url: "https://example.com/", title: "t" }
    ]
    for (const part of parts) {
      const decoded = Either.getOrThrow(decode(part))
      expect(asIs(decoded)).toBe(false)
      const again = decode(decoded)
      expect(Either.isLeft(again) || JSON.stringify(again.right) !== JSON.stringify(decoded)).toBe(true)
    }
  })

  const answer: Array<Response.PartEncoded> = [
    { type: "response-metadata", id: "r1", modelId: "model-a", timestamp: "2025-01-01T00:00:00.000Z" },
    { type: "reasoning", text: "thinking", metadata: { memory: { step: 1 } } },
    { type: "text", text: "ok", metadata: { memory: { id: "t1" } } },
    {
      type: "finish",
      reason: "stop",
      usage: { inputTokens: 10, outputTokens: 2, totalTokens: 12, reasoningTokens: 1, cachedInputTokens: 4 }
    }
  ]
  const memory = Layer.effect(
    LanguageModel.LanguageModel,
    LanguageModel.make({ generateText: () => Effect.succeed(answer), streamText: () => Stream.empty })
  )
  const endpoint = (id: string) => ({
    id,
    provider: "memory",
    model: id,
    capabilities: { contextWindow: 8_000, maxOutputTokens: 1_000 },
    prices: { inputTokens: 1e-6, outputTokens: 2e-6 }
  })
  const rein = ReinLanguageModel.layer({
    contract: Contract.make({ deadline: "10 seconds", candidates: ["a"] }),
    catalog: Catalog.make({ endpoints: [endpoint("a")] }),
    models: { a: memory },
    inputTokens: () => 10
  })

  /** `generateText` without a toolkit, with what the span transformer saw. */
  const observed = (model: Layer.Layer<LanguageModel.LanguageModel>) => {
    const seen: Array<Telemetry.SpanTransformer extends (o: infer O) => void ? O : never> = []
    return LanguageModel.generateText({ prompt: "hello", toolChoice: "auto", concurrency: 2 }).pipe(
      Effect.provideService(Telemetry.CurrentSpanTransformer, (options) => void seen.push(options)),
      Effect.withSpan("caller"),
      Effect.provide(model),
      Effect.map((response) => ({ response, seen }))
    )
  }

  it.effect("generateText without a toolkit answers as LanguageModel.make does: content, span and transformer", () =>
    Effect.gen(function*() {
      const bare = yield* observed(memory)
      const under = yield* observed(rein)
      expect(under.response.content).toEqual(bare.response.content)
      expect(under.response.text).toBe("ok")
      expect(under.response.usage).toEqual(bare.response.usage)
      expect(under.response.finishReason).toBe("stop")
      // The outer call's span transformer runs last, with make's options and the same content; its span
      // is make's, a child of the caller's.
      const [b, u] = [bare.seen.at(-1)!, under.seen.at(-1)!]
      expect(u.response).toEqual(b.response)
      expect([u.tools, u.toolChoice, u.responseFormat]).toEqual([b.tools, b.toolChoice, b.responseFormat])
      expect(u.prompt).toEqual(b.prompt)
      for (const o of [b, u]) {
        expect(o.span.name).toBe("LanguageModel.generateText")
        expect(o.span.attributes.get("concurrency")).toBe(2)
        expect(o.span.attributes.get("toolChoice")).toBe("auto")
        expect(Option.map(o.span.parent, (p) => p._tag === "Span" ? p.name : p.spanId)).toEqual(Option.some("caller"))
      }
    }))

  // A toolkit: one tool whose failures are errors, one whose failures are returned. `City` counts its
  // decodes, to pin that the parameters are decoded as often as under `make` (not once more).
  let decodes = 0
  const City = Schema.transform(Schema.String, Schema.Number, {
    strict: true,
    decode: (s) => {
      decodes++
      return Number(s)
    },
    encode: (n) => String(n)
  })
  const Forecast = Tool.make("Forecast", {
    parameters: { city: City },
    success: Schema.Struct({ celsius: Schema.Number }),
    failure: Schema.Struct({ reason: Schema.String })
  })
  const Lookup = Tool.make("Lookup", {
    parameters: { q: Schema.String },
    success: Schema.String,
    failure: Schema.String,
    failureMode: "return"
  })
  const Tools = Toolkit.make(Forecast, Lookup)
  let handled: Array<string> = []
  const handlers = Tools.toLayer({
    Forecast: ({ city }) => {
      handled.push(`Forecast ${city}`)
      return city === 13 ? Effect.fail({ reason: "storm" }) : Effect.succeed({ celsius: city * 2 })
    },
    Lookup: ({ q }) => {
      handled.push(`Lookup ${q}`)
      return q === "missing" ? Effect.fail("not found") : Effect.succeed(q.toUpperCase())
    }
  })
  const callsOf = (city: string): Array<Response.PartEncoded> => [
    { type: "response-metadata", id: "r2", modelId: "model-a", timestamp: "2025-01-01T00:00:00.000Z" },
    { type: "text", text: "calling" },
    { type: "tool-call", id: "c1", name: "Forecast", params: { city } },
    { type: "tool-call", id: "c2", name: "Lookup", params: { q: "missing" }, providerName: "memory" },
    { type: "tool-call", id: "c3", name: "Lookup", params: { q: "x" }, providerExecuted: true },
    { type: "tool-result", id: "c3", name: "Lookup", result: "X", isFailure: false, providerExecuted: true },
    { type: "tool-call", id: "c4", name: "Lookup", params: { q: "y" } },
    { type: "finish", reason: "tool-calls", usage: { inputTokens: 10, outputTokens: 5, totalTokens: 15 } }
  ]
  const memoryOf = (parts: Array<Response.PartEncoded>) =>
    Layer.effect(
      LanguageModel.LanguageModel,
      LanguageModel.make({ generateText: () => Effect.succeed(parts), streamText: () => Stream.empty })
    )
  const reinOf = (model: Layer.Layer<LanguageModel.LanguageModel>) =>
    ReinLanguageModel.layer({
      contract: Contract.make({ deadline: "10 seconds", candidates: ["a"] }),
      catalog: Catalog.make({
        endpoints: [{ ...endpoint("a"), capabilities: { ...endpoint("a").capabilities, tools: true } }]
      }),
      models: { a: model },
      inputTokens: () => 10
    })

  /** `generateText` with the toolkit (as an Effect, or resolved), what it answered and what ran. */
  const withTools = (
    model: Layer.Layer<LanguageModel.LanguageModel>,
    options: { readonly resolved?: boolean; readonly toolChoice?: LanguageModel.ToolChoice<"Forecast" | "Lookup"> } = {}
  ) =>
    Effect.gen(function*() {
      const seen: Array<Telemetry.SpanTransformer extends (o: infer O) => void ? O : never> = []
      handled = []
      decodes = 0
      const toolkit = options.resolved === true ? yield* Tools : Tools
      const exit = yield* LanguageModel.generateText({
        prompt: "hello",
        toolkit,
        toolChoice: options.toolChoice ?? "auto",
        concurrency: 2
      }).pipe(
        Effect.provideService(Telemetry.CurrentSpanTransformer, (o) => void seen.push(o)),
        Effect.withSpan("caller"),
        Effect.provide(model),
        Effect.exit
      )
      return { exit, seen, handled: [...handled].sort(), decodes }
    }).pipe(Effect.provide(handlers))

  it.effect("generateText with a toolkit answers as LanguageModel.make does: tool results, span and transformer", () =>
    Effect.gen(function*() {
      const memory = memoryOf(callsOf("12"))
      for (const resolved of [false, true]) {
        const bare = yield* withTools(memory, { resolved })
        const under = yield* withTools(reinOf(memory), { resolved })
        const [b, u] = [Exit.getOrElse(bare.exit, () => undefined)!, Exit.getOrElse(under.exit, () => undefined)!]
        expect(u.content).toEqual(b.content)
        expect(u.toolResults.map((r) => [r.id, r.result, r.encodedResult, r.isFailure, r.providerExecuted])).toEqual([
          ["c3", "X", "X", false, true],
          ["c1", { celsius: 24 }, { celsius: 24 }, false, false],
          ["c2", "not found", "not found", true, false],
          ["c4", "Y", "Y", false, false]
        ])
        expect(u.toolResults[2]!.providerName).toBe("memory")
        expect([u.usage, u.finishReason]).toEqual([b.usage, b.finishReason])
        // Each call not executed by the provider is handled exactly once, as under `make`.
        expect(under.handled).toEqual(["Forecast 12", "Lookup missing", "Lookup y"])
        expect(under.handled).toEqual(bare.handled)
        // The parameters are decoded as under `make` (once to validate the answer, once by the handler):
        // no second decode of the whole answer.
        expect(under.decodes).toBe(bare.decodes)
        const [bs, us] = [bare.seen.at(-1)!, under.seen.at(-1)!]
        expect(us.response).toEqual(bs.response)
        expect([us.tools, us.toolChoice, us.responseFormat]).toEqual([bs.tools, bs.toolChoice, bs.responseFormat])
        expect(us.tools.map((t) => t.name)).toEqual(["Forecast", "Lookup"])
        for (const o of [bs, us]) {
          expect(o.span.name).toBe("LanguageModel.generateText")
          expect(o.span.attributes.get("concurrency")).toBe(2)
          expect(o.span.attributes.get("toolChoice")).toBe("auto")
        }
      }
    }))

  it.effect("a toolChoice oneOf offers only those tools, as under make; disableToolCallResolution runs no handler", () =>
    Effect.gen(function*() {
      const memory = memoryOf(callsOf("12").filter((p) => p.type !== "tool-call" || p.name === "Lookup"))
      const toolChoice = { oneOf: ["Lookup" as const] }
      const bare = yield* withTools(memory, { toolChoice })
      const under = yield* withTools(reinOf(memory), { toolChoice })
      expect(Exit.isSuccess(under.exit)).toBe(true)
      expect(under.seen.at(-1)!.tools.map((t) => t.name)).toEqual(["Lookup"])
      expect(under.seen.at(-1)!.toolChoice).toEqual(toolChoice)
      expect(under.seen.at(-1)!.response).toEqual(bare.seen.at(-1)!.response)
      expect(under.handled).toEqual(bare.handled)

      handled = []
      const unresolved = yield* LanguageModel.generateText({
        prompt: "hello",
        toolkit: Tools,
        disableToolCallResolution: true
      }).pipe(Effect.provide(reinOf(memoryOf(callsOf("12")))), Effect.provide(handlers))
      expect(handled).toEqual([])
      expect(unresolved.toolResults.map((r) => r.id)).toEqual(["c3"])
      expect(unresolved.toolCalls.map((c) => [c.id, c.params])).toEqual([
        ["c1", { city: 12 }],
        ["c2", { q: "missing" }],
        ["c3", { q: "x" }],
        ["c4", { q: "y" }]
      ])
    }))

  it.effect("a handler's failure surfaces as under make, the other handlers having run once", () =>
    Effect.gen(function*() {
      const memory = memoryOf(callsOf("13"))
      const bare = yield* withTools(memory)
      const under = yield* withTools(reinOf(memory))
      expect(Exit.isFailure(under.exit)).toBe(true)
      expect(under.exit).toEqual(bare.exit)
      expect(Exit.isFailure(under.exit) && under.exit.cause).toEqual(Exit.isFailure(bare.exit) && bare.exit.cause)
      expect(under.handled).toEqual(bare.handled)
      expect(under.handled).toContain("Forecast 13")
    }))

  it.effect("tool parameters that fail to decode fail as under make: its error, after the handlers before them ran", () =>
    Effect.gen(function*() {
      // `make` finds them in `Toolkit.handle` (a `MalformedOutput` of `Toolkit`), after the other calls'
      // handlers ran: under Rein the inner model's decode rejects the answer, which reaches the outer call as
      // the vendor sent it, and is validated there as `make` validates it.
      const memory = memoryOf(
        callsOf("12").map((p) => p.type === "tool-call" && p.id === "c4" ? { ...p, params: { q: 4 } } : p)
      )
      const bare = yield* withTools(memory)
      const under = yield* withTools(reinOf(memory))
      expect(Exit.isFailure(under.exit)).toBe(true)
      expect(under.exit).toEqual(bare.exit)
      const error = Exit.isFailure(under.exit)
        ? Option.getOrUndefined(Cause.failureOption(under.exit.cause))
        : undefined
      expect(error).toBeInstanceOf(AiError.MalformedOutput)
      expect(under.handled).toEqual(bare.handled)
      expect(under.handled).toContain("Forecast 12")
    }))
})
