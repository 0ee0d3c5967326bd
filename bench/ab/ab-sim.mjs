// A/B helper (not part of the bench): bench 6's simulation in process, the current CLI against one built
// from older code (copy its packages/cli/dist to packages/cli/dist-base), interleaved; CPU per run.
// node bench/ab/ab-sim.mjs [rounds]
import { Catalog, Contract } from "@rein/core"
import { Effect, Either } from "effect"
import { readFileSync } from "node:fs"
import os from "node:os"
const read = (p) => JSON.parse(readFileSync(new URL(`../../${p}`, import.meta.url), "utf8"))
const current = await import("../../packages/cli/dist/index.js")
const base = await import("../../packages/cli/dist-base/index.js")
const catalog = Either.getOrThrow(Catalog.decode(read("examples/catalog.json")))
const contract = Either.getOrThrow(Contract.decode(read("examples/contract.json")))
const scenario = Either.getOrThrow(current.Scenario.decode(read("bench/scenarios/hour-outage.json")))
const R = Number(process.argv[2] ?? 3)
const out = { base: [], current: [] }
for (let r = 0; r < R; r++) {
  for (const [name, cli] of r % 2 === 0 ? [["base", base], ["current", current]] : [["current", current], ["base", base]]) {
    globalThis.gc?.()
    const c0 = process.cpuUsage()
    const report = await Effect.runPromise(cli.Simulate.simulate(catalog, contract, scenario, 1))
    const c = process.cpuUsage(c0)
    if (report.requests !== 10_000) throw new Error("bad report")
    out[name].push(Math.round((c.user + c.system) / 1000))
  }
}
console.log(JSON.stringify({ load: os.loadavg()[0].toFixed(1), cpuMs: out }))
