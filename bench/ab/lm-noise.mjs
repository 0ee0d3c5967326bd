// Diagnostic for bench 8's toolkit row: why Rein − plan per round spreads ±1.8 ms. Rounds of N calls per
// contender (rotated order, as the bench), per sample: process CPU, main-thread CPU (/proc/thread-self/schedstat),
// and the GCs (count by kind, pause ms) that landed in it.
// Usage: node --expose-gc bench/ab/lm-noise.mjs [rounds=12] [N=100]
import { closeSync, openSync, readSync } from "node:fs"
import { PerformanceObserver, performance } from "node:perf_hooks"
const { LanguageModel, Tool, Toolkit } = await import("@effect/ai")
const { Context, Effect, ExecutionPlan, Layer, Schema } = await import("effect")
const { Catalog, Contract } = await import("@rein/core")
const { ReinLanguageModel } = await import("@rein/providers")
const [rounds = 12, N = 100] = process.argv.slice(2, 4).map(Number)
const byCall = process.argv[4] === "call"
const ep = (id) => ({ id, provider: "memory", model: id, capabilities: { contextWindow: 8000, maxOutputTokens: 1000, tools: true },
  prices: { inputTokens: 1e-6, outputTokens: 2e-6 } })
const catalog = Catalog.make({ endpoints: [ep("mem/a"), ep("mem/b")] })
const contract = Contract.make({ deadline: "30 seconds", candidates: ["mem/a", "mem/b"] })
const GetWeather = Tool.make("GetWeather", { parameters: { city: Schema.String }, success: Schema.Struct({ celsius: Schema.Number }) })
const Weather = Toolkit.make(GetWeather)
const answer = [{ type: "tool-call", id: "c1", name: "GetWeather", params: { city: "Paris" } },
  { type: "finish", reason: "tool-calls", usage: { inputTokens: 10, outputTokens: 2, totalTokens: 12 } }]
const model = Layer.effect(LanguageModel.LanguageModel,
  LanguageModel.make({ generateText: () => Effect.succeed(answer), streamText: () => Effect.dieMessage("unused") }))
const build = (l) => Effect.runPromise(Effect.scoped(Layer.build(l)))
const handlers = await build(Weather.toLayer({ GetWeather: () => Effect.succeed({ celsius: 21 }) }))
const call = LanguageModel.generateText({ prompt: "weather?", toolkit: Weather })
const rein = Context.merge(await build(ReinLanguageModel.layer({ contract, catalog, models: { "mem/a": model, "mem/b": model }, inputTokens: () => 10 })), handlers)
const bare = Context.merge(await build(model), handlers)
const plan = ExecutionPlan.make({ provide: model, attempts: 2 }, { provide: model })
const cs = [
  ["rein", () => Effect.runPromise(Effect.provide(call, rein))],
  ["bare", () => Effect.runPromise(Effect.provide(call, bare))],
  ["plan", () => Effect.runPromise(Effect.provide(Effect.withExecutionPlan(call, plan), handlers))]
]
const fd = openSync("/proc/thread-self/schedstat", "r")
const buf = Buffer.alloc(128)
const mainNs = () => { const n = readSync(fd, buf, 0, 128, 0); return Number(buf.toString("latin1", 0, n).split(" ")[0]) }
const gcs = []
new PerformanceObserver((l) => { for (const e of l.getEntries()) gcs.push([e.startTime, e.duration, e.detail?.kind ?? e.kind]) }).observe({ entryTypes: ["gc"] })
for (const [, f] of cs) for (let i = 0; i < 300; i++) await f()
const rows = []
const perCall = []
if (!byCall) {
for (let r = 0; r < rounds; r++) {
  for (let k = 0; k < cs.length; k++) {
    const i = (k + r) % cs.length
    const [name, f] = cs[i]
    const t0 = performance.now(); const c0 = process.cpuUsage(); const m0 = mainNs()
    for (let j = 0; j < N; j++) await f()
    const m = mainNs() - m0; const c = process.cpuUsage(c0); const t1 = performance.now()
    rows.push({ r, name, t0, t1, proc: (c.user + c.system) * 1000 / N, main: m / N })
  }
}
} else {
for (let r = 0; r < rounds; r++) {
  const acc = cs.map(([name]) => ({ r, name, t0: performance.now(), t1: 0, proc: 0, main: 0 }))
  for (let j = 0; j < N; j++) {
    for (let k = 0; k < cs.length; k++) {
      const i = (k + j + r) % cs.length
      const c0 = process.cpuUsage(); const m0 = mainNs()
      await cs[i][1]()
      const m = mainNs() - m0; const c = process.cpuUsage(c0)
      acc[i].proc += (c.user + c.system) * 1000 / N; acc[i].main += m / N
      perCall.push({ r, j, name: cs[i][0], proc: (c.user + c.system) * 1000, main: m })
    }
  }
  for (const a of acc) { a.t1 = performance.now(); rows.push(a) }
}
}
await new Promise((res) => setTimeout(res, 50))
closeSync(fd)
const us = (x) => (x / 1000).toFixed(0).padStart(6)
for (const row of rows) {
  const inside = gcs.filter(([t]) => t >= row.t0 && t < row.t1)
  const major = inside.filter(([, , k]) => k === 2 || k === 4)
  const pause = inside.reduce((s, [, d]) => s + d, 0)
  console.log(`r${String(row.r).padStart(2)} ${row.name} proc ${us(row.proc)} µs  main ${us(row.main)} µs  wall ${us((row.t1 - row.t0) * 1e6 / N)}  minor ${inside.filter(([, , k]) => k === 1).length} major ${major.length} gc-pause ${pause.toFixed(1)} ms`)
}
const med = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[s.length >> 1] }
for (const key of ["proc", "main"]) {
  const d = []
  for (let r = 0; r < rounds; r++) { const g = (n) => rows.find((x) => x.r === r && x.name === n)[key]; d.push(g("rein") - g("plan")) }
  console.log(`${key}: rein − plan per round median ${us(med(d))} µs, min ${us(Math.min(...d))}, max ${us(Math.max(...d))}`)
}
console.log("load", (await import("node:os")).loadavg().map((x) => x.toFixed(1)).join(" "))

if (byCall) for (const key of ["proc", "main"]) {
  const d = []
  for (let r = 0; r < rounds; r++) for (let j = 0; j < N; j++) {
    const g = (n) => perCall.find((x) => x.r === r && x.j === j && x.name === n)[key]
    d.push(g("rein") - g("plan"))
  }
  const s = [...d].sort((a, b) => a - b)
  console.log(`${key}: per-call paired rein − plan median ${us(med(d))} µs, p25 ${us(s[Math.floor(s.length / 4)])} p75 ${us(s[Math.floor(s.length * 3 / 4)])}; per-call medians rein ${us(med(perCall.filter((x) => x.name === "rein").map((x) => x[key])))} plan ${us(med(perCall.filter((x) => x.name === "plan").map((x) => x[key])))} bare ${us(med(perCall.filter((x) => x.name === "bare").map((x) => x[key])))}`)
}
