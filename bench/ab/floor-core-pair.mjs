// A/B helper (not part of the bench): bench 6's floor rows with each checkout's OWN core and virtual clock (each
// checkout's `bench/dist/simulation-floors.js`, whose `@rein/core` is that checkout's), alternated in ONE process,
// order swapped every round: CPU per run (`process.cpuUsage`), medians with min–max, the median paired difference
// per row, the load. Round 0 (cold) is printed, not counted. `sim-floor-pair.mjs` runs this checkout's core under
// both clocks; this one compares cores. Both checkouts built (`pnpm build && tsc -b bench`).
// node bench/ab/floor-core-pair.mjs <other checkout root> [rounds=9] [rows=arrivals,rein]
import os from "node:os"
import { pathToFileURL } from "node:url"
import { checkout } from "./sim-checkout.mjs"
const rounds = Number(process.argv[3] ?? 9)
const wanted = (process.argv[4] ?? "arrivals,rein").split(",")
const pick = (name) =>
  (wanted.includes("arrivals") && name.includes("arrivals alone")) ||
  (wanted.includes("timeout") && name.includes("Effect.timeout")) ||
  (wanted.includes("lean") && name.includes("lean bound")) ||
  (wanted.includes("rein") && name.includes("bare Rein.execute"))
const side = async (root) => {
  const self = await checkout(root)
  const { floors } = await import(pathToFileURL(`${self.root}/bench/dist/simulation-floors.js`).href)
  const inputs = {
    catalog: self.catalog,
    contract: self.contract,
    health: self.cli.Scenario.healthConfig(self.scenario("bench/scenarios/hour-outage.json"))
  }
  return (await floors(self.root, inputs)).filter((f) => pick(f.name))
}
const sides = { other: await side(process.argv[2]), this: await side(undefined) }
const cpu = new Map()
const load0 = os.loadavg()[0]
for (let r = 0; r < rounds; r++) {
  const got = {}
  for (const name of r % 2 === 0 ? ["other", "this"] : ["this", "other"]) {
    for (const floor of sides[name]) {
      const c0 = process.cpuUsage()
      await floor.run()
      const c = process.cpuUsage(c0)
      got[`${name}\u0000${floor.name}`] = (c.user + c.system) / 1000
    }
  }
  for (const floor of sides.this) {
    const o = got[`other\u0000${floor.name}`], t = got[`this\u0000${floor.name}`]
    if (r === 0) {
      console.log(`first run, ${floor.name}: other ${o.toFixed(0)} ms, this ${t.toFixed(0)} ms`)
      continue
    }
    const row = cpu.get(floor.name) ?? { other: [], this: [], diff: [] }
    row.other.push(o), row.this.push(t), row.diff.push(t - o)
    cpu.set(floor.name, row)
  }
}
const med = (xs) => { const s = [...xs].sort((a, b) => a - b); return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2 }
const show = (xs) => `${med(xs).toFixed(0)} ms (${Math.min(...xs).toFixed(0)}–${Math.max(...xs).toFixed(0)})`
for (const [name, row] of cpu) {
  console.log(`${name}:\n  other ${show(row.other)}, this ${show(row.this)}; paired (this − other) median ${med(row.diff).toFixed(0)} ms, this lower in ${row.diff.filter((d) => d < 0).length}/${row.diff.length}`)
}
console.log(`load ${load0.toFixed(1)}–${os.loadavg()[0].toFixed(1)}`)
