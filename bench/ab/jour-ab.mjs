// A/B helper (not part of the bench): bench 4's burst (1,000 requests, 50 ms deadline, a provider that never answers)
// for several core builds in ONE process, beside the lean bound: every round one burst each, the order rotated every
// round and reversed every other round, a full gc() before each burst (as bench 4's `collect()`). Rein runs on a
// runtime carrying its services (bench 4's `runtimeOf`). Per contender: p99 lateness ÷ the same round's lean bound
// p99 (median, min–max), p99 ms, CPU µs per request split at the last call started [start, expiry], KB allocated
// per request; the load before and after.
// With REF=<label>: also each contender's p99 ÷ that contender's p99 in the same round (old vs new build, paired).
// node --expose-gc bench/ab/jour-ab.mjs <rounds> <config>@<core dist dir>[=<label>] ...   (config: off | on | journal)
import { Effect, FiberRefs, Layer, Runtime, Scope } from "effect"
import { readFileSync } from "node:fs"
import v8 from "node:v8"
import { leanBound } from "../dist/fixtures.js"
const R = Number(process.argv[2])
const N = 1000
let mark = null
const hang = Effect.suspend(() => { mark = process.cpuUsage(); return Effect.never })
const build = async (spec) => {
  const [named, label] = spec.split("=")
  const [config, dir] = named.split("@")
  const { Catalog, Contract, Rein, Journal } = await import(dir + "/index.js")
  const catalog = Catalog.make({ endpoints: [{ id: "mem/a", provider: "mem", model: "a", capabilities: { contextWindow: 128000, maxOutputTokens: 4096 }, prices: { inputTokens: 1e-6, outputTokens: 2e-6 } }] })
  const contract = Contract.make({ deadline: 50, teardownGrace: 250, candidates: ["mem/a"], retry: { perEndpoint: 0 } })
  const base = Rein.layer({ catalog, providers: { mem: { internalMaxAttempts: 1, call: () => hang } }, health: config === "off" ? false : { failureRatio: 0.9, depositRatio: 2 } })
  const layer = config === "journal" ? Layer.merge(Layer.orDie(base), Layer.succeed(Journal.Journal, Journal.make(() => Effect.void))) : Layer.orDie(base)
  const context = await Effect.runPromise(Effect.flatMap(Scope.make(), (s) => Layer.buildWithScope(layer, s)))
  const runtime = Runtime.make({ context, runtimeFlags: Runtime.defaultRuntimeFlags, fiberRefs: FiberRefs.empty() })
  return { name: label ?? named, runtime, one: Rein.execute({ prompt: "hello", inputTokens: 10, maxOutputTokens: 10 }, contract), ok: (e) => e._tag === "DeadlineExceeded" }
}
const contenders = [{ name: "lean bound", runtime: Runtime.defaultRuntime, one: leanBound(hang, 50), ok: (e) => e?.constructor?.name === "LeanTimeout" }]
for (const spec of process.argv.slice(3)) contenders.push(await build(spec))
const now = () => Number(process.hrtime.bigint()) / 1e6
const us = (a, b) => b.user + b.system - a.user - a.system
const burst = async (c) => {
  globalThis.gc()
  mark = null
  const profiler = new v8.GCProfiler(); profiler.start()
  const h0 = v8.getHeapStatistics().used_heap_size
  const out = []; let wrong = 0
  const c0 = process.cpuUsage()
  await Runtime.runPromise(c.runtime)(Effect.forEach(Array.from({ length: N }), () => Effect.suspend(() => {
    const t0 = now()
    return Effect.map(Effect.either(c.one), (r) => { out.push(now() - t0 - 50); if (r._tag !== "Left" || !c.ok(r.left)) wrong++ })
  }), { concurrency: "unbounded", discard: true }))
  const c1 = process.cpuUsage()
  let freed = 0
  for (const s of profiler.stop()?.statistics ?? []) freed += s.beforeGC.heapStatistics.usedHeapSize - s.afterGC.heapStatistics.usedHeapSize
  if (wrong > 0) throw new Error(`${c.name}: ${wrong} of ${N} requests ended with an unexpected result`)
  out.sort((a, b) => a - b)
  return { p99: out[Math.ceil(0.99 * N) - 1], start: us(c0, mark) / N, expiry: us(mark, c1) / N, kb: (v8.getHeapStatistics().used_heap_size - h0 + freed) / N / 1024 }
}
const load = () => readFileSync("/proc/loadavg", "utf8").split(" ")[0]
const l0 = load(), t0 = new Date().toISOString().slice(11, 16)
for (const c of contenders) { await burst(c); await burst(c) }
const res = contenders.map(() => [])
for (let r = 0; r < R; r++) {
  const idx = contenders.map((_, k) => (k + r) % contenders.length)
  for (const k of r % 2 ? idx.reverse() : idx) res[k].push(await burst(contenders[k]))
}
const med = (xs) => { const s = xs.slice().sort((a, b) => a - b); return s[s.length >> 1] }
const fmt = (xs, d) => `${med(xs).toFixed(d)} (${Math.min(...xs).toFixed(d)}–${Math.max(...xs).toFixed(d)})`
console.log(`${R} rounds, ${t0}–${new Date().toISOString().slice(11, 16)} UTC, load ${l0} → ${load()}; medians (min–max)`)
for (const [k, c] of contenders.entries()) {
  const xs = res[k], ratio = xs.map((x, r) => x.p99 / res[0][r].p99)
  const ref = contenders.findIndex((x) => x.name === process.env.REF)
  const paired = ref < 0 ? "" : `p99 ÷ ${process.env.REF} ${fmt(xs.map((x, r) => x.p99 / res[ref][r].p99), 2).padEnd(18)} `
  console.log(`${c.name.padEnd(22)} p99 ÷ lean ${fmt(ratio, 2).padEnd(18)} ${paired} p99 ms ${fmt(xs.map((x) => x.p99), 1).padEnd(22)} CPU µs ${fmt(xs.map((x) => x.start), 0)} / ${fmt(xs.map((x) => x.expiry), 0).padEnd(16)} KB ${fmt(xs.map((x) => x.kb), 2)}`)
}
