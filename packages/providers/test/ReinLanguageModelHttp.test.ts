import { LanguageModel } from "@effect/ai"
import { OpenAiClient, OpenAiLanguageModel } from "@effect/ai-openai"
import { HttpClient } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Catalog, Contract } from "@rein/core"
import { ReinLanguageModel } from "@rein/providers"
import { FaultServer } from "@rein/providers/testing"
import { Chunk, Effect, Either, Layer, Redacted, Stream } from "effect"
import { recordingTracer, withHttp } from "./fixtures.js"

const catalog = Catalog.make({
  endpoints: [{
    id: "openai/test",
    provider: "openai",
    model: "gpt-test",
    capabilities: { contextWindow: 8_000, maxOutputTokens: 256, streaming: true },
    prices: { inputTokens: 1e-6, outputTokens: 2e-6 }
  }]
})
const contract = Contract.make({
  deadline: "10 seconds",
  attemptTimeout: "2 seconds",
  candidates: ["openai/test"],
  retry: { perEndpoint: 2, base: "10 millis", max: "50 millis", jitter: 0 }
})

const underRein = (
  server: FaultServer.FaultServer,
  transformClient?: (c: HttpClient.HttpClient) => HttpClient.HttpClient
) =>
  ReinLanguageModel.layer({
    contract,
    catalog,
    models: { "openai/test": OpenAiLanguageModel.model },
    clients: OpenAiClient.layer({
      apiKey: Redacted.make("sk-test"),
      apiUrl: server.baseUrl,
      ...(transformClient === undefined ? {} : { transformClient })
    })
  })

