// A/B helper (not part of the bench): bench 8's toolkit row (`generateText` with one tool call resolved by the
// caller's handler) — Rein over two candidates, a two-step `ExecutionPlan`, the bare model — each contender in its
// own process, N warm calls, CPU µs and KB allocated per call; processes alternated, order rotated every round;
// medians (min–max) over rounds of each contender and of its excess over the bare model in the same round; the load.
// Rein from each providers build given (copy the old one to packages/providers/dist-base first).
// Usage: node bench/ab/ab-toolkit.mjs [rounds=9] [N=2000] [builds: dist,dist-base]
//        node --expose-gc bench/ab/ab-toolkit.mjs --child <rein|plan|bare> <providers dist dir> N   (one JSON line)
import { execFileSync } from "node:child_process"
import { readFileSync } from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
const here = path.dirname(fileURLToPath(import.meta.url))
const load = () => readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ")

const child = async (mode, dir, n) => {
  const { LanguageModel, Tool, Toolkit } = await import("@effect/ai")
  const { Context, Effect, ExecutionPlan, Layer, Schema } = await import("effect")
  const { allocated, collect } = await import("../dist/harness.js")
  const { Catalog, Contract } = await import("@rein/core")
  const { layer } = await import(path.join(dir, "ReinLanguageModel.js"))
  const ep = (id) => ({ id, provider: "memory", model: id, capabilities: { contextWindow: 8000, maxOutputTokens: 1000, tools: true },
    prices: { inputTokens: 1e-6, outputTokens: 2e-6 } })
  const catalog = Catalog.make({ endpoints: [ep("mem/a"), ep("mem/b")] })
  const contract = Contract.make({ deadline: "30 seconds", candidates: ["mem/a", "mem/b"] })
  const GetWeather = Tool.make("GetWeather", { parameters: { city: Schema.String }, success: Schema.Struct({ celsius: Schema.Number }) })
  const Weather = Toolkit.make(GetWeather)
  const answer = process.env.PLAIN !== undefined
    ? [{ type: "text", text: "ok" }, { type: "finish", reason: "stop", usage: { inputTokens: 10, outputTokens: 2, totalTokens: 12 } }]
    : [{ type: "tool-call", id: "c1", name: "GetWeather", params: { city: "Paris" } },
    { type: "finish", reason: "tool-calls", usage: { inputTokens: 10, outputTokens: 2, totalTokens: 12 } }]
  const model = Layer.effect(LanguageModel.LanguageModel,
    LanguageModel.make({ generateText: () => Effect.succeed(answer), streamText: () => Effect.dieMessage("unused") }))
  const build = (l) => Effect.runPromise(Effect.scoped(Layer.build(l)))
  const handlers = await build(Weather.toLayer({ GetWeather: () => Effect.succeed({ celsius: 21 }) }))
  // PLAIN=1: the same call without the toolkit, over a model answering text (bench 8's first table).
  const plain = process.env.PLAIN !== undefined
  const call = LanguageModel.generateText(plain ? { prompt: "hello" } : { prompt: "weather?", toolkit: Weather })
  const [effect, context] = mode === "rein"
    ? [call, Context.merge(await build(layer({ contract, catalog, models: { "mem/a": model, "mem/b": model }, inputTokens: () => 10 })), handlers)]
    : mode === "bare" ? [call, Context.merge(await build(model), handlers)]
    : [Effect.withExecutionPlan(call, ExecutionPlan.make({ provide: model, attempts: 2 }, { provide: model })), handlers]
  const f = () => Effect.runPromise(Effect.provide(effect, context))
  if ((await f()).toolResults.length !== (plain ? 0 : 1)) throw new Error(`${mode}: the tool call was not resolved`)
  for (let i = 0; i < Math.max(200, n / 2); i++) await f()
  if (process.env.SITES !== undefined) return sites(f, n)
  collect()
  const c0 = process.cpuUsage()
  const { bytes } = await allocated(async () => { for (let i = 0; i < n; i++) await f() })
  const c = process.cpuUsage(c0)
  console.log(JSON.stringify({ us: (c.user + c.system) / n, kb: bytes / n / 1024 }))
}

