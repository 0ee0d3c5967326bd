import { LanguageModel, Response, Telemetry, Tool, Toolkit } from "@effect/ai"
import { describe, expect, it } from "@effect/vitest"
import { Catalog, Contract } from "@rein/core"
import { ReinLanguageModel } from "@rein/providers"
import { Arbitrary, Effect, Either, FastCheck, Layer, Option, Schema, Stream } from "effect"
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
})
