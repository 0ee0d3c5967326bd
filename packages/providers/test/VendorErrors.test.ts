/**
 * Classification from each vendor's structured errors, as the vendor's client receives them from the
 * loopback dialect: HTTP status, the vendor's `type` / `code` / `status` / details, and its rate-limit
 * headers — never the message prose.
 */
import { HttpClient, HttpClientRequest } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Failure, Rein } from "@rein/core"
import { FaultServer } from "@rein/providers/testing"
import { anthropic } from "@rein/providers/testing"
import { gemini } from "@rein/providers/testing"
import { openaiChat } from "@rein/providers/testing"
import { Chunk, Clock, Effect, Either, FastCheck, Stream } from "effect"
import * as Http from "../src/internal/http.js"
import * as Vendors from "../src/internal/vendors.js"
import { cases, cat, reinLayer } from "./dialects.js"
import { attemptContext, contract, request, withHttp } from "./fixtures.js"

type Row = readonly [string, FaultServer.Fault, Failure.FailureKind, number | undefined]

const PROSE_TOO_LONG = "prompt is too long: 250000 tokens > 200000 maximum"

const tables: Readonly<Record<string, ReadonlyArray<Row>>> = {
  anthropic: [
    [
      "401 authentication_error",
      FaultServer.status(401, { type: "authentication_error" }),
      "authentication",
      undefined
    ],
    ["403 permission_error", FaultServer.status(403, { type: "permission_error" }), "permission_denied", undefined],
    ["402 billing_error", FaultServer.status(402, { type: "billing_error" }), "insufficient_balance", undefined],
    ["413 request_too_large", FaultServer.status(413, { type: "request_too_large" }), "context_length", undefined],
    // Anthropic says "prompt is too long" only in prose: that stays invalid_request.
    [
      "400 invalid_request_error (context length in prose only)",
      FaultServer.status(400, { type: "invalid_request_error", message: PROSE_TOO_LONG }),
      "invalid_request",
      undefined
    ],
    ["500 api_error", FaultServer.status(500, { type: "api_error" }), "server_error", undefined],
    ["529 overloaded_error", FaultServer.status(529, { type: "overloaded_error" }), "overloaded", undefined],
    [
      "429 rate_limit_error with retry-after",
      FaultServer.status(429, {
        type: "rate_limit_error",
        headers: anthropic.rateLimitHeaders({ retryAfterSeconds: 7, resetAt: "2000-01-01T00:00:00Z" })
      }),
      "rate_limited",
      7_000
    ]
  ],
  "openai-responses": [
    [
      "429 insufficient_quota",
      FaultServer.status(429, { code: "insufficient_quota", type: "insufficient_quota" }),
      "quota_exhausted",
      undefined
    ],
    [
      "400 context_length_exceeded",
      FaultServer.status(400, { code: "context_length_exceeded", type: "invalid_request_error" }),
      "context_length",
      undefined
    ],
    [
      "429 rate_limit_exceeded with retry-after-ms",
      FaultServer.status(429, { code: "rate_limit_exceeded", type: "requests", headers: { "retry-after-ms": "1250" } }),
      "rate_limited",
      1_250
    ],
    [
      "429 with x-ratelimit reset headers only",
      FaultServer.status(429, {
        code: "rate_limit_exceeded",
        type: "tokens",
        headers: openaiChat.rateLimitHeaders({ exhausted: "tokens", reset: "1m6.5s" })
      }),
      "rate_limited",
      66_500
    ],
    [
      "401 invalid_api_key",
      FaultServer.status(401, { code: "invalid_api_key", type: "invalid_request_error" }),
      "authentication",
      undefined
    ],
    ["503 server_error", FaultServer.status(503, { type: "server_error" }), "overloaded", undefined]
  ],
  gemini: [
    [
      "429 RESOURCE_EXHAUSTED with RetryInfo",
      FaultServer.status(429, { code: "RESOURCE_EXHAUSTED", details: [gemini.retryInfo("7s")] }),
      "rate_limited",
      7_000
    ],
    [
      "429 RESOURCE_EXHAUSTED on a per-day quota",
      FaultServer.status(429, {
        code: "RESOURCE_EXHAUSTED",
        details: [gemini.quotaFailure("GenerateRequestsPerDayPerProjectPerModel-FreeTier"), gemini.retryInfo("7s")]
      }),
      "quota_exhausted",
      7_000
    ],
    ["503 UNAVAILABLE", FaultServer.status(503, { code: "UNAVAILABLE" }), "overloaded", undefined],
    [
      "400 INVALID_ARGUMENT",
      FaultServer.status(400, { code: "INVALID_ARGUMENT", message: PROSE_TOO_LONG }),
      "invalid_request",
      undefined
    ],
    [
      "400 INVALID_ARGUMENT with ErrorInfo API_KEY_INVALID",
      FaultServer.status(400, { code: "INVALID_ARGUMENT", details: [gemini.errorInfo("API_KEY_INVALID")] }),
      "authentication",
      undefined
    ],
    ["403 PERMISSION_DENIED", FaultServer.status(403, { code: "PERMISSION_DENIED" }), "permission_denied", undefined],
    ["401 UNAUTHENTICATED", FaultServer.status(401, { code: "UNAUTHENTICATED" }), "authentication", undefined]
  ],
  azure: [
    ["400 content_filter", FaultServer.status(400, { code: "content_filter" }), "content_filtered", undefined],
    [
      "400 context_length_exceeded",
      FaultServer.status(400, { code: "context_length_exceeded" }),
      "context_length",
      undefined
    ],
    [
      "429 with retry-after-ms",
      FaultServer.status(429, { code: "429", headers: { "retry-after-ms": "800" } }),
      "rate_limited",
      800
    ]
  ],
  openrouter: [
    ["402 (credits)", FaultServer.status(402), "insufficient_balance", undefined],
    ["403 moderation metadata", FaultServer.status(403, { type: "moderation" }), "content_filtered", undefined],
    ["429 with retry-after", FaultServer.status(429, { headers: { "retry-after": "2" } }), "rate_limited", 2_000]
  ]
}

