import { describe, expect, it } from "@effect/vitest"
import { Rein } from "@rein/core"
import { OpenAiCompatible } from "@rein/providers"
import * as EffectAiOpenAi from "@rein/providers/EffectAiOpenAi"
import { FaultServer } from "@rein/providers/testing"
import { Effect, Either, Fiber } from "effect"
import { catalog, contract, endpoint, request, withHttp, WITHIN } from "./fixtures.js"

const cat = catalog(
  endpoint("a", "compat", "model-a"),
  endpoint("b", "compat", "model-b", { contextWindow: 32_000 })
)

/**
 * Rein over the OpenAI-compatible adapter pointed at `server`. `health: false` isolates the retry policy
 * from the breakers (a 429 with Retry-After opens the endpoint's breaker in core's default health).
 */
const reinLayer = (server: FaultServer.FaultServer, health: false | undefined) =>
  Effect.map(
    Effect.orDie(OpenAiCompatible.make({ baseUrl: server.baseUrl })),
    (provider) => Rein.layer({ catalog: cat, providers: { compat: provider }, health })
  )

const execute = (server: FaultServer.FaultServer, c = contract(), health?: false) =>
  Effect.flatMap(reinLayer(server, health), (layer) => Effect.provide(Rein.execute(request, c), layer))

describe("Retry-After from the server decides Rein's wait", () => {
  it.live("retry-after-ms is the recorded backoff, and the retry succeeds", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FaultServer.make({
        faults: [FaultServer.rateLimited({ retryAfterMillis: 250 }), FaultServer.ok({ text: "after the wait" })]
      })
      const completion = yield* execute(server, contract(), false)
      expect(completion.text).toBe("after the wait")
      expect(completion.attempts.map((a) => [a.status, a.failure, a.retryAfterMillis, a.backoffMillis])).toEqual([
        ["failure", "rate_limited", 250, 250],
        ["success", null, null, 0]
      ])
      // Rein really waited: the second attempt started no earlier than the hint.
      expect(completion.attempts[1]!.startMillis - completion.attempts[0]!.endMillis).toBeGreaterThanOrEqual(240)
    })).pipe(withHttp))

  it.live("retry-after in seconds longer than the deadline fails now, without sleeping into it", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FaultServer.make({ faults: [FaultServer.rateLimited({ retryAfterSeconds: 30 })] })
      const result = yield* Effect.either(execute(server, contract({ deadline: "3 seconds", candidates: ["a"] })))
      expect(Either.isLeft(result) && result.left._tag).toBe("DeadlineExceeded")
      if (Either.isLeft(result)) {
        const [first] = result.left.attempts
        expect([first!.failure, first!.retryAfterMillis, first!.backoffMillis]).toEqual(["rate_limited", 30_000, 0])
        expect(first!.endMillis).toBeLessThan(1_000)
      }
      expect((yield* server.requests).length).toBe(1)
    })).pipe(withHttp))
})

describe("interruption reaches the socket", () => {
  it.live("an attempt timeout before the response headers closes the connection", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FaultServer.make({ faults: [FaultServer.faults.hangBeforeHeaders] })
      const result = yield* Effect.either(
        execute(server, contract({ attemptTimeout: "300 millis", retry: { perEndpoint: 0 } }))
      )
      expect(Either.isLeft(result) && result.left.attempts.map((a) => a.status)).toEqual(["timeout"])
      const seen = yield* server.waitUntil((rs) => rs[0]?.clientClosed === true, WITHIN)
      expect(seen[0]!.finished).toBe(false)
    })).pipe(withHttp))

  it.live("an attempt timeout mid-body closes the connection", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FaultServer.make({ faults: [FaultServer.faults.hangMidBody] })
      const result = yield* Effect.either(
        execute(server, contract({ attemptTimeout: "300 millis", retry: { perEndpoint: 0 } }))
      )
      expect(Either.isLeft(result) && result.left.attempts.map((a) => a.status)).toEqual(["timeout"])
      yield* server.waitUntil((rs) => rs[0]?.clientClosed === true, WITHIN)
    })).pipe(withHttp))

  it.live("a slow drip longer than the attempt timeout is a timeout, and its connection is closed", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FaultServer.make({
        faults: [FaultServer.slowDrip({ deltas: Array.from({ length: 40 }, () => "x"), every: "50 millis" })]
      })
      const result = yield* Effect.either(
        execute(server, contract({ attemptTimeout: "300 millis", retry: { perEndpoint: 0 } }))
      )
      expect(Either.isLeft(result) && result.left.attempts.map((a) => [a.status, a.failure])).toEqual([
        ["timeout", "timeout"]
      ])
      yield* server.waitUntil((rs) => rs[0]?.clientClosed === true, WITHIN)
    })).pipe(withHttp))

  it.live("the deadline expiring mid-attempt closes the connection, then Rein falls back to nothing else", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FaultServer.make({ faults: [FaultServer.faults.hangMidBody] })
      const result = yield* Effect.either(
        execute(server, contract({ deadline: "400 millis", attemptTimeout: "5 seconds" }))
      )
      expect(Either.isLeft(result) && result.left._tag).toBe("DeadlineExceeded")
      yield* server.waitUntil((rs) => rs.length === 1 && rs[0]!.clientClosed, WITHIN)
    })).pipe(withHttp))

  it.live("the caller interrupting Rein closes the connection before headers", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FaultServer.make({ faults: [FaultServer.faults.hangBeforeHeaders] })
      const fiber = yield* Effect.fork(execute(server))
      yield* server.waitUntil((rs) => rs.length === 1, WITHIN)
      yield* Fiber.interrupt(fiber)
      yield* server.waitUntil((rs) => rs[0]?.clientClosed === true, WITHIN)
    })).pipe(withHttp))

  it.live("a timed-out attempt's connection is closed before the retry is sent", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FaultServer.make({
        faults: [FaultServer.faults.hangBeforeHeaders, FaultServer.ok({ text: "second" })]
      })
      const completion = yield* execute(server, contract({ attemptTimeout: "300 millis" }))
      expect(completion.text).toBe("second")
      const seen = yield* server.waitUntil((rs) => rs[0]?.clientClosed === true, WITHIN)
      expect(seen.map((r) => r.fault)).toEqual(["HangBeforeHeaders", "Ok"])
    })).pipe(withHttp))
})

