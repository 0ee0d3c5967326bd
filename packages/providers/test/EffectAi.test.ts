import { Tool, Toolkit } from "@effect/ai"
import { HttpClient } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Rein } from "@rein/core"
import type { Failure } from "@rein/core"
import * as EffectAiOpenAi from "@rein/providers/EffectAiOpenAi"
import { FaultServer } from "@rein/providers/testing"
import { Chunk, Effect, Either, Redacted, Schema, Stream } from "effect"
import { attemptContext, catalog, contract, endpoint, request, withHttp } from "./fixtures.js"

const cat = catalog(endpoint("a", "openai", "gpt-test"))
const ctx = attemptContext(cat.byId.get("a")!)
const CANARY = "CANARY-ai-bridge-5e1f"

const bridge = (server: FaultServer.FaultServer, options: Partial<EffectAiOpenAi.Options> = {}) =>
  EffectAiOpenAi.make({ apiUrl: server.baseUrl, apiKey: Redacted.make("sk-test"), ...options })

/** Every fault the @effect/ai bridge can see, and the kind it must be classified as. */
const table: ReadonlyArray<readonly [string, FaultServer.Fault, Failure.FailureKind, boolean]> = [
  ["429 with Retry-After", FaultServer.rateLimited({ retryAfterSeconds: 1 }), "rate_limited", true],
  ["500", FaultServer.faults.serverError, "server_error", true],
  ["503", FaultServer.faults.unavailable, "overloaded", true],
  ["529", FaultServer.faults.overloaded, "overloaded", true],
  ["401", FaultServer.faults.unauthorized, "authentication", true],
  ["402", FaultServer.faults.paymentRequired, "insufficient_balance", true],
  ["403", FaultServer.faults.forbidden, "permission_denied", true],
  ["400 context_length_exceeded", FaultServer.faults.contextLength, "context_length", true],
  ["429 insufficient_quota", FaultServer.faults.insufficientQuota, "quota_exhausted", true],
  ["400 other", FaultServer.faults.badRequest, "invalid_request", true],
  ["malformed JSON", FaultServer.faults.malformedJson, "malformed_response", true],
  ["connection reset", FaultServer.faults.reset, "transport", true]
]

