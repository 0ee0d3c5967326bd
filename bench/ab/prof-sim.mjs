// A/B helper (not part of the bench): the simulation of bench 6 in process, R times; CPU per run.
// node --cpu-prof bench/ab/prof-sim.mjs [R]
import { Catalog, Contract } from "@rein/core"
import * as cli from "@rein/cli"
import { Effect, Either } from "effect"
import { readFileSync } from "node:fs"
const read = (p) => JSON.parse(readFileSync(new URL(`../../${p}`, import.meta.url), "utf8"))
const catalog = Either.getOrThrow(Catalog.decode(read("examples/catalog.json")))
const contract = Either.getOrThrow(Contract.decode(read("examples/contract.json")))
const scenario = Either.getOrThrow(cli.Scenario.decode(read("bench/scenarios/hour-outage.json")))
const R = Number(process.argv[2] ?? 3)
for (let r = 0; r < R; r++) {
  const c0 = process.cpuUsage(); const t0 = performance.now()
  const report = await Effect.runPromise(cli.Simulate.simulate(catalog, contract, scenario, 1))
  const c = process.cpuUsage(c0)
  console.log(JSON.stringify({ cpuMs: Math.round((c.user + c.system) / 1000), wallMs: Math.round(performance.now() - t0), requests: report.requests, outcomes: report.outcomes }))
}
