// A/B helper (not part of the bench): V8's sampling heap profiler (collected objects included) over one row of
// bench 2's 5 ms shape, in its own process: `floor` (Effect.forEach + lean bound), `plain` (Batch.run) or `all`
// (every guardrail on). Bytes per item by allocating function (self), with exact frames under
// `--no-turbo-inlining`; SITE=<regex on "function file:line">: those sites' bytes by caller chain (4 frames up).
// node [--no-turbo-inlining] bench/ab/heap-rows.mjs floor|plain|all [N] [L]   ROOT=<checkout>: that build; BY=kind:
// bytes per item by kind of work (fibers, resumptions, async waits, the call, Rein's own frames, the rest)
import { Session } from "node:inspector/promises"
import { shapeOf } from "./shape.mjs"
const row = process.argv[2] ?? "plain"
const N = Number(process.argv[3] ?? 20000), L = Number(process.argv[4] ?? 5)
const { Batch, Guardrails, effect, leanBound, request, call, context, contract, items } = await shapeOf(process.env.ROOT, N, L)
const { Effect } = effect
const ALL = {
  itemDeadline: "30 seconds", batchDeadline: "10 minutes", abortOn: ["authentication", "insufficient_balance"],
  maxTotalTokens: 1e12, maxTotalCost: 1e9, requestsPerMinute: 1e9, tokensPerMinute: 1e12, cooldown: "1 second"
}
const guardrails = Guardrails.make({ concurrency: 200, ...(row === "all" ? ALL : {}) })
const one = row === "floor"
  ? () => Effect.runPromise(Effect.forEach(items, () => leanBound(Effect.promise(call), 60_000), { concurrency: 200 }))
  : () => Effect.runPromise(Batch.run(items, { contract, request: () => request, guardrails }).pipe(Effect.provide(context)))
await one()
await one()
const session = new Session()
session.connect()
await session.post("HeapProfiler.enable")
await session.post("HeapProfiler.startSampling", {
  samplingInterval: 128, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true
})
await one()
const { profile } = await session.post("HeapProfiler.stopSampling")
const label = (f) =>
  `${f.functionName || "(anon)"} ${f.url.replace(/.*node_modules\/.pnpm\/[^/]+\/node_modules\//, "").replace(/.*\/packages\//, "").replace(/.*\/bench\//, "bench/")}:${f.lineNumber + 1}`
const self = new Map(), chains = new Map(), kinds = new Map()
// BY=kind: each sample charged to a kind of work by its own frame and its two callers (first rule that matches).
const KINDS = [
  ["Rein's own frames (core, batch)", /^\S+ (core|batch)\/dist/],
  ["the call: its promise and 5 ms timer", /setTimeout|node:timers|bench\/ab\/shape|^Promise |core-effect\.js:4[12]/],
  ["resumptions: messages and the scheduler", /^(tell|drainQueue\w*|scheduleTask|starveInternal|splice|push) |Scheduler\.js|fiberMessage/],
  ["fibers: FiberRuntime, fiber refs, fork", /runtime\.js:(2|3)\d|^FiberRuntime |instance_members_initializer\S* effect|fiberRefs\.js|^(Map|next|patch|equals) |fiberScope|fiberId\.js/],
  ["async waits (Effect.async, its resumption)", /^async_ |core\.js:26\d|proxyResume|initiateAsync/]
]
const site = process.env.SITE === undefined ? undefined : new RegExp(process.env.SITE)
const walk = (node, stack) => {
  const k = label(node.callFrame)
  self.set(k, (self.get(k) ?? 0) + node.selfSize)
  if (node.selfSize > 0) {
    const near = [k, ...stack.slice(-2).reverse()]
    // The Rein rule reads the sample's own frame only; the others also its two callers.
    const kind = KINDS.find(([, re], r) => near.some((f, i) => (r > 0 || i === 0) && re.test(f)))?.[0] ??
      "run-loop steps and combinators"
    kinds.set(kind, (kinds.get(kind) ?? 0) + node.selfSize)
  }
  if (site?.test(k) && node.selfSize > 0) {
    const c = [k, ...stack.slice(-4).reverse()].join(" < ")
    chains.set(c, (chains.get(c) ?? 0) + node.selfSize)
  }
  for (const c of node.children) walk(c, [...stack, k])
}
walk(profile.head, [])
const kb = (v) => (v / N).toFixed(0).padStart(6)
const total = [...self.values()].reduce((a, b) => a + b, 0)
const groups = new Map()
for (const [k, v] of self) {
  const g = /^\S+ core\/dist/.test(k) ? "core" : /^\S+ batch\/dist/.test(k) ? "batch" : /^\S+ effect\//.test(k) ? "effect" : /bench/.test(k) ? "bench" : "builtins"
  groups.set(g, (groups.get(g) ?? 0) + v)
}
console.log(`${row}: total ${(total / N / 1024).toFixed(2)} KB/item; ` + [...groups].map(([g, v]) => `${g} ${(v / N / 1024).toFixed(2)}`).join(", "))
if (process.env.BY === "kind") for (const [k, v] of [...kinds].sort((a, b) => b[1] - a[1])) console.log(`${kb(v)} B  ${k}`)
for (const [k, v] of [...self].sort((a, b) => b[1] - a[1]).slice(0, Number(process.env.TOP ?? 50))) console.log(`${kb(v)} B  ${k}`)
for (const [k, v] of [...chains].sort((a, b) => b[1] - a[1]).slice(0, 25)) console.log(`${kb(v)} B  ${k}`)
