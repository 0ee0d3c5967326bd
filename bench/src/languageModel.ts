/**
 * Benchmark 8: the cost of Rein's `LanguageModel` over the bare `@effect/ai` one. One in-memory model
 * (`LanguageModel.make` answering at once); `LanguageModel.generateText` through the bare model, through
 * Effect's `ExecutionPlan` with two steps over it, and through `ReinLanguageModel` (one contract, two
 * candidates, the same model behind each). Success path, one call per `Effect.runPromise`, interleaved,
 * wall and CPU time per call (`process.cpuUsage`), no GC forced between samples (see `interleave`).
 * Target (issue 16): Rein adds no more than an `ExecutionPlan` with two steps does, in CPU time per call
 * (the machine is shared: wall time is printed beside it, and the load). Judged round by round: PASS when
 * the median over rounds of Rein's CPU per call minus the plan's, in the same round, is ≤ 0 (what each adds
 * over the bare model is likewise the median of its excess in the same round).
 * A last row is Rein's executor alone (`Rein.execute` over a provider answering at once): the part of
 * Rein's cost that is not the `@effect/ai` model's. A second table does the same with a toolkit (one tool
 * call, resolved by the caller's handler over the inner model's decoded parts).
 */
import { LanguageModel, Tool, Toolkit } from "@effect/ai"
import type { Response } from "@effect/ai"
import { Catalog, Contract, Rein } from "@rein/core"
import { ReinLanguageModel } from "@rein/providers"
import { Context, Effect, ExecutionPlan, Layer, Runtime, Schema } from "effect"
import * as os from "node:os"
import type { Benchmark, Contender, RunOptions, Section, Timing } from "./harness.js"
import { fmtNs, fmtRatio, interleave, median, table } from "./harness.js"

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
  capabilities: { contextWindow: 8_000, maxOutputTokens: 1_000, tools: true },
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

/** A tool call answered by the in-memory model; the caller's handler resolves it (in `make`, above Rein). */
const GetWeather = Tool.make("GetWeather", {
  parameters: { city: Schema.String },
  success: Schema.Struct({ celsius: Schema.Number })
})
const Weather = Toolkit.make(GetWeather)
const toolAnswer: Array<Response.PartEncoded> = [
  { type: "tool-call", id: "c1", name: "GetWeather", params: { city: "Paris" } },
  { type: "finish", reason: "tool-calls", usage: { inputTokens: 10, outputTokens: 2, totalTokens: 12 } }
]
const toolMemory = Layer.effect(
  LanguageModel.LanguageModel,
  LanguageModel.make({ generateText: () => Effect.succeed(toolAnswer), streamText: () => Effect.dieMessage("unused") })
)
const toolCall = LanguageModel.generateText({ prompt: "weather?", toolkit: Weather })
const resolved = (response: LanguageModel.GenerateTextResponse<Toolkit.Tools<typeof Weather>>) =>
  response.toolResults.length === 1

const build = <A>(layer: Layer.Layer<A>) => Effect.runPromise(Effect.scoped(Layer.build(layer)))

/** Bare, plan and Rein (and any extra rows) over one in-memory model and one call. */
const contenders = async <A, C>(
  model: Layer.Layer<LanguageModel.LanguageModel>,
  effect: Effect.Effect<A, unknown, LanguageModel.LanguageModel | C>,
  context: Context.Context<C>,
  check: (a: A) => boolean
): Promise<Array<Contender>> => {
  const rein = await build(ReinLanguageModel.layer({
    contract,
    catalog,
    models: { "mem/a": model, "mem/b": model },
    inputTokens: () => 10
  }))
  const plan = ExecutionPlan.make({ provide: model, attempts: 2 }, { provide: model })
  return [
    contender("ReinLanguageModel (2 candidates)", effect, Context.merge(rein, context), check),
    contender("bare @effect/ai LanguageModel", effect, Context.merge(await build(model), context), check),
    contender("ExecutionPlan (2 steps) over it", Effect.withExecutionPlan(effect, plan), context, check)
  ]
}

interface Measured {
  readonly markdown: string
  readonly reinAdds: { readonly cpu: number; readonly wall: number }
  readonly planAdds: { readonly cpu: number; readonly wall: number }
  /** Rein − plan, CPU ns per call, round by round: median and range. */
  readonly reinOverPlan: { readonly median: number; readonly min: number; readonly max: number }
}

/** `a − b` sample by sample (the same round: the contenders of a round run one after another). */
const paired = (a: ReadonlyArray<number>, b: ReadonlyArray<number>) => a.map((x, r) => x - b[r]!)

/**
 * Interleaved rounds of `calls` calls; the first three contenders are Rein, bare and the plan. What each
 * adds over the bare model is the median over rounds of its excess in the same round: the load of a shared
 * machine moves a whole round (bench 8 with a toolkit: the bare model's own median moved 1.27–1.54 ms between
 * runs, the difference of the medians ±0.7 ms), and the pairing cancels that drift.
 */
