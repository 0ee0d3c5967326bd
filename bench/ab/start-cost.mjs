// `PgBatchRun.start` before/after: wall time of creating a run of N items and of joining it (all items there),
// per postgres dist (copy the old `packages/postgres/dist` aside), interleaved, medians, load beside.
//
//   node bench/ab/start-cost.mjs <postgres dist>,<postgres dist> [items] [rounds]
import { loadavg } from "node:os"
import { join, resolve } from "node:path"
import { pathToFileURL } from "node:url"

const [distsArg, itemsArg = "20000", roundsArg = "5"] = process.argv.slice(2)
const dists = distsArg.split(",").map((d) => resolve(d))
const pkg = resolve(import.meta.dirname, "../../packages/postgres")
const at = (p) => import(pathToFileURL(join(pkg, p)).href)
const { PgClient } = await at("node_modules/@effect/sql-pg/dist/esm/index.js")
const { Effect, Exit, Layer, Redacted, Scope } = await at("node_modules/effect/dist/esm/index.js")
const { Identity } = await at("node_modules/@rein/batch/dist/index.js")
const { TestServer } = await import(pathToFileURL(join(dists[0], "testing.js")).href)
const scope = Effect.runSync(Scope.make())
const server = await Effect.runPromise(Scope.extend(TestServer.start, scope))
const layer = Layer.orDie(PgClient.layer({ url: Redacted.make(server.url), maxConnections: 4 }))
const runtime = await Effect.runPromise(Scope.extend(Layer.toRuntime(layer), scope))
const run = (effect) => Effect.runPromise(Effect.provide(effect, runtime))
const builds = await Promise.all(dists.map(async (d) => ({ d, pg: await import(pathToFileURL(join(d, "index.js")).href) })))
await run(builds[0].pg.Migrations.run)

const n = Number(itemsArg)
const items = Array.from({ length: n }, (_, i) => ({ id: `item-${i}`, prompt: `Summarise document ${i}` }))
const identity = Identity.make({ provider: "fake", model: "a", promptVersion: "p", parserVersion: "j", applicationVersion: "t" })
const times = new Map(dists.map((d) => [d, { create: [], join: [] }]))
let next = 0
const timed = async (effect) => {
  const t = performance.now()
  await run(effect)
  return performance.now() - t
}
for (let r = 0; r < Number(roundsArg); r++) {
  for (const b of r % 2 === 0 ? builds : [...builds].reverse()) {
    const start = b.pg.PgBatchRun.start({ runId: `cost-${++next}`, identity, resume: "none", items })
    times.get(b.d).create.push(await timed(start))
    times.get(b.d).join.push(await timed(start))
  }
  console.log(`round ${r}, load ${loadavg()[0].toFixed(2)}`)
}
const med = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const range = (xs) => `${Math.min(...xs).toFixed(0)}–${Math.max(...xs).toFixed(0)}`
for (const [d, t] of times) {
  console.log(`${d}: create ${med(t.create).toFixed(0)} ms (${range(t.create)}), join ${med(t.join).toFixed(0)} ms (${range(t.join)})`)
}
await Effect.runPromise(Scope.close(scope, Exit.void))
process.exit(0)
