// A/B helper (not part of the bench): CPU per `internal/fork.ts` `siteOf` look-up, builds alternated in one process:
// a hit on the last site from one fiber, and 200 workers each with its own context taking turns (ns per turn,
// and the turn without the look-up). node bench/ab/site-cost.mjs <root> [<root>…]
import { pathToFileURL } from "node:url"
const roots = process.argv.slice(2)
const { Effect, Context, RuntimeFlags } = await import(pathToFileURL(roots[0] + "/packages/core/node_modules/effect/dist/esm/index.js").href)
const forks = await Promise.all(roots.map((r) => import(pathToFileURL(r + "/packages/core/dist/internal/fork.js").href)))
class Own extends Context.Tag("Own")() {}
const N = 200000
const one = (Fork) => Effect.withFiberRuntime((f, s) => { for (let i = 0; i < N; i++) Fork.siteOf(f, s.runtimeFlags); return Effect.void })
// 200 workers, each its own service, taking turns (yieldNow), 50 look-ups each per turn... 1000 turns
const alt = (Fork) => Effect.forEach(Array.from({ length: 200 }, (_, i) => i), (i) => Effect.withFiberRuntime((f, s) =>
  Effect.forEach(Array.from({ length: 100 }), () => Effect.zipRight(Effect.yieldNow(), Effect.sync(() => Fork.siteOf(f, s.runtimeFlags))), { discard: true })).pipe(Effect.provideService(Own, { i })), { concurrency: "unbounded", discard: true })
const cpu = async (e) => { const t = process.cpuUsage(); await Effect.runPromise(e); const d = process.cpuUsage(t); return d.user + d.system }
const res = roots.map(() => ({ one: [], alt: [], altBase: [] }))
const noop = Effect.forEach(Array.from({ length: 200 }, (_, i) => i), (i) => Effect.forEach(Array.from({ length: 100 }), () => Effect.zipRight(Effect.yieldNow(), Effect.sync(() => 0)), { discard: true }).pipe(Effect.provideService(Own, { i })), { concurrency: "unbounded", discard: true })
for (let r = 0; r < 9; r++) for (let k = 0; k < roots.length; k++) {
  const j = (k + r) % roots.length
  res[j].one.push(await cpu(one(forks[j])) * 1000 / N)
  res[j].alt.push(await cpu(alt(forks[j])) * 1000 / 20000)
  res[j].altBase.push(await cpu(noop) * 1000 / 20000)
}
const med = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1].toFixed(0)
roots.forEach((r, j) => console.log(r.padEnd(22), "ns per look-up, one fiber:", med(res[j].one), " 200 alternating workers (turn incl.):", med(res[j].alt), " the turn alone:", med(res[j].altBase)))
console.log("load", (await import("node:fs")).readFileSync("/proc/loadavg", "utf8").split(" ")[0])
