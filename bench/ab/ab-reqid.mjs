// A/B helper (not part of the bench): what an outcome's `requestId` costs on the success path. Two core builds
// side by side in one process (order alternated every round), 20,000 sequential `Rein.execute` successes per
// sample through one runPromise: plain, journaled (the journal draws the id), and named (`request.id`, no journal).
// node --expose-gc bench/ab/ab-reqid.mjs <core dist A> <core dist B> <rounds>
import { Effect, Layer, Scope } from "effect"
import { readFileSync } from "node:fs"
import v8 from "node:v8"
const [distA, distB] = [process.argv[2], process.argv[3]]
const R = Number(process.argv[4] ?? 7)
const N = 20000
const build = async (dir, config) => {
  const { Catalog, Contract, Rein, Journal } = await import(dir + "/index.js")
  const catalog = Catalog.make({ endpoints: [{ id: "mem/a", provider: "mem", model: "a", capabilities: { contextWindow: 128000, maxOutputTokens: 4096 }, prices: { inputTokens: 1e-6, outputTokens: 2e-6 } }] })
  const contract = Contract.make({ deadline: 5000, candidates: ["mem/a"], retry: { perEndpoint: 0 } })
  const answer = Effect.succeed({ text: "ok", usage: { inputTokens: 10, outputTokens: 5 } })
  const mem = { internalMaxAttempts: 1, call: () => answer }
  const base = Layer.orDie(Rein.layer({ catalog, providers: { mem }, health: false }))
  const layer = config === "journal" ? Layer.merge(base, Layer.succeed(Journal.Journal, Journal.make(() => Effect.void))) : base
  const ctx = await Effect.runPromise(Effect.flatMap(Scope.make(), (s) => Layer.buildWithScope(layer, s)))
  const request = config === "named" ? { prompt: "hello", inputTokens: 10, maxOutputTokens: 10, id: "order-42" } : { prompt: "hello", inputTokens: 10, maxOutputTokens: 10 }
  const one = Effect.provide(Rein.execute(request, contract), ctx)
  return Effect.forEach(Array.from({ length: N }), () => one, { discard: true })
}
const measure = async (all) => {
  globalThis.gc?.()
  const profiler = new v8.GCProfiler(); profiler.start()
  const before = v8.getHeapStatistics().used_heap_size
  const c0 = process.cpuUsage()
  await Effect.runPromise(all)
  const c1 = process.cpuUsage()
  const after = v8.getHeapStatistics().used_heap_size
  let freed = 0
  for (const s of profiler.stop()?.statistics ?? []) freed += s.beforeGC.heapStatistics.usedHeapSize - s.afterGC.heapStatistics.usedHeapSize
  return { cpu: (c1.user + c1.system - c0.user - c0.system) / N, bytes: (after - before + freed) / N }
}
const contenders = []
for (const config of ["plain", "journal", "named"]) {
  contenders.push({ name: `${config} A`, all: await build(distA, config) })
  contenders.push({ name: `${config} B`, all: await build(distB, config) })
}
const load = () => readFileSync("/proc/loadavg", "utf8").split(" ")[0]
const load0 = load()
for (const c of contenders) await measure(c.all)
const res = Object.fromEntries(contenders.map((c) => [c.name, []]))
for (let r = 0; r < R; r++) {
  for (const c of r % 2 === 0 ? contenders : [...contenders].reverse()) res[c.name].push(await measure(c.all))
}
const med = (xs) => { const s = xs.slice().sort((a, b) => a - b); return s[s.length >> 1] }
const fmt = (xs, d) => `${med(xs).toFixed(d)} [${Math.min(...xs).toFixed(d)}–${Math.max(...xs).toFixed(d)}]`
console.log(`${R} rounds of ${N}, load ${load0} → ${load()}; medians [min–max]`)
for (const c of contenders) {
  const xs = res[c.name]
  console.log(`${c.name.padEnd(10)} CPU µs/req ${fmt(xs.map((x) => x.cpu), 2).padEnd(24)} bytes/req ${fmt(xs.map((x) => x.bytes), 0)}`)
}
