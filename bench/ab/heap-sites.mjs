// A/B helper (not part of the bench): V8's sampling heap profiler with collected objects included, over a
// Batch.run of N items (zero latency unless L given): bytes per item by allocating function (self), top 40.
// node bench/ab/heap-sites.mjs [N] [L]   (GUARD=all: bench 2's "every guardrail on" row instead of the plain one)
import { Session } from "node:inspector/promises"
import { Batch, Guardrails } from "@rein/batch"
import { Contract, Rein } from "@rein/core"
import { Effect, Layer, Scope } from "effect"
import { catalog, request, response } from "../dist/fixtures.js"
const N = Number(process.argv[2] ?? 20000), L = Number(process.argv[3] ?? 0)
const call = () => new Promise((r) => setTimeout(() => r(1), L))
const provider = {
  internalMaxAttempts: 1,
  call: L === 0 ? () => Effect.succeed(response) : () => Effect.as(Effect.promise(call), response)
}
const context = Effect.runSync(
  Effect.flatMap(Scope.make(), (s) => Layer.buildWithScope(Rein.layer({ catalog, providers: { mem: provider } }), s))
)
const contract = Contract.make({ deadline: "1 minute", candidates: ["mem/a"] })
const items = Array.from({ length: N }, (_, i) => i)
const guardrails = Guardrails.make(process.env.GUARD === "all"
  ? {
    concurrency: 200, itemDeadline: "30 seconds", batchDeadline: "10 minutes",
    abortOn: ["authentication", "insufficient_balance"], maxTotalTokens: 1e12, maxTotalCost: 1e9,
    requestsPerMinute: 1e9, tokensPerMinute: 1e12, cooldown: "1 second"
  }
  : { concurrency: 200 })
const one = () =>
  Effect.runPromise(Batch.run(items, { contract, request: () => request, guardrails }).pipe(Effect.provide(context)))
await one()
const session = new Session()
session.connect()
await session.post("HeapProfiler.enable")
await session.post("HeapProfiler.startSampling", {
  samplingInterval: 256,
  includeObjectsCollectedByMajorGC: true,
  includeObjectsCollectedByMinorGC: true
})
await one()
const { profile } = await session.post("HeapProfiler.stopSampling")
const self = new Map()
const label = (f) => `${f.functionName || "(anon)"} ${f.url.replace(/.*node_modules\/.pnpm\/[^/]+\/node_modules\//, "").replace(/.*\/packages\//, "")}:${f.lineNumber + 1}`
// PARENTS=name: for frames of that name, the bytes per item by caller chain (3 frames up).
const parents = new Map()
const walk = (node, stack = []) => {
  const f = node.callFrame
  if (process.env.PARENTS !== undefined && f.functionName === process.env.PARENTS) {
    const chain = stack.slice(-3).map(label).join(" < ")
    parents.set(chain, (parents.get(chain) ?? 0) + node.selfSize)
  }
  const key = `${f.functionName || "(anon)"} ${f.url.replace(/.*node_modules\/.pnpm\/[^/]+\/node_modules\//, "").replace(/.*\/packages\//, "")}:${f.lineNumber + 1}`
  self.set(key, (self.get(key) ?? 0) + node.selfSize)
  for (const c of node.children) walk(c, [...stack, f])
}
walk(profile.head)
// BY=rein: each sample charged to the innermost Rein frame (core or batch) on its stack, so that Effect's and
// Node's allocations are charged to the Rein call that caused them.
if (process.env.BY === "rein") {
  const byRein = new Map()
  const charge = (node, owner) => {
    const k = label(node.callFrame)
    const own = /(core|batch)\/dist/.test(k) ? k : owner
    byRein.set(own, (byRein.get(own) ?? 0) + node.selfSize)
    for (const c of node.children) charge(c, own)
  }
  charge(profile.head, "(outside Rein)")
  for (const [k, v] of [...byRein].sort((a, b) => b[1] - a[1]).slice(0, 30)) console.log(`${(v / N).toFixed(0).padStart(6)} B  ${k}`)
}
for (const [k, v] of [...parents].sort((a, b) => b[1] - a[1]).slice(0, 12)) console.log(`${(v / N).toFixed(0).padStart(6)} B  ${k}`)
const total = [...self.values()].reduce((a, b) => a + b, 0)
console.log(`total ${(total / N / 1024).toFixed(2)} KB/item`)
// By whose frame allocated: Rein's packages, Effect, the bench's provider, Node/V8 builtins.
const groups = new Map()
for (const [k, v] of self) {
  const g = /core\/dist/.test(k) ? "core" : /batch\/dist/.test(k) ? "batch" : /^\S+ effect\//.test(k) ? "effect" : /bench/.test(k) ? "bench" : "builtins"
  groups.set(g, (groups.get(g) ?? 0) + v)
}
console.log([...groups].map(([g, v]) => `${g} ${(v / N / 1024).toFixed(2)} KB`).join(", "))
for (const [k, v] of [...self].sort((a, b) => b[1] - a[1]).slice(0, Number(process.env.TOP ?? 45))) {
  console.log(`${(v / N).toFixed(0).padStart(6)} B  ${k}`)
}
