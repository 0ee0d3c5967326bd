// A/B helper (not part of the bench): the fixed cost of a Batch.run (zero latency), N items at concurrency C:
// CPU µs and KB allocated per run, 200 runs each after 50 warm-ups.
// node --expose-gc bench/ab/fixed-run.mjs
import { Batch, Guardrails } from "@rein/batch"
import { Contract, Rein } from "@rein/core"
import { Effect, Layer, Scope } from "effect"
import os from "node:os"
import { catalog, request, response } from "../dist/fixtures.js"
import { allocated, collect } from "../dist/harness.js"
const provider = { internalMaxAttempts: 1, call: () => Effect.succeed(response) }
const context = Effect.runSync(Effect.flatMap(Scope.make(), (s) => Layer.buildWithScope(Rein.layer({ catalog, providers: { mem: provider } }), s)))
const contract = Contract.make({ deadline: "1 minute", candidates: ["mem/a"] })
console.log(`load ${os.loadavg()[0].toFixed(1)}`)
for (const [N, C] of [[0, 1], [0, 100], [1, 100], [100, 100]]) {
  const items = Array.from({ length: N }, (_, i) => i)
  const one = () => Effect.runPromise(Batch.run(items, { contract, request: () => request, guardrails: Guardrails.make({ concurrency: C }) }).pipe(Effect.provide(context)))
  for (let i = 0; i < 50; i++) await one()
  collect()
  const R = 200
  const c0 = process.cpuUsage()
  const { bytes } = await allocated(async () => { for (let i = 0; i < R; i++) await one() })
  const c = process.cpuUsage(c0)
  console.log(JSON.stringify({ N, C, cpuUsPerRun: Math.round((c.user + c.system) / R), kbPerRun: Math.round(bytes / R / 1024) }))
}
