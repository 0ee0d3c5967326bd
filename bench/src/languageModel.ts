/**
 * Benchmark 8: the cost of Rein's `LanguageModel` over the bare `@effect/ai` one. One in-memory model
 * (`LanguageModel.make` answering at once); `LanguageModel.generateText` through the bare model, through
 * Effect's `ExecutionPlan` with two steps over it, and through `ReinLanguageModel` (one contract, two
 * candidates, the same model behind each). Success path, one call per `Effect.runPromise`, interleaved,
 * wall and CPU time per call (`process.cpuUsage`), no GC forced between samples (see `interleave`).
 * Target (issue 16): Rein adds no more than an `ExecutionPlan` with two steps does, in CPU time per call
 * (the machine is shared: wall time is printed beside it, and the load).
 * A last row is Rein's executor alone (`Rein.execute` over a provider answering at once): the part of
 * Rein's cost that is not the `@effect/ai` model's.
 */
import { LanguageModel } from "@effect/ai"
import type { Response } from "@effect/ai"
import { Catalog, Contract, Rein } from "@rein/core"
import { ReinLanguageModel } from "@rein/providers"
import { Context, Effect, ExecutionPlan, Layer, Runtime } from "effect"
import * as os from "node:os"
import type { Benchmark, Contender, RunOptions, Section, Timing } from "./harness.js"
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

const load = () => os.loadavg().map((x) => x.toFixed(2)).join(" / ")

/** Runs `effect` `n` times, one `runPromise` each, with `context` in the runtime. */
const contender = <A, C>(
  name: string,
  effect: Effect.Effect<A, unknown, C>,
  context: Context.Context<C>,
  check: (a: A) => boolean
): Contender => {
  const runtime = Runtime.make({
    context,
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
      if (!check(await runPromise(effect))) throw new Error(`${name}: not the expected answer`)
    }
  }
}

const answered = (response: LanguageModel.GenerateTextResponse<{}>) => response.text === "ok"

/** Rein's executor alone: the same contract over a provider that answers at once. */
const executorOnly = () =>
  Effect.runPromise(Effect.scoped(Layer.build(Rein.layer({
    catalog,
    providers: new Map([["memory", {
      internalMaxAttempts: 1,
      call: () => Effect.succeed({ text: "ok", usage: { inputTokens: 10, outputTokens: 2 } })
    }]])
  }))))

const run = async (options: RunOptions): Promise<Section> => {
  const loadBefore = load()
  const bare = await Effect.runPromise(Effect.scoped(Layer.build(memory)))
  const rein = await Effect.runPromise(Effect.scoped(Layer.build(ReinLanguageModel.layer({
    contract,
    catalog,
    models: { "mem/a": memory, "mem/b": memory },
    inputTokens: () => 10
  }))))
  const plan = ExecutionPlan.make({ provide: memory, attempts: 2 }, { provide: memory })
  const contenders = [
    contender("ReinLanguageModel (2 candidates)", call, rein, answered),
    contender("bare @effect/ai LanguageModel", call, bare, answered),
    contender("ExecutionPlan (2 steps) over it", Effect.withExecutionPlan(call, plan), Context.empty(), answered),
    contender(
      "Rein.execute alone (provider answering at once)",
      Rein.execute({ prompt: "hello", inputTokens: 10 }, contract),
      await executorOnly(),
      (completion) => completion.text === "ok"
    )
  ]
  const timings = await interleave(contenders, {
    rounds: options.quick ? 3 : 15,
    sampleMillis: options.quick ? 30 : 400,
    collect: false,
    calls: options.quick ? 100 : 1_000,
    log: options.log
  })
  const [reinT, bareT, planT] = timings as [Timing, Timing, Timing, Timing]
  const adds = (t: Timing) => ({ cpu: t.cpu.median - bareT.cpu.median, wall: t.median - bareT.median })
  const reinAdds = adds(reinT)
  const planAdds = adds(planT)
  const loadAfter = load()
  const rows = timings.map((t) => [
    t.name,
    fmtNs(t.cpu.median),
    `${fmtNs(t.cpu.min)}–${fmtNs(t.cpu.max)}`,
    fmtNs(t.median),
    `${fmtNs(t.min)}–${fmtNs(t.max)}`,
    fmtRatio(t.cpu.median / bareT.cpu.median)
  ])
  const markdown = [
    table(
      ["contender", "CPU ns per call (median)", "CPU min–max", "wall ns (median)", "wall min–max", "CPU ÷ bare"],
      rows
    ),
    "",
    `Load (1/5/15 min) ${loadBefore} before, ${loadAfter} after; ${options.quick ? 3 : 15} interleaved rounds of ${
      options.quick ? 100 : 1_000
    } calls per contender.`,
    `CPU per call: Rein adds ${fmtNs(reinAdds.cpu)} ns over the bare model; a two-step ExecutionPlan adds ${
      fmtNs(planAdds.cpu)
    } ns.`,
    `Wall per call: Rein adds ${fmtNs(reinAdds.wall)} ns; the plan adds ${fmtNs(planAdds.wall)} ns.`
  ].join("\n")
  return {
    markdown,
    goals: [{
      benchmark: "8. rein's LanguageModel",
      goal: "Rein's LanguageModel adds no more than an ExecutionPlan with two steps (CPU per call)",
      measured: `+${fmtNs(reinAdds.cpu)} ns vs +${fmtNs(planAdds.cpu)} ns CPU (wall +${fmtNs(reinAdds.wall)} vs +${
        fmtNs(planAdds.wall)
      }; load ${loadAfter})`,
      status: reinAdds.cpu <= planAdds.cpu ? "PASS" : "FAIL"
    }]
  }
}

export const languageModel: Benchmark = {
  id: 8,
  title: "Rein's LanguageModel over the bare @effect/ai one",
  requires: { module: "@rein/providers", skipped: "skipped: @rein/providers is not built" },
  goals: ["Rein's LanguageModel adds no more than an ExecutionPlan with two steps (CPU per call)"],
  run
}
