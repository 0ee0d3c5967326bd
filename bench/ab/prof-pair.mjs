// A/B helper (not part of the bench): two rows of bench 2's 5 ms shape (ab-guard.mjs's names, or `floor`) profiled
// in ONE process, alternated run by run, each run in its own CPU profile (inspector), so both rows share the
// JIT's state, the load and the time window: self time per item by function, summed over each row's runs, and
// the difference (b − a), largest first; GC and the per-package shares beside.
// node --expose-gc bench/ab/prof-pair.mjs [a=plain] [b=all] [N,L,runs=20000,5,6] [top=40]   ROOT=<checkout>
import { Session } from "node:inspector/promises"
import { shapeOf } from "./shape.mjs"
const [A, B] = [process.argv[2] ?? "plain", process.argv[3] ?? "all"]
const [N, L, R] = (process.argv[4] ?? "20000,5,6").split(",").map(Number)
const TOP = Number(process.argv[5] ?? 40)
const { Batch, Guardrails, effect, leanBound, request, call, context, contract, items, load } = await shapeOf(process.env.ROOT, N, L)
const { Effect } = effect
const configs = {
  plain: {},
  all: {
    itemDeadline: "30 seconds", batchDeadline: "10 minutes", abortOn: ["authentication", "insufficient_balance"],
    maxTotalTokens: 1e12, maxTotalCost: 1e9, requestsPerMinute: 1e9, tokensPerMinute: 1e12, cooldown: "1 second"
  },
  item: { itemDeadline: "30 seconds" }, batch: { batchDeadline: "10 minutes" },
  abortOn: { abortOn: ["authentication", "insufficient_balance"] }, caps: { maxTotalTokens: 1e12, maxTotalCost: 1e9 },
  rpm: { requestsPerMinute: 1e9 }, tpm: { tokensPerMinute: 1e12 }, cooldown: { cooldown: "1 second" }
}
const run = (name) => name === "floor"
  ? () => Effect.runPromise(Effect.forEach(items, () => leanBound(Effect.promise(call), 60_000), { concurrency: 200 }))
  : () => Effect.runPromise(Batch.run(items, { contract, request: () => request, guardrails: Guardrails.make({ concurrency: 200, ...configs[name] }) }).pipe(Effect.provide(context)))
const f = { [A]: run(A), [B]: run(B) }
for (const k of [A, B, A, B]) await f[k]()
const session = new Session()
session.connect()
await session.post("Profiler.enable")
await session.post("Profiler.setSamplingInterval", { interval: 200 })
const self = { [A]: new Map(), [B]: new Map() }
const cpu = { [A]: [], [B]: [] }
const loads = [load()]
const label = (c) => `${c.functionName || "(anon)"} ${c.url.replace(/.*\/(packages|node_modules)\//, "").replace(/.*\/bench\//, "bench/")}:${c.lineNumber + 1}`
for (let r = 0; r < R; r++) {
  for (const k of r % 2 === 0 ? [A, B] : [B, A]) {
    globalThis.gc?.()
    await session.post("Profiler.start")
    const c0 = process.cpuUsage()
    await f[k]()
    const c = process.cpuUsage(c0)
    const { profile } = await session.post("Profiler.stop")
    cpu[k].push((c.user + c.system) / N)
    const dt = new Map()
    for (let i = 0; i < profile.samples.length; i++) dt.set(profile.samples[i], (dt.get(profile.samples[i]) ?? 0) + (profile.timeDeltas[i + 1] ?? 0))
    for (const n of profile.nodes) {
      const t = dt.get(n.id) ?? 0
      if (t === 0 || n.callFrame.functionName === "(idle)") continue
      const key = label(n.callFrame)
      self[k].set(key, (self[k].get(key) ?? 0) + t)
    }
  }
  loads.push(load())
}
const med = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const per = (us) => us / (N * R) // µs per item
const sum = (m) => [...m.values()].reduce((a, b) => a + b, 0)
console.log(`${N} items × ${L} ms at 200, ${R} runs each, alternated; load ${loads.join(" → ")}`)
for (const k of [A, B]) console.log(`${k.padEnd(6)} CPU µs/item median ${med(cpu[k]).toFixed(1)} (${Math.min(...cpu[k]).toFixed(1)}–${Math.max(...cpu[k]).toFixed(1)}); sampled busy ${per(sum(self[k])).toFixed(1)} µs/item, GC ${per(self[k].get("(garbage collector) :0") ?? 0).toFixed(1)}`)
const keys = new Set([...self[A].keys(), ...self[B].keys()])
const diff = [...keys].map((key) => [key, per((self[B].get(key) ?? 0) - (self[A].get(key) ?? 0)), per(self[A].get(key) ?? 0), per(self[B].get(key) ?? 0)])
diff.sort((x, y) => Math.abs(y[1]) - Math.abs(x[1]))
console.log(`${B} − ${A}, µs per item (${A} → ${B}):`)
for (const [key, d, a, b] of diff.slice(0, TOP)) console.log(`  ${d.toFixed(2).padStart(6)}  (${a.toFixed(2)} → ${b.toFixed(2)})  ${key}`)
