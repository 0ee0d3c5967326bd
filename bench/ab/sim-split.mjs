// A/B helper (not part of the bench): bench 6's hour in process beside its floor rows (bare `Rein.execute`, the
// lean bound, the arrivals alone), in one process, counted rather than timed: Effect operations run, fiber
// resumptions scheduled and bytes allocated (the heap's growth plus what each collection freed, `v8.GCProfiler`)
// per simulated request, warm (each row run twice untimed first), after a `gc()`. The simulation's part is its
// row minus bare `Rein.execute`'s. CPU per row is printed too (noise under load: rows interleaved, medians).
// node --expose-gc bench/ab/sim-split.mjs [rounds=3] [checkout root]
import v8 from "node:v8"
import os from "node:os"
import { pathToFileURL } from "node:url"
import { checkout } from "./sim-checkout.mjs"
const rounds = Number(process.argv[2] ?? 3)
const side = await checkout(process.argv[3])
const { root, cli, Effect, catalog, contract } = side
const scenario = side.scenario("bench/scenarios/hour-outage.json")
const { floors } = await import(pathToFileURL(`${root}/bench/dist/simulation-floors.js`).href)
const rows = await floors(root, { catalog, contract, health: cli.Scenario.healthConfig(scenario) })
const named = {
  simulate: async () => {
    const r = await Effect.runPromise(cli.Simulate.simulate(catalog, contract, scenario, 1))
    if (r.requests !== 10_000) throw new Error("not 10,000 requests")
  },
  rein: rows.find((r) => r.name.startsWith("bare Rein")).run,
  lean: rows.find((r) => r.name.includes("lean bound")).run,
  arrivals: rows.find((r) => r.name.includes("arrivals alone")).run
}
// `EXTRA=<scenario file>,…`: the simulation of other scenarios as more rows (e.g. the hour without its outage).
for (const file of process.env.EXTRA?.split(",") ?? []) {
  const s = side.scenario(file)
  named[file.replace(/.*\//, "")] = () => Effect.runPromise(cli.Simulate.simulate(catalog, contract, s, 1))
}
const only = process.env.ROWS?.split(",") ?? Object.keys(named)
const fiberProto = await Effect.runPromise(Effect.withFiberRuntime((f) => Effect.succeed(Object.getPrototypeOf(f))))
const count = { ops: 0, resumptions: 0, on: false }
const { drainQueueLaterOnExecutor, runLoop } = fiberProto
fiberProto.runLoop = function(effect) {
  const out = runLoop.call(this, effect)
  if (count.on) count.ops += this.currentOpCount
  return out
}
fiberProto.drainQueueLaterOnExecutor = function() {
  if (count.on) count.resumptions++
  return drainQueueLaterOnExecutor.call(this)
}
const allocated = async (f) => {
  const profiler = new v8.GCProfiler()
  profiler.start()
  const before = v8.getHeapStatistics().used_heap_size
  await f()
  const after = v8.getHeapStatistics().used_heap_size
  const stats = profiler.stop()?.statistics ?? []
  let freed = 0
  for (const s of stats) freed += s.beforeGC.heapStatistics.usedHeapSize - s.afterGC.heapStatistics.usedHeapSize
  return { bytes: after - before + freed, gcs: stats.length }
}
for (const n of only) { await named[n](); await named[n]() }
const out = Object.fromEntries(only.map((n) => [n, { ops: [], res: [], kb: [], gcs: [], cpu: [] }]))
const load0 = os.loadavg()[0]
for (let r = 0; r < rounds; r++) {
  const order = r % 2 === 0 ? only : [...only].reverse()
  for (const n of order) {
    globalThis.gc()
    count.ops = 0
    count.resumptions = 0
    count.on = true
    const c0 = process.cpuUsage()
    const a = await allocated(named[n])
    const c = process.cpuUsage(c0)
    count.on = false
    const o = out[n]
    o.ops.push(count.ops / 1e4)
    o.res.push(count.resumptions / 1e4)
    o.kb.push(a.bytes / 1e4 / 1024)
    o.gcs.push(a.gcs)
    o.cpu.push((c.user + c.system) / 1000)
  }
}
const med = (xs) => { const s = [...xs].sort((a, b) => a - b); return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2 }
for (const n of only) {
  const o = out[n]
  console.log(`${n.padEnd(16)} ops/req ${med(o.ops).toFixed(2)}  resumptions/req ${med(o.res).toFixed(2)}  KB/req ${med(o.kb).toFixed(2)} (${Math.min(...o.kb).toFixed(2)}–${Math.max(...o.kb).toFixed(2)})  GCs ${med(o.gcs)}  CPU ${med(o.cpu).toFixed(0)} ms (${Math.min(...o.cpu).toFixed(0)}–${Math.max(...o.cpu).toFixed(0)})`)
}
console.log(`load ${load0.toFixed(1)}–${os.loadavg()[0].toFixed(1)}`)
