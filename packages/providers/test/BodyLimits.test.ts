import type { HttpClient } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import type { Provider } from "@rein/core"
import { Azure, OpenAiCompatible } from "@rein/providers"
import * as EffectAiAnthropic from "@rein/providers/EffectAiAnthropic"
import * as EffectAiGoogle from "@rein/providers/EffectAiGoogle"
import * as EffectAiOpenAi from "@rein/providers/EffectAiOpenAi"
import { FaultServer } from "@rein/providers/testing"
import { openaiResponses } from "@rein/providers/testing"
import { Effect, Either, Redacted, Stream } from "effect"
import { attemptContext, catalog, endpoint, request, withHttp, WITHIN } from "./fixtures.js"

const cat = catalog(endpoint("a", "compat", "model-a"))
const ctx = attemptContext(cat.byId.get("a")!, 20_000)

const MB = 1024 * 1024
/** What the server may write before the client's close reaches it: the bound read plus the socket buffers. */
const WRITTEN_BEYOND_BOUND = 8 * MB
/** Heap and RSS growth allowed for one call on a 100 MB body (reading it whole costs several hundred MB). */
const MEMORY_GROWTH = 48 * MB

type Adapter = (
  server: FaultServer.FaultServer,
  maxResponseBytes?: number
) => Effect.Effect<Provider.Provider, unknown, HttpClient.HttpClient>

const adapters: ReadonlyArray<readonly [string, Adapter]> = [
  [
    "OpenAiCompatible",
    (server, maxResponseBytes) => OpenAiCompatible.make({ baseUrl: server.baseUrl, maxResponseBytes })
  ],
  [
    "EffectAi bridge",
    (server, maxResponseBytes) =>
      EffectAiOpenAi.make({ apiUrl: server.baseUrl, apiKey: Redacted.make("sk-test"), maxResponseBytes })
  ]
]

/** Runs `effect` and measures the heap and RSS it grew the process by. */
const measured = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const before = process.memoryUsage()
    const value = yield* effect
    const after = process.memoryUsage()
    return { value, heap: after.heapUsed - before.heapUsed, rss: after.rss - before.rss }
  })

/** The fault server's own Responses events of the answer "hi": its delta and its `response.completed`. */
const RESPONSES_HI = openaiResponses.dialect.events(
  "gpt-test",
  { deltas: ["hi"], usage: null, toolCalls: [], finish: "stop" },
  false
)

const call = (provider: Provider.Provider) => Effect.flip(provider.call(request, ctx))
const stream = (provider: Provider.Provider) => Effect.flip(Stream.runDrain(provider.stream!(request, ctx)))

/** The one request the server saw, once the client's close has reached it. */
const closedRequest = (server: FaultServer.FaultServer) =>
  Effect.map(server.waitUntil((rs) => rs[0]?.clientClosed === true, WITHIN), (rs) => rs[0]!)