describe("EffectAi bridge (@effect/ai-openai against the fault server)", () => {
  for (const [name, fault, kind, dispatched] of table) {
    it.live(`${name} is classified ${kind}`, () =>
      Effect.scoped(Effect.gen(function*() {
        const server = yield* FaultServer.make({ faults: [fault] })
        const provider = yield* bridge(server)
        const failure = yield* Effect.flip(provider.call(request, ctx))
        expect([failure.kind, failure.dispatched]).toEqual([kind, dispatched])
      })).pipe(withHttp))
  }

  it.live("an answer carries the response's usage; the endpoint's model and Rein's bound are sent", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FaultServer.make({
        faults: [FaultServer.ok({ text: "bridged", usage: { inputTokens: 11, outputTokens: 4 } })]
      })
      const provider = yield* bridge(server)
      expect(provider.internalMaxAttempts).toBe(1)
      const response = yield* provider.call(request, ctx)
      expect(response).toEqual({ text: "bridged", usage: { inputTokens: 11, outputTokens: 4 }, finishReason: "stop" })
      const [seen] = yield* server.requests
      expect(seen!.path).toBe("/v1/responses")
      expect(seen!.body).toMatchObject({ model: "gpt-test", max_output_tokens: 64 })
      expect(seen!.headers.authorization).toBe("<redacted>")
    })).pipe(withHttp))

  it.live("usage the response does not report stays unknown", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FaultServer.make({ faults: [FaultServer.ok({ text: "x", usage: null })] })
      const provider = yield* bridge(server)
      expect((yield* provider.call(request, ctx)).usage).toBe("unknown")
    })).pipe(withHttp))

  it.live("Retry-After in milliseconds reaches the failure", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FaultServer.make({ faults: [FaultServer.rateLimited({ retryAfterMillis: 420 })] })
      const provider = yield* bridge(server)
      expect((yield* Effect.flip(provider.call(request, ctx))).retryAfterMillis).toBe(420)
    })).pipe(withHttp))

  it.live("connection refused is transport, never dispatched", () =>
    Effect.gen(function*() {
      const port = yield* Effect.scoped(Effect.map(FaultServer.make(), (s) => s.port))
      const provider = yield* EffectAiOpenAi.make({ apiUrl: `http://127.0.0.1:${port}/v1` })
      const failure = yield* Effect.flip(provider.call(request, ctx))
      expect([failure.kind, failure.code, failure.dispatched]).toEqual(["transport", "ECONNREFUSED", false])
    }).pipe(withHttp))

  it.live("a transformClient that retries is refused: one request reaches the server, the call fails safe", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FaultServer.make({ faults: [FaultServer.faults.unavailable, FaultServer.ok()] })
      const provider = yield* bridge(server, { transformClient: HttpClient.retryTransient({ times: 3 }) })
      const failure = yield* Effect.flip(provider.call(request, ctx))
      expect([failure.kind, failure.code]).toEqual(["unknown", "hidden_retry"])
      expect((yield* server.requests).length).toBe(1)
      // The next call gets its own single request.
      const response = yield* provider.call(request, ctx)
      expect(response.text).toBe("hello from the fault server")
    })).pipe(withHttp))

  it.live("a canary in the server's error body appears nowhere in the failure", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FaultServer.make({
        faults: [FaultServer.status(503, { type: "server_error", message: CANARY })]
      })
      const provider = yield* bridge(server)
      const failure = yield* Effect.flip(provider.call(request, ctx))
      expect(failure.kind).toBe("overloaded")
      expect(JSON.stringify(failure)).not.toContain("CANARY")
      expect(String(failure)).not.toContain("CANARY")
    })).pipe(withHttp))

  it.live("a complete stream ends with done: true and the usage of response.completed", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FaultServer.make({
        faults: [FaultServer.ok({ deltas: ["brid", "ged"], usage: { inputTokens: 5, outputTokens: 2 } })]
      })
      const provider = yield* bridge(server)
      const parts = Chunk.toReadonlyArray(yield* Stream.runCollect(provider.stream!(request, ctx)))
      expect(parts).toEqual([
        { delta: "brid" },
        { delta: "ged" },
        { delta: "", usage: { inputTokens: 5, outputTokens: 2 }, done: true, finishReason: "stop" }
      ])
    })).pipe(withHttp))

  it.live("a stream cut before its terminator is a failure, not a clean end", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FaultServer.make({
        faults: [FaultServer.faults.cutStream, FaultServer.faults.endStreamEarly]
      })
      const provider = yield* bridge(server)
      const cut = yield* Effect.either(Stream.runCollect(provider.stream!(request, ctx)))
      const ended = yield* Effect.either(Stream.runCollect(provider.stream!(request, ctx)))
      expect(Either.isLeft(cut) && [cut.left.kind, cut.left.code]).toEqual(["transport", "ECONNRESET"])
      expect(Either.isLeft(ended) && [ended.left.kind, ended.left.code]).toEqual([
        "malformed_response",
        "stream_truncated"
      ])
    })).pipe(withHttp))

  it.live("an answer cut mid-body is a transport failure after dispatch, read once, never a hang", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FaultServer.make({ faults: [FaultServer.faults.cutStream] })
      const provider = yield* bridge(server)
      const failure = yield* Effect.flip(provider.call(request, ctx)).pipe(
        Effect.timeoutFail({ duration: "3 seconds", onTimeout: () => "hung" })
      )
      expect([failure.kind, failure.code, failure.dispatched]).toEqual(["transport", "ECONNRESET", true])
    })).pipe(withHttp))

  it.live("a request's tools are sent from the bridge's toolkit; the model's tool calls come back, unresolved", () =>
    Effect.scoped(Effect.gen(function*() {
      const Weather = Tool.make("weather", { parameters: { city: Schema.String }, success: Schema.String })
      const Clock = Tool.make("clock", { success: Schema.String })
      const server = yield* FaultServer.make({
        faults: [FaultServer.ok({
          text: "",
          toolCalls: [{ id: "call_1", name: "weather", arguments: JSON.stringify({ city: "Oslo" }) }]
        })]
      })
      const provider = yield* bridge(server, { toolkit: Toolkit.make(Weather, Clock) })
      const answer = yield* provider.call({ ...request, tools: [{ name: "weather" }], toolChoice: "required" }, ctx)
      expect(answer.toolCalls).toEqual([{ id: "call_1", name: "weather", params: { city: "Oslo" } }])
      const body = (yield* server.requests)[0]!.body as {
        tools?: ReadonlyArray<{ name: string }>
        tool_choice?: unknown
      }
      // Only the tools the request names are sent, with its choice.
      expect([body.tools?.map((t) => t.name), body.tool_choice]).toEqual([["weather"], "required"])
    })).pipe(withHttp))

  it.live("a request naming a tool the bridge's toolkit lacks fails invalid_request before anything is sent", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FaultServer.make({ faults: [FaultServer.ok()] })
      const provider = yield* bridge(server)
      const failure = yield* Effect.flip(provider.call({ ...request, tools: [{ name: "weather" }] }, ctx))
      expect([failure.kind, failure.code, failure.dispatched]).toEqual(["invalid_request", "unknown_tool", false])
      expect((yield* server.requests).length).toBe(0)
    })).pipe(withHttp))

  it.live("an answer reports its finish reason: a call cut at the output limit says length", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FaultServer.make({ faults: [FaultServer.ok({ text: "cut at the lim", finish: "length" })] })
      const provider = yield* bridge(server)
      const cut = yield* provider.call(request, ctx)
      expect([cut.text, cut.finishReason]).toEqual(["cut at the lim", "length"])
      const parts = yield* Stream.runCollect(provider.stream!(request, ctx))
      expect(Chunk.toReadonlyArray(parts).at(-1)).toMatchObject({ done: true, finishReason: "stop" })
    })).pipe(withHttp))

  it.live("so the contract's truncation applies: fail falls back as truncated, accept annotates the success", () =>
    Effect.scoped(Effect.gen(function*() {
      const larger = {
        ...endpoint("b", "openai", "gpt-b"),
        capabilities: { contextWindow: 8_000, maxOutputTokens: 4_000 }
      }
      const two = catalog(endpoint("a", "openai", "gpt-a"), larger)
      const server = yield* FaultServer.make({
        scripts: {
          "gpt-a": [
            FaultServer.ok({ text: "cut", finish: "length" }),
            FaultServer.ok({ text: "cut", finish: "length" })
          ],
          "gpt-b": [FaultServer.ok({ text: "whole" })]
        }
      })
      const rein = Rein.layer({ catalog: two, providers: { openai: yield* bridge(server) } })
      // Without a bound of its own, the request's output limit is each endpoint's: b's is larger.
      const unbounded = { prompt: "hello", inputTokens: 20 }
      const failed = yield* Rein.execute(unbounded, contract({ candidates: ["a", "b"], retry: { perEndpoint: 0 } }))
        .pipe(
          Effect.provide(rein)
        )
      expect([failed.text, failed.attempts.map((a) => [a.endpoint, a.failure])]).toEqual([
        "whole",
        [["a", "truncated"], ["b", null]]
      ])
      const accepted = yield* Rein.execute(unbounded, contract({ candidates: ["a"], truncation: "accept" })).pipe(
        Effect.provide(rein)
      )
      expect([accepted.text, accepted.finishReason]).toEqual(["cut", "length"])
    })).pipe(withHttp))
})
