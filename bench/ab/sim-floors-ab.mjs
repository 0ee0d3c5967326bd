// A/B helper (not part of the bench): bench 6's floor rows (`bench/dist/simulation-floors.js`) of this checkout
// and of another (e.g. a copy of an older build), alternated in ONE process, order swapped every round: CPU per
// row, medians with min–max, the median paired difference, the load; round 0 (cold) printed apart.
// node bench/ab/sim-floors-ab.mjs <other checkout root> [rounds=12] [rows: rein,lean,arrivals,timeout]
import os from "node:os"
import { pathToFileURL } from "node:url"
import { checkout } from "./sim-checkout.mjs"
const rounds = Number(process.argv[3] ?? 12)
const wanted = (process.argv[4] ?? "rein,lean,arrivals").split(",")
const pick = { rein: "bare Rein", lean: "lean bound", arrivals: "arrivals alone", timeout: "Effect.timeout" }
const sideOf = async (root) => {
  const side = await checkout(root)
  const { floors } = await import(pathToFileURL(`${side.root}/bench/dist/simulation-floors.js`).href)
  const health = side.cli.Scenario.healthConfig(side.scenario("bench/scenarios/hour-outage.json"))
  const rows = await floors(side.root, { catalog: side.catalog, contract: side.contract, health })
  return Object.fromEntries(wanted.map((w) => [w, rows.find((r) => r.name.includes(pick[w])).run]))
}
const sides = { other: await sideOf(process.argv[2]), this: await sideOf() }
const cpu = {}
const diffs = {}
for (const w of wanted) { cpu[w] = { other: [], this: [] }; diffs[w] = [] }
const load0 = os.loadavg()[0]
for (let r = 0; r < rounds; r++) {
  for (const w of wanted) {
    const got = {}
    for (const name of r % 2 === 0 ? ["other", "this"] : ["this", "other"]) {
      const c0 = process.cpuUsage()
      await sides[name][w]()
      const c = process.cpuUsage(c0)
      got[name] = (c.user + c.system) / 1000
    }
    if (r === 0) { console.log(`${w} first runs: other ${got.other.toFixed(0)} ms, this ${got.this.toFixed(0)} ms`); continue }
    cpu[w].other.push(got.other); cpu[w].this.push(got.this); diffs[w].push(got.this - got.other)
  }
}
const med = (xs) => { const s = [...xs].sort((a, b) => a - b); return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2 }
const show = (xs) => `${med(xs).toFixed(0)} ms (${Math.min(...xs).toFixed(0)}–${Math.max(...xs).toFixed(0)})`
for (const w of wanted) {
  console.log(`${w}: other ${show(cpu[w].other)}, this ${show(cpu[w].this)}; paired (this − other) median ${med(diffs[w]).toFixed(0)} ms, this lower in ${diffs[w].filter((d) => d < 0).length}/${diffs[w].length}`)
}
console.log(`load ${load0.toFixed(1)}–${os.loadavg()[0].toFixed(1)}`)
