// A/B helper (not part of the bench): what the full collection before an hour costs the hour, by its kind. Bench 6's hour
// in process, warm, each hour after `gc()` (no argument: what the harness's `collect()` runs), after
// `gc({ type: "major", execution: "sync" })` (a full mark-compact, as a process makes by itself) or after none, rotated
// in one process: CPU medians (min–max), the load (h/sim22).
// [ROOT=<checkout>] node --expose-gc bench/ab/sim-gc-kind.mjs [rounds=6]
import { checkout } from "./sim-checkout.mjs"
import os from "node:os"
const side = await checkout(process.env.ROOT)
const scenario = side.scenario("bench/scenarios/hour-outage.json")
const hour = () => side.Effect.runPromise(side.cli.Simulate.simulate(side.catalog, side.contract, scenario, 1))
for (let i = 0; i < 3; i++) await hour()
const kinds = { "gc()": () => globalThis.gc(), "gc(major, sync)": () => globalThis.gc({ type: "major", execution: "sync" }), "none": () => {} }
const res = Object.fromEntries(Object.keys(kinds).map((k) => [k, []]))
const R = Number(process.argv[2] ?? 6)
const l0 = os.loadavg()[0]
for (let r = 0; r < R; r++) {
  const order = Object.keys(kinds); if (r % 2) order.reverse()
  for (const k of order) {
    kinds[k](); await new Promise((r) => setImmediate(r))
    const c0 = process.cpuUsage(); await hour(); const c = process.cpuUsage(c0)
    res[k].push((c.user + c.system) / 1000)
  }
}
const med = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1]
for (const [k, xs] of Object.entries(res)) console.log(`${k.padEnd(16)} ${med(xs).toFixed(0)} ms (${Math.min(...xs).toFixed(0)}–${Math.max(...xs).toFixed(0)})`)
console.log(`${R} rounds, load ${l0.toFixed(1)}–${os.loadavg()[0].toFixed(1)}, ${process.env.ROOT ?? "this checkout"}`)
