/**
 * An attacker's and a real user's pass on `ReinLanguageModel`, against the loopback server speaking the
 * OpenAI Responses wire format: hostile tool calls, structured output that does not match its schema, agent
 * loops under one shared contract, streams cut after a tool call, cancellation, and what reaches the journal,
 * spans and logs.
 */
import { LanguageModel, Prompt, Tool, Toolkit } from "@effect/ai"
import type { Response } from "@effect/ai"
import { AnthropicClient, AnthropicLanguageModel } from "@effect/ai-anthropic"
import { OpenAiClient, OpenAiLanguageModel } from "@effect/ai-openai"
import { describe, expect, it } from "@effect/vitest"
import { Budget, Catalog, Contract, Journal, Refine } from "@rein/core"
import { ReinLanguageModel } from "@rein/providers"
import * as EffectAiAnthropic from "@rein/providers/EffectAiAnthropic"
import { anthropic, FaultServer, openaiResponses } from "@rein/providers/testing"
import { Effect, Either, Fiber, Layer, Logger, Schedule, Schema, Stream, TestClock } from "effect"
import { awaitSleepAt, KEY } from "./dialects.js"
import { attemptContext, recordingTracer, withHttp } from "./fixtures.js"

const capabilities = {
  contextWindow: 8_000,
  maxOutputTokens: 1_000,
  streaming: true,
  tools: true,
  structuredOutput: true
}
const prices = { inputTokens: 1e-6, outputTokens: 2e-6 }
const catalog = Catalog.make({
  endpoints: [
    { id: "a", provider: "openai", model: "model-a", capabilities, prices },
    { id: "b", provider: "openai", model: "model-b", capabilities, prices }
  ]
})
const contract = Contract.make({
  deadline: "10 seconds",
  attemptTimeout: "2 seconds",
  candidates: ["a", "b"],
  retry: { perEndpoint: 0, base: "10 millis", max: "50 millis", jitter: 0 }
})
/** Every call is bounded at 100 input tokens: a reservation of 100 + 1,000 tokens. */
const underRein = (server: FaultServer.FaultServer) =>
  ReinLanguageModel.layer({
    contract,
    catalog,
    models: { a: OpenAiLanguageModel.model, b: OpenAiLanguageModel.model },
    clients: OpenAiClient.layer({ apiKey: KEY, apiUrl: server.baseUrl }),
    inputTokens: () => 100
  })

const records = Effect.flatMap(Journal.MemoryJournal, (j) => j.records)

/**
 * Runs `f` against a fresh server with `scripts`, under Rein and one shared contract, with a shared budget
 * of 1M tokens to read, a recording tracer and a logger: what was charged, seen, journaled, traced, logged.
 */
const run = <A, E>(
  scripts: Readonly<Record<string, ReadonlyArray<FaultServer.Fault>>>,
  f: Effect.Effect<A, E, LanguageModel.LanguageModel>
) =>
  Effect.scoped(Effect.gen(function*() {
    const server = yield* FaultServer.make({ scripts })
    const budget = yield* Budget.make({ tokens: 1_000_000 })
    const { spans, tracer } = recordingTracer()
    const logs: Array<unknown> = []
    const result = yield* f.pipe(
      Refine.sharing(contract),
      Effect.provideService(Budget.SharedBudget, budget),
      ReinLanguageModel.withOutcomes,
      Effect.either,
      Effect.provide(underRein(server)),
      Effect.withTracer(tracer),
      Effect.provide(Logger.replace(Logger.defaultLogger, Logger.make((entry) => void logs.push(entry.message))))
    )
    const left = yield* budget.left
    return {
      result,
      charged: 1_000_000 - left.tokens!,
      seen: yield* server.requests,
      records: yield* records,
      spans,
      logs
    }
  })).pipe(withHttp, Effect.provide(Journal.layerMemory))

const CANARY = "CANARY-lm-41f7"

/**
 * Where the canary is in what Rein keeps: the errors the caller got, the journal, the spans, the logs. The
 * one exception is `@effect/ai`'s own `Toolkit.handle` span, which annotates the tool's parameters (as
 * under `LanguageModel.make`; not Rein's span: a design question in this branch's report).
 */
