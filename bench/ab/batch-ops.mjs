// A/B helper (not part of the bench): bench 2's 5 ms shape counted, not timed (the same at any load): Effect
// run-loop steps per item (a supervisor with op supervision on, by op and the function it carries; fibers forked
// outside the supervised tree, if any, are not counted: "fibers stepping" says how many were) and KB allocated per
// item (v8.GCProfiler, median of 3 runs), for `Batch.run` plain, with every guardrail on, each guardrail alone (ab-guard.mjs's names), and the floor row.
// node --expose-gc bench/ab/batch-ops.mjs [root] [N,L] [plain,all,floor,item,…] [top=25]
import { dirname, resolve } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import { shapeOf } from "./shape.mjs"
const here = resolve(dirname(fileURLToPath(import.meta.url)), "../..")
const root = resolve(process.argv[2] ?? here)
const [N, L] = (process.argv[3] ?? "4000,5").split(",").map(Number)
const rows = (process.argv[4] ?? "plain,all,floor").split(",")
const TOP = Number(process.argv[5] ?? 25)
const { Batch, Guardrails, effect, leanBound, request, call, context, contract, items } = await shapeOf(root, N, L)
const { Effect, RuntimeFlags, RuntimeFlagsPatch, Supervisor } = effect
const { allocated, collect } = await import(pathToFileURL(resolve(here, "bench/dist/harness.js")).href)
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
const counts = new Map(); const fibers = new Set(); let total = 0
class Count extends Supervisor.AbstractSupervisor {
  get value() { return Effect.void }
  onEffect(fiber, e) {
    total++; fibers.add(fiber)
    const f = e.effect_instruction_i1 ?? e.effect_instruction_i0
    const key = `${e._op} ${typeof f === "function" ? f.name || "(anon)" : ""}`
    counts.set(key, (counts.get(key) ?? 0) + 1)
  }
}
const effectOf = (row) => row === "floor"
  ? Effect.forEach(items, () => leanBound(Effect.promise(call), 60_000), { concurrency: 200 })
  : Batch.run(items, { contract, request: () => request, guardrails: Guardrails.make({ concurrency: 200, ...configs[row] }) })
    .pipe(Effect.provide(context))
console.log(`${root}: ${N} items × ${L} ms at 200`)
for (const row of rows) {
  const e = effectOf(row)
  await Effect.runPromise(e); await Effect.runPromise(e)
  const kb = []
  for (let i = 0; i < 3; i++) { collect(); kb.push((await allocated(() => Effect.runPromise(e))).bytes / N / 1024) }
  counts.clear(); fibers.clear(); total = 0
  await Effect.runPromise(Effect.supervised(Effect.withRuntimeFlagsPatch(e, RuntimeFlagsPatch.enable(RuntimeFlags.OpSupervision)), new Count()))
  kb.sort((a, b) => a - b)
  console.log(`${row}: ${(total / N).toFixed(2)} steps/item, ${(fibers.size / N).toFixed(2)} fibers/item stepping, KB/item ${kb[1].toFixed(2)} (${kb[0].toFixed(2)}–${kb[2].toFixed(2)})`)
  for (const [k, c] of [...counts].sort((a, b) => b[1] - a[1]).slice(0, TOP)) console.log(`  ${(c / N).toFixed(2).padStart(6)}  ${k}`)
}
