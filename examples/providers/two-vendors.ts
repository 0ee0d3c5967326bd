/**
 * An existing `@effect/ai` program — a tool-using agent and a streaming chat — under Rein, over two vendors:
 * OpenAI (`@effect/ai-openai`, the Responses API) first, Anthropic (`@effect/ai-anthropic`, Messages) as its
 * fallback. One `ReinLanguageModel.layer` replaces the model layer; the call sites are `@effect/ai`'s own.
 *
 * - `clients` merges both vendors' client layers: Rein builds them on its one-shot HTTP client (a client
 *   that retries is refused) and sets each endpoint's model and output bound on the vendor's `Config`.
 * - The agent's turns share one deadline, call cap and budget (`Refine.sharing`). That deadline binds Rein's
 *   calls — a turn started after it fails `DeadlineExceeded` with no HTTP request — but not your code
 *   between them: a tool handler runs above Rein, so bound one that may hang by what is left
 *   (`Deadline.remainingMillis`), as `GetWeather` does here.
 * - A stream falls back only before its first delta: here OpenAI reports an overload inside its stream
 *   before any text, and Anthropic answers; after a delta, a failure is terminal and nothing is spliced.
 *
 * The "vendors" are the loopback fault server, which speaks both wire formats (SSE and tool calls included).
 *
 * Run: `pnpm build && node examples/dist/providers/two-vendors.js`
 */
import { LanguageModel, Prompt, Tool, Toolkit } from "@effect/ai"
import { AnthropicClient, AnthropicLanguageModel } from "@effect/ai-anthropic"
import { OpenAiClient, OpenAiLanguageModel } from "@effect/ai-openai"
import { NodeHttpClient, NodeRuntime } from "@effect/platform-node"
import { Catalog, Contract, Deadline, Journal, Refine } from "@rein/core"
import { ReinLanguageModel } from "@rein/providers"
import { FaultServer } from "@rein/providers/testing"
import { Console, Effect, Layer, Option, Redacted, Schema, Stream } from "effect"

const GetWeather = Tool.make("GetWeather", {
  description: "The temperature in a city, in °C",
  parameters: { city: Schema.String },
  success: Schema.Struct({ celsius: Schema.Number }),
  failure: Schema.Struct({ unavailable: Schema.Literal("deadline") })
})
const toolkit = Toolkit.make(GetWeather)

/** The weather service (in memory here); the handler gives it no more than the shared deadline leaves. */
const lookup = (city: string) => Effect.succeed({ celsius: city === "Oslo" ? 4 : 21 })
const handlers = toolkit.toLayer({
  GetWeather: ({ city }) =>
    Effect.flatMap(Deadline.remainingMillis, (millis) =>
      Effect.timeoutFail(lookup(city), {
        duration: millis,
        onTimeout: () => ({ unavailable: "deadline" as const })
      }))
})

const capabilities = { contextWindow: 128_000, maxOutputTokens: 1_000, tools: true, streaming: true }
const catalog = Catalog.make({
  endpoints: [
    {
      id: "openai/mini",
      provider: "openai",
      model: "gpt-mini",
      capabilities,
      prices: { inputTokens: 0.4e-6, outputTokens: 1.6e-6 }
    },
    {
      id: "anthropic/haiku",
      provider: "anthropic",
      model: "claude-haiku",
      capabilities,
      prices: { inputTokens: 0.8e-6, outputTokens: 4e-6 }
    }
  ]
})

/** Every call: 20 s, 5 s per attempt, OpenAI then Anthropic, no retry on the same endpoint. */
const perCall = Contract.make({
  deadline: "20 seconds",
  attemptTimeout: "5 seconds",
  candidates: ["openai/mini", "anthropic/haiku"],
  retry: { perEndpoint: 0 }
})
/** The whole agent loop. */
const agentContract = Contract.make({
  deadline: "60 seconds",
  budget: { calls: 6, cost: 0.05 },
  candidates: ["openai/mini", "anthropic/haiku"]
})