const leaked = (
  kept: {
    readonly records: unknown
    readonly spans: ReadonlyArray<{ readonly name: string }>
    readonly logs: unknown
  },
  errors: unknown = null
) =>
  [
    ["errors", errors],
    ["journal", kept.records],
    ["spans", kept.spans.filter((s) => s.name !== "Toolkit.handle")],
    ["logs", kept.logs]
  ].filter(([, v]) => JSON.stringify(v).includes(CANARY)).map(([where]) => where)

const Weather = Tool.make("weather", { parameters: { city: Schema.String }, success: Schema.String })
const toolkit = Toolkit.make(Weather)
const weatherCall = (id: string, args: unknown, name = "weather") => ({ id, name, arguments: JSON.stringify(args) })

const Forecast = Schema.Struct({ city: Schema.String, degrees: Schema.Number })

describe("ReinLanguageModel under attack (loopback OpenAI Responses)", () => {
  it.live("generateObject whose JSON does not match the schema: malformed, falls back, charged its reported usage", () =>
    Effect.gen(function*() {
      const { charged, records: [record], result } = yield* run(
        {
          "model-a": [
            FaultServer.ok({ text: JSON.stringify({ city: "Oslo" }), usage: { inputTokens: 7, outputTokens: 4 } })
          ],
          "model-b": [
            FaultServer.ok({
              text: JSON.stringify({ city: "Oslo", degrees: 21 }),
              usage: { inputTokens: 9, outputTokens: 3 }
            })
          ]
        },
        LanguageModel.generateObject({ prompt: "forecast?", schema: Forecast, objectName: "forecast" })
      )
      expect(Either.isRight(result) && result.right.value).toEqual({ city: "Oslo", degrees: 21 })
      expect(record!.attempts.map((a) => [a.endpoint, a.failure, a.usage])).toEqual([
        ["a", "malformed_response", { inputTokens: 7, outputTokens: 4 }],
        ["b", null, { inputTokens: 9, outputTokens: 3 }]
      ])
      // The usage the vendor reported, not the 1,100-token worst case of an answer of unknown usage.
      expect(charged).toBe(7 + 4 + 9 + 3)
    }))
  it.live("hostile tool calls: an unknown tool or parameters that do not decode are malformed answers (fallen back from, no handler runs); a plan that ends on one gives bare make's error; no prose kept", () =>
    Effect.gen(function*() {
      let handled = 0
      const kept = yield* run(
        {
          "model-a": [
            FaultServer.ok({ text: "", toolCalls: [weatherCall("c1", { city: "Oslo" }, CANARY)] }),
            FaultServer.ok({ text: "", toolCalls: [{ id: "c1", name: "weather", arguments: `{"city": ${CANARY}` }] })
          ],
          "model-b": [
            FaultServer.ok({ text: "", toolCalls: [weatherCall("c1", { city: 5, note: CANARY })] }),
            FaultServer.ok({ text: "", toolCalls: [weatherCall("c1", { city: [CANARY] })] })
          ]
        },
        Effect.forEach(
          [{}, { toolChoice: { tool: "weather" } } as const],
          (choice) => Effect.either(LanguageModel.generateText({ prompt: "weather?", toolkit, ...choice }))
        ).pipe(Effect.provide(toolkit.toLayer({ weather: () => Effect.sync(() => `${++handled}`) })))
      )
      expect(handled).toBe(0)
      // A 2xx body that does not decode against the caller's toolkit is malformed (DESIGN's table: fall back);
      // unparsable arguments fail the vendor's own decode, malformed too. Each plan ends on b's answer with
      // undecodable parameters: the caller gets what bare `make` gives for it (`Toolkit.handle`'s error).
      expect(kept.records.map((r) => r.attempts.map((a) => [a.endpoint, a.failure, a.code]))).toEqual([
        [["a", "malformed_response", "tool_call_rejected"], ["b", "malformed_response", "tool_call_rejected"]],
        [["a", "malformed_response", "malformed_output"], ["b", "malformed_response", "tool_call_rejected"]]
      ])
      const errors = Either.isRight(kept.result) ? kept.result.right.map((r) => Either.isLeft(r) && r.left) : []
      expect(errors.map((e) => e && [e._tag, e.module, e.method])).toEqual([
        ["MalformedOutput", "Toolkit", "weather.handle"],
        ["MalformedOutput", "Toolkit", "weather.handle"]
      ])
      // The caller's errors are bare's, naming the call as bare's do, and so are the exits of `@effect/ai`'s own
      // spans (`LanguageModel.generateText`, `Toolkit.handle`, as bare's); Rein's records, spans and logs keep
      // none of it.
      const own = { ...kept, spans: kept.spans.filter((s) => !s.name.startsWith("LanguageModel.")) }
      expect(leaked(own)).toEqual([])
    }))
  it.live("a streamed call to an unknown tool ends the stream with bare make's error: after its first visible delta (committed): the attempt fails malformed_response / tool_call_rejected, no fallback, no prose kept", () =>
    Effect.gen(function*() {
      let handled = 0
      const kept = yield* run(
        {
          "model-a": [
            FaultServer.ok({ deltas: ["Checking"], toolCalls: [weatherCall("c1", { city: "Oslo" }, CANARY)] })
          ],
          "model-b": [FaultServer.ok({ deltas: ["fine"] })]
        },
        Stream.runCollect(LanguageModel.streamText({ prompt: "weather?", toolkit })).pipe(
          Effect.provide(toolkit.toLayer({ weather: () => Effect.sync(() => `${++handled}`) }))
        )
      )
      expect(handled).toBe(0)
      expect(kept.seen.map((r) => r.model)).toEqual(["model-a"])
      expect(kept.records.map((r) => r.attempts.map((a) => [a.endpoint, a.failure, a.code]))).toEqual([
        [["a", "malformed_response", "tool_call_rejected"]]
      ])
      const error = Either.isLeft(kept.result) ? kept.result.left : undefined
      expect(error && [error._tag, "module" in error && error.module, "method" in error && error.method]).toEqual([
        "MalformedOutput",
        "LanguageModel",
        "streamText"
      ])
      const own = { ...kept, spans: kept.spans.filter((s) => !s.name.startsWith("LanguageModel.")) }
      expect(leaked(own)).toEqual([])
    }))
  it.live("an answer calling a tool the toolkit lacks falls back: the next candidate's answer is the call's, the rejected one's handlers never run, its usage charged", () =>
    Effect.gen(function*() {
      const handled: Array<string> = []
      const kept = yield* run(
        {
          "model-a": [
            FaultServer.ok({
              text: "",
              toolCalls: [weatherCall("c1", { city: "Oslo" }), weatherCall("c2", { city: "Rome" }, CANARY)],
              usage: { inputTokens: 7, outputTokens: 4 }
            })
          ],
          "model-b": [
            FaultServer.ok({
              text: "",
              toolCalls: [weatherCall("c1", { city: "Bergen" })],
              usage: { inputTokens: 9, outputTokens: 3 }
            })
          ]
        },
        LanguageModel.generateText({ prompt: "weather?", toolkit }).pipe(
          Effect.provide(toolkit.toLayer({ weather: ({ city }) => Effect.sync(() => (handled.push(city), city)) }))
        )
      )
      expect(handled).toEqual(["Bergen"])
      expect(Either.isRight(kept.result) && kept.result.right.toolResults.map((r) => r.result)).toEqual(["Bergen"])
      expect(kept.records.map((r) => r.attempts.map((a) => [a.endpoint, a.failure, a.code, a.usage]))).toEqual([
        [
          ["a", "malformed_response", "tool_call_rejected", { inputTokens: 7, outputTokens: 4 }],
          ["b", null, null, { inputTokens: 9, outputTokens: 3 }]
        ]
      ])
      expect(kept.charged).toBe(7 + 4 + 9 + 3)
      expect(leaked(kept)).toEqual([])
    }))
  it.live(
    "5,000 tool calls in one answer: each handled exactly once; the journal keeps a count, not params",
    () =>
      Effect.gen(function*() {
        let handled = 0
        const calls = Array.from({ length: 5_000 }, (_, i) => weatherCall(`c${i}`, { city: `${CANARY}-${i}` }))
        const kept = yield* run(
          { "model-a": [FaultServer.ok({ text: "", toolCalls: calls })] },
          LanguageModel.generateText({ prompt: "weather?", toolkit }).pipe(
            Effect.provide(toolkit.toLayer({ weather: ({ city }) => Effect.sync(() => (handled++, city)) }))
          )
        )
        const response = Either.getOrThrow(kept.result)
        expect([response.toolCalls.length, response.toolResults.length, handled]).toEqual([5_000, 5_000, 5_000])
        expect(kept.records.map((r) => r.attempts.map((a) => a.toolCalls))).toEqual([[[{
          name: "weather",
          count: 5_000
        }]]])
        expect(leaked(kept)).toEqual([])
      }),
    60_000
  )

  it.live("an agent loop whose turn falls back: the prompt (system, text, image) reaches both endpoints unchanged, each turn is charged once", () =>
    Effect.gen(function*() {
      const prompt = Prompt.make([
        { role: "system", content: `be brief ${CANARY}` },
        {
          role: "user",
          content: [
            { type: "text", text: `what is in this picture, ${CANARY}?` },
            { type: "file", mediaType: "image/png", data: new Uint8Array([137, 80, 78, 71]), fileName: "x.png" }
          ]
        }
      ])
      const kept = yield* run(
        {
          "model-a": [
            FaultServer.status(503, { type: "server_error" }),
            FaultServer.ok({ text: "a cat", usage: { inputTokens: 50, outputTokens: 5 } })
          ],
          "model-b": [FaultServer.ok({
            text: "",
            toolCalls: [weatherCall("c1", { city: CANARY })],
            usage: { inputTokens: 40, outputTokens: 10 }
          })]
        },
        Effect.gen(function*() {
          let conversation = prompt
          for (let turn = 1; turn <= 4; turn++) {
            const response = yield* LanguageModel.generateText({ prompt: conversation, toolkit })
            conversation = Prompt.merge(conversation, Prompt.fromResponseParts(response.content))
            if (response.toolCalls.length === 0) return response.text
          }
          return "gave up"
        }).pipe(Effect.provide(toolkit.toLayer({ weather: ({ city }) => Effect.succeed(`sunny in ${city}`) })))
      )
      expect(Either.getOrThrow(kept.result)).toBe("a cat")
      const inputs = kept.seen.map((r) => JSON.stringify((r.body as { readonly input: unknown }).input))
      expect(kept.seen.map((r) => r.model)).toEqual(["model-a", "model-b", "model-a"])
      expect(inputs[1]).toBe(inputs[0])
      expect(inputs[0]).toContain("data:image/png;base64,iVBORw==")
      expect(inputs[2]).toContain(`sunny in ${CANARY}`)
      // Turn 1: a's 503 may have been billed (usage unknown: its 1,100-token reservation), b's reported usage
      // once; turn 2: a's reported usage.
      expect(kept.charged).toBe(1_100 + 50 + 55)
      expect(kept.records.map((r) => r.attempts.map((a) => [a.endpoint, a.failure]))).toEqual([
        [["a", "overloaded"], ["b", null]],
        [["a", null]]
      ])
      expect(leaked(kept)).toEqual([])
    }))

  it.live("a stream cut after a tool call is committed: the handler ran once, the failure is terminal, b is never asked", () =>
    Effect.gen(function*() {
      let handled = 0
      const events = openaiResponses.dialect.events(
        "model-a",
        { deltas: [], usage: null, toolCalls: [weatherCall("c1", { city: "Oslo" })], finish: "tool_calls" },
        true
      )
      const types: Array<string> = []
      const kept = yield* run(
        {
          "model-a": [FaultServer.rawSse([...events.head, ...events.tail.slice(0, -1)].join(""))],
          "model-b": [FaultServer.ok({ text: "never" })]
        },
        LanguageModel.streamText({ prompt: "weather?", toolkit }).pipe(
          Stream.runForEach((part) => Effect.sync(() => types.push(part.type))),
          Effect.provide(toolkit.toLayer({ weather: () => Effect.sync(() => `${++handled}`) }))
        )
      )
      expect(Either.isLeft(kept.result) && kept.result.left).toMatchObject({ _tag: "FailedSafe" })
      expect(handled).toBe(1)
      expect(types.slice(-2)).toEqual(["tool-call", "tool-result"])
      expect(kept.seen.map((r) => r.model)).toEqual(["model-a"])
    }))

  it.live("cancelling the caller interrupts the tool handlers in flight (generateText and streamText)", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FaultServer.make({
        faults: [
          FaultServer.ok({
            text: "",
            toolCalls: [weatherCall("c1", { city: "Oslo" }), weatherCall("c2", { city: "Rome" })]
          }),
          FaultServer.ok({ text: "", toolCalls: [weatherCall("c1", { city: "Oslo" })] })
        ]
      })
      let started = 0
      let interrupted = 0
      const handlers = toolkit.toLayer({
        weather: () =>
          Effect.sync(() => started++).pipe(
            Effect.zipRight(Effect.never),
            Effect.onInterrupt(() => Effect.sync(() => interrupted++))
          )
      })
      const calls = [
        LanguageModel.generateText({ prompt: "weather?", toolkit, concurrency: "unbounded" }),
        Stream.runDrain(LanguageModel.streamText({ prompt: "weather?", toolkit }))
      ]
      for (const [i, call] of calls.entries()) {
        const fiber = yield* call.pipe(Effect.provide(underRein(server)), Effect.provide(handlers), Effect.fork)
        yield* Effect.repeat(Effect.sync(() => started), {
          until: (n) => n === [2, 3][i],
          schedule: Schedule.spaced("5 millis")
        })
        yield* Fiber.interrupt(fiber)
        expect([started, interrupted]).toEqual([[2, 2], [3, 3]][i])
      }
    })).pipe(withHttp))
  it.effect("a handler that outlives the shared deadline: the next turn fails DeadlineExceeded at admission, with no HTTP request", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FaultServer.make({
        faults: [FaultServer.ok({ text: "", toolCalls: [weatherCall("c1", { city: "Oslo" })] }), FaultServer.ok()]
      })
      const slow = toolkit.toLayer({ weather: () => Effect.as(Effect.sleep("3 seconds"), "sunny") })
      const agent = Effect.gen(function*() {
        let conversation = Prompt.make("weather?")
        for (let turn = 1; turn <= 3; turn++) {
          const response = yield* LanguageModel.generateText({ prompt: conversation, toolkit })
          conversation = Prompt.merge(conversation, Prompt.fromResponseParts(response.content))
          if (response.toolCalls.length === 0) return response.text
        }
        return "gave up"
      })
      const fiber = yield* agent.pipe(
        Refine.sharing(Contract.make({ deadline: "2 seconds", candidates: ["a", "b"] })),
        ReinLanguageModel.withOutcomes,
        Effect.either,
        Effect.provide(underRein(server)),
        Effect.provide(slow),
        Effect.fork
      )
      // The handler sleeps on the test clock, from 0: wait (on the live clock) until it does.
      yield* awaitSleepAt(3_000)
      yield* TestClock.adjust("3 seconds")
      const outcome = yield* Fiber.join(fiber)
      expect(Either.isLeft(outcome) && outcome.left).toMatchObject({ _tag: "DeadlineExceeded", phase: "admission" })
      expect((yield* server.requests).length).toBe(1)
    })).pipe(withHttp))
})