const ctx = attemptContext(cat.byId.get("a")!)

for (const c of cases) {
  const rows = tables[c.dialect]
  if (rows === undefined) continue
  describe(`${c.dialect} errors are classified from the vendor's structured fields`, () => {
    for (const [name, fault, kind, retryAfterMillis] of rows) {
      it.live(`${name} → ${kind}`, () =>
        Effect.scoped(Effect.gen(function*() {
          const server = yield* FaultServer.make({ faults: [fault] })
          const provider = yield* Effect.orDie(c.provider(server))
          const failure = yield* Effect.flip(provider.call(request, ctx))
          expect([failure.kind, failure.retryAfterMillis]).toEqual([kind, retryAfterMillis])
          expect(JSON.stringify(failure)).not.toContain("too long")
        })).pipe(withHttp))
    }
  })
}

describe("rate-limit headers as the wait hint of a 429 without Retry-After", () => {
  it.live("Anthropic: the reset instant of the exhausted limit (anthropic-ratelimit-requests-reset)", () =>
    Effect.scoped(Effect.gen(function*() {
      const resetAt = new Date((yield* Clock.currentTimeMillis) + 4_000).toISOString()
      const server = yield* FaultServer.make({
        faults: [
          FaultServer.status(429, { type: "rate_limit_error", headers: anthropic.rateLimitHeaders({ resetAt }) })
        ]
      })
      const provider = yield* Effect.orDie(cases.find((c) => c.dialect === "anthropic")!.provider(server))
      const failure = yield* Effect.flip(provider.call(request, ctx))
      expect(failure.kind).toBe("rate_limited")
      expect(failure.retryAfterMillis).toBeGreaterThan(2_000)
      expect(failure.retryAfterMillis).toBeLessThanOrEqual(4_000)
    })).pipe(withHttp))
})

describe("errors inside a 200 stream", () => {
  const streamCase = (dialect: string) => cases.find((c) => c.dialect === dialect)!
  const firstFailure = (dialect: string, fault: FaultServer.Fault) =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FaultServer.make({ faults: [fault] })
      const provider = yield* Effect.orDie(streamCase(dialect).provider(server))
      return yield* Effect.flip(Stream.runDrain(provider.stream!(request, ctx)))
    })).pipe(withHttp)

  it.live("Anthropic's event: error with overloaded_error is overloaded", () =>
    Effect.gen(function*() {
      const failure = yield* firstFailure(
        "anthropic",
        FaultServer.streamError({ status: 529, type: "overloaded_error" })
      )
      expect([failure.kind, failure.code]).toEqual(["overloaded", "overloaded_error"])
    }))

  it.live("OpenRouter's in-stream error with a numeric code is classified by that code", () =>
    Effect.gen(function*() {
      const failure = yield* firstFailure("openrouter", FaultServer.streamError({ deltas: ["par"], status: 502 }))
      expect([failure.kind, failure.status]).toEqual(["server_error", 502])
    }))

  it.live("an OpenAI chat-completions error chunk is classified by its code", () =>
    Effect.gen(function*() {
      const failure = yield* firstFailure(
        "openai-chat",
        FaultServer.streamError({ status: 429, code: "rate_limit_exceeded", type: "requests" })
      )
      expect(failure.kind).toBe("rate_limited")
    }))

  it.live("an OpenAI Responses error event is classified by its code", () =>
    Effect.gen(function*() {
      const failure = yield* firstFailure(
        "openai-responses",
        FaultServer.streamError({ status: 500, code: "server_error", type: "server_error" })
      )
      expect(failure.kind).toBe("server_error")
    }))

  it.live("an in-stream overload before the first delta falls back under Rein.executeStream", () =>
    Effect.scoped(Effect.gen(function*() {
      const c = streamCase("anthropic")
      const server = yield* FaultServer.make({
        scripts: {
          "model-a": [FaultServer.streamError({ status: 529, type: "overloaded_error" })],
          "model-b": [FaultServer.ok({ deltas: ["from ", "b"] })]
        }
      })
      const provider = yield* Effect.orDie(c.provider(server))
      const events = yield* Rein.executeStream(request, contract({ candidates: ["a", "b"], retry: { perEndpoint: 0 } }))
        .pipe(
          Stream.runCollect,
          Effect.map(Chunk.toReadonlyArray),
          Effect.either,
          Effect.provide(reinLayer(provider))
        )
      expect(Either.isRight(events) && events.right.flatMap((e) => e._tag === "Delta" ? [e.text] : [])).toEqual([
        "from ",
        "b"
      ])
      const last = Either.isRight(events) ? events.right.at(-1) : undefined
      expect(last?._tag === "Completed" && last.completion.attempts.map((a) => a.failure)).toEqual(["overloaded", null])
    })).pipe(withHttp))
})