const agent = Effect.gen(function*() {
  let prompt = Prompt.make("What is the weather in Paris and Oslo?")
  for (let turns = 1; turns <= 6; turns++) {
    const response = yield* LanguageModel.generateText({ prompt, toolkit })
    prompt = Prompt.merge(prompt, Prompt.fromResponseParts(response.content))
    if (response.toolCalls.length === 0) return { answer: response.text, turns }
  }
  return { answer: "no answer within 6 turns", turns: 6 }
})

// The chat streams; `withOutcomesStream` fails it with Rein's outcome, `onStreamOutcome` says how its request ended
// (the endpoint that answered and every attempt; or the outcome; or `Interrupted` if the reader stops early).
const chat = (onOutcome: (outcome: ReinLanguageModel.CallOutcome) => Effect.Effect<void>) =>
  LanguageModel.streamText({ prompt: "Say hello in French" }).pipe(
    ReinLanguageModel.withOutcomesStream,
    ReinLanguageModel.onStreamOutcome(onOutcome),
    Stream.filterMap((part) => part.type === "text-delta" ? Option.some(part.delta) : Option.none()),
    Stream.runCollect,
    Effect.map((deltas) => Array.from(deltas).join(""))
  )
const described = (outcome: ReinLanguageModel.CallOutcome) =>
  outcome._tag === "Completed"
    ? `${outcome.endpoint} after ${outcome.attempts.length} attempt${outcome.attempts.length > 1 ? "s" : ""}`
    : outcome._tag

const call = (id: string, city: string) => ({ id, name: "GetWeather", arguments: JSON.stringify({ city }) })

export const program = Effect.scoped(Effect.gen(function*() {
  const server = yield* FaultServer.make({
    scripts: {
      "gpt-mini": [
        FaultServer.faults.unavailable, // turn 1: OpenAI is down → Anthropic
        FaultServer.ok({ text: "", toolCalls: [call("call_2", "Oslo")] }),
        FaultServer.ok({ text: "Paris 21°C, Oslo 4°C" }),
        FaultServer.streamError({ status: 503, type: "server_error" }) // the chat: overloaded before any text
      ],
      "claude-haiku": [
        FaultServer.ok({ text: "", toolCalls: [call("toolu_1", "Paris")] }),
        FaultServer.ok({ deltas: ["Bon", "jour !"] })
      ]
    }
  })
  const rein = ReinLanguageModel.layer({
    contract: perCall,
    catalog,
    models: { "openai/mini": OpenAiLanguageModel.model, "anthropic/haiku": AnthropicLanguageModel.model },
    clients: Layer.merge(
      // Against the real APIs, omit apiUrl (OpenAI's includes /v1, Anthropic's does not).
      OpenAiClient.layer({ apiKey: Redacted.make("sk-example"), apiUrl: server.baseUrl }),
      AnthropicClient.layer({ apiKey: Redacted.make("sk-ant-example"), apiUrl: server.url })
    ),
    // A hard cost budget needs an input bound per call (or a model's Tokenizer): a rough one here.
    inputTokens: (prompt) => 200 + JSON.stringify(prompt.content).length
  })
  const result = yield* agent.pipe(
    Refine.sharing(agentContract),
    ReinLanguageModel.withOutcomes,
    Effect.provide(Layer.merge(rein, handlers))
  )
  const chatOutcomes: Array<string> = []
  const greeting = yield* chat((outcome) => Effect.sync(() => void chatOutcomes.push(described(outcome)))).pipe(
    Effect.provide(rein)
  )
  const records = yield* Effect.flatMap(Journal.MemoryJournal, (j) => j.records)
  yield* Console.log(`agent, ${result.turns} turns: ${result.answer}`)
  yield* Console.log(`chat: ${greeting} (${chatOutcomes.join(", ")})`)
  const paths = records.map((r) => r.attempts.map((a) => `${a.endpoint} ${a.failure ?? a.status}`).join(" → "))
  for (const [i, path] of paths.entries()) yield* Console.log(`call ${i + 1}: ${path}`)
  return { ...result, greeting, chatOutcomes, paths }
})).pipe(Effect.provide(Journal.layerMemory))

// Run as a script (the platform layer is the caller's choice; here Node's HTTP client).
if (process.argv[1]?.endsWith("two-vendors.js")) {
  program.pipe(Effect.provide(NodeHttpClient.layerUndici), NodeRuntime.runMain)
}
