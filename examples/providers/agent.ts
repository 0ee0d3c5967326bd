/**
 * A tool-using agent under one contract. The agent loops model → tool → model until the model answers;
 * every turn is one Rein request through `ReinLanguageModel`, and `Refine.sharing` puts the whole loop
 * under one deadline, one call cap and one budget. The tool's handler runs once per call, above Rein: the
 * shared deadline stops the next turn, not a handler that hangs (bound such a handler by
 * `Deadline.remainingMillis`, as `two-vendors.ts` does).
 *
 * The model is in memory (no network): it asks for the weather of each city it has not been told yet,
 * then answers from the tool results. A flaky first endpoint shows a fallback inside one turn.
 *
 * Run: `pnpm build && node examples/dist/providers/agent.js`
 */
import { AiError, LanguageModel, Prompt, Tool, Toolkit } from "@effect/ai"
import type { Response } from "@effect/ai"
import { NodeRuntime } from "@effect/platform-node"
import { Catalog, Contract, Journal, Refine } from "@rein/core"
import { ReinLanguageModel } from "@rein/providers"
import { Console, Effect, Layer, Schema } from "effect"

const GetWeather = Tool.make("GetWeather", {
  description: "The temperature in a city, in °C",
  parameters: { city: Schema.String },
  success: Schema.Struct({ celsius: Schema.Number })
})
const toolkit = Toolkit.make(GetWeather)
const handlers = toolkit.toLayer({
  GetWeather: ({ city }) => Effect.succeed({ celsius: city === "Oslo" ? 4 : 21 })
})

const cities = ["Paris", "Oslo"]
const finish = (reason: Response.FinishReason): Response.PartEncoded => ({
  type: "finish",
  reason,
  usage: { inputTokens: 40, outputTokens: 12, totalTokens: 52 }
})

/** The in-memory model's answer: one tool call per city it has no result for yet, then the answer. */
const answer = (options: LanguageModel.ProviderOptions): Array<Response.PartEncoded> => {
  const known = options.prompt.content.flatMap((m) =>
    m.role === "tool" ? m.content.map((p) => p.result as { readonly celsius: number }) : []
  )
  const next = cities[known.length]
  return next !== undefined
    ? [{ type: "tool-call", id: `call_${next}`, name: "GetWeather", params: { city: next } }, finish("tool-calls")]
    : [{ type: "text", text: cities.map((c, i) => `${c} ${known[i]!.celsius}°C`).join(", ") }, finish("stop")]
}

/** An in-memory model whose first `failures` calls fail (a response that does not decode). */
const memoryModel = (failures: number) =>
  Layer.effect(
    LanguageModel.LanguageModel,
    LanguageModel.make({
      generateText: (options) =>
        failures-- > 0
          ? Effect.fail(new AiError.MalformedOutput({ module: "memory", method: "generateText", description: "bad" }))
          : Effect.succeed(answer(options)),
      streamText: () => Effect.dieMessage("this example does not stream")
    })
  )

const endpoint = (id: string) => ({
  id,
  provider: "memory",
  model: id,
  capabilities: { contextWindow: 32_000, maxOutputTokens: 1_000, tools: true },
  prices: { inputTokens: 1e-6, outputTokens: 2e-6 }
})
const catalog = Catalog.make({ endpoints: [endpoint("memory/flaky"), endpoint("memory/steady")] })

/** Each turn's contract, and the one the whole loop shares. */
const turn = Contract.make({ deadline: "10 seconds", candidates: ["memory/flaky", "memory/steady"] })
const agentContract = Contract.make({
  deadline: "60 seconds",
  budget: { calls: 6, cost: 0.01 },
  candidates: ["memory/flaky", "memory/steady"]
})

const agent = Effect.gen(function*() {
  let prompt = Prompt.make("What is the weather in Paris and Oslo?")
  for (let turns = 1; turns <= 8; turns++) {
    const response = yield* LanguageModel.generateText({ prompt, toolkit })
    prompt = Prompt.merge(prompt, Prompt.fromResponseParts(response.content))
    if (response.toolCalls.length === 0) return { answer: response.text, turns }
  }
  return { answer: "no answer within 8 turns", turns: 8 }
})

export const program = Effect.gen(function*() {
  const result = yield* agent.pipe(Refine.sharing(agentContract), ReinLanguageModel.withOutcomes)
  const records = yield* Effect.flatMap(Journal.MemoryJournal, (j) => j.records)
  yield* Console.log(`answer after ${result.turns} turns: ${result.answer}`)
  for (const [i, r] of records.entries()) {
    const attempts = r.attempts.map((a) =>
      `${a.endpoint} ${a.status}${
        a.toolCalls ? ` (tool calls: ${a.toolCalls.map((t) => `${t.name}×${t.count}`).join(", ")})` : ""
      }`
    )
    yield* Console.log(`turn ${i + 1}: ${attempts.join(" → ")}`)
  }
  return { ...result, turnsRecorded: records.length }
}).pipe(
  Effect.provide(ReinLanguageModel.layer({
    contract: turn,
    catalog,
    models: { "memory/flaky": memoryModel(1), "memory/steady": memoryModel(0) },
    inputTokens: () => 200
  })),
  Effect.provide(handlers),
  Effect.provide(Journal.layerMemory)
)

// Run as a script (no platform layer needed: nothing leaves the process).
if (process.argv[1]?.endsWith("agent.js")) NodeRuntime.runMain(program)
