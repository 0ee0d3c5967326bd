// A/B helper (not part of the bench): 1,000 simultaneous 50 ms expiries, Rein (health off) vs the lean bound.
import { Effect, Layer, Scope } from "effect"
import { leanBound, LeanTimeout } from "../dist/fixtures.js"
const core = await import(process.argv[2] + "/index.js")
const { Catalog, Contract, Rein } = core
const catalog = Catalog.make({ endpoints: [{ id: "mem/a", provider: "mem", model: "a", capabilities: { contextWindow: 128000, maxOutputTokens: 4096 }, prices: { inputTokens: 1e-6, outputTokens: 2e-6 } }] })
const contract = Contract.make({ deadline: 50, teardownGrace: 250, candidates: ["mem/a"], retry: { perEndpoint: 0 } })
const never = { internalMaxAttempts: 1, call: () => Effect.never }
const request = { prompt: "hello", inputTokens: 10, maxOutputTokens: 10 }
const layer = Rein.layer({ catalog, providers: { mem: never }, health: process.argv[3] === "on" ? undefined : false })
const ctx = await Effect.runPromise(Effect.flatMap(Scope.make(), (s) => Layer.buildWithScope(layer, s)))
const rein = Effect.provide(Rein.execute(request, contract), ctx)
const now = () => Number(process.hrtime.bigint()) / 1e6
const burst = async (one) => { const out = []; await Effect.runPromise(Effect.forEach(Array.from({ length: 1000 }), () => Effect.suspend(() => { const t0 = now(); return Effect.map(Effect.either(one), () => out.push(now() - t0 - 50)) }), { concurrency: "unbounded", discard: true })); out.sort((a, b) => a - b); return out }
const lean = leanBound(Effect.never, 50)
const p = (s, q) => s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)]
const R = Number(process.argv[4] ?? 5)
await burst(rein); await burst(lean)
const res = { rein: [], lean: [], reinCpu: [] }
for (let r = 0; r < R; r++) {
  globalThis.gc?.()
  const c0 = process.cpuUsage(); const a = await burst(rein); const c = process.cpuUsage(c0)
  globalThis.gc?.()
  const b = await burst(lean)
  res.rein.push(+p(a, 0.99).toFixed(1)); res.lean.push(+p(b, 0.99).toFixed(1)); res.reinCpu.push(Math.round((c.user + c.system) / 1000))
}
console.log(process.argv[2].split("/").at(-1), JSON.stringify(res))