describe("ReinLanguageModel: a streamed answer is bounded whatever its deltas carry", () => {
  /**
   * An Anthropic stream whose one tool call's parameters arrive in `pieces` deltas of 100 bytes
   * (`@effect/ai-anthropic` accumulates them until the block stops).
   */
  const manyParamDeltas = (pieces: number) => {
    const events = anthropic.dialect.events("model-a", {
      deltas: [],
      usage: null,
      finish: "tool_calls",
      toolCalls: [{ id: "toolu_1", name: "weather", arguments: "{}" }]
    }, true)
    const event = (partial_json: string) =>
      `event: content_block_delta\ndata: ${
        JSON.stringify({ type: "content_block_delta", index: 1, delta: { type: "input_json_delta", partial_json } })
      }\n\n`
    const deltas = [
      event("{\"city\":\""),
      ...Array.from({ length: pieces }, () => event("x".repeat(100))),
      event("\"}")
    ]
    const [stopText, startTool, , stopTool, ...end] = events.tail
    return FaultServer.rawSse([...events.head, stopText!, startTool!, ...deltas, stopTool!, ...end].join(""))
  }

  const bounded = <R>(model: Layer.Layer<LanguageModel.LanguageModel, never, R>, provider: string) =>
    ReinLanguageModel.layer({
      contract: Contract.make({ deadline: "30 seconds", candidates: ["a"], retry: { perEndpoint: 0 } }),
      catalog: Catalog.make({ endpoints: [{ id: "a", provider, model: "model-a", capabilities, prices }] }),
      models: { a: model },
      inputTokens: () => 100,
      maxResponseBytes: 10_000
    })

  /** Drains `streamText` with the weather toolkit: the outcome, the handler runs, the delta bytes seen. */
  const drain = <R>(layer: Layer.Layer<LanguageModel.LanguageModel, never, R>) =>
    Effect.gen(function*() {
      let handled = 0
      let bytes = 0
      const result = yield* LanguageModel.streamText({ prompt: "weather?", toolkit }).pipe(
        Stream.runForEach((part) =>
          Effect.sync(() => {
            if (part.type === "tool-params-delta" || part.type === "reasoning-delta") bytes += part.delta.length
          })
        ),
        ReinLanguageModel.withOutcomes,
        Effect.either,
        Effect.provide(layer),
        Effect.provide(toolkit.toLayer({ weather: () => Effect.sync(() => `${++handled}`) }))
      )
      const failure = Either.isLeft(result)
        ? [result.left._tag, (result.left as { readonly lastFailure?: unknown }).lastFailure]
        : "ok"
      return { failure, handled, bytes }
    })

  const tooLarge = ["FailedSafe", { kind: "malformed_response", code: "body_too_large" }]

  it.live(
    "100 KB of tool-call parameters in small deltas fail body_too_large at 10 KB, as text does; no handler runs",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const server = yield* FaultServer.make({ faults: [manyParamDeltas(1_000)] })
        const model = Layer.provide(
          AnthropicLanguageModel.model("model-a"),
          AnthropicClient.layer({ apiKey: KEY, apiUrl: server.url })
        )
        const { bytes, failure, handled } = yield* drain(bounded(model, "anthropic"))
        expect(failure).toMatchObject(tooLarge)
        expect(handled).toBe(0)
        expect(bytes).toBeLessThanOrEqual(10_000)
      })).pipe(withHttp),
    60_000
  )

  it.effect("100 KB of reasoning in small deltas fail body_too_large at 10 KB, as text does", () =>
    Effect.gen(function*() {
      const piece = "x".repeat(100)
      const parts: Array<Response.StreamPartEncoded> = [
        { type: "reasoning-start", id: "r" },
        ...Array.from(
          { length: 1_000 },
          (): Response.StreamPartEncoded => ({ type: "reasoning-delta", id: "r", delta: piece })
        ),
        { type: "reasoning-end", id: "r" },
        { type: "finish", reason: "stop", usage: { inputTokens: 1, outputTokens: 1, totalTokens: 2 } }
      ]
      const model = Layer.effect(
        LanguageModel.LanguageModel,
        LanguageModel.make({
          generateText: () => Effect.dieMessage("streams only"),
          streamText: () => Stream.fromIterable(parts)
        })
      )
      const { bytes, failure } = yield* drain(bounded(model, "memory"))
      expect(failure).toMatchObject(tooLarge)
      expect(bytes).toBeLessThanOrEqual(10_000)
    }))

  it.live(
    "the EffectAi bridge bounds a stream's tool-call parameters as its text",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const server = yield* FaultServer.make({ faults: [manyParamDeltas(1_000)] })
        const provider = yield* EffectAiAnthropic.make({
          apiUrl: server.url,
          apiKey: KEY,
          maxResponseBytes: 10_000,
          toolkit
        })
        const endpoint = catalog.byId.get("a")!
        const result = yield* Effect.either(Stream.runDrain(provider.stream!(
          { prompt: "weather?", inputTokens: 100, tools: [{ name: "weather", vendor: undefined }], toolChoice: "auto" },
          attemptContext(endpoint, 20_000)
        )))
        expect(Either.isLeft(result) ? result.left.code : "answered in full").toBe("body_too_large")
      })).pipe(withHttp),
    60_000
  )
})

