// structure of a burst: per index decile, t0 and t1 (ms since burst start), lateness
import { Effect, Layer, Scope } from "effect"
const [config, dir] = process.argv[2].split("@")
const { leanBound } = await import("../dist/fixtures.js")
const core = await import((dir ?? new URL("../../packages/core/dist", import.meta.url).pathname) + "/index.js")
const { Catalog, Contract, Rein } = core
const catalog = Catalog.make({ endpoints: [{ id: "mem/a", provider: "mem", model: "a", capabilities: { contextWindow: 128000, maxOutputTokens: 4096 }, prices: { inputTokens: 1e-6, outputTokens: 2e-6 } }] })
const contract = Contract.make({ deadline: 50, teardownGrace: 250, candidates: ["mem/a"], retry: { perEndpoint: 0 } })
const hang = Effect.never
const one = config === "lean" ? leanBound(hang, 50) : Effect.provide(Rein.execute({ prompt: "hello", inputTokens: 10, maxOutputTokens: 10 }, contract), await Effect.runPromise(Effect.flatMap(Scope.make(), (s) => Layer.buildWithScope(Layer.orDie(Rein.layer({ catalog, providers: { mem: { internalMaxAttempts: 1, call: () => hang } }, health: false })), s))))
const now = () => Number(process.hrtime.bigint()) / 1e6
const burst = async (print) => {
  globalThis.gc()
  const T = now(); const rows = []
  await Effect.runPromise(Effect.forEach(Array.from({ length: 1000 }), (_, i) => Effect.suspend(() => { const t0 = now(); return Effect.map(Effect.either(one), () => rows.push({ i, t0: t0 - T, t1: now() - T, late: now() - t0 - 50 })) }), { concurrency: "unbounded", discard: true }))
  if (!print) return
  rows.sort((a, b) => a.i - b.i)
  const late = rows.map((r) => r.late).sort((a, b) => a - b)
  console.log(config, "p50", late[499].toFixed(1), "p99", late[989].toFixed(1), "lastStart", Math.max(...rows.map(r=>r.t0)).toFixed(1))
  console.log(rows.filter((_, k) => k % 100 === 0 || k === 999).map((r) => `#${r.i} ${r.t0.toFixed(1)}→${r.t1.toFixed(1)} (${r.late.toFixed(1)})`).join("  "))
}
await burst(false); await burst(false)
for (let k = 0; k < 3; k++) await burst(true)
