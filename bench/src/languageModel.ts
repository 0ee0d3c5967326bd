/**
 * Benchmark 8: the cost of Rein's `LanguageModel` over the bare `@effect/ai` one. One in-memory model
 * (`LanguageModel.make` answering at once); `LanguageModel.generateText` through the bare model, through
 * Effect's `ExecutionPlan` with two steps over it, and through `ReinLanguageModel` (one contract, two
 * candidates, the same model behind each). Success path, one call per `Effect.runPromise`, interleaved.
 * Target (issue 16): Rein adds no more than an `ExecutionPlan` with two steps does.
 */
import { LanguageModel } from "@effect/ai"
import type { Response } from "@effect/ai"
import { Catalog, Contract } from "@rein/core"
import { ReinLanguageModel } from "@rein/providers"
import { Context, Effect, ExecutionPlan, Layer, Runtime } from "effect"
import type { Benchmark, Contender, RunOptions, Section } from "./harness.js"
import { fmtNs, fmtRatio, interleave, table } from "./harness.js"

const answer: Array<Response.PartEncoded> = [
  { type: "text", text: "ok" },
  { type: "finish", reason: "stop", usage: { inputTokens: 10, outputTokens: 2, totalTokens: 12 } }
]

const memory = Layer.effect(
  LanguageModel.LanguageModel,
  LanguageModel.make({ generateText: () => Effect.succeed(answer), streamText: () => Effect.dieMessage("unused") })
)

const endpoint = (id: string) => ({
  id,
  provider: "memory",
  model: id,
  capabilities: { contextWindow: 8_000, maxOutputTokens: 1_000 },
  prices: { inputTokens: 1e-6, outputTokens: 2e-6 }
})
const catalog = Catalog.make({ endpoints: [endpoint("mem/a"), endpoint("mem/b")] })
const contract = Contract.make({ deadline: "30 seconds", candidates: ["mem/a", "mem/b"] })

const call = LanguageModel.generateText({ prompt: "hello" })

/** Runs `effect` `n` times, one `runPromise` each, with `context` in the runtime. */
const contender = (
  name: string,
  effect: Effect.Effect<LanguageModel.GenerateTextResponse<{}>, unknown, LanguageModel.LanguageModel>,
  context: Context.Context<LanguageModel.LanguageModel> | Context.Context<never>
): Contender => {
  const runtime = Runtime.make({
    context: context as Context.Context<LanguageModel.LanguageModel>,
    fiberRefs: Runtime.defaultRuntime.fiberRefs,
    runtimeFlags: Runtime.defaultRuntime.runtimeFlags
  })
  const runPromise = Runtime.runPromise(runtime)
  return {
    name,
    run: async (n) => {
      for (let i = 0; i < n; i++) await runPromise(effect)
    },
    verify: async () => {
      const response = await runPromise(effect)
      if (response.text !== "ok") throw new Error(`${name}: text ${response.text}`)
    }
  }
}

const run = async (options: RunOptions): Promise<Section> => {
  const bare = await Effect.runPromise(Effect.scoped(Layer.build(memory)))
  const rein = await Effect.runPromise(Effect.scoped(Layer.build(ReinLanguageModel.layer({
    contract,
    catalog,
    models: { "mem/a": memory, "mem/b": memory },
    inputTokens: () => 10
  }))))
  const plan = ExecutionPlan.make({ provide: memory, attempts: 2 }, { provide: memory })
  const contenders = [
    contender("ReinLanguageModel (2 candidates)", call, rein),
    contender("bare @effect/ai LanguageModel", call, bare),
    contender("ExecutionPlan (2 steps) over it", Effect.withExecutionPlan(call, plan), Context.empty())
  ]
  const timings = await interleave(contenders, {
    rounds: options.quick ? 3 : 15,
    sampleMillis: options.quick ? 30 : 120,
    log: options.log
  })
  const [reinT, bareT, planT] = timings as [typeof timings[0], typeof timings[0], typeof timings[0]]
  const reinAdds = reinT.median - bareT.median
  const planAdds = planT.median - bareT.median
  const rows = timings.map((
    t
  ) => [t.name, fmtNs(t.median), fmtNs(t.min), fmtNs(t.max), fmtRatio(t.median / bareT.median)])
  const markdown = [
    table(["contender", "ns per call (median)", "min", "max", "÷ bare"], rows),
    "",
    `Rein adds ${fmtNs(reinAdds)} ns per call over the bare model; a two-step ExecutionPlan adds ${fmtNs(planAdds)} ns.`
  ].join("\n")
  return {
    markdown,
    goals: [{
      benchmark: "8. rein's LanguageModel",
      goal: "Rein's LanguageModel adds no more than an ExecutionPlan with two steps",
      measured: `+${fmtNs(reinAdds)} ns vs +${fmtNs(planAdds)} ns`,
      status: reinAdds <= planAdds ? "PASS" : "FAIL"
    }]
  }
}

export const languageModel: Benchmark = {
  id: 8,
  title: "Rein's LanguageModel over the bare @effect/ai one",
  requires: { module: "@rein/providers", skipped: "skipped: @rein/providers is not built" },
  goals: ["Rein's LanguageModel adds no more than an ExecutionPlan with two steps"],
  run
}
