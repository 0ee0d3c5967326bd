import { describe, expect, it } from "@effect/vitest"
import { Rein } from "@rein/core"
import type { Failure, Streaming } from "@rein/core"
import { OpenAiCompatible } from "@rein/providers"
import * as EffectAiOpenAi from "@rein/providers/EffectAiOpenAi"
import { FaultServer } from "@rein/providers/testing"
import { Effect, Either, Redacted, Stream } from "effect"
import { attemptContext, catalog, contract, endpoint, request, withHttp } from "./fixtures.js"

const cat = catalog(endpoint("a", "compat", "model-a"), endpoint("b", "compat", "model-b"))
const PROSE = "PROSE-in-stream-error-4b1d"

/**
 * Errors sent inside an SSE stream after HTTP 200, in the shapes vLLM- and llama.cpp-style servers use, and
 * the same error sent as an HTTP status.
 */
const shapes: ReadonlyArray<readonly [string, unknown, FaultServer.Fault, Failure.FailureKind]> = [
  [
    "503 server_error (vLLM)",
    { message: PROSE, type: "server_error", code: 503 },
    FaultServer.status(503, { type: "server_error" }),
    "overloaded"
  ],
  [
    "429 rate_limit_error",
    { code: 429, type: "rate_limit_error" },
    FaultServer.status(429, { type: "rate_limit_error" }),
    "rate_limited"
  ],
  [
    "500 server_error (llama.cpp)",
    { code: 500, message: PROSE, type: "server_error" },
    FaultServer.status(500, { type: "server_error" }),
    "server_error"
  ],
  [
    "400 context_length_exceeded",
    { code: "context_length_exceeded", type: "invalid_request_error", message: PROSE },
    FaultServer.status(400, { code: "context_length_exceeded", type: "invalid_request_error" }),
    "context_length"
  ]
]

/** Streams through Rein with a fallback from `a` to `b`; `a` answers with `faults`, `b` with a normal stream. */
const runWithFallback = (...faults: ReadonlyArray<FaultServer.Fault>) =>
  Effect.scoped(Effect.gen(function*() {
    const server = yield* FaultServer.make({
      scripts: { "model-a": faults, "model-b": [FaultServer.ok({ deltas: ["from ", "b"] })] }
    })
    const provider = yield* Effect.orDie(OpenAiCompatible.make({ baseUrl: server.baseUrl }))
    const seen: Array<Streaming.Event> = []
    const result = yield* Rein.executeStream(
      request,
      contract({ candidates: ["a", "b"], retry: { perEndpoint: 1, base: "10 millis", max: "20 millis", jitter: 0 } })
    ).pipe(
      Stream.runForEach((e) => Effect.sync(() => seen.push(e))),
      Effect.either,
      Effect.provide(Rein.layer({ catalog: cat, providers: { compat: provider } }))
    )
    const last = seen.at(-1)
    return {
      ok: Either.isRight(result),
      deltas: seen.flatMap((e) => e._tag === "Delta" ? [[e.endpoint, e.text]] : []),
      attempts: last?._tag === "Completed"
        ? last.completion.attempts.map((a) => [a.endpoint, a.failure])
        : Either.isLeft(result)
        ? "failed"
        : "none",
      models: (yield* server.requests).map((r) => r.model),
      record: JSON.stringify([seen, Either.isLeft(result) ? result.left : null])
    }
  })).pipe(withHttp)

