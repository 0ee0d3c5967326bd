import { HttpClient } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Rein } from "@rein/core"
import { FaultServer } from "@rein/providers/testing"
import { Chunk, Effect, Either, Fiber, Redacted, Stream, TestClock } from "effect"
import { awaitSleepAt, cases, KEY, reinLayer } from "./dialects.js"
import { contract, request, withHttp, WITHIN } from "./fixtures.js"

const CANARY = "CANARY-dialect-prose-91c3"

const execute = (
  c: (typeof cases)[number],
  server: FaultServer.FaultServer,
  overrides: Parameters<typeof contract>[0] = {},
  health?: false
) =>
  Effect.flatMap(
    Effect.orDie(c.provider(server)),
    (provider) =>
      Rein.execute(request, contract({ candidates: ["a", "b"], ...overrides })).pipe(
        Effect.provide(reinLayer(provider, health))
      )
  )

const executeStream = (c: (typeof cases)[number], server: FaultServer.FaultServer) =>
  Effect.flatMap(
    Effect.orDie(c.provider(server)),
    (provider) =>
      Rein.executeStream(request, contract({ candidates: ["a", "b"], retry: { perEndpoint: 0 } })).pipe(
        Stream.runCollect,
        Effect.map(Chunk.toReadonlyArray),
        Effect.either,
        Effect.provide(reinLayer(provider))
      )
  )

