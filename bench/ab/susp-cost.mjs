// A/B helper (not part of the bench): what a provider call that suspends costs per item, against one that answers
// at once, for Rein's Batch.run and for 200 workers looping the lean bound (bench 2's floor without its forEach
// forks): KB allocated per item with the call answering at once (`Effect.succeed`), suspending on an already
// resolved promise, and on a 5 ms timer; medians of R rounds, rows rotated. ROOT=<checkout>: that build.
// node --expose-gc bench/ab/susp-cost.mjs [N,C,rounds]
import { allocated, collect } from "../dist/harness.js"
import { shapeOf } from "./shape.mjs"
const [N, C, R] = (process.argv[2] ?? "20000,200,3").split(",").map(Number)
const { Batch, Guardrails, Rein, effect, leanBound, request, response, context, catalog, contract, items, load } =
  await shapeOf(process.env.ROOT, N, 5)
const { Effect, Layer, Scope } = effect
const calls = {
  sync: () => Effect.succeed(1),
  resolved: () => Effect.promise(() => Promise.resolve(1)),
  timer5: () => Effect.promise(() => new Promise((r) => setTimeout(() => r(1), 5)))
}
const reinOf = (call) => {
  const provider = { internalMaxAttempts: 1, call: () => Effect.as(call(), response) }
  const ctx = Effect.runSync(Effect.flatMap(Scope.make(), (s) => Layer.buildWithScope(Rein.layer({ catalog, providers: { mem: provider } }), s)))
  const guardrails = Guardrails.make({ concurrency: C })
  return () => Effect.runPromise(Batch.run(items, { contract, request: () => request, guardrails }).pipe(Effect.provide(ctx)))
}
const leanOf = (call) => () => {
  let next = 0
  const worker = Effect.whileLoop({ while: () => next < N, body: () => { next++; return leanBound(call(), 60_000) }, step: () => {} })
  return Effect.runPromise(Effect.forEach(Array.from({ length: C }), () => worker, { concurrency: C, discard: true }).pipe(Effect.provide(context)))
}
const rows = {}
for (const [name, call] of Object.entries(calls)) {
  rows[`rein ${name}`] = reinOf(call)
  rows[`lean ${name}`] = leanOf(call)
}
const names = Object.keys(rows)
for (const n of names) await rows[n]()
const kb = {}
const l0 = load()
for (let r = 0; r < R; r++) {
  for (let k = 0; k < names.length; k++) {
    const n = names[(k + r) % names.length]
    collect()
    const { bytes } = await allocated(rows[n])
    ;(kb[n] ??= []).push(bytes / N / 1024)
  }
}
const med = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
console.log(`${process.env.ROOT ?? "this checkout"}: ${N} items at ${C}, ${R} rounds; load ${l0} → ${load()}; KB per item`)
for (const n of names) console.log(`${n.padEnd(16)} ${med(kb[n]).toFixed(2)} (${Math.min(...kb[n]).toFixed(2)}–${Math.max(...kb[n]).toFixed(2)})`)
