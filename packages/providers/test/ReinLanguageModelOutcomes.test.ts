/**
 * The stream form of `withOutcomes`, against the loopback server speaking OpenAI Responses, under the
 * TestClock: `withOutcomesStream` fails a stream with Rein's outcome, `onStreamOutcome` reports how each
 * request ended — consumed to the end, cut after its first delta, stopped early by its consumer, answered after
 * a retry and a fallback — once, whichever way.
 */
import { LanguageModel } from "@effect/ai"
import { OpenAiClient, OpenAiLanguageModel } from "@effect/ai-openai"
import { describe, expect, it } from "@effect/vitest"
import { Catalog, Contract, Journal } from "@rein/core"
import { ReinLanguageModel } from "@rein/providers"
import { FaultServer } from "@rein/providers/testing"
import { Chunk, Effect, Either, Fiber, Option, Stream, TestClock } from "effect"
import { KEY } from "./dialects.js"
import { withHttp, WITHIN } from "./fixtures.js"

const capabilities = { contextWindow: 8_000, maxOutputTokens: 1_000, streaming: true }
const prices = { inputTokens: 1e-6, outputTokens: 2e-6 }
const catalog = Catalog.make({
  endpoints: [
    { id: "a", provider: "openai", model: "model-a", capabilities, prices },
    { id: "b", provider: "openai", model: "model-b", capabilities, prices }
  ]
})
/** One retry on the same endpoint after 1 s (no jitter), then the fallback to `b`. */
const contract = Contract.make({
  deadline: "60 seconds",
  attemptTimeout: "30 seconds",
  candidates: ["a", "b"],
  retry: { perEndpoint: 1, base: "1 second", max: "1 second", jitter: 0 }
})
const underRein = (server: FaultServer.FaultServer) =>
  ReinLanguageModel.layer({
    contract,
    catalog,
    models: { a: OpenAiLanguageModel.model, b: OpenAiLanguageModel.model },
    clients: OpenAiClient.layer({ apiKey: KEY, apiUrl: server.baseUrl }),
    inputTokens: () => 100,
    health: false
  })

/** A reservation: 100 input tokens and the endpoint's 1,000 output tokens at the catalog's prices. */
const RESERVED = 100 * 1e-6 + 1_000 * 2e-6

const textOf = (parts: Chunk.Chunk<{ readonly type: string }>) =>
  Chunk.toReadonlyArray(parts).flatMap((p) => "delta" in p && p.type === "text-delta" ? [String(p.delta)] : []).join("")

/**
 * Runs `consume` over `streamText` under Rein against a server answering `scripts`, the TestClock moved on
 * by a second whenever Rein waits: the result (Rein's outcome as the error), every outcome reported, the
 * requests the server saw.
 */
const run = <A>(
  scripts: Readonly<Record<string, ReadonlyArray<FaultServer.Fault>>>,
  consume: (
    parts: Stream.Stream<{ readonly type: string }, unknown, LanguageModel.LanguageModel>
  ) => Effect.Effect<A, unknown, LanguageModel.LanguageModel>
) =>
  Effect.scoped(Effect.gen(function*() {
    const server = yield* FaultServer.make({ scripts })
    const reported: Array<ReinLanguageModel.CallOutcome> = []
    const fiber = yield* LanguageModel.streamText({ prompt: "hello" }).pipe(
      ReinLanguageModel.withOutcomesStream,
      ReinLanguageModel.onStreamOutcome((outcome) => Effect.sync(() => void reported.push(outcome))),
      consume,
      Effect.either,
      Effect.provide(underRein(server)),
      Effect.fork
    )
    // Rein's waits (the backoff before the retry) are on the TestClock: move it on while the call runs.
    while (Option.isNone(yield* Fiber.poll(fiber))) {
      yield* Effect.promise(() => new Promise((resolve) => setImmediate(resolve)))
      if ((yield* TestClock.sleeps()).length > 0) yield* TestClock.adjust("1 second")
    }
    const result = yield* Fiber.join(fiber)
    return { result, reported, seen: yield* server.requests, server }
  }))

const attemptsOf = (outcome: ReinLanguageModel.CallOutcome | undefined) =>
  outcome?.attempts.map((a) => [a.endpoint, a.status, a.failure ?? null])

