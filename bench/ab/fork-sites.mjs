// A/B helper (not part of the bench): the attempt's fork site (core's `internal/fork.ts`) over bench 2's 5 ms
// shape: sites made per item (a miss of the cache makes one; hit rate = 1 − that) for `Batch.run` plain and with
// every guardrail on. The build's `internal/fork.js` must export `made()` (this checkout's does; for an older
// build, patch a copy of it: put `sitesMade++` before `return last = new Site(` in its `fork.js` and append
// `let sitesMade = 0; export const made = () => sitesMade;`).
// node bench/ab/fork-sites.mjs [N,L,C] [root]
import { dirname, resolve } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import { shapeOf } from "./shape.mjs"
const here = resolve(dirname(fileURLToPath(import.meta.url)), "../..")
const [N, L, C] = (process.argv[2] ?? "20000,5,200").split(",").map(Number)
const root = resolve(process.argv[3] ?? here)
const Fork = await import(pathToFileURL(resolve(root, "packages/core/dist/internal/fork.js")).href)
const { Batch, Guardrails, effect: { Effect }, context, contract, items, request } = await shapeOf(root, N, L)
const all = {
  itemDeadline: "30 seconds", batchDeadline: "10 minutes", abortOn: ["authentication", "insufficient_balance"],
  maxTotalTokens: 1e12, maxTotalCost: 1e9, requestsPerMinute: 1e9, tokensPerMinute: 1e12, cooldown: "1 second"
}
for (const [name, config] of [["plain", {}], ["all", all], ["plain", {}], ["all", all]]) {
  const guardrails = Guardrails.make({ concurrency: C, ...config })
  const before = Fork.made()
  await Effect.runPromise(Batch.run(items, { contract, request: () => request, guardrails }).pipe(Effect.provide(context)))
  const made = Fork.made() - before
  console.log(name.padEnd(6), "sites made", made, "per item", (made / N).toFixed(4), "hit rate", (1 - made / N).toFixed(4))
}
