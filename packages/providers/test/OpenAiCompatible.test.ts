import { describe, expect, it } from "@effect/vitest"
import type { Failure } from "@rein/core"
import { OpenAiCompatible } from "@rein/providers"
import { FaultServer } from "@rein/providers/testing"
import { Chunk, Effect, Either, Redacted, Stream } from "effect"
import { attemptContext, catalog, endpoint, request, withHttp } from "./fixtures.js"

const cat = catalog(endpoint("a", "compat", "model-a"))
const ctx = attemptContext(cat.byId.get("a")!)

const CANARY = "CANARY-7f3a9c-do-not-record"

/** Every fault the one-shot call can see, and the kind it must be classified as. */
const callTable: ReadonlyArray<
  readonly [string, FaultServer.Fault, Failure.FailureKind, { readonly dispatched?: boolean; readonly code?: string }]
> = [
  ["429 with Retry-After", FaultServer.rateLimited({ retryAfterSeconds: 2 }), "rate_limited", {}],
  ["500", FaultServer.faults.serverError, "server_error", { code: "server_error" }],
  ["503", FaultServer.faults.unavailable, "overloaded", {}],
  ["529", FaultServer.faults.overloaded, "overloaded", { code: "overloaded_error" }],
  ["401", FaultServer.faults.unauthorized, "authentication", { code: "invalid_api_key" }],
  ["402", FaultServer.faults.paymentRequired, "insufficient_balance", {}],
  ["403", FaultServer.faults.forbidden, "permission_denied", {}],
  ["400 context_length_exceeded", FaultServer.faults.contextLength, "context_length", {
    code: "context_length_exceeded"
  }],
  ["429 insufficient_quota", FaultServer.faults.insufficientQuota, "quota_exhausted", { code: "insufficient_quota" }],
  ["400 other", FaultServer.faults.badRequest, "invalid_request", {}],
  ["malformed JSON", FaultServer.faults.malformedJson, "malformed_response", { code: "malformed_body" }],
  ["connection reset", FaultServer.faults.reset, "transport", { dispatched: true, code: "ECONNRESET" }]
]

describe("OpenAiCompatible against the fault server", () => {
  for (const [name, fault, kind, expected] of callTable) {
    it.live(`call: ${name} is classified ${kind}`, () =>
      Effect.scoped(Effect.gen(function*() {
        const server = yield* FaultServer.make({ faults: [fault] })
        const provider = yield* OpenAiCompatible.make({ baseUrl: server.baseUrl })
        const failure = yield* Effect.flip(provider.call(request, ctx))
        expect(failure.kind).toBe(kind)
        expect(failure.dispatched).toBe(expected.dispatched ?? true)
        if (expected.code !== undefined) expect(failure.code).toBe(expected.code)
      })).pipe(withHttp))
  }

  it.live("call: a complete answer carries the server's usage and sends max_tokens from the attempt", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FaultServer.make({
        faults: [FaultServer.ok({ text: "hi there", usage: { inputTokens: 7, outputTokens: 2 } })]
      })
      const provider = yield* OpenAiCompatible.make({ baseUrl: server.baseUrl, apiKey: Redacted.make("sk-test") })
      const response = yield* provider.call({ ...request, system: "be brief" }, ctx)
      expect(response).toEqual({ text: "hi there", usage: { inputTokens: 7, outputTokens: 2 } })
      const [seen] = yield* server.requests
      expect(seen!.body).toEqual({
        model: "model-a",
        messages: [{ role: "system", content: "be brief" }, { role: "user", content: "hello" }],
        max_tokens: 64
      })
      expect(seen!.headers.authorization).toBe("<redacted>")
    })).pipe(withHttp))

  it.live("call: a response without usage reports unknown usage, never zero", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FaultServer.make({ faults: [FaultServer.ok({ text: "x", usage: null })] })
      const provider = yield* OpenAiCompatible.make({ baseUrl: server.baseUrl })
      const response = yield* provider.call(request, ctx)
      expect(response.usage).toBe("unknown")
    })).pipe(withHttp))

  it.live("call: a slow drip that completes is a success", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FaultServer.make({
        faults: [FaultServer.slowDrip({ deltas: ["a", "b", "c", "d"], every: "10 millis" })]
      })
      const provider = yield* OpenAiCompatible.make({ baseUrl: server.baseUrl })
      const response = yield* provider.call(request, ctx)
      expect(response.text).toBe("abcd")
    })).pipe(withHttp))

  it.live("call: Retry-After in seconds and in milliseconds both reach the failure", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FaultServer.make({
        faults: [
          FaultServer.rateLimited({ retryAfterSeconds: 2 }),
          FaultServer.rateLimited({ retryAfterMillis: 350 }),
          FaultServer.rateLimited({ retryAfterDate: "Thu, 01 Jan 1970 00:00:00 GMT" })
        ]
      })
      const provider = yield* OpenAiCompatible.make({ baseUrl: server.baseUrl })
      const seconds = yield* Effect.flip(provider.call(request, ctx))
      const millis = yield* Effect.flip(provider.call(request, ctx))
      const past = yield* Effect.flip(provider.call(request, ctx))
      expect([seconds.retryAfterMillis, millis.retryAfterMillis, past.retryAfterMillis]).toEqual([2000, 350, 0])
    })).pipe(withHttp))

  it.live("call: connection refused is transport and was never dispatched", () =>
    Effect.gen(function*() {
      // A port that was listening a moment ago and is now closed.
      const port = yield* Effect.scoped(Effect.map(FaultServer.make(), (s) => s.port))
      const provider = yield* OpenAiCompatible.make({ baseUrl: `http://127.0.0.1:${port}/v1` })
      const failure = yield* Effect.flip(provider.call(request, ctx))
      expect([failure.kind, failure.code, failure.dispatched]).toEqual(["transport", "ECONNREFUSED", false])
    }).pipe(withHttp))

  it.live("a canary in the server's error body appears nowhere in the failure", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FaultServer.make({
        faults: [
          FaultServer.status(500, { type: "server_error", message: CANARY }),
          FaultServer.status(400, { code: "context_length_exceeded", message: CANARY })
        ]
      })
      const provider = yield* OpenAiCompatible.make({ baseUrl: server.baseUrl, apiKey: Redacted.make(CANARY) })
      const a = yield* Effect.flip(provider.call(request, ctx))
      const b = yield* Effect.flip(provider.call(request, ctx))
      for (const failure of [a, b]) {
        expect(JSON.stringify(failure)).not.toContain("CANARY")
        expect(String(failure)).not.toContain("CANARY")
      }
    })).pipe(withHttp))
})

