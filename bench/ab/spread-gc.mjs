// A/B helper (not part of the bench): bench 4's spread shape (one request a millisecond, 1,000), Rein health off, health on
// and journal on alternating in one process: CPU per request, p50/p99/max lateness, and every young- and old-generation
// collection during the run ([kind:ms], kind 1 = scavenge, 4 = mark-compact), from `PerformanceObserver`.
// node --expose-gc bench/ab/spread-gc.mjs <core dist dir> [rounds]
import { Effect, Layer, Scope } from "effect"
import { PerformanceObserver, constants } from "node:perf_hooks"
const dir = process.argv[2], R = Number(process.argv[3] ?? 3)
const { Catalog, Contract, Rein, Journal } = await import(dir + "/index.js")
const catalog = Catalog.make({ endpoints: [{ id: "mem/a", provider: "mem", model: "a", capabilities: { contextWindow: 128000, maxOutputTokens: 4096 }, prices: { inputTokens: 1e-6, outputTokens: 2e-6 } }] })
const contract = Contract.make({ deadline: 50, teardownGrace: 250, candidates: ["mem/a"], retry: { perEndpoint: 0 } })
const never = { internalMaxAttempts: 1, call: () => Effect.never }
const request = { prompt: "hello", inputTokens: 10, maxOutputTokens: 10 }
const mk = async (config) => {
  const base = Rein.layer({ catalog, providers: { mem: never }, health: config === "off" ? false : { failureRatio: 0.9, depositRatio: 2 } })
  const layer = config === "journal" ? Layer.merge(Layer.orDie(base), Layer.succeed(Journal.Journal, Journal.make(() => Effect.void))) : Layer.orDie(base)
  const ctx = await Effect.runPromise(Effect.flatMap(Scope.make(), (s) => Layer.buildWithScope(layer, s)))
  return Effect.provide(Rein.execute(request, contract), ctx)
}
const cs = { on: await mk("on"), journal: await mk("journal"), off: await mk("off") }
let gcs = []
new PerformanceObserver((l) => { for (const e of l.getEntries()) gcs.push(e) }).observe({ entryTypes: ["gc"] })
const now = () => Number(process.hrtime.bigint()) / 1e6
const spread = async (name) => {
  globalThis.gc(); await new Promise((r) => setTimeout(r, 20)); gcs = []
  const out = [], all = []; const c0 = process.cpuUsage()
  for (let i = 0; i < 1000; i++) { const t0 = now(); all.push(Effect.runPromise(Effect.either(cs[name])).then(() => out.push(now() - t0 - 50))); await new Promise((r) => setTimeout(r, 1)) }
  await Promise.all(all); const c = process.cpuUsage(c0)
  out.sort((a, b) => a - b)
  const major = gcs.filter((e) => e.detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR); const kinds = gcs.map((e) => `${e.detail?.kind}:${e.duration.toFixed(0)}`).join(",")
  console.log(name.padEnd(8), `cpu/req ${((c.user + c.system) / 1000).toFixed(0)}µs p50 ${out[499].toFixed(1)} p99 ${out[989].toFixed(1)} max ${out[999].toFixed(1)} gcs ${gcs.length} major ${major.length} maxPause ${Math.max(0, ...gcs.map((e) => e.duration)).toFixed(1)} totalGc ${gcs.reduce((a, e) => a + e.duration, 0).toFixed(1)} [${kinds}]`)
}
for (const n of ["on", "journal", "off"]) await spread(n)
for (let r = 0; r < R; r++) for (const n of (r % 2 ? ["journal", "on", "off"] : ["off", "on", "journal"])) await spread(n)
