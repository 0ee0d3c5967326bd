// A/B helper (not part of the bench): bench 6's floor rows (`bench/dist/simulation-floors.js`: the arrivals alone,
// each call under `Effect.timeout`, bare `Rein.execute`) on this checkout's virtual scheduler and clock and on
// another's (`<other>/packages/cli/dist/internal/virtual.js`; core is this checkout's under both), alternated in
// ONE process, order swapped every round; CPU per run, medians with min–max, the load. Round 0 is not counted.
// node bench/ab/sim-floor-pair.mjs <other checkout root> [rounds=8]   (after `tsc -b bench`)
import os from "node:os"
import { fileURLToPath } from "node:url"
import { checkout } from "./sim-checkout.mjs"
const { floors } = await import("../dist/simulation-floors.js")
const self = await checkout()
const inputs = {
  catalog: self.catalog,
  contract: self.contract,
  health: self.cli.Scenario.healthConfig(self.scenario("bench/scenarios/hour-outage.json"))
}
const rounds = Number(process.argv[3] ?? 8)
const sides = { other: await floors(process.argv[2], inputs), this: await floors(fileURLToPath(new URL("../../", import.meta.url)), inputs) }
const cpu = { other: new Map(), this: new Map() }
const load0 = os.loadavg()[0]
for (let r = 0; r < rounds; r++) {
  for (const name of r % 2 === 0 ? ["other", "this"] : ["this", "other"]) {
    for (const floor of sides[name]) {
      const c0 = process.cpuUsage()
      await floor.run()
      const c = process.cpuUsage(c0)
      if (r > 0) cpu[name].set(floor.name, [...(cpu[name].get(floor.name) ?? []), (c.user + c.system) / 1000])
    }
  }
}
const med = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const show = (xs) => `${med(xs).toFixed(0)} ms (${Math.min(...xs).toFixed(0)}–${Math.max(...xs).toFixed(0)})`
for (const [name, xs] of cpu.other) console.log(`${name}: other ${show(xs)}, this ${show(cpu.this.get(name))}`)
console.log(`load ${load0.toFixed(1)}–${os.loadavg()[0].toFixed(1)}`)
