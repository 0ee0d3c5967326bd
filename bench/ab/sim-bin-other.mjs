// A/B helper (not part of the bench): bench 6's binary row as bench/src/simulation.ts measures it (`node
// --import bench/dist/cpu-report.js <checkout>/packages/cli/dist/bin.js simulate … hour-outage.json --seed 1
// --json`, the child's own CPU), this checkout against another one (e.g. a copy of an older build: its
// packages/, examples/, bench/ and a link to this node_modules), interleaved; checks the two reports are
// byte-identical. Prints medians with min–max and the load. A third argument runs another scenario (e.g.
// bench/scenarios/second.json, the binary's fixed cost).
// node bench/ab/sim-bin-other.mjs <other checkout root> [rounds] [scenario]
import { spawnSync } from "node:child_process"
import os from "node:os"
import { fileURLToPath, pathToFileURL } from "node:url"

const root = fileURLToPath(new URL("../../", import.meta.url))
const sides = { other: process.argv[2], this: root }
const rounds = Number(process.argv[3] ?? 5)
const report = pathToFileURL(`${root}bench/dist/cpu-report.js`).href
const args = ["simulate", "--catalog", "examples/catalog.json", "--contract", "examples/contract.json", "--scenario",
  process.argv[4] ?? "bench/scenarios/hour-outage.json", "--seed", "1", "--json"]
const runOnce = (checkout) => {
  const r = spawnSync(process.execPath, ["--import", report, `${checkout}/packages/cli/dist/bin.js`, ...args], {
    cwd: root,
    maxBuffer: 64 * 2 ** 20,
    encoding: "utf8"
  })
  const line = r.stderr.split("\n").reverse().find((l) => l.startsWith("rein-bench-cpu "))
  if (r.status !== 0 || line === undefined) throw new Error(r.stderr)
  return { cpu: Math.round(Number(line.slice(15)) / 1000), json: r.stdout }
}
const out = { other: [], this: [] }
const load0 = os.loadavg()[0]
let reference
for (let r = 0; r < rounds; r++) {
  for (const side of r % 2 === 0 ? ["other", "this"] : ["this", "other"]) {
    const { cpu, json } = runOnce(sides[side])
    if (reference !== undefined && json !== reference) throw new Error(`${side}: the report differs`)
    reference = json
    out[side].push(cpu)
  }
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const fmt = (xs) => `${median(xs)} ms (${Math.min(...xs)}–${Math.max(...xs)})`
console.log(`${args[6]}: binary CPU: other ${fmt(out.other)} | this ${fmt(out.this)} | load ${load0.toFixed(1)}–${
  os.loadavg()[0].toFixed(1)} | reports identical (${reference.length} bytes)`)
const diffs = out.this.map((t, i) => t - out.other[i])
console.log(`paired this − other: median ${median(diffs)} ms, this lower in ${diffs.filter((d) => d < 0).length}/${rounds}`)
