import { describe, expect, it } from "@effect/vitest"
import { Journal, Rein } from "@rein/core"
import type { Provider } from "@rein/core"
import { Effect, Either, Layer, Schema, Stream } from "effect"
import { catalog, contract, endpoint } from "./fixtures.js"

/** A provider whose answer per endpoint is given by `answers` (and that counts its calls). */
const scripted = (answers: Record<string, Partial<Provider.ProviderResponse>>) => {
  const calls: Array<string> = []
  const provider: Provider.Provider = {
    internalMaxAttempts: 1,
    call: (_request, context) =>
      Effect.sync(() => {
        calls.push(context.endpoint.id)
        return { text: "ok", usage: { inputTokens: 5, outputTokens: 7 }, ...answers[context.endpoint.id] }
      }),
    stream: (_request, context) =>
      Stream.fromIterable<Provider.StreamPart>([
        { delta: "cut", payload: "p1" },
        {
          delta: "",
          done: true,
          usage: { inputTokens: 5, outputTokens: 7 },
          finishReason: answers[context.endpoint.id]?.finishReason ?? "stop"
        }
      ])
  }
  return { calls, provider }
}

const run = (
  request: Provider.CompletionRequest,
  overrides: Parameters<typeof contract>[0],
  answers: Record<string, Partial<Provider.ProviderResponse>>,
  cat = catalog(endpoint("a"), endpoint("b", { maxOutputTokens: 4000 }))
) => {
  const { calls, provider } = scripted(answers)
  return Effect.map(
    Effect.either(Rein.execute(request, contract(overrides))).pipe(
      Effect.provide(Rein.layer({ catalog: cat, providers: { fake: provider } }))
    ),
    (result) => ({ result, calls })
  )
}

