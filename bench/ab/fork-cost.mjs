// A/B helper (not part of the bench): bytes allocated per fork of a trivial fiber from inside a fiber
// that has Rein's layer provided, by fork method (`siteFork`: core's `internal/fork.ts`, as an attempt forks).
// node --expose-gc bench/ab/fork-cost.mjs [N]
import { Effect, Layer, Runtime, Scope } from "effect"
import { Rein } from "@rein/core"
import { catalog, response } from "../dist/fixtures.js"
import { allocated, collect } from "../dist/harness.js"
import * as Fork from "../../packages/core/dist/internal/fork.js"
const N = Number(process.argv[2] ?? 20000)
const provider = { internalMaxAttempts: 1, call: () => Effect.succeed(response) }
const context = Effect.runSync(
  Effect.flatMap(Scope.make(), (s) => Layer.buildWithScope(Rein.layer({ catalog, providers: { mem: provider } }), s))
)
const loop = (f) => Effect.withFiberRuntime((parent, status) => { for (let i = 0; i < N; i++) f(parent, status); return Effect.void })
const work = Effect.exit(Effect.void)
const rows = {
  getFiberRefs: loop((p) => p.getFiberRefs()),
  runtimeOf: loop((p, s) => Runtime.make({ context: p.currentContext, fiberRefs: p.getFiberRefs(), runtimeFlags: s.runtimeFlags })),
  runForkRuntimeOf: loop((p, s) => Runtime.runFork(Runtime.make({ context: p.currentContext, fiberRefs: p.getFiberRefs(), runtimeFlags: s.runtimeFlags }))(work)),
}
for (const [name, e] of Object.entries(rows)) {
  const run = () => Effect.runPromise(Effect.provide(e, context))
  await run(); collect()
  const { bytes } = await allocated(run)
  console.log(name, (bytes / N).toFixed(0), "B")
}
const rt = (p, s) => Runtime.make({ context: p.currentContext, fiberRefs: p.getFiberRefs(), runtimeFlags: s.runtimeFlags })
const more = {
  runFork2: loop((p, s) => Runtime.runFork(rt(p, s), work)),
  sameRuntimeFork: Effect.withFiberRuntime((p, s) => { const r = rt(p, s); for (let i = 0; i < N; i++) Runtime.runFork(r, work); return Effect.void }),
  siteFork: loop((p, s) => Fork.siteOf(p, s.runtimeFlags).fork(work)),
  seqVoid: Effect.forEach(Array.from({ length: N }), () => Effect.void, { discard: true }),
  seqForkDaemon: Effect.forEach(Array.from({ length: N }), () => Effect.forkDaemon(work), { discard: true }),
}
for (const [name, e] of Object.entries(more)) {
  const run = () => Effect.runPromise(Effect.provide(e, context))
  await run(); collect()
  const { bytes } = await allocated(run)
  console.log(name, (bytes / N).toFixed(0), "B")
}
