// A/B helper (not part of the bench): a burst of 1,000 50 ms expiries, health off and on alternating in one process:
// when each request started and returned, p50/p99 lateness, and "descents" (returns out of start order).
// node --expose-gc bench/ab/tail-deadline.mjs <core dist dir> [rounds]
import { Effect, Layer, Scope } from "effect"
const dir = process.argv[2], R = Number(process.argv[3] ?? 3)
const { Catalog, Contract, Rein } = await import(dir + "/index.js")
const catalog = Catalog.make({ endpoints: [{ id: "mem/a", provider: "mem", model: "a", capabilities: { contextWindow: 128000, maxOutputTokens: 4096 }, prices: { inputTokens: 1e-6, outputTokens: 2e-6 } }] })
const contract = Contract.make({ deadline: 50, teardownGrace: 250, candidates: ["mem/a"], retry: { perEndpoint: 0 } })
const never = { internalMaxAttempts: 1, call: () => Effect.never }
const request = { prompt: "hello", inputTokens: 10, maxOutputTokens: 10 }
const mk = async (h) => { const ctx = await Effect.runPromise(Effect.flatMap(Scope.make(), (s) => Layer.buildWithScope(Layer.orDie(Rein.layer({ catalog, providers: { mem: never }, health: h })), s))); return Effect.provide(Rein.execute(request, contract), ctx) }
const cs = { off: await mk(false), on: await mk({ failureRatio: 0.9, depositRatio: 2 }) }
const now = () => Number(process.hrtime.bigint()) / 1e6
const one = async (name) => {
  globalThis.gc()
  const T = now(); const rows = []; const c0 = process.cpuUsage()
  await Effect.runPromise(Effect.forEach(Array.from({ length: 1000 }), (_, i) => Effect.suspend(() => { const t0 = now(); return Effect.map(Effect.either(cs[name]), () => rows.push({ i, t0: t0 - T, t1: now() - T, late: now() - t0 - 50 })) }), { concurrency: "unbounded", discard: true }))
  const c = process.cpuUsage(c0)
  const byLate = rows.slice().sort((a, b) => a.late - b.late)
  const q = (p) => byLate[Math.ceil(p * 1000) - 1].late.toFixed(0)
  // inversions: completion order vs start order
  let inv = 0; for (let k = 1; k < rows.length; k++) if (rows[k].i < rows[k - 1].i) inv++
  console.log(name.padEnd(4), `cpu ${((c.user + c.system) / 1000).toFixed(0)}ms lastStart ${Math.max(...rows.map((x) => x.t0)).toFixed(0)} firstEnd ${rows[0].t1.toFixed(0)} end ${Math.max(...rows.map((x) => x.t1)).toFixed(0)} p50 ${q(.5)} p99 ${q(.99)} descents ${inv}`, "worst:", byLate.slice(-2).map((x) => `#${x.i} t0=${x.t0.toFixed(0)} t1=${x.t1.toFixed(0)}`).join(" "))
}
await one("off"); await one("on")
for (let r = 0; r < R; r++) { await one(r % 2 ? "on" : "off"); await one(r % 2 ? "off" : "on") }
