// A/B helper (not part of the bench): bench 2's 5 ms shape split into parts, in one process, order rotated:
// the floor row, 200 workers each looping the lean bound (the batch's shape without Rein), a 200-wide forEach of
// Rein.execute (no batch), and Batch.run. CPU µs and KB per item, medians (min–max), load.
// node --expose-gc bench/ab/ab-parts.mjs [N,L,C,rounds] [rows]   ROOT=<checkout>: Rein from that build
import { allocated, collect } from "../dist/harness.js"
import { shapeOf } from "./shape.mjs"
const [N, L, C, R] = (process.argv[2] ?? "20000,5,200,5").split(",").map(Number)
const root = process.env.ROOT
const { Batch, Guardrails, Rein, effect, leanBound, request, call, context, contract, items, load } = await shapeOf(root, N, L)
const { Effect } = effect
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
console.log(`${root ?? "this checkout"}: ${N} × ${L} ms at ${C}, ${R} rounds; load ${l0} → ${load()}`)
for (const n of names) console.log(`${n.padEnd(8)} CPU µs/item ${fmt(cpu[n], 1).padEnd(20)} KB/item ${fmt(kb[n], 2)}`)