describe("errors inside an SSE stream classify like the same error sent as an HTTP status", () => {
  for (const [name, error, asStatus, kind] of shapes) {
    it.live(`${name}: before the first delta it retries and falls back exactly like the HTTP status`, () =>
      Effect.gen(function*() {
        const inStream = yield* runWithFallback(
          FaultServer.streamError({ error }),
          FaultServer.streamError({ error })
        )
        const viaStatus = yield* runWithFallback(asStatus, asStatus)
        // Without the status in the body, a 503 or 500 sent this way was `unknown`: FailedSafe, no retry.
        expect(inStream.attempts).toEqual(
          kind === "context_length" ? "failed" : [["a", kind], ["a", kind], ["b", null]]
        )
        expect(inStream.ok).toBe(viaStatus.ok)
        expect(inStream.attempts).toEqual(viaStatus.attempts)
        expect(inStream.deltas).toEqual(viaStatus.deltas)
        expect(inStream.models).toEqual(viaStatus.models)
        expect(inStream.record).not.toContain(PROSE)
      }))
  }

  it.live("the failure carries the kind of the status, never the prose", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FaultServer.make({
        faults: [
          FaultServer.streamError({ error: { message: PROSE, type: "server_error", code: 503 } }),
          FaultServer.streamError({ error: { code: 429, type: "rate_limit_error" } })
        ]
      })
      const provider = yield* OpenAiCompatible.make({ baseUrl: server.baseUrl })
      const ctx = attemptContext(cat.byId.get("a")!)
      const first = yield* Effect.flip(Stream.runDrain(provider.stream!(request, ctx)))
      const second = yield* Effect.flip(Stream.runDrain(provider.stream!(request, ctx)))
      expect([first.kind, first.status, first.code]).toEqual(["overloaded", 503, "server_error"])
      expect([second.kind, second.status, second.code]).toEqual(["rate_limited", 429, "rate_limit_error"])
      expect(JSON.stringify([first, second])).not.toContain(PROSE)
    })).pipe(withHttp))

  it.live("vLLM's top-level shape ({ object: \"error\", code: 400 }) is an error, never a silent chunk", () =>
    Effect.gen(function*() {
      const event = { object: "error", message: PROSE, type: "BadRequestError", param: null, code: 400 }
      const inStream = yield* runWithFallback(FaultServer.streamError({ event }))
      const viaStatus = yield* runWithFallback(FaultServer.status(400, { type: "BadRequestError" }))
      expect([inStream.ok, inStream.attempts, inStream.models]).toEqual([
        viaStatus.ok,
        viaStatus.attempts,
        viaStatus.models
      ])
      const failure = yield* Effect.scoped(Effect.gen(function*() {
        const server = yield* FaultServer.make({ faults: [FaultServer.streamError({ event })] })
        const provider = yield* OpenAiCompatible.make({ baseUrl: server.baseUrl })
        return yield* Effect.flip(Stream.runDrain(provider.stream!(request, attemptContext(cat.byId.get("a")!))))
      })).pipe(withHttp)
      expect([failure.kind, failure.status]).toEqual(["invalid_request", 400])
      expect(inStream.record).not.toContain(PROSE)
    }))

  it.live("after the first delta an in-stream error is terminal: no retry, no other model's text", () =>
    Effect.gen(function*() {
      const run = yield* runWithFallback(
        FaultServer.streamError({ deltas: ["partial "], error: { message: PROSE, type: "server_error", code: 503 } })
      )
      expect(run.ok).toBe(false)
      expect(run.deltas).toEqual([["a", "partial "]])
      expect(run.models).toEqual(["model-a"])
      expect(run.record).not.toContain(PROSE)
    }))

  it.live("the @effect/ai bridge classifies a Responses error event from its code", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FaultServer.make({
        faults: [FaultServer.streamError({
          event: { type: "error", sequence_number: 2, code: "rate_limit_exceeded", message: PROSE, param: null }
        })]
      })
      const provider = yield* EffectAiOpenAi.make({ apiUrl: server.baseUrl, apiKey: Redacted.make("sk-test") })
      const ctx = attemptContext(catalog(endpoint("a", "openai", "gpt-test")).byId.get("a")!)
      const failure = yield* Effect.flip(Stream.runDrain(provider.stream!(request, ctx)))
      expect([failure.kind, failure.code]).toEqual(["rate_limited", "rate_limit_exceeded"])
      expect(JSON.stringify(failure)).not.toContain(PROSE)
    })).pipe(withHttp))
})
