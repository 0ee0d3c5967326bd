// A/B helper (not part of the bench): bytes allocated per batch item (Batch.run, zero or L ms latency) and per
// Rein.execute (one per fiber, in one runPromise of N), for fast iteration on #22's allocation goal.
// node --expose-gc bench/ab/alloc-item.mjs [N] [L] [rounds]
import { Batch, Guardrails } from "@rein/batch"
import { Contract, Rein } from "@rein/core"
import { Effect, Layer, Scope } from "effect"
import { catalog, request, response } from "../dist/fixtures.js"
import { allocated, collect } from "../dist/harness.js"
const N = Number(process.argv[2] ?? 5000)
const L = Number(process.argv[3] ?? 0)
const R = Number(process.argv[4] ?? 3)
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
const guardrails = Guardrails.make({ concurrency: 200 })
const batch = () =>
  Effect.runPromise(Batch.run(items, { contract, request: () => request, guardrails }).pipe(Effect.provide(context)))
const execute = Rein.execute(request, contract)
const executes = () =>
  Effect.runPromise(
    Effect.forEach(items, () => execute, { concurrency: L === 0 ? 1 : 200, discard: true }).pipe(
      Effect.provide(context)
    )
  )
// The floor: the same provider call, bare, in the same forEach.
const bare = provider.call()
const bares = () =>
  Effect.runPromise(Effect.forEach(items, () => bare, { concurrency: L === 0 ? 1 : 200, discard: true }))
const rows = { batch, execute: executes, bare: bares }
for (const f of Object.values(rows)) await f()
const out = {}
for (let r = 0; r < R; r++) {
  for (const [name, f] of Object.entries(rows)) {
    collect()
    const { bytes } = await allocated(f)
    ;(out[name] ??= []).push(+(bytes / N / 1024).toFixed(2))
  }
}
console.log(JSON.stringify({ N, L, kbPerItem: out }))