const measure = async (
  options: RunOptions,
  all: ReadonlyArray<Contender>,
  calls: number,
  rounds: number
): Promise<Measured> => {
  const timings = await interleave(all, { rounds, sampleMillis: 400, collect: false, calls, log: options.log })
  const [reinT, bareT, planT] = timings as [Timing, Timing, Timing]
  const adds = (t: Timing) => ({
    cpu: median(paired(t.cpu.samples, bareT.cpu.samples)),
    wall: median(paired(t.samples, bareT.samples))
  })
  const rows = timings.map((t) => [
    t.name,
    fmtNs(t.cpu.median),
    `${fmtNs(t.cpu.min)}–${fmtNs(t.cpu.max)}`,
    fmtNs(t.median),
    `${fmtNs(t.min)}–${fmtNs(t.max)}`,
    fmtRatio(t.cpu.median / bareT.cpu.median)
  ])
  const header = [
    "contender",
    "CPU ns per call (median)",
    "CPU min–max",
    "wall ns (median)",
    "wall min–max",
    "CPU ÷ bare"
  ]
  const reinAdds = adds(reinT)
  const planAdds = adds(planT)
  const over = paired(reinT.cpu.samples, planT.cpu.samples)
  const reinOverPlan = { median: median(over), min: Math.min(...over), max: Math.max(...over) }
  const markdown = [
    table(header, rows),
    "",
    `Load (1/5/15 min) ${load()} at the end; ${rounds} interleaved rounds of ${calls} calls per contender.`,
    `CPU per call, median over rounds of the excess over the bare model in the same round: Rein adds ${
      fmtNs(reinAdds.cpu)
    } ns; a two-step ExecutionPlan adds ${fmtNs(planAdds.cpu)} ns. Rein − plan round by round: ${
      fmtNs(reinOverPlan.median)
    } ns (${fmtNs(reinOverPlan.min)} to ${fmtNs(reinOverPlan.max)}).`,
    `Wall per call: Rein adds ${fmtNs(reinAdds.wall)} ns; the plan adds ${fmtNs(planAdds.wall)} ns.`
  ].join("\n")
  return { markdown, reinAdds, planAdds, reinOverPlan }
}

/** A difference in ns with its sign (`+1,200`, `−300`). */
const signed = (ns: number) => `${ns < 0 ? "−" : "+"}${fmtNs(Math.abs(ns))}`

const goal = (label: string, m: Measured) => ({
  benchmark: "8. rein's LanguageModel",
  goal: `${label}: Rein's LanguageModel adds no more than an ExecutionPlan with two steps (CPU per call)`,
  measured: `${signed(m.reinAdds.cpu)} ns vs ${signed(m.planAdds.cpu)} ns CPU; Rein − plan per round ${
    signed(m.reinOverPlan.median)
  } ns (${signed(m.reinOverPlan.min)} to ${signed(m.reinOverPlan.max)}) (wall ${signed(m.reinAdds.wall)} vs ${
    signed(m.planAdds.wall)
  }; load ${load()})`,
  status: m.reinOverPlan.median <= 0 ? "PASS" as const : "FAIL" as const
})

const run = async (options: RunOptions): Promise<Section> => {
  const loadBefore = load()
  const rounds = options.quick ? 3 : 15
  const plain = await measure(
    options,
    [
      ...await contenders(memory, call, Context.empty(), answered),
      contender(
        "Rein.execute alone (provider answering at once)",
        Rein.execute({ prompt: "hello", inputTokens: 10 }, contract),
        await executorOnly(),
        (completion) => completion.text === "ok"
      )
    ],
    options.quick ? 100 : 1_000,
    rounds
  )
  options.log("   with a toolkit (one tool call, resolved by the caller's handler):")
  const handlers = await build(Weather.toLayer({ GetWeather: () => Effect.succeed({ celsius: 21 }) }))
  const tools = await measure(
    options,
    await contenders(toolMemory, toolCall, handlers, resolved),
    options.quick ? 20 : 100,
    // Twice the rounds of half the calls (the same time): more pairs for the per-round differences.
    options.quick ? 3 : 30
  )
  const markdown = [
    `Load (1/5/15 min) ${loadBefore} at the start.`,
    "",
    "`generateText` without a toolkit (the goal of issue 16):",
    "",
    plain.markdown,
    "",
    "`generateText` with a toolkit (one tool call, resolved by the caller's handler):",
    "",
    tools.markdown
  ].join("\n")
  return { markdown, goals: [goal("without a toolkit", plain), goal("with a toolkit", tools)] }
}

export const languageModel: Benchmark = {
  id: 8,
  title: "Rein's LanguageModel over the bare @effect/ai one",
  requires: { module: "@rein/providers", skipped: "skipped: @rein/providers is not built" },
  goals: [
    "without a toolkit: Rein's LanguageModel adds no more than an ExecutionPlan with two steps (CPU per call)",
    "with a toolkit: Rein's LanguageModel adds no more than an ExecutionPlan with two steps (CPU per call)"
  ],
  run
}