// SITES=1: bytes per call (V8's sampling heap profiler, collected objects included), each sample charged to the
// innermost frame of Rein (providers, core) or of @effect/ai on its stack.
const sites = async (f, n) => {
  const { Session } = await import("node:inspector/promises")
  const session = new Session()
  session.connect()
  await session.post("HeapProfiler.enable")
  await session.post("HeapProfiler.startSampling", { samplingInterval: 256, includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true })
  for (let i = 0; i < n; i++) await f()
  const { profile } = await session.post("HeapProfiler.stopSampling")
  const by = new Map()
  const label = (c) => `${c.functionName || "(anon)"} ${c.url.replace(/.*\/(packages|node_modules)\//, "")}:${c.lineNumber + 1}`
  const charge = (node, owner) => {
    const k = label(node.callFrame)
    const own = /(providers|core)\/dist|@effect\/ai\//.test(k) ? k : owner
    // OWNER=<regex>: the samples charged to matching owners, by their own (allocating) frame instead.
    const key = process.env.OWNER !== undefined && new RegExp(process.env.OWNER).test(own) ? `  ${k}` : own
    by.set(key, (by.get(key) ?? 0) + node.selfSize)
    for (const c of node.children) charge(c, own)
  }
  charge(profile.head, "(outside)")
  for (const [k, v] of [...by].sort((a, b) => b[1] - a[1]).slice(0, 40)) console.log(`${(v / n).toFixed(0).padStart(7)} B  ${k}`)
}

const parent = (rounds, n, builds) => {
  const rows = [...builds.map((b) => ["rein", b]), ["plan", builds[0]], ["bare", builds[0]]]
  const names = rows.map(([mode, b]) => mode === "rein" ? `rein ${b}` : mode)
  const runs = rows.map(() => [])
  const loads = [load()]
  for (let r = 0; r < rounds; r++) {
    for (let j = 0; j < rows.length; j++) {
      const i = (j + r) % rows.length
      const [mode, b] = rows[i]
      const dir = path.resolve(here, "../../packages/providers", b)
      const line = execFileSync(process.execPath, ["--expose-gc", fileURLToPath(import.meta.url), "--child", mode, dir, String(n)])
      runs[i].push(JSON.parse(String(line).trim().split("\n").at(-1)))
    }
    loads.push(load().split(" ")[0])
  }
  const med = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1]
  const fmt = (xs, d) => `${med(xs).toFixed(d)} (${Math.min(...xs).toFixed(d)}–${Math.max(...xs).toFixed(d)})`
  const bare = runs.at(-1)
  console.log(`${rounds} rounds × ${n} warm calls per process; CPU µs and KB per call, median (min–max)`)
  for (let i = 0; i < rows.length; i++) {
    const us = runs[i].map((x) => x.us)
    const kb = runs[i].map((x) => x.kb)
    const extra = i === rows.length - 1 ? "" : `   over bare (same round): +${fmt(us.map((u, k) => u - bare[k].us), 1)} µs, +${
      fmt(kb.map((b, k) => b - bare[k].kb), 2)} KB`
    console.log(`${names[i].padEnd(16)} ${fmt(us, 1).padEnd(24)} µs  ${fmt(kb, 2).padEnd(22)} KB${extra}`)
  }
  console.log(`load (1 min) ${loads.join(" ")}`)
}

if (process.argv[2] === "--child") await child(process.argv[3], path.resolve(process.argv[4]), Number(process.argv[5]))
else parent(Number(process.argv[2] ?? 9), Number(process.argv[3] ?? 2000), (process.argv[4] ?? "dist,dist-base").split(","))