for (const c of cases) {
  describe(`the ${c.dialect} dialect under Rein.execute`, () => {
    it.live("an answer carries the vendor's usage; model, output bound and key reach the vendor's path", () =>
      Effect.scoped(Effect.gen(function*() {
        const server = yield* FaultServer.make({
          scripts: { "model-a": [FaultServer.ok({ text: "dialect ok", usage: { inputTokens: 9, outputTokens: 3 } })] }
        })
        const completion = yield* execute(c, server)
        expect([completion.text, completion.endpoint, completion.usage]).toEqual([
          "dialect ok",
          "a",
          { inputTokens: 9, outputTokens: 3 }
        ])
        const [seen] = yield* server.requests
        expect([seen!.dialect, seen!.path, seen!.model]).toEqual([c.dialect, c.path("model-a"), "model-a"])
        expect(c.maxTokens(seen!.body)).toBe(64)
        // The key went in the vendor's header, and the server never recorded it.
        expect(JSON.stringify(seen)).not.toContain(Redacted.value(KEY))
      })).pipe(withHttp))

    it.effect("a 429 asking for 3 s is waited exactly that long on the clock, then the retry succeeds", () =>
      Effect.scoped(Effect.gen(function*() {
        const server = yield* FaultServer.make({
          scripts: { "model-a": [c.rateLimited(3), FaultServer.ok({ text: "after the wait" })] }
        })
        const fiber = yield* Effect.fork(
          execute(c, server, { deadline: "60 seconds", attemptTimeout: "30 seconds", candidates: ["a"] }, false)
        )
        yield* awaitSleepAt(3_000)
        yield* TestClock.adjust("2999 millis")
        expect((yield* server.requests).length).toBe(1)
        yield* TestClock.adjust("1 millis")
        const completion = yield* Fiber.join(fiber)
        expect(completion.text).toBe("after the wait")
        const [first, second] = completion.attempts
        expect([first!.failure, first!.retryAfterMillis, first!.backoffMillis]).toEqual(["rate_limited", 3_000, 3_000])
        expect(second!.startMillis - first!.endMillis).toBeGreaterThanOrEqual(3_000)
        expect((yield* server.requests).length).toBe(2)
      })).pipe(withHttp))

    it.live("overload falls back to the next endpoint", () =>
      Effect.scoped(Effect.gen(function*() {
        const server = yield* FaultServer.make({
          scripts: { "model-a": [c.overloaded], "model-b": [FaultServer.ok({ text: "from b" })] }
        })
        const completion = yield* execute(c, server, { retry: { perEndpoint: 0 } })
        expect(completion.text).toBe("from b")
        expect(completion.attempts.map((a) => [a.endpoint, a.failure])).toEqual([["a", "overloaded"], ["b", null]])
      })).pipe(withHttp))

    it.live("a 5xx is retried on the same endpoint", () =>
      Effect.scoped(Effect.gen(function*() {
        const server = yield* FaultServer.make({
          scripts: { "model-a": [c.serverError, FaultServer.ok({ text: "second try" })] }
        })
        const completion = yield* execute(c, server, {}, false)
        expect(completion.text).toBe("second try")
        expect(completion.attempts.map((a) => [a.endpoint, a.failure])).toEqual([["a", "server_error"], ["a", null]])
      })).pipe(withHttp))

    it.live("a malformed body is malformed_response: no retry on the endpoint, fallback to the next", () =>
      Effect.scoped(Effect.gen(function*() {
        const server = yield* FaultServer.make({
          scripts: { "model-a": [FaultServer.faults.malformedJson], "model-b": [FaultServer.ok({ text: "from b" })] }
        })
        const completion = yield* execute(c, server)
        expect(completion.attempts.map((a) => [a.endpoint, a.failure])).toEqual([
          ["a", "malformed_response"],
          ["b", null]
        ])
      })).pipe(withHttp))

    it.effect("a hang before headers times out at the attempt timeout and its connection is closed", () =>
      Effect.scoped(Effect.gen(function*() {
        const server = yield* FaultServer.make({ scripts: { "model-a": [FaultServer.faults.hangBeforeHeaders] } })
        const fiber = yield* Effect.fork(Effect.either(
          execute(c, server, { attemptTimeout: "5 seconds", candidates: ["a"], retry: { perEndpoint: 0 } })
        ))
        yield* server.waitUntil((rs) => rs.length === 1, WITHIN)
        yield* awaitSleepAt(5_000)
        yield* TestClock.adjust("5 seconds")
        const result = yield* Fiber.join(fiber)
        expect(Either.isLeft(result) && result.left.attempts.map((a) => a.status)).toEqual(["timeout"])
        yield* server.waitUntil((rs) => rs[0]?.clientClosed === true, WITHIN)
      })).pipe(withHttp))

    it.live("a stream cut before its first delta falls back; one cut after it is terminal", () =>
      Effect.scoped(Effect.gen(function*() {
        const server = yield* FaultServer.make({
          scripts: {
            "model-a": [
              { _tag: "CutStream", deltas: [], clean: false },
              { _tag: "CutStream", deltas: ["partial "], clean: false }
            ],
            "model-b": [FaultServer.ok({ deltas: ["from ", "b"] }), FaultServer.ok({ deltas: ["never"] })]
          }
        })
        const before = yield* executeStream(c, server)
        expect(Either.isRight(before) && before.right.flatMap((e) => e._tag === "Delta" ? [e.text] : [])).toEqual([
          "from ",
          "b"
        ])
        const after = yield* executeStream(c, server)
        expect(Either.isLeft(after) && after.left.attempts.map((a) => [a.endpoint, a.failure])).toEqual([
          ["a", "transport"]
        ])
        expect((yield* server.requests).filter((r) => r.model === "model-b").length).toBe(1)
        expect((yield* server.requests).every((r) => r.stream)).toBe(true)
      })).pipe(withHttp))

    it.live("the vendor's error prose appears nowhere in the outcome", () =>
      Effect.scoped(Effect.gen(function*() {
        const server = yield* FaultServer.make({
          scripts: { "model-a": [FaultServer.status(400, { message: CANARY })] }
        })
        const result = yield* Effect.either(execute(c, server))
        expect(Either.isLeft(result) && result.left.attempts.map((a) => a.failure)).toEqual(["invalid_request"])
        expect(JSON.stringify(result)).not.toContain("CANARY")
      })).pipe(withHttp))

    if (c.transformable) {
      it.live("a client that retries is refused (hidden_retry): the server sees one request, Rein records one", () =>
        Effect.scoped(Effect.gen(function*() {
          const server = yield* FaultServer.make({
            scripts: { "model-a": [c.serverError, FaultServer.ok()] }
          })
          const provider = yield* Effect.orDie(c.provider(server, HttpClient.retryTransient({ times: 2 })))
          const result = yield* Effect.either(
            Rein.execute(request, contract({ candidates: ["a"] })).pipe(Effect.provide(reinLayer(provider)))
          )
          expect(Either.isLeft(result) && result.left.attempts.map((a) => [a.failure, a.code])).toEqual([
            ["unknown", "hidden_retry"]
          ])
          expect((yield* server.requests).length).toBe(1)
        })).pipe(withHttp))
    }
  })
}