describe("ReinLanguageModel: a stream's outcome", () => {
  it.effect("a stream consumed to the end: Completed, with its endpoint, usage, cost and attempt", () =>
    Effect.gen(function*() {
      const { reported, result } = yield* run(
        { "model-a": [FaultServer.ok({ deltas: ["a", "b", "c"], usage: { inputTokens: 10, outputTokens: 3 } })] },
        Stream.runCollect
      )
      expect(textOf(Either.getOrThrow(result))).toBe("abc")
      expect(reported.length).toBe(1)
      const outcome = reported[0]!
      expect(outcome._tag).toBe("Completed")
      if (outcome._tag !== "Completed") return
      expect([outcome.endpoint, outcome.usage, outcome.finishReason]).toEqual([
        "a",
        { inputTokens: 10, outputTokens: 3 },
        "stop"
      ])
      expect(outcome.cost).toBeCloseTo(10 * 1e-6 + 3 * 2e-6, 12)
      expect(attemptsOf(outcome)).toEqual([["a", "success", null]])
      expect(outcome.requestId).toMatch(/^req-/)
    }).pipe(withHttp))

  it.effect("a stream cut after its first delta fails with FailedSafe, the outcome reported; b is never asked", () =>
    Effect.gen(function*() {
      const { reported, result, seen } = yield* run(
        { "model-a": [FaultServer.faults.endStreamEarly], "model-b": [FaultServer.ok()] },
        Stream.runCollect
      )
      expect(Either.isLeft(result)).toBe(true)
      const error = Either.isLeft(result) ? result.left : undefined
      expect(reported.length).toBe(1)
      expect(reported[0]).toBe(error)
      expect(reported[0]!._tag).toBe("FailedSafe")
      expect(attemptsOf(reported[0])?.map(([endpoint, status]) => [endpoint, status])).toEqual([["a", "failure"]])
      expect(seen.map((r) => r.model)).toEqual(["model-a"])
    }).pipe(withHttp))

  it.effect("a consumer that stops early: Interrupted, the attempt interrupted and charged, the connection closed", () =>
    Effect.gen(function*() {
      const deltas = Array.from({ length: 50 }, (_, i) => `${i} `)
      const { reported, result, server } = yield* run(
        { "model-a": [FaultServer.slowDrip({ deltas, every: "20 millis" })] },
        (parts) => Stream.runCollect(Stream.take(Stream.filter(parts, (p) => p.type === "text-delta"), 1))
      )
      expect(textOf(Either.getOrThrow(result))).toBe("0 ")
      expect(reported.length).toBe(1)
      expect(reported[0]!._tag).toBe("Interrupted")
      expect(attemptsOf(reported[0])).toEqual([["a", "interrupted", null]])
      // The answer's usage never arrived: the whole reservation stays charged.
      expect(reported[0]!.attempts[0]!.charged.cost).toBeCloseTo(RESERVED, 12)
      const closed = yield* server.waitUntil((rs) => rs.length === 1 && rs[0]!.clientClosed, WITHIN)
      expect(closed.length).toBe(1)
    }).pipe(withHttp))

  it.effect("a stream answered after a retry and a fallback before its first delta: Completed from b, every attempt", () =>
    Effect.gen(function*() {
      const { reported, result, seen } = yield* run(
        {
          "model-a": [FaultServer.faults.overloaded, FaultServer.faults.overloaded],
          "model-b": [FaultServer.ok({ deltas: ["from ", "b"] })]
        },
        Stream.runCollect
      )
      expect(textOf(Either.getOrThrow(result))).toBe("from b")
      expect(seen.map((r) => r.model)).toEqual(["model-a", "model-a", "model-b"])
      expect(reported.length).toBe(1)
      const outcome = reported[0]!
      expect(outcome._tag).toBe("Completed")
      expect(outcome._tag === "Completed" && outcome.endpoint).toBe("b")
      expect(attemptsOf(outcome)).toEqual([
        ["a", "failure", "overloaded"],
        ["a", "failure", "overloaded"],
        ["b", "success", null]
      ])
      expect(outcome.attempts[0]!.backoffMillis).toBe(1_000)
    }).pipe(withHttp))

  it.effect("a journal in the context still gets every record", () =>
    Effect.gen(function*() {
      const { records, reported } = yield* Effect.gen(function*() {
        const { reported } = yield* run({ "model-a": [FaultServer.ok({ deltas: ["x"] })] }, Stream.runDrain)
        return { reported, records: yield* Effect.flatMap(Journal.MemoryJournal, (j) => j.records) }
      }).pipe(Effect.provide(Journal.layerMemory))
      expect(records.length).toBe(1)
      expect(reported.length).toBe(1)
      expect(records[0]!.requestId).toBe(reported[0]!.requestId)
      expect(records[0]!.attempts).toEqual(reported[0]!.attempts)
      expect(records[0]!.outcome._tag).toBe("Completion")
    }).pipe(withHttp))
})
