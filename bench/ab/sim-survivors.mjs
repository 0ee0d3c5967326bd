// A/B helper (not part of the bench): V8's sampling heap profiler over bench 6's simulation in process, objects a
// scavenge collected left out (MINOR=1: included): bytes per simulated request that survive a scavenge, by function.
import { Session } from "node:inspector/promises"
import { Catalog, Contract } from "@rein/core"
import * as cli from "@rein/cli"
import { Effect, Either } from "effect"
import { readFileSync } from "node:fs"
const read = (p) => JSON.parse(readFileSync(new URL(`../../${p}`, import.meta.url), "utf8"))
const catalog = Either.getOrThrow(Catalog.decode(read("examples/catalog.json")))
const contract = Either.getOrThrow(Contract.decode(read("examples/contract.json")))
const scenario = Either.getOrThrow(cli.Scenario.decode(read("bench/scenarios/hour-outage.json")))
const one = () => Effect.runPromise(cli.Simulate.simulate(catalog, contract, scenario, 1))
await one()
const session = new Session()
session.connect()
await session.post("HeapProfiler.enable")
await session.post("HeapProfiler.startSampling", { samplingInterval: 1024, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: process.env.MINOR === "1" })
await one()
const { profile } = await session.post("HeapProfiler.stopSampling")
const self = new Map()
const label = (f) => `${f.functionName || "(anon)"} ${f.url.replace(/.*node_modules\/.pnpm\/[^/]+\/node_modules\//, "").replace(/.*\/packages\//, "")}:${f.lineNumber + 1}`
const incl = new Map()
const walk = (node, stack) => {
  const k = label(node.callFrame)
  self.set(k, (self.get(k) ?? 0) + node.selfSize)
  let size = node.selfSize
  for (const c of node.children) size += walk(c, [...stack, k])
  if (!stack.includes(k)) incl.set(k, (incl.get(k) ?? 0) + size)
  return size
}
walk(profile.head, [])
const total = [...self.values()].reduce((a, b) => a + b, 0)
console.log(`total ${(total / 10000 / 1024).toFixed(2)} KB/request`)
for (const [k, v] of [...self].sort((a, b) => b[1] - a[1]).slice(0, Number(process.env.TOP ?? 30))) console.log(`${(v / 10000).toFixed(0).padStart(7)} B  ${k}`)
console.log("--- inclusive, Rein and cli frames")
for (const [k, v] of [...incl].filter(([k]) => /core\/dist|cli\/dist|batch\/dist/.test(k)).sort((a, b) => b[1] - a[1]).slice(0, Number(process.env.TOP ?? 30))) console.log(`${(v / 10000).toFixed(0).padStart(7)} B  ${k}`)
