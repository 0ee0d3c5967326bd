// A/B helper (not part of the bench): bench 2's 5 ms shape with the guardrails one at a time (ab-guard.mjs's
// names), counted, not timed: per run, KB allocated per item, the collections V8 made (scavenges, mark-compacts)
// and what survived them (bytes promoted to the old space per item: the old space's growth plus what the
// mark-compacts freed there), each config in this process after two warm-up runs, medians of R runs.
// node --expose-gc bench/ab/guard-gc.mjs [N,L,R] [rows] ; ROOT=<checkout>: that build
import v8 from "node:v8"
import { shapeOf } from "./shape.mjs"
const [N, L, R] = (process.argv[2] ?? "20000,5,3").split(",").map(Number)
const { Batch, Guardrails, effect, leanBound, request, call, context, contract, items } = await shapeOf(process.env.ROOT, N, L)
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
const wanted = (process.argv[3] ?? ["floor", ...Object.keys(configs)].join(",")).split(",")
const run = (name) => name === "floor"
  ? () => Effect.runPromise(Effect.forEach(items, () => leanBound(Effect.promise(call), 60_000), { concurrency: 200 }))
  : () => Effect.runPromise(Batch.run(items, { contract, request: () => request, guardrails: Guardrails.make({ concurrency: 200, ...configs[name] }) }).pipe(Effect.provide(context)))
const old = (h) => h.heapSpaceStatistics?.find((s) => s.spaceName === "old_space")?.spaceUsedSize ?? 0
const med = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
for (const name of wanted) {
  const f = run(name)
  await f(); await f()
  const rows = []
  for (let r = 0; r < R; r++) {
    globalThis.gc()
    const p = new v8.GCProfiler(); p.start()
    const before = v8.getHeapStatistics().used_heap_size
    const oldBefore = v8.getHeapSpaceStatistics().find((s) => s.space_name === "old_space").space_used_size
    await f()
    const after = v8.getHeapStatistics().used_heap_size
    const oldAfter = v8.getHeapSpaceStatistics().find((s) => s.space_name === "old_space").space_used_size
    const stats = p.stop().statistics
    let freed = 0, oldFreed = 0, sc = 0, mc = 0, pause = 0
    for (const s of stats) {
      freed += s.beforeGC.heapStatistics.usedHeapSize - s.afterGC.heapStatistics.usedHeapSize
      if (/Scavenge|Minor/i.test(s.gcType)) sc++; else { mc++; oldFreed += old(s.beforeGC) - old(s.afterGC) }
      pause += s.cost
    }
    rows.push({ kb: (after - before + freed) / N / 1024, sc, mc, pause: pause / 1000, promoted: (oldAfter - oldBefore + oldFreed) / N })
  }
  console.log(`${name.padEnd(9)} KB/item ${med(rows.map((x) => x.kb)).toFixed(2)}  scavenges ${med(rows.map((x) => x.sc))}  mark-compacts ${med(rows.map((x) => x.mc))}  GC pause ms ${med(rows.map((x) => x.pause)).toFixed(0)}  promoted B/item ${med(rows.map((x) => x.promoted)).toFixed(0)}`)
}