describe("fallback across endpoints on the real server", () => {
  it.live("a context-length failure falls back only to the larger window, and the records say why", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FaultServer.make({
        scripts: { "model-a": [FaultServer.faults.contextLength], "model-b": [FaultServer.ok({ text: "from b" })] }
      })
      const completion = yield* execute(
        server,
        contract({ candidates: ["a", "b"] })
      )
      expect(completion.endpoint).toBe("b")
      expect(completion.attempts.map((a) => [a.endpoint, a.failure, a.code])).toEqual([
        ["a", "context_length", "context_length_exceeded"],
        ["b", null, null]
      ])
    })).pipe(withHttp))
})

describe("records never hold provider text", () => {
  it.live("a canary in the server's error bodies appears nowhere in the attempt records or the outcome", () =>
    Effect.scoped(Effect.gen(function*() {
      const CANARY = "CANARY-records-91c2e"
      const server = yield* FaultServer.make({
        scripts: {
          "model-a": [
            FaultServer.status(503, { type: "server_error", message: CANARY }),
            FaultServer.status(400, { code: "context_length_exceeded", message: CANARY })
          ],
          "model-b": [FaultServer.status(401, { code: "invalid_api_key", message: CANARY })]
        }
      })
      const result = yield* Effect.either(
        execute(server, contract({ candidates: ["a", "b"], retry: { perEndpoint: 1, base: "10 millis", jitter: 0 } }))
      )
      expect(Either.isLeft(result)).toBe(true)
      if (Either.isLeft(result)) {
        expect(result.left.attempts.map((a) => [a.endpoint, a.failure])).toEqual([
          ["a", "overloaded"],
          ["a", "context_length"],
          ["b", "authentication"]
        ])
      }
      const rendered = [JSON.stringify(result), String(Either.isLeft(result) ? result.left : "")]
      for (const text of rendered) expect(text).not.toContain("CANARY")
      // The server did get the requests: the canary was really on the wire.
      expect((yield* server.requests).length).toBe(3)
    })).pipe(withHttp))
})

describe("the @effect/ai bridge under Rein", () => {
  const bridged = (server: FaultServer.FaultServer, c = contract()) =>
    Effect.flatMap(
      Effect.orDie(EffectAiOpenAi.make({ apiUrl: server.baseUrl })),
      (provider) =>
        Effect.provide(
          Rein.execute(request, c),
          Rein.layer({ catalog: cat, providers: { compat: provider }, health: false })
        )
    )

  it.live("Retry-After from the server decides the wait", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FaultServer.make({
        faults: [FaultServer.rateLimited({ retryAfterMillis: 200 }), FaultServer.ok({ text: "bridged" })]
      })
      const completion = yield* bridged(server)
      expect(completion.text).toBe("bridged")
      expect(completion.attempts[0]!.backoffMillis).toBe(200)
    })).pipe(withHttp))

  it.live("an attempt timeout before headers closes the connection", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FaultServer.make({ faults: [FaultServer.faults.hangBeforeHeaders] })
      const result = yield* Effect.either(
        bridged(server, contract({ attemptTimeout: "300 millis", retry: { perEndpoint: 0 } }))
      )
      expect(Either.isLeft(result) && result.left.attempts.map((a) => a.status)).toEqual(["timeout"])
      yield* server.waitUntil((rs) => rs[0]?.clientClosed === true, WITHIN)
    })).pipe(withHttp))

  it.live("an attempt timeout mid-body closes the connection", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FaultServer.make({ faults: [FaultServer.faults.hangMidBody] })
      const result = yield* Effect.either(
        bridged(server, contract({ attemptTimeout: "300 millis", retry: { perEndpoint: 0 } }))
      )
      expect(Either.isLeft(result) && result.left.attempts.map((a) => a.status)).toEqual(["timeout"])
      yield* server.waitUntil((rs) => rs[0]?.clientClosed === true, WITHIN)
    })).pipe(withHttp))
})