describe("the server refuses what the real vendor refuses", () => {
  it.live("Azure without api-version is 404, without api-key 401; Gemini without a key 403; Anthropic without a version 400", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FaultServer.make()
      const azure = cases.find((c) => c.dialect === "azure")!
      const ok = yield* Effect.orDie(azure.provider(server))
      yield* ok.call(request, ctx)
      const [seen] = yield* server.requests
      expect(seen!.query).toEqual({ "api-version": "2024-10-21" })
      expect(seen!.headers["api-key"]).toBe("<redacted>")
      expect(seen!.headers.authorization).toBeUndefined()
      const post = (path: string, headers: Record<string, string>) =>
        Effect.flatMap(HttpClient.HttpClient, (client) =>
          client.execute(
            HttpClientRequest.post(`${server.url}${path}`).pipe(
              HttpClientRequest.setHeaders(headers),
              HttpClientRequest.bodyUnsafeJson({ messages: [] })
            )
          )).pipe(Effect.map((r) => r.status))
      const deployment = "/openai/deployments/model-a/chat/completions"
      expect(yield* post(deployment, { "api-key": "k" })).toBe(404)
      expect(yield* post(`${deployment}?api-version=2024-10-21`, {})).toBe(401)
      expect(yield* post("/v1beta/models/gemini-test:generateContent", {})).toBe(403)
      expect(yield* post("/v1/messages", { "x-api-key": "k" })).toBe(400)
      // Refused requests consume no scripted fault and are recorded like any other.
      expect((yield* server.requests).map((r) => r.fault)).toEqual(["Ok", "Status", "Status", "Status", "Status"])
    })).pipe(withHttp))
})

describe("classification never reads prose", () => {
  const bodies: ReadonlyArray<readonly [number, (message: string) => unknown, Failure.FailureKind]> = [
    [529, (message) => ({ type: "error", error: { type: "overloaded_error", message } }), "overloaded"],
    [400, (message) => ({ type: "error", error: { type: "invalid_request_error", message } }), "invalid_request"],
    [429, (message) => ({ error: { code: 429, message, status: "RESOURCE_EXHAUSTED" } }), "rate_limited"],
    [400, (message) => ({ error: { message, type: "invalid_request_error", code: null } }), "invalid_request"],
    [403, (message) => ({ error: { code: 403, message, metadata: { provider_name: "x" } } }), "permission_denied"]
  ]
  it.prop(
    "any message, even one naming another failure, leaves the kind to the structured fields",
    [
      FastCheck.oneof(
        FastCheck.string(),
        FastCheck.constantFrom("context_length_exceeded", "rate limit", "overloaded", "insufficient_quota")
      )
    ],
    ([message]) => {
      for (const [status, body, kind] of bodies) {
        const failure = Vendors.failureOf({ status, body: JSON.stringify(body(message)), nowMillis: 0 })
        const plain = Vendors.failureOf({ status, body: JSON.stringify(body("")), nowMillis: 0 })
        if (failure.kind !== kind || failure.code !== plain.code) return false
      }
      return true
    }
  )
})

describe("every code the core classifier reads is recorded as itself (providers and core cannot drift)", () => {
  const classified = Object.entries(Failure.classifierCodes).flatMap(([kind, codes]) =>
    codes.map((code) => [kind, code] as const)
  )

  it("is a documented code: `recordedCode` keeps it", () => {
    expect(classified.length).toBeGreaterThan(0)
    for (const [, code] of classified) expect(Vendors.recordedCode(code), code).toBe(code)
  })

  it.prop(
    "in an HTTP error body, with or without a status: the attempt's code is the code, its kind core's",
    [
      FastCheck.constantFrom(...classified),
      FastCheck.option(FastCheck.integer({ min: 400, max: 599 }), { nil: undefined }),
      FastCheck.constantFrom("code", "type")
    ],
    ([[kind, code], status, field]) => {
      const body = JSON.stringify({ error: { [field]: code } })
      const failure = Vendors.failureOf({ status, body, fallbackCode: Http.codeFromBody(body), nowMillis: 0 })
      expect(failure.code).toBe(code)
      // Without a status the code alone decides, and it decides core's kind.
      if (status === undefined) expect(failure.kind).toBe(kind)
      return true
    },
    { fastCheck: { seed: 16, numRuns: 300 } }
  )
})
