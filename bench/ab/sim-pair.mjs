// A/B helper (not part of the bench): bench 6's hour (`Simulate.simulate`, in process) by this checkout's build
// and another's (a fully built older worktree or a copy of one: its core and CLI both), alternated in ONE process
// (order swapped every round), CPU per run (`process.cpuUsage`): medians with min–max, the median paired
// difference, and the load. Every run's report is compared with the other build's (JSON, byte-identical).
// node bench/ab/sim-pair.mjs <other checkout root> [rounds=8]
import os from "node:os"
import { checkout } from "./sim-checkout.mjs"
const rounds = Number(process.argv[3] ?? 8)
const sides = { other: await checkout(process.argv[2]), this: await checkout() }
const hour = (side) => side.scenario("bench/scenarios/hour-outage.json")
const runOnce = async (side) => {
  const c0 = process.cpuUsage()
  const report = await side.Effect.runPromise(side.cli.Simulate.simulate(side.catalog, side.contract, hour(side), 1))
  const c = process.cpuUsage(c0)
  return { cpu: (c.user + c.system) / 1000, json: JSON.stringify(report) }
}
const load0 = os.loadavg()[0]
const cpu = { other: [], this: [] }
const diffs = []
for (let r = 0; r < rounds; r++) {
  const got = {}
  for (const name of r % 2 === 0 ? ["other", "this"] : ["this", "other"]) got[name] = await runOnce(sides[name])
  if (got.other.json !== got.this.json) throw new Error(`round ${r}: the reports differ`)
  // Round 0 is each build's first run (cold); it is printed, not counted.
  if (r === 0) {
    console.log(`first runs: other ${got.other.cpu.toFixed(0)} ms, this ${got.this.cpu.toFixed(0)} ms`)
    continue
  }
  cpu.other.push(got.other.cpu)
  cpu.this.push(got.this.cpu)
  diffs.push(got.this.cpu - got.other.cpu)
}
const med = (xs) => { const s = [...xs].sort((a, b) => a - b); return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2 }
const show = (xs) => `${med(xs).toFixed(0)} ms (${Math.min(...xs).toFixed(0)}–${Math.max(...xs).toFixed(0)})`
console.log(`other: ${show(cpu.other)}`)
console.log(`this:  ${show(cpu.this)}`)
console.log(`paired (this − other): median ${med(diffs).toFixed(0)} ms, this lower in ${diffs.filter((d) => d < 0).length}/${diffs.length}`)
console.log(`load ${load0.toFixed(1)}–${os.loadavg()[0].toFixed(1)}; reports identical in every round`)