describe("OpenAiCompatible streaming", () => {
  const collect = (server: FaultServer.FaultServer) =>
    Effect.flatMap(
      OpenAiCompatible.make({ baseUrl: server.baseUrl }),
      (provider) => Effect.either(Stream.runCollect(provider.stream!(request, ctx)))
    ).pipe(Effect.map(Either.map(Chunk.toReadonlyArray)))

  it.live("a complete stream ends with done: true and the usage chunk's usage", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FaultServer.make({
        faults: [FaultServer.ok({ deltas: ["Hel", "lo"], usage: { inputTokens: 9, outputTokens: 2 } })]
      })
      const parts = yield* collect(server)
      expect(parts).toEqual(Either.right([
        { delta: "Hel" },
        { delta: "lo" },
        { delta: "", usage: { inputTokens: 9, outputTokens: 2 }, done: true }
      ]))
      const [seen] = yield* server.requests
      expect(seen!.body).toMatchObject({ stream: true, stream_options: { include_usage: true }, max_tokens: 64 })
    })).pipe(withHttp))

  it.live("a stream without a usage chunk ends with unknown usage", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FaultServer.make({ faults: [FaultServer.ok({ deltas: ["x"], usage: null })] })
      const parts = yield* collect(server)
      expect(Either.map(parts, (ps) => ps.at(-1))).toEqual(Either.right({ delta: "", usage: "unknown", done: true }))
    })).pipe(withHttp))

  const streamTable: ReadonlyArray<readonly [string, FaultServer.Fault, Failure.FailureKind]> = [
    ["cut before its terminator (socket destroyed)", FaultServer.faults.cutStream, "transport"],
    ["ended cleanly without its terminator", FaultServer.faults.endStreamEarly, "malformed_response"],
    ["a malformed chunk", FaultServer.faults.malformedJson, "malformed_response"],
    ["429 before the stream", FaultServer.rateLimited({ retryAfterMillis: 100 }), "rate_limited"],
    ["529 before the stream", FaultServer.faults.overloaded, "overloaded"],
    ["reset before headers", FaultServer.faults.reset, "transport"]
  ]
  for (const [name, fault, kind] of streamTable) {
    it.live(`a stream ${name} fails with ${kind}, never a clean end`, () =>
      Effect.scoped(Effect.gen(function*() {
        const server = yield* FaultServer.make({ faults: [fault] })
        const parts = yield* collect(server)
        expect(Either.isLeft(parts) && parts.left.kind).toBe(kind)
      })).pipe(withHttp))
  }
})
