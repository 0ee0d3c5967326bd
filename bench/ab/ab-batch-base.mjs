// A/B helper (not part of the bench): Rein Batch.run from the current build and from an older one (copy its
// packages/batch/dist to packages/batch/dist-base) beside p-limit, N items × L ms at C, interleaved in rotated
// order: wall and CPU medians, each ÷ p-limit's of the same round, and KB allocated per item.
// node --expose-gc bench/ab/ab-batch-base.mjs 400,200,100,5
import { Contract, Rein } from "@rein/core"
import { Effect, Layer, Scope } from "effect"
import os from "node:os"
import pLimit from "p-limit"
import { catalog, request, response } from "../dist/fixtures.js"
import { allocated, collect } from "../dist/harness.js"
const current = await import("../../packages/batch/dist/index.js")
const base = await import("../../packages/batch/dist-base/index.js")
const [N, L, C, R] = (process.argv[2] ?? "400,200,100,5").split(",").map(Number)
const call = () => L === 0 ? Promise.resolve(1) : new Promise((r) => setTimeout(() => r(1), L))
const provider = { internalMaxAttempts: 1, call: L === 0 ? () => Effect.succeed(response) : () => Effect.as(Effect.promise(call), response) }
const context = Effect.runSync(Effect.flatMap(Scope.make(), (s) => Layer.buildWithScope(Rein.layer({ catalog, providers: { mem: provider } }), s)))
const contract = Contract.make({ deadline: "1 minute", candidates: ["mem/a"] })
const items = Array.from({ length: N }, (_, i) => i)
const rein = ({ Batch, Guardrails }) => {
  const guardrails = Guardrails.make({ concurrency: C })
  return () => Effect.runPromise(Batch.run(items, { contract, request: () => request, guardrails }).pipe(Effect.map((s) => s.stats.succeeded), Effect.provide(context)))
}
const contenders = [
  ["p-limit", async () => { const limit = pLimit(C); return (await Promise.all(items.map(() => limit(call)))).length }],
  ["rein base", rein(base)],
  ["rein current", rein(current)]
]
const wall = contenders.map(() => []), cpu = contenders.map(() => []), kb = contenders.map(() => [])
const load0 = os.loadavg()[0]
for (const [, run] of contenders) await run()
for (let r = 0; r < R; r++) {
  for (let k = 0; k < contenders.length; k++) {
    const i = (k + r) % contenders.length
    collect()
    const c0 = process.cpuUsage(); const t0 = performance.now()
    const { bytes, value } = await allocated(contenders[i][1])
    wall[i].push(performance.now() - t0); const c = process.cpuUsage(c0); cpu[i].push((c.user + c.system) / 1000); kb[i].push(bytes / N / 1024)
    if (value !== N) throw new Error(`${contenders[i][0]}: ${value}`)
  }
}
const med = (xs) => { const s = [...xs].sort((a, b) => a - b); return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2 }
// per-round ratios to p-limit's wall in the same round
const ratio = (i) => med(wall[i].map((w, r) => w / wall[0][r]))
console.log(`N=${N} L=${L} C=${C} rounds=${R} load ${load0.toFixed(1)}–${os.loadavg()[0].toFixed(1)}`)
contenders.forEach(([name], i) => console.log(`${name.padEnd(14)} wall ${med(wall[i]).toFixed(0)} ms (${Math.min(...wall[i]).toFixed(0)}–${Math.max(...wall[i]).toFixed(0)}), ÷ p-limit ${ratio(i).toFixed(3)}×, CPU ${med(cpu[i]).toFixed(0)} ms, ${med(kb[i]).toFixed(2)} KB/item`))