describe("bodies are read with a byte bound, and the connection is closed at it", () => {
  for (const [name, adapter] of adapters) {
    it.live(`${name}: a 100 MB error body costs 64 KiB: classified by status, the rest never sent`, () =>
      Effect.scoped(Effect.gen(function*() {
        const server = yield* FaultServer.make({ faults: [FaultServer.hugeBody({ status: 503 })] })
        const provider = yield* adapter(server)
        const { heap, rss, value: failure } = yield* measured(call(provider))
        expect([failure.kind, failure.status]).toEqual(["overloaded", 503])
        const seen = yield* closedRequest(server)
        expect(seen.bodyBytes).toBeLessThan(64 * 1024 + WRITTEN_BEYOND_BOUND)
        expect(heap).toBeLessThan(MEMORY_GROWTH)
        expect(rss).toBeLessThan(MEMORY_GROWTH)
      })).pipe(withHttp))

    it.live(`${name}: an endless error body on a streamed request classifies by status and is closed`, () =>
      Effect.scoped(Effect.gen(function*() {
        const server = yield* FaultServer.make({ faults: [FaultServer.hugeBody({ status: 500, bytes: Infinity })] })
        const provider = yield* adapter(server)
        const failure = yield* stream(provider)
        expect([failure.kind, failure.status]).toEqual(["server_error", 500])
        expect((yield* closedRequest(server)).bodyBytes).toBeLessThan(64 * 1024 + WRITTEN_BEYOND_BOUND)
      })).pipe(withHttp))

    it.live(`${name}: a 100 MB answer is malformed_response / body_too_large at the default bound (8 MiB)`, () =>
      Effect.scoped(Effect.gen(function*() {
        const server = yield* FaultServer.make({ faults: [FaultServer.hugeBody({ status: 200 })] })
        const provider = yield* adapter(server)
        const { rss, value: failure } = yield* measured(call(provider))
        expect([failure.kind, failure.code]).toEqual(["malformed_response", "body_too_large"])
        expect((yield* closedRequest(server)).bodyBytes).toBeLessThan(8 * MB + WRITTEN_BEYOND_BOUND)
        expect(rss).toBeLessThan(4 * 8 * MB + MEMORY_GROWTH)
      })).pipe(withHttp))

    it.live(`${name}: the answer bound is configurable`, () =>
      Effect.scoped(Effect.gen(function*() {
        const server = yield* FaultServer.make({
          faults: [FaultServer.hugeBody({ status: 200, bytes: 2 * MB }), FaultServer.ok({ text: "small" })]
        })
        const provider = yield* adapter(server, MB)
        expect((yield* call(provider)).code).toBe("body_too_large")
        expect((yield* provider.call(request, ctx)).text).toBe("small")
      })).pipe(withHttp))

    it.live(`${name}: one endless SSE line fails body_too_large at the bound instead of growing`, () =>
      Effect.scoped(Effect.gen(function*() {
        const server = yield* FaultServer.make({ faults: [FaultServer.hugeBody({ status: 200, bytes: Infinity })] })
        const provider = yield* adapter(server, MB)
        const { heap, value: failure } = yield* measured(stream(provider))
        expect([failure.kind, failure.code]).toEqual(["malformed_response", "body_too_large"])
        expect((yield* closedRequest(server)).bodyBytes).toBeLessThan(MB + WRITTEN_BEYOND_BOUND)
        expect(heap).toBeLessThan(MEMORY_GROWTH)
      })).pipe(withHttp))
  }

  for (const [name, adapter] of adapters) {
    it.live(`${name}: a 1 MB header is malformed_response / headers_too_large, refused at the parser's bound`, () =>
      Effect.scoped(Effect.gen(function*() {
        const server = yield* FaultServer.make({
          faults: [FaultServer.status(503, { headers: { "x-padding": "a".repeat(MB) } })]
        })
        const provider = yield* adapter(server)
        const failure = yield* call(provider)
        expect([failure.kind, failure.code, failure.dispatched]).toEqual([
          "malformed_response",
          "headers_too_large",
          true
        ])
      })).pipe(withHttp))

    it.live(`${name}: a 12,000-digit Retry-After still classifies as rate_limited at once`, () =>
      Effect.scoped(Effect.gen(function*() {
        const server = yield* FaultServer.make({
          faults: [FaultServer.status(429, { headers: { "retry-after": "9".repeat(12_000) } })]
        })
        const provider = yield* adapter(server)
        const failure = yield* call(provider).pipe(Effect.timeoutFail({ duration: WITHIN, onTimeout: () => "slow" }))
        expect(failure.kind).toBe("rate_limited")
      })).pipe(withHttp))
  }

  for (const [name, adapter] of adapters) {
    it.live(`${name}: an SSE retry: field of an hour is ignored, never slept on mid-stream`, () =>
      Effect.scoped(Effect.gen(function*() {
        const server = yield* FaultServer.make({
          faults: [
            name === "OpenAiCompatible"
              ? FaultServer.rawSse(
                "retry: 3600000\n\n",
                "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n",
                "data: [DONE]\n\n"
              )
              : FaultServer.rawSse(
                "retry: 3600000\r\n\r\n",
                ...RESPONSES_HI.deltas,
                ...RESPONSES_HI.tail
              )
          ]
        })
        const provider = yield* adapter(server)
        const parts = yield* Stream.runCollect(provider.stream!(request, ctx)).pipe(
          Effect.timeoutFail({ duration: WITHIN, onTimeout: () => "slept on retry:" })
        )
        expect(Array.from(parts).map((p) => p.delta)).toEqual(["hi", ""])
      })).pipe(withHttp))
  }

  it.live("four concurrent 100 MB answers stay within four bounds", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FaultServer.make({
        faults: Array.from({ length: 4 }, () => FaultServer.hugeBody({ status: 200 }))
      })
      const provider = yield* OpenAiCompatible.make({ baseUrl: server.baseUrl, maxResponseBytes: MB })
      const { rss, value: failures } = yield* measured(
        Effect.all(Array.from({ length: 4 }, () => call(provider)), { concurrency: 4 })
      )
      expect(failures.map((f) => f.code)).toEqual(Array(4).fill("body_too_large"))
      const seen = yield* server.waitUntil((rs) => rs.length === 4 && rs.every((r) => r.clientClosed), WITHIN)
      for (const r of seen) expect(r.bodyBytes).toBeLessThan(MB + WRITTEN_BEYOND_BOUND)
      expect(rss).toBeLessThan(MEMORY_GROWTH)
    })).pipe(withHttp))

  it.live("every vendor bridge and Azure bound the answer with their maxResponseBytes", () =>
    Effect.gen(function*() {
      const key = Redacted.make("sk-test")
      const bounded: ReadonlyArray<Adapter> = [
        (server, maxResponseBytes) => EffectAiAnthropic.make({ apiUrl: server.url, apiKey: key, maxResponseBytes }),
        (server, maxResponseBytes) => EffectAiGoogle.make({ apiUrl: server.url, apiKey: key, maxResponseBytes }),
        (server, maxResponseBytes) =>
          Azure.make({ resourceUrl: server.url, apiKey: key, apiVersion: "2024-10-21", maxResponseBytes })
      ]
      for (const make of bounded) {
        yield* Effect.scoped(Effect.gen(function*() {
          const server = yield* FaultServer.make({
            faults: [FaultServer.hugeBody({ status: 200, bytes: 2 * MB }), FaultServer.ok({ text: "small" })]
          })
          const provider = yield* make(server, MB)
          const first = yield* Effect.either(provider.call(request, ctx))
          expect(Either.isLeft(first) ? first.left.code : "answered in full").toBe("body_too_large")
          expect((yield* provider.call(request, ctx)).text).toBe("small")
        }))
      }
    }).pipe(withHttp))

  it.effect("maxResponseBytes that is not a positive integer is refused at construction, naming the field", () =>
    Effect.gen(function*() {
      for (const bad of [0, -1, 1.5, Number.NaN, Infinity]) {
        const compat = yield* Effect.flip(
          OpenAiCompatible.make({ baseUrl: "http://127.0.0.1:1/v1", maxResponseBytes: bad })
        )
        expect(compat.message).toContain("maxResponseBytes")
        for (
          const bridge of [EffectAiOpenAi.make, EffectAiAnthropic.make, EffectAiGoogle.make] as const
        ) {
          const bridged = yield* Effect.flip(bridge({ apiUrl: "http://127.0.0.1:1/v1", maxResponseBytes: bad }))
          expect(bridged.message).toContain("maxResponseBytes")
        }
      }
    }).pipe(withHttp))
})
