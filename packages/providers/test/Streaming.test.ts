import { describe, expect, it } from "@effect/vitest"
import { Rein } from "@rein/core"
import type { Streaming } from "@rein/core"
import { OpenAiCompatible } from "@rein/providers"
import { FaultServer } from "@rein/providers/testing"
import { Chunk, Effect, Either, Stream } from "effect"
import { catalog, contract, endpoint, request, withHttp, WITHIN } from "./fixtures.js"

const cat = catalog(endpoint("a", "compat", "model-a"), endpoint("b", "compat", "model-b"))

const run = (server: FaultServer.FaultServer, c = contract({ candidates: ["a", "b"], retry: { perEndpoint: 0 } })) =>
  Effect.flatMap(
    Effect.orDie(OpenAiCompatible.make({ baseUrl: server.baseUrl })),
    (provider) =>
      Rein.executeStream(request, c).pipe(
        Stream.runCollect,
        Effect.map(Chunk.toReadonlyArray),
        Effect.either,
        Effect.provide(Rein.layer({ catalog: cat, providers: { compat: provider } }))
      )
  )

const deltas = (events: ReadonlyArray<Streaming.Event>) =>
  events.flatMap((e) => e._tag === "Delta" ? [[e.endpoint, e.text]] : [])

describe("streaming through Rein.executeStream on the real server", () => {
  it.live("a complete stream yields its deltas, then a completion with the server's usage", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FaultServer.make({
        scripts: {
          "model-a": [FaultServer.ok({ deltas: ["one ", "two"], usage: { inputTokens: 8, outputTokens: 2 } })]
        }
      })
      const result = yield* run(server)
      expect(Either.isRight(result)).toBe(true)
      if (Either.isRight(result)) {
        expect(deltas(result.right)).toEqual([["a", "one "], ["a", "two"]])
        const last = result.right.at(-1)
        expect(last?._tag === "Completed" && [last.completion.text, last.completion.usage]).toEqual([
          "one two",
          { inputTokens: 8, outputTokens: 2 }
        ])
      }
    })).pipe(withHttp))

  it.live("a stream that fails before its first delta falls back to the next endpoint", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FaultServer.make({
        scripts: {
          "model-a": [{ _tag: "CutStream", deltas: [], clean: false }],
          "model-b": [FaultServer.ok({ deltas: ["from ", "b"] })]
        }
      })
      const result = yield* run(server)
      expect(Either.isRight(result)).toBe(true)
      if (Either.isRight(result)) {
        expect(deltas(result.right)).toEqual([["b", "from "], ["b", "b"]])
        const last = result.right.at(-1)
        expect(last?._tag === "Completed" && last.completion.attempts.map((a) => [a.endpoint, a.failure])).toEqual([
          ["a", "transport"],
          ["b", null]
        ])
      }
    })).pipe(withHttp))

  it.live("a 429 before the stream falls back too", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FaultServer.make({
        scripts: {
          "model-a": [FaultServer.rateLimited({ retryAfterSeconds: 5 })],
          "model-b": [FaultServer.ok({ deltas: ["b"] })]
        }
      })
      const result = yield* run(server)
      expect(Either.isRight(result) && deltas(result.right)).toEqual([["b", "b"]])
    })).pipe(withHttp))

  it.live("a stream that fails after its first delta is terminal: the caller never sees another model's text", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FaultServer.make({
        scripts: {
          "model-a": [FaultServer.faults.cutStream],
          "model-b": [FaultServer.ok({ deltas: ["SPLICED FROM B"] })]
        }
      })
      const seen: Array<Streaming.Event> = []
      const provider = yield* Effect.orDie(OpenAiCompatible.make({ baseUrl: server.baseUrl }))
      const result = yield* Rein.executeStream(request, contract({ candidates: ["a", "b"] })).pipe(
        Stream.runForEach((e) => Effect.sync(() => seen.push(e))),
        Effect.either,
        Effect.provide(Rein.layer({ catalog: cat, providers: { compat: provider } }))
      )
      expect(Either.isLeft(result)).toBe(true)
      expect(deltas(seen)).toEqual([["a", "partial "], ["a", "answer "]])
      expect(JSON.stringify(seen)).not.toContain("SPLICED")
      expect((yield* server.requests).map((r) => r.model)).toEqual(["model-a"])
    })).pipe(withHttp))

  it.live("a stream that ends without its terminator after a delta is a failure, never a clean end", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FaultServer.make({ scripts: { "model-a": [FaultServer.faults.endStreamEarly] } })
      const result = yield* run(server)
      expect(Either.isLeft(result)).toBe(true)
    })).pipe(withHttp))

  it.live("a consumer that stops mid-stream closes the connection", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FaultServer.make({ scripts: { "model-a": [FaultServer.faults.hangMidBody] } })
      const provider = yield* Effect.orDie(OpenAiCompatible.make({ baseUrl: server.baseUrl }))
      const first = yield* Rein.executeStream(request, contract()).pipe(
        Stream.take(1),
        Stream.runCollect,
        Effect.provide(Rein.layer({ catalog: cat, providers: { compat: provider } }))
      )
      expect(Chunk.toReadonlyArray(first).map((e) => e._tag)).toEqual(["Delta"])
      yield* server.waitUntil((rs) => rs[0]?.clientClosed === true, WITHIN)
    })).pipe(withHttp))

  it.live("an attempt timeout mid-stream closes the connection", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FaultServer.make({ scripts: { "model-a": [FaultServer.faults.hangMidBody] } })
      const result = yield* run(server, contract({ attemptTimeout: "300 millis" }))
      expect(Either.isLeft(result)).toBe(true)
      yield* server.waitUntil((rs) => rs[0]?.clientClosed === true, WITHIN)
    })).pipe(withHttp))
})
