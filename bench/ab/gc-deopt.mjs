// Does the harness's full `gc()` before each sample cost the sample CPU? One configuration (names of
// ab-guard.mjs, or floor), rounds alternately preceded by a forced full collection and not, in one process:
// CPU per run (median, min–max) for each kind of round. With --trace-deopt, the deoptimizations "reason:
// weak objects" (optimized code that embedded an object the collection freed) show up after the gc() rounds.
// RT=1: the runs on one Runtime of Rein's context instead of `Effect.provide(context)` each.
// (`execute`: a 200-wide `Effect.forEach` of `Rein.execute`, no batch.)
// node --expose-gc bench/ab/gc-deopt.mjs [plain|all|floor|execute|...] [N,L,C,rounds]
import { shapeOf } from "./shape.mjs"
const [N, L, C, R] = (process.argv[3] ?? "20000,5,200,12").split(",").map(Number)
// ROOT=<checkout root>: Rein from that build (default: this checkout's).
const { Batch, Guardrails, Rein, effect, leanBound, request, call, context, contract, items, load } = await shapeOf(process.env.ROOT, N, L)
const { Effect, Runtime } = effect
const which = process.argv[2] ?? "plain"
const configs = {
  plain: {},
  all: {
    itemDeadline: "30 seconds", batchDeadline: "10 minutes", abortOn: ["authentication", "insufficient_balance"],
    maxTotalTokens: 1e12, maxTotalCost: 1e9, requestsPerMinute: 1e9, tokensPerMinute: 1e12, cooldown: "1 second"
  },
  abortOn: { abortOn: ["authentication", "insufficient_balance"] }
}
// RT=1: run every batch on one Runtime made from Rein's context (no `Effect.provide` per run).
const runtime = Runtime.make({ context, fiberRefs: Runtime.defaultRuntime.fiberRefs, runtimeFlags: Runtime.defaultRuntime.runtimeFlags })
const oneRun = which === "execute"
  ? () => Runtime.runPromise(runtime)(Effect.forEach(items, () => Rein.execute(request, contract), { concurrency: C, discard: true }))
  : which === "floor"
  ? () => Effect.runPromise(Effect.forEach(items, () => leanBound(Effect.promise(call), 60_000), { concurrency: C }))
  : () => {
    const guardrails = Guardrails.make({ concurrency: C, ...configs[which] })
    const run = Batch.run(items, { contract, request: () => request, guardrails })
    return process.env.RT ? Runtime.runPromise(runtime)(run) : Effect.runPromise(run.pipe(Effect.provide(context)))
  }
// KEEP=1: a fiber that never ends lives beside the runs (as a program's main fiber would), and the last run's
// result is kept: their classes' maps then outlive a collection between runs.
const idle = process.env.KEEP ? Runtime.runFork(runtime)(Effect.never) : undefined
let kept
const one = process.env.KEEP ? async () => { kept = await oneRun() } : oneRun
await one()
await one()
const rows = { gc: [], nogc: [] }
const l0 = load()
for (let r = 0; r < R; r++) {
  const kind = r % 2 === 0 ? "gc" : "nogc"
  if (kind === "gc") globalThis.gc()
  console.log(`=== round ${r + 1} (${kind})`)
  const c0 = process.cpuUsage()
  await one()
  const c = process.cpuUsage(c0)
  rows[kind].push((c.user + c.system) / 1000)
}
const med = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const fmt = (xs) => `${med(xs).toFixed(0)} (${Math.min(...xs).toFixed(0)}–${Math.max(...xs).toFixed(0)})`
console.log(`${which}, ${N} × ${L} ms at ${C}: CPU ms per run after gc() ${fmt(rows.gc)}, without ${fmt(rows.nogc)}; load ${l0} → ${load()}`)
if (idle !== undefined) idle.unsafeInterruptAsFork(idle.id())
