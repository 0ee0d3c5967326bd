// A/B helper (not part of the bench): prints the simulation report of bench 6 (seed 1) as JSON, to check that a
// change leaves it byte-identical. node bench/ab/sim-json.mjs [scenario.json]
import { Catalog, Contract } from "@rein/core"
import * as cli from "@rein/cli"
import { Effect, Either } from "effect"
import { readFileSync } from "node:fs"
const read = (p) => JSON.parse(readFileSync(new URL(`../../${p}`, import.meta.url), "utf8"))
const catalog = Either.getOrThrow(Catalog.decode(read("examples/catalog.json")))
const contract = Either.getOrThrow(Contract.decode(read("examples/contract.json")))
const scenario = Either.getOrThrow(cli.Scenario.decode(read(process.argv[2] ?? "bench/scenarios/hour-outage.json")))
console.log(JSON.stringify(await Effect.runPromise(cli.Simulate.simulate(catalog, contract, scenario, 1))))
