// Shared setup of the A/B helpers that run bench 2's shape from one checkout's build (its own core, batch and
// Effect): the modules, the provider (a real timer of L ms, an already resolved promise at 0), Rein's context
// built once, the contract and the items. `root`: the checkout (default: this one).
import { readFileSync } from "node:fs"
import { dirname, resolve } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
export const shapeOf = async (root, N, L) => {
  const at = (p) => import(pathToFileURL(resolve(root ?? resolve(dirname(fileURLToPath(import.meta.url)), "../.."), p)).href)
  const { Batch, Guardrails } = await at("packages/batch/dist/index.js")
  const { Contract, Rein } = await at("packages/core/dist/index.js")
  const effect = await at("packages/core/node_modules/effect/dist/esm/index.js")
  const { Effect, Layer, Scope } = effect
  const { catalog, leanBound, request, response } = await at("bench/dist/fixtures.js")
  const call = () => L === 0 ? Promise.resolve(1) : new Promise((r) => setTimeout(() => r(1), L))
  const provider = { internalMaxAttempts: 1, call: () => Effect.as(Effect.promise(call), response) }
  const context = Effect.runSync(Effect.flatMap(Scope.make(), (s) => Layer.buildWithScope(Rein.layer({ catalog, providers: { mem: provider } }), s)))
  return {
    Batch, Guardrails, Contract, Rein, effect, leanBound, request, response, catalog, call, context,
    contract: Contract.make({ deadline: "1 minute", candidates: ["mem/a"] }),
    items: Array.from({ length: N }, (_, i) => i),
    load: () => readFileSync("/proc/loadavg", "utf8").split(" ")[0]
  }
}
