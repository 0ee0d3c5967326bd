// A/B helper (not part of the bench): bench 8's toolkit row as the bench runs it (one `Runtime.runPromise` per
// call, the contender's context in the runtime), one contender, N warm calls, to profile or to count.
// Usage: node [--cpu-prof] bench/ab/lm-tool-prof.mjs <rein|plan|bare> [N=2000] [providers dist dir]
//        OPS=1: Effect operations run and fiber resumptions scheduled per call (load-independent);
//        PLAIN=1: the call without a toolkit (bench 8's first table).
import * as path from "node:path"
import { fileURLToPath } from "node:url"
const here = path.dirname(fileURLToPath(import.meta.url))
const [mode = "rein", n = 2000, dir = path.join(here, "../../packages/providers/dist")] = process.argv.slice(2)
const N = Number(n)
const { LanguageModel, Tool, Toolkit } = await import("@effect/ai")
const { Context, Effect, ExecutionPlan, Layer, Runtime, Schema } = await import("effect")
const { Catalog, Contract } = await import("@rein/core")
const { layer } = await import(path.resolve(dir, "ReinLanguageModel.js"))
const ep = (id) => ({ id, provider: "memory", model: id, capabilities: { contextWindow: 8000, maxOutputTokens: 1000, tools: true },
  prices: { inputTokens: 1e-6, outputTokens: 2e-6 } })
const catalog = Catalog.make({ endpoints: [ep("mem/a"), ep("mem/b")] })
const contract = Contract.make({ deadline: "30 seconds", candidates: ["mem/a", "mem/b"] })
const GetWeather = Tool.make("GetWeather", { parameters: { city: Schema.String }, success: Schema.Struct({ celsius: Schema.Number }) })
const Weather = Toolkit.make(GetWeather)
const plain = process.env.PLAIN !== undefined
const answer = plain
  ? [{ type: "text", text: "ok" }, { type: "finish", reason: "stop", usage: { inputTokens: 10, outputTokens: 2, totalTokens: 12 } }]
  : [{ type: "tool-call", id: "c1", name: "GetWeather", params: { city: "Paris" } },
    { type: "finish", reason: "tool-calls", usage: { inputTokens: 10, outputTokens: 2, totalTokens: 12 } }]
const model = Layer.effect(LanguageModel.LanguageModel,
  LanguageModel.make({ generateText: () => Effect.succeed(answer), streamText: () => Effect.dieMessage("unused") }))
const build = (l) => Effect.runPromise(Effect.scoped(Layer.build(l)))
const handlers = await build(Weather.toLayer({ GetWeather: () => Effect.succeed({ celsius: 21 }) }))
const call = LanguageModel.generateText(plain ? { prompt: "hello" } : { prompt: "weather?", toolkit: Weather })
const [effect, context] = mode === "rein"
  ? [call, Context.merge(await build(layer({ contract, catalog, models: { "mem/a": model, "mem/b": model }, inputTokens: () => 10 })), handlers)]
  : mode === "bare" ? [call, Context.merge(await build(model), handlers)]
  : [Effect.withExecutionPlan(call, ExecutionPlan.make({ provide: model, attempts: 2 }, { provide: model })), handlers]
const runtime = Runtime.make({ context, fiberRefs: Runtime.defaultRuntime.fiberRefs, runtimeFlags: Runtime.defaultRuntime.runtimeFlags })
const run = Runtime.runPromise(runtime)
if ((await run(effect)).toolResults.length !== (plain ? 0 : 1)) throw new Error(`${mode}: the tool call was not resolved`)
for (let i = 0; i < Number(process.env.WARM ?? 500); i++) await run(effect)
const count = { ops: 0, resumptions: 0, fibers: 0 }
if (process.env.OPS !== undefined) {
  const fiber = await Effect.runPromise(Effect.withFiberRuntime((f) => Effect.succeed(Object.getPrototypeOf(f))))
  const { drainQueueLaterOnExecutor, runLoop, start } = fiber
  fiber.runLoop = function(e) { const out = runLoop.call(this, e); count.ops += this.currentOpCount; return out }
  fiber.drainQueueLaterOnExecutor = function() { count.resumptions++; return drainQueueLaterOnExecutor.call(this) }
  fiber.start = function(e) { count.fibers++; return start.call(this, e) }
}
const c0 = process.cpuUsage()
for (let i = 0; i < N; i++) await run(effect)
const c = process.cpuUsage(c0)
console.log(JSON.stringify({ mode, us: (c.user + c.system) / N, ops: count.ops / N, resumptions: count.resumptions / N, fibers: count.fibers / N }))