describe("ReinLanguageModel over @effect/ai-openai (loopback server)", () => {
  it.live("a 503 is retried by Rein; each attempt sends the catalog's model and Rein's output bound", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FaultServer.make({
        faults: [FaultServer.faults.unavailable, FaultServer.ok({ text: "through rein" })]
      })
      const response = yield* LanguageModel.generateText({ prompt: "hello" }).pipe(
        Effect.provide(underRein(server))
      )
      expect(response.text).toBe("through rein")
      const seen = yield* server.requests
      expect(seen.length).toBe(2)
      expect(seen[1]!.body).toMatchObject({ model: "gpt-test", max_output_tokens: 256 })
    })).pipe(withHttp))

  it.live("a hard budget admits a call against the caller's own output cap, not Rein's larger bound", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FaultServer.make({ faults: [FaultServer.ok({ text: "short" })] })
      // 100 input + 50 output tokens cost 0.0002; 100 + 256 (the endpoint's maximum) would cost 0.000612.
      const layer = ReinLanguageModel.layer({
        contract: Contract.make({ deadline: "10 seconds", budget: { cost: 0.0003 }, candidates: ["openai/test"] }),
        catalog,
        models: { "openai/test": OpenAiLanguageModel.model },
        clients: OpenAiClient.layer({ apiKey: Redacted.make("sk-test"), apiUrl: server.baseUrl }),
        inputTokens: () => 100
      })
      const response = yield* LanguageModel.generateText({ prompt: "hello" }).pipe(
        OpenAiLanguageModel.withConfigOverride({ max_output_tokens: 50 }),
        Effect.provide(layer)
      )
      expect(response.text).toBe("short")
      expect((yield* server.requests).map((r) => (r.body as { max_output_tokens?: number }).max_output_tokens))
        .toEqual([50])
    })).pipe(withHttp))

  it.live("a retrying client is refused at layer build: the request is Refused with zero HTTP calls", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FaultServer.make({ faults: [FaultServer.faults.unavailable, FaultServer.ok()] })
      const result = yield* LanguageModel.generateText({ prompt: "hello" }).pipe(
        ReinLanguageModel.withOutcomes,
        Effect.either,
        Effect.provide(underRein(server, HttpClient.retryTransient({ times: 2 })))
      )
      expect(Either.isLeft(result) && result.left).toMatchObject({ _tag: "Refused", refusal: "nested_retries" })
      expect(Either.isLeft(result) && "reason" in result.left && result.left.reason).toContain("3 attempts")
      expect((yield* server.requests).length).toBe(0)
    })).pipe(withHttp))

  it.live("streamText through Rein: the deltas arrive, a stream cut before its end is a failure", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FaultServer.make({
        faults: [FaultServer.ok({ deltas: ["str", "eam"] }), FaultServer.faults.cutStream]
      })
      const layer = underRein(server)
      const parts = yield* LanguageModel.streamText({ prompt: "hello" }).pipe(
        Stream.runCollect,
        Effect.provide(layer)
      )
      const deltas = Chunk.toReadonlyArray(parts).flatMap((p) => p.type === "text-delta" ? [p.delta] : [])
      expect(deltas.join("")).toBe("stream")
      const cut = yield* LanguageModel.streamText({ prompt: "hello" }).pipe(
        Stream.runCollect,
        ReinLanguageModel.withOutcomes,
        Effect.either,
        Effect.provide(layer)
      )
      expect(Either.isLeft(cut)).toBe(true)
    })).pipe(withHttp))

  it.live("building the layer (its hidden-retry probe) leaves no span in the caller's traces", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FaultServer.make()
      const { spans, tracer } = recordingTracer()
      yield* Layer.build(underRein(server)).pipe(Effect.withTracer(tracer))
      expect(spans.map((s) => [s.name, s.exit])).toEqual([])
      expect((yield* server.requests).length).toBe(0)
    })).pipe(withHttp))

  it.live("no provider prose in any span: a failed attempt's @effect/ai span ends without the error body", () =>
    Effect.scoped(Effect.gen(function*() {
      const canary = "CANARY-prose-5b1d"
      const server = yield* FaultServer.make({
        faults: [
          FaultServer.status(503, { type: "server_error", message: `${canary} upstream busy` }),
          FaultServer.ok({ text: "fine" }),
          FaultServer.status(400, { type: "invalid_request_error", message: `${canary} bad input` }),
          FaultServer.status(400, { type: "invalid_request_error", message: `${canary} bad stream` })
        ]
      })
      const layer = yield* Layer.build(underRein(server))
      const { spans, tracer } = recordingTracer()
      const first = yield* LanguageModel.generateText({ prompt: "hello" }).pipe(
        Effect.provide(layer),
        Effect.withTracer(tracer)
      )
      expect(first.text).toBe("fine")
      const second = yield* LanguageModel.generateText({ prompt: "hello" }).pipe(
        Effect.either,
        Effect.provide(layer),
        Effect.withTracer(tracer)
      )
      expect(Either.isLeft(second)).toBe(true)
      const streamed = yield* LanguageModel.streamText({ prompt: "hello" }).pipe(
        Stream.runDrain,
        Effect.either,
        Effect.provide(layer),
        Effect.withTracer(tracer)
      )
      expect(Either.isLeft(streamed)).toBe(true)
      expect(spans.filter((s) => s.name === "LanguageModel.streamText" && s.exit !== "success").length).toBe(2)
      const failed = spans.filter((s) => s.exit !== "success")
      expect(failed.length).toBeGreaterThan(0)
      expect(JSON.stringify(spans)).not.toContain(canary)
    })).pipe(withHttp))

  /** One endpoint, no retry, a long attempt timeout (a loaded machine parses many MiB slowly). */
  const bounded = (server: FaultServer.FaultServer, maxResponseBytes?: number) =>
    ReinLanguageModel.layer({
      contract: Contract.make({ deadline: "60 seconds", candidates: ["openai/test"], retry: { perEndpoint: 0 } }),
      catalog,
      models: { "openai/test": OpenAiLanguageModel.model },
      clients: OpenAiClient.layer({ apiKey: Redacted.make("sk-test"), apiUrl: server.baseUrl }),
      maxResponseBytes
    })

  it.live("a streamed answer's text is bounded: many deltas past 8 MiB fail body_too_large, the socket closes", () =>
    Effect.scoped(Effect.gen(function*() {
      const piece = "x".repeat(64 * 1024)
      // 25 MiB over 4 s: the bound (8 MiB) is reached long before the server is done writing.
      const server = yield* FaultServer.make({
        faults: [FaultServer.slowDrip({ deltas: Array(400).fill(piece), every: "10 millis" })]
      })
      let received = 0
      const result = yield* LanguageModel.streamText({ prompt: "hello" }).pipe(
        Stream.runForEach((p) => Effect.sync(() => p.type === "text-delta" && (received += p.delta.length))),
        ReinLanguageModel.withOutcomes,
        Effect.either,
        Effect.provide(bounded(server))
      )
      expect(Either.isLeft(result) && result.left).toMatchObject({
        _tag: "FailedSafe",
        lastFailure: { kind: "malformed_response", code: "body_too_large" }
      })
      expect(received).toBeLessThanOrEqual(8 * 1024 * 1024)
      const [seen] = yield* server.waitUntil((rs) => rs[0]?.clientClosed === true, "10 seconds")
      expect(seen!.finished).toBe(false)
    })).pipe(withHttp))

  it.live("maxResponseBytes bounds every answer of the layer (a whole body, a streamed answer's text)", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FaultServer.make({
        faults: [
          FaultServer.ok({ text: "y".repeat(4096) }),
          FaultServer.ok({ deltas: Array(8).fill("z".repeat(512)) }),
          FaultServer.ok({ text: "small" })
        ]
      })
      const layer = bounded(server, 2048)
      const whole = yield* LanguageModel.generateText({ prompt: "hello" }).pipe(
        ReinLanguageModel.withOutcomes,
        Effect.either,
        Effect.provide(layer)
      )
      expect(Either.isLeft(whole) && whole.left).toMatchObject({ lastFailure: { code: "body_too_large" } })
      const streamed = yield* LanguageModel.streamText({ prompt: "hello" }).pipe(
        Stream.runDrain,
        ReinLanguageModel.withOutcomes,
        Effect.either,
        Effect.provide(layer)
      )
      expect(Either.isLeft(streamed) && streamed.left).toMatchObject({ lastFailure: { code: "body_too_large" } })
      const small = yield* LanguageModel.generateText({ prompt: "hello" }).pipe(Effect.provide(layer))
      expect(small.text).toBe("small")
    })).pipe(withHttp))
})
