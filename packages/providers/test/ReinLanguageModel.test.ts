import { AiError, LanguageModel, Prompt, Tokenizer, Tool, Toolkit } from "@effect/ai"
import type { Response } from "@effect/ai"
import { OpenAiTool } from "@effect/ai-openai"
import { describe, expect, it } from "@effect/vitest"
import { Catalog, Contract, Journal, Refine } from "@rein/core"
import { ReinLanguageModel } from "@rein/providers"
import { Chunk, Effect, Either, Layer, Schema, Stream } from "effect"

/** An in-memory inner model: each call takes the next scripted answer and records what it was asked. */
const memoryModel = (script: Array<Array<Response.PartEncoded> | AiError.AiError>) => {
  const seen: Array<LanguageModel.ProviderOptions> = []
  const next = (options: LanguageModel.ProviderOptions) => {
    seen.push(options)
    const answer = script.shift()
    return answer === undefined ? [text("(script ended)"), finish("stop")] : answer
  }
  const model = Layer.effect(
    LanguageModel.LanguageModel,
    LanguageModel.make({
      generateText: (options) => {
        const answer = next(options)
        return Array.isArray(answer) ? Effect.succeed(answer) : Effect.fail(answer)
      },
      streamText: (options) => {
        const answer = next(options)
        return Array.isArray(answer)
          ? Stream.fromIterable(answer as Array<Response.StreamPartEncoded>)
          : Stream.fail(answer)
      }
    })
  )
  return { model, seen }
}

const text = (t: string): Response.PartEncoded => ({ type: "text", text: t })
const finish = (reason: Response.FinishReason, inputTokens = 3, outputTokens = 2): Response.PartEncoded => ({
  type: "finish",
  reason,
  usage: { inputTokens, outputTokens, totalTokens: inputTokens + outputTokens }
})
const malformed = new AiError.MalformedOutput({ module: "test", method: "generateText", description: "bad" })

const endpoint = (id: string, options: { tools?: boolean; maxOutputTokens?: number; provider?: string } = {}) => ({
  id,
  provider: options.provider ?? "memory",
  model: `model-${id}`,
  capabilities: {
    contextWindow: 8_000,
    maxOutputTokens: options.maxOutputTokens ?? 1_000,
    tools: options.tools ?? true,
    structuredOutput: true,
    streaming: true
  },
  prices: { inputTokens: 1e-6, outputTokens: 2e-6 }
})

const catalog = Catalog.make({
  endpoints: [endpoint("a"), endpoint("b", { maxOutputTokens: 4_000 }), endpoint("plain", { tools: false })]
})

const contract = (overrides: Partial<Contract.ContractInput> = {}) =>
  Contract.make({
    deadline: "10 seconds",
    candidates: ["a", "b"],
    retry: { perEndpoint: 1, base: "10 millis", jitter: 0 },
    ...overrides
  })

const underRein = (
  models: Record<string, Layer.Layer<LanguageModel.LanguageModel>>,
  overrides: Partial<Contract.ContractInput> = {}
) => ReinLanguageModel.layer({ contract: contract(overrides), catalog, models, inputTokens: () => 50 })

const GetWeather = Tool.make("GetWeather", {
  parameters: { city: Schema.String },
  success: Schema.Struct({ celsius: Schema.Number })
})
const Weather = Toolkit.make(GetWeather)

const weatherCall = (id: string, city: string): Response.PartEncoded => ({
  type: "tool-call",
  id,
  name: "GetWeather",
  params: { city },
  providerExecuted: false
})

