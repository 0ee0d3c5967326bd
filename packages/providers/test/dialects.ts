/**
 * One description per vendor dialect, for the tests that every dialect must pass under `Rein.execute`:
 * how to build the Rein provider against the fault server, and how that vendor spells its faults.
 */
import type * as HttpClient from "@effect/platform/HttpClient"
import type { Provider } from "@rein/core"
import { Rein } from "@rein/core"
import { Azure, OpenAiCompatible } from "@rein/providers"
import * as EffectAiAnthropic from "@rein/providers/EffectAiAnthropic"
import * as EffectAiGoogle from "@rein/providers/EffectAiGoogle"
import * as EffectAiOpenAi from "@rein/providers/EffectAiOpenAi"
import { FaultServer } from "@rein/providers/testing"
import { anthropic } from "@rein/providers/testing"
import { gemini } from "@rein/providers/testing"
import { Chunk, Clock, Effect, Redacted, Schedule, TestClock } from "effect"
import { catalog, endpoint } from "./fixtures.js"

export const KEY = Redacted.make("sk-dialect-secret-7d2a")

export interface Case {
  readonly dialect: string
  /** The path one call to model `model` goes to. */
  readonly path: (model: string) => string
  readonly provider: (
    server: FaultServer.FaultServer,
    transformClient?: (client: HttpClient.HttpClient) => HttpClient.HttpClient
  ) => Effect.Effect<Provider.Provider, unknown, HttpClient.HttpClient>
  /** A 429 that asks for a wait of `seconds`, the vendor's way. */
  readonly rateLimited: (seconds: number) => FaultServer.Fault
  readonly overloaded: FaultServer.Fault
  readonly serverError: FaultServer.Fault
  /** Where the output bound is in the request body. */
  readonly maxTokens: (body: unknown) => unknown
  /** The retrying client is refused only where the bridge owns the client (the compatible adapter has none). */
  readonly transformable: boolean
}

/** The value at `keys` in a JSON body, or undefined. */
export const at = (body: unknown, ...keys: ReadonlyArray<string | number>): unknown =>
  keys.reduce<unknown>(
    (v, k) => typeof v === "object" && v !== null ? (v as Record<string, unknown>)[k] : undefined,
    body
  )

const openAiStatus = (status: number, type: string) => FaultServer.status(status, { type })

export const cases: ReadonlyArray<Case> = [
  {
    dialect: "openai-responses",
    path: () => "/v1/responses",
    provider: (server, transformClient) =>
      EffectAiOpenAi.make({ apiUrl: server.baseUrl, apiKey: KEY, transformClient }),
    rateLimited: (seconds) => FaultServer.rateLimited({ retryAfterSeconds: seconds }),
    overloaded: openAiStatus(503, "server_error"),
    serverError: openAiStatus(500, "server_error"),
    maxTokens: (body) => at(body, "max_output_tokens"),
    transformable: true
  },
  {
    dialect: "openai-chat",
    path: () => "/v1/chat/completions",
    provider: (server) => OpenAiCompatible.make({ baseUrl: server.baseUrl, apiKey: KEY }),
    rateLimited: (seconds) => FaultServer.rateLimited({ retryAfterSeconds: seconds }),
    overloaded: openAiStatus(503, "server_error"),
    serverError: openAiStatus(500, "server_error"),
    maxTokens: (body) => at(body, "max_tokens"),
    transformable: false
  },
  {
    dialect: "anthropic",
    path: () => "/v1/messages",
    provider: (server, transformClient) => EffectAiAnthropic.make({ apiUrl: server.url, apiKey: KEY, transformClient }),
    rateLimited: (seconds) =>
      FaultServer.status(429, {
        type: "rate_limit_error",
        headers: anthropic.rateLimitHeaders({ retryAfterSeconds: seconds, resetAt: "2000-01-01T00:00:00Z" })
      }),
    overloaded: FaultServer.status(529, { type: "overloaded_error" }),
    serverError: FaultServer.status(500, { type: "api_error" }),
    maxTokens: (body) => at(body, "max_tokens"),
    transformable: true
  },
  {
    dialect: "gemini",
    path: (model) => `/v1beta/models/${model}:generateContent`,
    provider: (server, transformClient) => EffectAiGoogle.make({ apiUrl: server.url, apiKey: KEY, transformClient }),
    // Gemini asks for its wait in the body (google.rpc.RetryInfo), not in a header.
    rateLimited: (seconds) =>
      FaultServer.status(429, { code: "RESOURCE_EXHAUSTED", details: [gemini.retryInfo(`${seconds}s`)] }),
    overloaded: FaultServer.status(503, { code: "UNAVAILABLE" }),
    serverError: FaultServer.status(500, { code: "INTERNAL" }),
    maxTokens: (body) => at(body, "generationConfig", "maxOutputTokens"),
    transformable: true
  },
  {
    dialect: "azure",
    path: (model) => `/openai/deployments/${model}/chat/completions`,
    provider: (server) => Azure.make({ resourceUrl: server.url, apiKey: KEY, apiVersion: "2024-10-21" }),
    rateLimited: (seconds) =>
      FaultServer.status(429, { code: "429", headers: { "retry-after-ms": String(seconds * 1000) } }),
    overloaded: FaultServer.status(503, { code: "ServiceUnavailable" }),
    serverError: FaultServer.status(500, { code: "InternalServerError" }),
    maxTokens: (body) => at(body, "max_tokens"),
    transformable: false
  },
  {
    dialect: "openrouter",
    path: () => "/api/v1/chat/completions",
    provider: (server) => OpenAiCompatible.make({ baseUrl: `${server.url}/api/v1`, apiKey: KEY }),
    rateLimited: (seconds) => FaultServer.status(429, { headers: { "retry-after": String(seconds) } }),
    overloaded: FaultServer.status(503),
    serverError: FaultServer.status(502),
    maxTokens: (body) => at(body, "max_tokens"),
    transformable: false
  }
]

/** Two endpoints of the dialect's provider: `a` (model-a) and `b` (model-b). */
export const cat = catalog(endpoint("a", "vendor", "model-a"), endpoint("b", "vendor", "model-b"))

/** Rein over `provider` (breakers off where a test isolates the retry policy). */
export const reinLayer = (provider: Provider.Provider, health?: false) =>
  Rein.layer({ catalog: cat, providers: { vendor: provider }, ...(health === false ? { health } : {}) })

const live = Clock.make()

/**
 * Polls on the live clock until the test clock holds a sleep that wakes at `wakeAt` (ms): the moment a
 * backoff has been scheduled. TestClock keeps interrupted sleeps in its list, so match the exact instant.
 */
export const awaitSleepAt = (wakeAt: number) =>
  Effect.flatMap(TestClock.testClock(), (clock) =>
    clock.sleeps.pipe(
      Effect.filterOrFail((sleeps) => Chunk.some(sleeps, (t) => t === wakeAt), () => "no sleep yet"),
      Effect.retry(Schedule.spaced("5 millis").pipe(Schedule.upTo("5 seconds"))),
      Effect.withClock(live)
    ))
