// A/B helper (not part of the bench): bench 8's toolkit row (`generateText`, one tool call resolved by the
// caller's handler), Rein from this checkout's build (`packages/{core,providers}/dist`) against an older build
// (`packages/{core,providers}/dist-base`, the providers copy importing the core copy), and the two-step plan,
// in ONE process, alternated call by call (order rotated every call and every round), each call timed alone
// (process CPU, and the main thread's from /proc/thread-self/schedstat). Prints the median of new − old and of each − plan over adjacent calls with a 95 % interval
// (order statistics, as the bench's `medianWithin`), KB allocated per call (blocks of 200), and the load.
// Setup of the old build: copy its two dist directories to dist-base, then in packages/providers/dist-base
// rewrite `from "@rein/core"` to the relative path of ../core/dist-base/index.js. PLAIN=1: without a toolkit.
// Usage: node --expose-gc bench/ab/lm-tool-ab.mjs [rounds=20] [calls=50]
import { closeSync, openSync, readFileSync, readSync } from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
const here = path.dirname(fileURLToPath(import.meta.url))
const [rounds = 20, calls = 50] = process.argv.slice(2).map(Number)
const load = () => readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ")
const { LanguageModel, Tool, Toolkit } = await import("@effect/ai")
const { Context, Effect, ExecutionPlan, Layer, Runtime, Schema } = await import("effect")
const { allocated } = await import("../dist/harness.js")
const plain = process.env.PLAIN !== undefined
const GetWeather = Tool.make("GetWeather", { parameters: { city: Schema.String }, success: Schema.Struct({ celsius: Schema.Number }) })
const Weather = Toolkit.make(GetWeather)
const answer = plain
  ? [{ type: "text", text: "ok" }, { type: "finish", reason: "stop", usage: { inputTokens: 10, outputTokens: 2, totalTokens: 12 } }]
  : [{ type: "tool-call", id: "c1", name: "GetWeather", params: { city: "Paris" } },
    { type: "finish", reason: "tool-calls", usage: { inputTokens: 10, outputTokens: 2, totalTokens: 12 } }]
const model = Layer.effect(LanguageModel.LanguageModel,
  LanguageModel.make({ generateText: () => Effect.succeed(answer), streamText: () => Effect.dieMessage("unused") }))
const build = (l) => Effect.runPromise(Effect.scoped(Layer.build(l)))
const handlers = await build(Weather.toLayer({ GetWeather: () => Effect.succeed({ celsius: 21 }) }))
const call = LanguageModel.generateText(plain ? { prompt: "hello" } : { prompt: "weather?", toolkit: Weather })
const ep = (id) => ({ id, provider: "memory", model: id, capabilities: { contextWindow: 8000, maxOutputTokens: 1000, tools: true },
  prices: { inputTokens: 1e-6, outputTokens: 2e-6 } })
const runner = (effect, context) => {
  const run = Runtime.runPromise(Runtime.make({ context, fiberRefs: Runtime.defaultRuntime.fiberRefs, runtimeFlags: Runtime.defaultRuntime.runtimeFlags }))
  return () => run(effect)
}
const rein = async (dist) => {
  const { Catalog, Contract } = await import(path.join(here, `../../packages/core/${dist}/index.js`))
  const { layer } = await import(path.join(here, `../../packages/providers/${dist}/ReinLanguageModel.js`))
  const catalog = Catalog.make({ endpoints: [ep("mem/a"), ep("mem/b")] })
  const contract = Contract.make({ deadline: "30 seconds", candidates: ["mem/a", "mem/b"] })
  return runner(call, Context.merge(await build(layer({ contract, catalog, models: { "mem/a": model, "mem/b": model }, inputTokens: () => 10 })), handlers))
}
const cs = [
  ["new", await rein("dist")],
  ["old", await rein("dist-base")],
  ["plan", runner(Effect.withExecutionPlan(call, ExecutionPlan.make({ provide: model, attempts: 2 }, { provide: model })), handlers)]
]
for (const [name, f] of cs) {
  if ((await f()).toolResults.length !== (plain ? 0 : 1)) throw new Error(`${name}: not the expected answer`)
  for (let i = 0; i < 300; i++) await f()
}
const fd = openSync("/proc/thread-self/schedstat", "r")
const buf = Buffer.alloc(128)
const mainNs = () => Number(buf.toString("latin1", 0, readSync(fd, buf, 0, 128, 0)).split(" ")[0])
const load0 = load()
const cpu = cs.map(() => [])
const main = cs.map(() => [])
for (let r = 0; r < rounds; r++) {
  for (let j = 0; j < calls; j++) {
    for (let k = 0; k < cs.length; k++) {
      const i = (k + j + r) % cs.length
      const m0 = mainNs()
      const c0 = process.cpuUsage()
      await cs[i][1]()
      const c = process.cpuUsage(c0)
      main[i].push((mainNs() - m0) / 1000)
      cpu[i].push((c.user + c.system))
    }
  }
}
const kb = cs.map(() => [])
for (let b = 0; b < 3; b++) for (let i = 0; i < cs.length; i++) kb[i].push((await allocated(async () => { for (let n = 0; n < 200; n++) await cs[i][1]() })).bytes / 200 / 1024)
const sorted = (xs) => [...xs].sort((a, b) => a - b)
const med = (xs) => { const s = sorted(xs); return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2 }
const within = (xs) => {
  const s = sorted(xs); const half = 0.98 * Math.sqrt(s.length)
  const at = (rank) => s[Math.min(s.length - 1, Math.max(0, Math.round(rank)))]
  return `${med(s).toFixed(1)} µs (95 % ${at(s.length / 2 - half - 1).toFixed(1)} to ${at(s.length / 2 + half).toFixed(1)})`
}
const diff = (a, b, by = cpu) => by[a].map((x, n) => x - by[b][n])
console.log(`${plain ? "PLAIN " : ""}${rounds}×${calls} calls each, load ${load0} → ${load()}`)
cs.forEach(([name], i) => console.log(`  ${name}: CPU ${med(cpu[i]).toFixed(0)} µs/call (median), ${med(kb[i]).toFixed(1)} KB/call`))
console.log(`  process CPU, new − old: ${within(diff(0, 1))}; new − plan: ${within(diff(0, 2))}; old − plan: ${within(diff(1, 2))}`)
console.log(`  main thread, new − old: ${within(diff(0, 1, main))}; new − plan: ${within(diff(0, 2, main))}; old − plan: ${within(diff(1, 2, main))}`)
closeSync(fd)
