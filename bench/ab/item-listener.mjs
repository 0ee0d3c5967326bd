// A/B helper (not part of the bench): KB allocated and CPU µs per batch item of a run WITH a listener (`onEvent`:
// the path that names each item on its fibers, `CurrentItem`), zero latency. BATCH=<dir> loads @rein/batch's
// build from that directory instead (e.g. a copy of packages/batch/dist without the change).
// [C=concurrency (200)] node --expose-gc bench/ab/item-listener.mjs [N] [rounds]
import { Contract, Rein } from "@rein/core"
import { Effect, Layer, Scope } from "effect"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import { catalog, request, response } from "../dist/fixtures.js"
import { allocated, collect } from "../dist/harness.js"
const { Batch, Guardrails } = await import(
  process.env.BATCH === undefined ? "@rein/batch" : pathToFileURL(path.resolve(process.env.BATCH, "index.js")).href
)
const N = Number(process.argv[2] ?? 5000)
const R = Number(process.argv[3] ?? 3)
const provider = { internalMaxAttempts: 1, call: () => Effect.succeed(response) }
const context = Effect.runSync(
  Effect.flatMap(Scope.make(), (s) => Layer.buildWithScope(Rein.layer({ catalog, providers: { mem: provider } }), s))
)
const contract = Contract.make({ deadline: "1 minute", candidates: ["mem/a"] })
const items = Array.from({ length: N }, (_, i) => i)
const guardrails = Guardrails.make({ concurrency: Number(process.env.C ?? 200) })
const onEvent = () => Effect.void
const batch = () =>
  Effect.runPromise(
    Batch.run(items, { contract, request: () => request, guardrails, onEvent }).pipe(Effect.provide(context))
  )
await batch()
const kb = []
const us = []
for (let r = 0; r < R; r++) {
  collect()
  const cpu = process.cpuUsage()
  const { bytes } = await allocated(batch)
  const used = process.cpuUsage(cpu)
  kb.push(+(bytes / N / 1024).toFixed(3))
  us.push(+((used.user + used.system) / N).toFixed(2))
}
console.log(JSON.stringify({ N, kbPerItem: kb, cpuUsPerItem: us }))