describe("ReinLanguageModel: an @effect/ai LanguageModel backed by Rein", () => {
  it.effect("generateText falls back across endpoints and answers from the second", () =>
    Effect.gen(function*() {
      const a = memoryModel([malformed])
      const b = memoryModel([[text("from b"), finish("stop")]])
      const response = yield* LanguageModel.generateText({ prompt: "hi" }).pipe(
        Effect.provide(underRein({ a: a.model, b: b.model }))
      )
      expect(response.text).toBe("from b")
      expect(response.finishReason).toBe("stop")
      expect([a.seen.length, b.seen.length]).toEqual([1, 1])
    }))

  it.effect("a multi-message prompt reaches the inner model as it was given", () =>
    Effect.gen(function*() {
      const a = memoryModel([[text("ok"), finish("stop")]])
      const prompt = Prompt.make([
        { role: "system", content: "be brief" },
        { role: "user", content: "hello" },
        { role: "assistant", content: "hi" },
        { role: "user", content: "again" }
      ])
      yield* LanguageModel.generateText({ prompt }).pipe(Effect.provide(underRein({ a: a.model, b: a.model })))
      expect(a.seen[0]!.prompt.content.map((m) => m.role)).toEqual(["system", "user", "assistant", "user"])
    }))

  it.effect("tools round trip: the inner model sees the tools and choice, the caller's handler runs exactly once", () =>
    Effect.gen(function*() {
      let handled = 0
      const a = memoryModel([[weatherCall("c1", "Paris"), finish("tool-calls")]])
      const response = yield* LanguageModel.generateText({
        prompt: "weather in Paris?",
        toolkit: Weather,
        toolChoice: { tool: "GetWeather" }
      }).pipe(
        Effect.provide(underRein({ a: a.model, b: a.model })),
        Effect.provide(Weather.toLayer({
          GetWeather: () => Effect.sync(() => (handled++, { celsius: 21 }))
        }))
      )
      expect(handled).toBe(1)
      expect(response.toolCalls.map((c) => [c.name, c.params])).toEqual([["GetWeather", { city: "Paris" }]])
      expect(response.toolResults.map((r) => r.result)).toEqual([{ celsius: 21 }])
      expect(a.seen[0]!.tools.map((t) => t.name)).toEqual(["GetWeather"])
      expect(a.seen[0]!.toolChoice).toEqual({ tool: "GetWeather" })
    }))

  it.effect("generateObject sends a JSON response format and decodes the object", () =>
    Effect.gen(function*() {
      const a = memoryModel([[text("{\"name\":\"Ada\",\"age\":36}"), finish("stop")]])
      const Person = Schema.Struct({ name: Schema.String, age: Schema.Number })
      const response = yield* LanguageModel.generateObject({ prompt: "who?", schema: Person, objectName: "person" })
        .pipe(Effect.provide(underRein({ a: a.model, b: a.model })))
      expect(response.value).toEqual({ name: "Ada", age: 36 })
      expect(a.seen[0]!.responseFormat).toMatchObject({ type: "json", objectName: "person" })
    }))

  it.effect("a failed generateObject's AiError names generateObject, not generateText", () =>
    Effect.gen(function*() {
      const error = yield* LanguageModel.generateObject({ prompt: "p", schema: Schema.Struct({ n: Schema.Number }) })
        .pipe(
          Effect.flip,
          Effect.provide(underRein({ a: memoryModel([malformed]).model, b: memoryModel([malformed]).model }))
        )
      expect(error).toMatchObject({ _tag: "UnknownError", module: "Rein", method: "generateObject" })
      expect(error.message).toMatch(/^Rein\.generateObject: PlanExhausted: /)
    }))

  it.effect("a length finish fails over to a larger output limit by default, and is a success when accepted", () =>
    Effect.gen(function*() {
      const a = memoryModel([[text("cut"), finish("length")]])
      const b = memoryModel([[text("whole"), finish("stop")]])
      const strict = yield* LanguageModel.generateText({ prompt: "p" }).pipe(
        Effect.provide(underRein({ a: a.model, b: b.model }))
      )
      expect(strict.text).toBe("whole")
      const a2 = memoryModel([[text("cut"), finish("length")]])
      const accepted = yield* LanguageModel.generateText({ prompt: "p" }).pipe(
        Effect.provide(underRein({ a: a2.model, b: b.model }, { truncation: "accept" }))
      )
      expect([accepted.text, accepted.finishReason]).toEqual(["cut", "length"])
    }))

  it.effect("a request with tools is refused by a no-tools endpoint; the outcome comes back through withOutcomes", () =>
    Effect.gen(function*() {
      const plain = memoryModel([])
      const refusal = yield* LanguageModel.generateText({ prompt: "p", toolkit: Weather }).pipe(
        ReinLanguageModel.withOutcomes,
        Effect.catchTag("Refused", (e) => Effect.succeed(e.reason)),
        Effect.provide(underRein({ plain: plain.model }, { candidates: ["plain"] })),
        Effect.provide(Weather.toLayer({ GetWeather: () => Effect.succeed({ celsius: 0 }) }))
      )
      expect(refusal).toContain("no tool support")
      expect(plain.seen).toEqual([])
    }))

  it.effect("a candidate with no model in `models` is refused before any call, named, for text and streams", () =>
    Effect.gen(function*() {
      const a = memoryModel([malformed, malformed])
      const layer = underRein({ a: a.model }) // the contract's candidates are a and b
      const text = yield* LanguageModel.generateText({ prompt: "p" }).pipe(
        ReinLanguageModel.withOutcomes,
        Effect.flip,
        Effect.provide(layer)
      )
      const stream = yield* LanguageModel.streamText({ prompt: "p" }).pipe(
        Stream.runDrain,
        ReinLanguageModel.withOutcomes,
        Effect.flip,
        Effect.provide(layer)
      )
      for (const outcome of [text, stream]) {
        expect(outcome).toMatchObject({
          _tag: "Refused",
          refusal: "unknown_candidate",
          reason: "no model in `models` for the contract's candidate \"b\"",
          attempts: []
        })
      }
      expect(a.seen).toEqual([])
    }))

  it.effect("a provider-defined tool of one vendor never reaches another vendor's endpoint", () =>
    Effect.gen(function*() {
      const cat = Catalog.make({
        endpoints: [endpoint("claude", { provider: "anthropic" }), endpoint("gpt", { provider: "openai" })]
      })
      const claude = memoryModel([])
      const gpt = memoryModel([[text("searched"), finish("stop")]])
      const response = yield* LanguageModel.generateText({
        prompt: "news?",
        toolkit: Toolkit.make(OpenAiTool.WebSearch({}))
      }).pipe(
        Effect.provide(ReinLanguageModel.layer({
          contract: contract({ candidates: ["claude", "gpt"] }),
          catalog: cat,
          models: { claude: claude.model, gpt: gpt.model },
          inputTokens: () => 10
        }))
      )
      expect(response.text).toBe("searched")
      expect(claude.seen).toEqual([])
    }))

  it.effect("a terminal outcome travels as a serialisable AiError whose cause is the outcome", () =>
    Effect.gen(function*() {
      const a = memoryModel([malformed])
      const b = memoryModel([malformed])
      const error = yield* Effect.flip(
        LanguageModel.generateText({ prompt: "p" }).pipe(Effect.provide(underRein({ a: a.model, b: b.model })))
      )
      expect(error._tag).toBe("UnknownError")
      expect(Schema.encodeSync(AiError.AiError)(error)).toMatchObject({ _tag: "UnknownError", module: "Rein" })
      const recovered = yield* LanguageModel.generateText({ prompt: "p" }).pipe(
        ReinLanguageModel.withOutcomes,
        Effect.catchTag("PlanExhausted", (e) => Effect.succeed(e.attempts.map((r) => r.failure))),
        Effect.provide(underRein({ a: memoryModel([malformed]).model, b: memoryModel([malformed]).model }))
      )
      expect(recovered).toEqual(["malformed_response", "malformed_response"])
    }))

  it.effect("an agent loop under one contract: the 4th model turn is refused, the journal shows every turn", () =>
    Effect.gen(function*() {
      let handled = 0
      const a = memoryModel([
        [weatherCall("c1", "Paris"), finish("tool-calls")],
        [weatherCall("c2", "Rome"), finish("tool-calls")],
        [weatherCall("c3", "Oslo"), finish("tool-calls")],
        [text("done"), finish("stop")]
      ])
      const agent = Effect.gen(function*() {
        let prompt = Prompt.make("plan my trip")
        for (let turn = 1; turn <= 10; turn++) {
          const response = yield* LanguageModel.generateText({ prompt, toolkit: Weather })
          prompt = Prompt.merge(prompt, Prompt.fromResponseParts(response.content))
          if (response.toolCalls.length === 0) return response.text
        }
        return "gave up"
      })
      const outcome = yield* agent.pipe(
        Refine.sharing(contract({ budget: { calls: 3 } })),
        ReinLanguageModel.withOutcomes,
        Effect.either,
        Effect.provide(underRein({ a: a.model, b: a.model })),
        Effect.provide(Weather.toLayer({ GetWeather: () => Effect.sync(() => (handled++, { celsius: 20 })) }))
      )
      const records = yield* Effect.flatMap(Journal.MemoryJournal, (j) => j.records)
      expect(Either.isLeft(outcome) && outcome.left).toMatchObject({ _tag: "BudgetExhausted", resource: "calls" })
      expect(handled).toBe(3)
      expect(a.seen.length).toBe(3)
      expect(records.map((r) => r.outcome._tag)).toEqual(["Completion", "Completion", "Completion", "BudgetExhausted"])
      expect(records.slice(0, 3).map((r) => r.attempts[0]!.toolCalls)).toEqual([
        [{ name: "GetWeather", count: 1 }],
        [{ name: "GetWeather", count: 1 }],
        [{ name: "GetWeather", count: 1 }]
      ])
    }).pipe(Effect.provide(Journal.layerMemory)))

  it.effect("streamText commits at the first visible part: a failure before it falls back, nothing is spliced", () =>
    Effect.gen(function*() {
      const failing = memoryModel([malformed])
      const b = memoryModel([[
        { type: "text-start", id: "t" },
        { type: "text-delta", id: "t", delta: "Hel" },
        { type: "text-delta", id: "t", delta: "lo" },
        { type: "text-end", id: "t" },
        finish("stop")
      ] as unknown as Array<Response.PartEncoded>])
      const parts = yield* LanguageModel.streamText({ prompt: "p" }).pipe(
        Stream.runCollect,
        Effect.provide(underRein({ a: failing.model, b: b.model }))
      )
      const types = Chunk.toReadonlyArray(parts).map((p) => p.type)
      expect(types).toEqual(["text-start", "text-delta", "text-delta", "text-end", "finish"])
    }))

  it.effect("a stream whose tool-call delta came first is committed: a later failure is terminal", () =>
    Effect.gen(function*() {
      const a = memoryModel([[
        { type: "tool-params-start", id: "c1", name: "GetWeather" },
        { type: "tool-params-delta", id: "c1", delta: "{\"city\"" }
      ] as unknown as Array<Response.PartEncoded>])
      const b = memoryModel([[text("never"), finish("stop")]])
      const result = yield* LanguageModel.streamText({ prompt: "p", toolkit: Weather }).pipe(
        Stream.runCollect,
        ReinLanguageModel.withOutcomes,
        Effect.either,
        Effect.provide(underRein({ a: a.model, b: b.model })),
        Effect.provide(Weather.toLayer({ GetWeather: () => Effect.succeed({ celsius: 0 }) }))
      )
      expect(Either.isLeft(result) && result.left).toMatchObject({ _tag: "FailedSafe" })
      expect(b.seen).toEqual([])
    }))

  it.effect("a stream cut at the output limit is a failure, never a clean end", () =>
    Effect.gen(function*() {
      const a = memoryModel([[
        { type: "text-delta", id: "t", delta: "cut" },
        finish("length")
      ] as unknown as Array<Response.PartEncoded>])
      const result = yield* LanguageModel.streamText({ prompt: "p" }).pipe(
        Stream.runCollect,
        ReinLanguageModel.withOutcomes,
        Effect.either,
        Effect.provide(underRein({ a: a.model, b: a.model }))
      )
      expect(Either.isLeft(result) && "attempts" in result.left && result.left.attempts[0]).toMatchObject({
        failure: "truncated"
      })
    }))

  it.effect("generateObject whose JSON was cut at the output limit is truncated, with its usage (span-transformer order pinned)", () =>
    Effect.gen(function*() {
      const a = memoryModel([[text("{\"name\":\"Ad"), finish("length", 30, 1000)]])
      const b = memoryModel([[text("{\"name\":\"Ada\"}"), finish("stop")]])
      const response = yield* LanguageModel.generateObject({
        prompt: "who?",
        schema: Schema.Struct({ name: Schema.String })
      })
        .pipe(Effect.provide(underRein({ a: a.model, b: b.model })))
      expect(response.value).toEqual({ name: "Ada" })
      const [record] = yield* Effect.flatMap(Journal.MemoryJournal, (j) => j.records)
      expect(record!.attempts[0]).toMatchObject({
        failure: "truncated",
        usage: { inputTokens: 30, outputTokens: 1000 }
      })
    }).pipe(Effect.provide(Journal.layerMemory)))

  it.effect("without a given bound, a hard budget admits against the models' Tokenizer; with none it refuses", () =>
    Effect.gen(function*() {
      const a = memoryModel([[text("ok"), finish("stop")]])
      const tokenizer = Tokenizer.make({
        tokenize: (prompt) => Effect.succeed(Array.from({ length: 7 * prompt.content.length }, (_, i) => i))
      })
      const withTokenizer = Layer.merge(a.model, Layer.succeed(Tokenizer.Tokenizer, tokenizer))
      const budgeted = contract({ budget: { cost: 1 }, candidates: ["a"] })
      yield* LanguageModel.generateText({ prompt: "hi" }).pipe(
        Effect.provide(ReinLanguageModel.layer({ contract: budgeted, catalog, models: { a: withTokenizer } }))
      )
      const [record] = yield* Effect.flatMap(Journal.MemoryJournal, (j) => j.records)
      expect(record!.attempts[0]!.reservation.tokens).toBe(7 + 1_000)
      const refused = yield* LanguageModel.generateText({ prompt: "hi" }).pipe(
        ReinLanguageModel.withOutcomes,
        Effect.flip,
        Effect.provide(ReinLanguageModel.layer({ contract: budgeted, catalog, models: { a: a.model } }))
      )
      expect(refused).toMatchObject({ _tag: "Refused", refusal: "no_input_bound" })
    }).pipe(Effect.provide(Journal.layerMemory)))

  it.effect("an inputTokens option that throws refuses the call (invalid_request), no call made, prompt unquoted", () =>
    Effect.gen(function*() {
      const a = memoryModel([[text("ok"), finish("stop")]])
      const layer = ReinLanguageModel.layer({
        contract: contract({ candidates: ["a"] }),
        catalog,
        models: { a: a.model },
        inputTokens: (prompt) => {
          throw new TypeError(`cannot count ${JSON.stringify(prompt)}`)
        }
      })
      const refused = yield* LanguageModel.generateText({ prompt: "secret-prompt-4411" }).pipe(
        ReinLanguageModel.withOutcomes,
        Effect.flip,
        Effect.provide(layer)
      )
      expect(refused).toMatchObject({ _tag: "Refused", refusal: "invalid_request" })
      expect(refused.message).toBe(
        "invalid_request: the `inputTokens` option (`ReinLanguageModel.layer`) threw \"TypeError\": make it " +
          "return a non-negative integer"
      )
      const streamed = yield* LanguageModel.streamText({ prompt: "secret-prompt-4411" }).pipe(
        Stream.runDrain,
        Effect.flip,
        Effect.provide(layer)
      )
      expect(streamed.message).toContain("threw \"TypeError\"")
      expect(streamed.message).not.toContain("secret-prompt-4411")
      expect(a.seen.length).toBe(0)
    }))

  it.effect("a Tokenizer that cannot count the prompt gives no bound: the AiError says so and names the fix", () =>
    Effect.gen(function*() {
      const a = memoryModel([[text("ok"), finish("stop")]])
      // As `@effect/ai-openai`'s does for a model its `gpt-tokenizer` does not know (`gpt-4.1-mini`).
      const failing = Tokenizer.make({
        tokenize: () => Effect.fail(new AiError.UnknownError({ module: "test", method: "tokenize", description: "no" }))
      })
      const error = yield* LanguageModel.generateText({ prompt: "hi" }).pipe(
        Effect.flip,
        Effect.provide(ReinLanguageModel.layer({
          contract: contract({ budget: { cost: 1 }, candidates: ["a"] }),
          catalog,
          models: { a: Layer.merge(a.model, Layer.succeed(Tokenizer.Tokenizer, failing)) }
        }))
      )
      expect(error._tag).toBe("UnknownError")
      expect(error.message).toContain("Refused: no_input_bound: the contract's hard cost budget (budget.cost)")
      expect(error.message).toContain("its `inputTokens` option")
      expect(a.seen.length).toBe(0)
    }))
})
