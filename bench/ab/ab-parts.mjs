// A/B helper (not part of the bench): bench 2's 5 ms shape split into parts, in one process, order rotated:
// the floor row, 200 workers each looping the lean bound (the batch's shape without Rein), a 200-wide forEach of
// Rein.execute (no batch), and Batch.run. CPU µs and KB per item, medians (min–max), load.
// node --expose-gc bench/ab/ab-parts.mjs [N,L,C,rounds] [rows]   ROOT=<checkout>: Rein from that build
import { readFileSync } from "node:fs"
import { dirname, resolve } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import { allocated, collect } from "../dist/harness.js"
const root = resolve(process.env.ROOT ?? resolve(dirname(fileURLToPath(import.meta.url)), "../.."))
const at = (p) => import(pathToFileURL(resolve(root, p)).href)
const { Batch, Guardrails } = await at("packages/batch/dist/index.js")
const { Contract, Rein } = await at("packages/core/dist/index.js")
const { Effect, Layer, Scope } = await at("packages/core/node_modules/effect/dist/esm/index.js")
const { catalog, leanBound, request, response } = await at("bench/dist/fixtures.js")
const [N, L, C, R] = (process.argv[2] ?? "20000,5,200,5").split(",").map(Number)
const load = () => readFileSync("/proc/loadavg", "utf8").split(" ")[0]
const call = () => L === 0 ? Promise.resolve(1) : new Promise((r) => setTimeout(() => r(1), L))
const provider = { internalMaxAttempts: 1, call: () => Effect.as(Effect.promise(call), response) }
const context = Effect.runSync(Effect.flatMap(Scope.make(), (s) => Layer.buildWithScope(Rein.layer({ catalog, providers: { mem: provider } }), s)))
const contract = Contract.make({ deadline: "1 minute", candidates: ["mem/a"] })
const items = Array.from({ length: N }, (_, i) => i)
const guardrails = Guardrails.make({ concurrency: C })
const workers = (body) => () => {
  let next = 0
  const worker = Effect.whileLoop({ while: () => next < N, body: () => { next++; return body() }, step: () => {} })
  return Effect.runPromise(Effect.forEach(Array.from({ length: C }), () => worker, { concurrency: C, discard: true }).pipe(Effect.provide(context)))
}
const all = {
  floor: () => Effect.runPromise(Effect.forEach(items, () => leanBound(Effect.promise(call), 60_000), { concurrency: C })),
  wlean: workers(() => leanBound(Effect.promise(call), 60_000)),
  wexec: workers(() => Rein.execute(request, contract)),
  execute: () => Effect.runPromise(Effect.forEach(items, () => Rein.execute(request, contract), { concurrency: C, discard: true }).pipe(Effect.provide(context))),
  batch: () => Effect.runPromise(Batch.run(items, { contract, request: () => request, guardrails }).pipe(Effect.provide(context)))
}
const names = (process.argv[3] ?? Object.keys(all).join(",")).split(",")
for (const n of names) await all[n]()
const cpu = {}, kb = {}
const l0 = load()
for (let r = 0; r < R; r++) {
  for (let k = 0; k < names.length; k++) {
    const n = names[(k + r) % names.length]
    collect()
    const c0 = process.cpuUsage()
    const { bytes } = await allocated(all[n])
    const c = process.cpuUsage(c0)
    ;(cpu[n] ??= []).push((c.user + c.system) / N)
    ;(kb[n] ??= []).push(bytes / N / 1024)
  }
}
const med = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const fmt = (xs, d) => `${med(xs).toFixed(d)} (${Math.min(...xs).toFixed(d)}–${Math.max(...xs).toFixed(d)})`
console.log(`${root}: ${N} × ${L} ms at ${C}, ${R} rounds; load ${l0} → ${load()}`)
for (const n of names) console.log(`${n.padEnd(8)} CPU µs/item ${fmt(cpu[n], 1).padEnd(20)} KB/item ${fmt(kb[n], 2)}`)