describe("answers: finish reasons, tools, response formats", () => {
  it.effect("a length finish is a failure of kind truncated by default: no retry, fallback to a larger output limit", () =>
    Effect.gen(function*() {
      const { calls, result } = yield* run({ prompt: "p", inputTokens: 10 }, {}, { a: { finishReason: "length" } })
      expect(calls).toEqual(["a", "b"])
      const completion = Either.getOrThrow(result)
      expect(completion.endpoint).toBe("b")
      expect(completion.attempts[0]).toMatchObject({
        failure: "truncated",
        code: "finish_length",
        finishReason: "length"
      })
      expect(completion.attempts[0]!.usage).toEqual({ inputTokens: 5, outputTokens: 7 })
    }))

  it.effect("a truncated answer does not fall back to a candidate whose output limit is not larger", () =>
    Effect.gen(function*() {
      const { calls, result } = yield* run(
        { prompt: "p", inputTokens: 10, maxOutputTokens: 500 },
        {},
        { a: { finishReason: "length" } }
      )
      expect(calls).toEqual(["a"])
      expect(Either.isLeft(result) && result.left._tag).toBe("PlanExhausted")
    }))

  it.effect("with truncation: accept, a length finish is a success annotated with its finish reason", () =>
    Effect.gen(function*() {
      const { calls, result } = yield* run({ prompt: "p", inputTokens: 10 }, { truncation: "accept" }, {
        a: { finishReason: "length" }
      })
      expect(calls).toEqual(["a"])
      const completion = Either.getOrThrow(result)
      expect(completion.finishReason).toBe("length")
      expect(completion.attempts[0]).toMatchObject({ status: "success", finishReason: "length" })
    }))

  it.effect("a request with tools is refused by an endpoint without tools and runs on one with them", () =>
    Effect.gen(function*() {
      const cat = catalog(endpoint("a", { tools: false }), endpoint("b"))
      const toolCalls = [{ id: "c1", name: "lookup", params: { secret: "CANARY" } }, {
        id: "c2",
        name: "lookup",
        params: {}
      }]
      const { calls, result } = yield* run(
        { prompt: "p", inputTokens: 10, tools: [{ name: "lookup" }] },
        {},
        { b: { text: "", finishReason: "tool-calls", toolCalls } },
        cat
      )
      expect(calls).toEqual(["b"])
      const completion = Either.getOrThrow(result)
      expect(completion.toolCalls).toEqual(toolCalls)
      expect(completion.attempts[0]!.toolCalls).toEqual([{ name: "lookup", count: 2 }])
      const only = yield* Effect.either(
        run({ prompt: "p", inputTokens: 10, tools: [{ name: "lookup" }] }, { candidates: ["a"] }, {}, cat)
      )
      const refused = Either.getOrThrow(only).result
      expect(Either.isLeft(refused) && refused.left).toMatchObject({ _tag: "Refused" })
      expect(Either.isLeft(refused) ? refused.left.reason : "").toContain("capable: no tool support")
    }))

  it.effect("a JSON response format needs structured output; a provider-defined tool only its vendor", () =>
    Effect.gen(function*() {
      const cat = catalog(
        endpoint("a", { structuredOutput: false }),
        { ...endpoint("b", { provider: "fake" }), vendor: "anthropic" },
        { ...endpoint("c", { provider: "fake" }), vendor: "openai" }
      )
      const json = yield* run({ prompt: "p", inputTokens: 10, responseFormat: "json" }, {}, {}, cat)
      expect(json.calls).toEqual(["b"])
      const vendor = yield* run(
        { prompt: "p", inputTokens: 10, tools: [{ name: "web_search", vendor: "openai" }] },
        { candidates: ["a", "b", "c"] },
        {},
        cat
      )
      expect(vendor.calls).toEqual(["c"])
      const plain = yield* run({ prompt: "p", inputTokens: 10 }, { candidates: ["a", "b", "c"] }, {}, cat)
      expect(plain.calls).toEqual(["a"])
    }))

  it.effect("the journal keeps finish reasons and tool-call counts, never tool parameters or text", () =>
    Effect.gen(function*() {
      const { provider } = scripted({
        a: { text: "ANSWER-CANARY", finishReason: "tool-calls", toolCalls: [{ id: "1", name: "t", params: "CANARY" }] }
      })
      const records = yield* Effect.gen(function*() {
        yield* Rein.execute({ prompt: "PROMPT-CANARY", inputTokens: 10, tools: [{ name: "t" }] }, contract())
        return yield* Effect.flatMap(Journal.MemoryJournal, (j) => j.records)
      }).pipe(
        Effect.provide(Layer.merge(
          Rein.layer({ catalog: catalog(endpoint("a"), endpoint("b")), providers: { fake: provider } }),
          Journal.layerMemory
        ))
      )
      const line = JSON.stringify(Schema.encodeSync(Journal.JournalRecord)(records[0]!))
      expect(line).not.toContain("CANARY")
      expect(records[0]!.version).toBe(Journal.VERSION)
      expect(records[0]!.attempts[0]).toMatchObject({
        finishReason: "tool-calls",
        toolCalls: [{ name: "t", count: 1 }]
      })
      expect(records[0]!.outcome).toMatchObject({ _tag: "Completion", finishReason: "tool-calls" })
      const decoded = Journal.decodeLine(line)
      expect(Either.isRight(decoded) && Journal.replay(decoded.right)).toEqual(Either.right(1))
      // A version-1 line (no `truncated` row in its table) still reads.
      const v1 = JSON.parse(line)
      v1.version = 1
      delete v1.spec.table.truncated
      expect(Either.isRight(Journal.decodeLine(JSON.stringify(v1)))).toBe(true)
    }))

  it.effect("a stream cut at the output limit after commit is a failure, not a clean end", () =>
    Effect.gen(function*() {
      const { provider } = scripted({ a: { finishReason: "length" } })
      const layer = Rein.layer({ catalog: catalog(endpoint("a"), endpoint("b")), providers: { fake: provider } })
      const events: Array<unknown> = []
      const result = yield* Rein.executeStream({ prompt: "p", inputTokens: 10 }, contract()).pipe(
        Stream.runForEach((e) => Effect.sync(() => events.push(e))),
        Effect.either,
        Effect.provide(layer)
      )
      expect(events).toEqual([{ _tag: "Delta", text: "cut", endpoint: "a", payload: "p1" }])
      expect(Either.isLeft(result) && result.left).toMatchObject({ _tag: "FailedSafe" })
      expect(Either.isLeft(result) && result.left.attempts[0]).toMatchObject({ failure: "truncated" })
    }))
})
