// A/B helper (not part of the bench): Rein Batch.run, N items × L ms at C, bytes/item, CPU, wall.
import { Batch, Guardrails } from "@rein/batch"
import { Contract, Rein } from "@rein/core"
import { Effect, Layer, Scope } from "effect"
import { catalog, request, response } from "../dist/fixtures.js"
import { allocated, collect } from "../dist/harness.js"
const [N, L, C, R] = (process.argv[2] ?? "20000,5,200,3").split(",").map(Number)
const call = () => L === 0 ? Promise.resolve(1) : new Promise((r) => setTimeout(() => r(1), L))
const provider = { internalMaxAttempts: 1, call: L === 0 ? () => Effect.succeed(response) : () => Effect.as(Effect.promise(call), response) }
const context = Effect.runSync(Effect.flatMap(Scope.make(), (s) => Layer.buildWithScope(Rein.layer({ catalog, providers: { mem: provider } }), s)))
const contract = Contract.make({ deadline: "1 minute", candidates: ["mem/a"] })
const items = Array.from({ length: N }, (_, i) => i)
const mode = process.argv[3] ?? "plain"
const guardrails = mode === "cancel" ? Guardrails.make({ concurrency: C, abortMode: "cancel-active", abortOn: ["authentication"] }) : Guardrails.make({ concurrency: C })
const one = () => Effect.runPromise(Batch.run(items, { contract, request: () => request, guardrails }).pipe(Effect.provide(context)))
await one()
const out = []
for (let r = 0; r < R; r++) {
  collect()
  const c0 = process.cpuUsage(); const t0 = performance.now()
  const { bytes, value } = await allocated(one)
  const wall = performance.now() - t0; const c = process.cpuUsage(c0)
  if (value.stats.succeeded !== N) throw new Error("bad")
  out.push({ wall: Math.round(wall), cpu: Math.round((c.user + c.system) / 1000), kbPerItem: +(bytes / N / 1024).toFixed(2), cpuUsPerItem: +((c.user + c.system) / N).toFixed(1) })
}
console.log(JSON.stringify({ N, L, C, mode, out }))
