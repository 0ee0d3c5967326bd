// A/B helper (not part of the bench): the expiry path of bench 4, two core builds side by side in one process.
// node --expose-gc bench/ab/ab-expiry.mjs <core dist A> <core dist B> <rounds> [burst|spread] [off,on,journal]
// Per configuration and build, interleaved (order alternated every round): CPU per request of a burst of
// 1,000 50 ms expiries split into [start, expiry] (µs), and p99 lateness (ms). With `spread`, one request a
// millisecond (bench 4's spread shape): p99 lateness and CPU per request.
import { Effect, Layer, Scope } from "effect"
import { readFileSync } from "node:fs"
import v8 from "node:v8"
import { leanBound } from "../dist/fixtures.js"
const [distA, distB] = [process.argv[2], process.argv[3]]
const R = Number(process.argv[4] ?? 5)
const shape = process.argv[5] ?? "burst"
const configs = (process.argv[6] ?? "off,on,journal").split(",")
const N = 1000
let started = 0, mark = null
const hang = Effect.suspend(() => { ++started; mark = process.cpuUsage(); return Effect.never })
const request = { prompt: "hello", inputTokens: 10, maxOutputTokens: 10 }
const health = { failureRatio: 0.9, depositRatio: 2 }
const build = async (dir, config) => {
  const { Catalog, Contract, Rein, Journal } = await import(dir + "/index.js")
  const catalog = Catalog.make({ endpoints: [{ id: "mem/a", provider: "mem", model: "a", capabilities: { contextWindow: 128000, maxOutputTokens: 4096 }, prices: { inputTokens: 1e-6, outputTokens: 2e-6 } }] })
  const contract = Contract.make({ deadline: 50, teardownGrace: 250, candidates: ["mem/a"], retry: { perEndpoint: 0 } })
  const never = { internalMaxAttempts: 1, call: () => hang }
  const base = Rein.layer({ catalog, providers: { mem: never }, health: config === "off" ? false : health })
  const layer = config === "journal" ? Layer.merge(Layer.orDie(base), Layer.succeed(Journal.Journal, Journal.make(() => Effect.void))) : Layer.orDie(base)
  const ctx = await Effect.runPromise(Effect.flatMap(Scope.make(), (s) => Layer.buildWithScope(layer, s)))
  return Effect.provide(Rein.execute(request, contract), ctx)
}
const now = () => Number(process.hrtime.bigint()) / 1e6
const us = (a, b) => (b.user + b.system - a.user - a.system)
const check = (r) => { if (r._tag !== "Left" || (r.left._tag !== "DeadlineExceeded" && r.left._tag !== "LeanTimeout" && r.left.constructor?.name !== "LeanTimeout")) throw new Error("unexpected " + JSON.stringify(r).slice(0, 200)) }
/** Bytes allocated while \`f\` runs (as bench/src/harness.ts \`allocated\`). */
const allocated = async (f) => {
  const profiler = new v8.GCProfiler(); profiler.start()
  const before = v8.getHeapStatistics().used_heap_size
  const value = await f()
  const after = v8.getHeapStatistics().used_heap_size
  let freed = 0
  for (const s of profiler.stop()?.statistics ?? []) freed += s.beforeGC.heapStatistics.usedHeapSize - s.afterGC.heapStatistics.usedHeapSize
  return { ...value, kb: (after - before + freed) / N / 1024 }
}
const burst = (one) => { globalThis.gc?.(); return allocated(() => burstOf(one)) }
const burstOf = async (one) => {
  started = 0; mark = null
  const out = []
  const c0 = process.cpuUsage()
  await Effect.runPromise(Effect.forEach(Array.from({ length: N }), () => Effect.suspend(() => { const t0 = now(); return Effect.map(Effect.either(one), (r) => { out.push(now() - t0 - 50) }) }), { concurrency: "unbounded", discard: true }))
  const c1 = process.cpuUsage()
  out.sort((a, b) => a - b)
  return { start: us(c0, mark) / N, expiry: us(mark, c1) / N, p99: out[Math.ceil(0.99 * N) - 1] }
}
const spread = async (one) => {
  globalThis.gc?.()
  const out = [], all = []
  const c0 = process.cpuUsage()
  for (let i = 0; i < N; i++) {
    const t0 = now()
    all.push(Effect.runPromise(Effect.either(one)).then(() => out.push(now() - t0 - 50)))
    await new Promise((r) => setTimeout(r, 1))
  }
  await Promise.all(all)
  const c1 = process.cpuUsage()
  out.sort((a, b) => a - b)
  return { start: 0, expiry: us(c0, c1) / N, p99: out[Math.ceil(0.99 * N) - 1] }
}
const measure = shape === "spread" ? spread : burst
const contenders = []
for (const config of configs) {
  contenders.push({ name: `${config} A`, one: await build(distA, config) })
  contenders.push({ name: `${config} B`, one: await build(distB, config) })
}
contenders.push({ name: "lean", one: leanBound(hang, 50) })
const load = () => readFileSync("/proc/loadavg", "utf8").split(" ")[0]
const load0 = load()
for (const c of contenders) await measure(c.one)
const res = Object.fromEntries(contenders.map((c) => [c.name, []]))
for (let r = 0; r < R; r++) {
  const order = r % 2 === 0 ? contenders : [...contenders].reverse()
  for (const c of order) res[c.name].push(await measure(c.one))
}
const med = (xs) => { const s = xs.slice().sort((a, b) => a - b); return s[s.length >> 1] }
const fmt = (xs, d) => `${med(xs).toFixed(d)} [${Math.min(...xs).toFixed(d)}–${Math.max(...xs).toFixed(d)}]`
console.log(`${shape}, ${R} rounds, load ${load0} → ${load()}; medians [min–max]`)
for (const c of contenders) {
  const xs = res[c.name]
  console.log(`${c.name.padEnd(10)} start µs ${fmt(xs.map((x) => x.start), 0).padEnd(18)} expiry µs ${fmt(xs.map((x) => x.expiry), 0).padEnd(20)} p99 ms ${fmt(xs.map((x) => x.p99), 1).padEnd(24)} KB/req ${fmt(xs.map((x) => x.kb ?? 0), 2)}`)
}
