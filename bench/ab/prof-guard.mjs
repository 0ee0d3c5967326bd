// Bench 2's 5 ms shape, one guardrails configuration (the names of ab-guard.mjs), R runs after a warm-up, to
// profile: node --cpu-prof --cpu-prof-dir=/tmp/prof bench/ab/prof-guard.mjs [plain|all|floor|...] [N,L,C,R]
// then `node bench/ab/cpuprof-top.mjs /tmp/prof/<file>.cpuprofile`.
import { Batch, Guardrails } from "@rein/batch"
import { Contract, Rein } from "@rein/core"
import { Effect, Layer, Scope } from "effect"
import { catalog, leanBound, request, response } from "../dist/fixtures.js"
const which = process.argv[2] ?? "all"
const [N, L, C, R] = (process.argv[3] ?? "20000,5,200,4").split(",").map(Number)
const configs = {
  plain: {},
  all: {
    itemDeadline: "30 seconds", batchDeadline: "10 minutes", abortOn: ["authentication", "insufficient_balance"],
    maxTotalTokens: 1e12, maxTotalCost: 1e9, requestsPerMinute: 1e9, tokensPerMinute: 1e12, cooldown: "1 second"
  },
  item: { itemDeadline: "30 seconds" },
  batch: { batchDeadline: "10 minutes" },
  abortOn: { abortOn: ["authentication", "insufficient_balance"] },
  caps: { maxTotalTokens: 1e12, maxTotalCost: 1e9 },
  rpm: { requestsPerMinute: 1e9 },
  tpm: { tokensPerMinute: 1e12 },
  cooldown: { cooldown: "1 second" }
}
const call = () => L === 0 ? Promise.resolve(1) : new Promise((r) => setTimeout(() => r(1), L))
const provider = { internalMaxAttempts: 1, call: () => Effect.as(Effect.promise(call), response) }
const context = Effect.runSync(Effect.flatMap(Scope.make(), (s) => Layer.buildWithScope(Rein.layer({ catalog, providers: { mem: provider } }), s)))
const contract = Contract.make({ deadline: "1 minute", candidates: ["mem/a"] })
const items = Array.from({ length: N }, (_, i) => i)
const one = which === "floor"
  ? () => Effect.runPromise(Effect.forEach(items, () => leanBound(Effect.promise(call), 60_000), { concurrency: C }))
  : () => {
    const guardrails = Guardrails.make({ concurrency: C, ...configs[which] })
    return Effect.runPromise(Batch.run(items, { contract, request: () => request, guardrails }).pipe(Effect.provide(context)))
  }
await one()
const c0 = process.cpuUsage()
for (let r = 0; r < R; r++) {
  await one()
  if (process.env.MARK) console.log(`=== run ${r + 1} done`)
}
const c = process.cpuUsage(c0)
console.log(`${which}: ${R} runs of ${N}, CPU ${((c.user + c.system) / 1000 / R).toFixed(0)} ms per run`)