describe("a vendor error code that is not a documented one is never recorded (loopback OpenAI Responses)", () => {
  // A provider or proxy that echoes the API key or a word of the prompt in its `error.code`: short, no spaces,
  // it looks like a machine code, and is not one.
  const KEY_ECHO = "sk-test-SECRET123"
  const PROMPT_WORD = "zanzibarquokka"
  const kept = (r: { readonly records: unknown; readonly spans: unknown; readonly logs: unknown }, errors: unknown) =>
    JSON.stringify([r.records, r.spans, r.logs, errors])

  it.live("an echoed key or prompt word is `other`, the kind still from the status; a documented code is kept", () =>
    Effect.gen(function*() {
      const r = yield* run(
        {
          "model-a": [FaultServer.status(429, { code: KEY_ECHO, type: "rate_limit_error" })],
          "model-b": [FaultServer.status(503, { code: PROMPT_WORD })]
        },
        LanguageModel.generateText({ prompt: `tell me about ${PROMPT_WORD}` })
      )
      expect(r.seen.length).toBe(2)
      expect(r.records.flatMap((rec) => rec.attempts.map((a) => [a.endpoint, a.failure, a.code]))).toEqual([
        ["a", "rate_limited", "other"],
        ["b", "overloaded", "other"]
      ])
      const errors = Either.isLeft(r.result) ? r.result.left : null
      expect(errors).not.toBeNull()
      expect(kept(r, errors)).not.toContain(KEY_ECHO)
      expect(kept(r, errors)).not.toContain("SECRET123")
      expect(kept(r, errors)).not.toContain(PROMPT_WORD)
      expect(kept(r, errors)).toContain("\"other\"")

      const known = yield* run(
        {
          "model-a": [FaultServer.status(429, { code: "rate_limit_exceeded", type: "requests" })],
          "model-b": [FaultServer.status(400, { code: "context_length_exceeded", type: "invalid_request_error" })]
        },
        LanguageModel.generateText({ prompt: "hello" })
      )
      expect(known.records.flatMap((rec) => rec.attempts.map((a) => [a.endpoint, a.failure, a.code]))).toEqual([
        ["a", "rate_limited", "rate_limit_exceeded"],
        ["b", "context_length", "context_length_exceeded"]
      ])
      const spanText = JSON.stringify(known.spans)
      // The spans carry the last failure's code (in the caller's error).
      expect(spanText).toContain("context_length_exceeded")
    }))

  it.live("in a stream: an echoed key as an in-stream error's code is `other` in the journal, spans and outcome", () =>
    Effect.gen(function*() {
      const r = yield* run(
        {
          "model-a": [FaultServer.streamError({ status: 500, code: KEY_ECHO, type: "server_error" })]
        },
        LanguageModel.streamText({ prompt: "hello" }).pipe(Stream.runDrain)
      )
      const errors = Either.isLeft(r.result) ? r.result.left : null
      expect(errors).not.toBeNull()
      // The Responses `error` event carries no status: the code alone classified it (`unknown`, as before).
      expect(r.records.flatMap((rec) => rec.attempts.map((a) => [a.endpoint, a.failure, a.code]))).toEqual([
        ["a", "unknown", "other"]
      ])
      expect(kept(r, errors)).not.toContain("SECRET123")
    }))
})
