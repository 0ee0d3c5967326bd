// A/B helper (not part of the bench): bench 6's binary row (this checkout's packages/cli/dist/bin.js, the
// child's own CPU through bench/dist/cpu-report.js) with extra node/V8 flags per variant, interleaved
// (rotating order); checks every report is byte-identical. Prints medians with min–max and the load.
// node bench/ab/sim-bin-flags.mjs <rounds> [scenario] -- "" "--sparkplug" "--always-sparkplug --max-lazy" …
import { spawnSync } from "node:child_process"
import os from "node:os"
import { fileURLToPath, pathToFileURL } from "node:url"

const root = fileURLToPath(new URL("../../", import.meta.url))
const dash = process.argv.indexOf("--")
const [rounds, scenario = "bench/scenarios/hour-outage.json"] = process.argv.slice(2, dash)
const variants = process.argv.slice(dash + 1)
const report = pathToFileURL(`${root}bench/dist/cpu-report.js`).href
const args = ["simulate", "--catalog", "examples/catalog.json", "--contract", "examples/contract.json", "--scenario",
  scenario, "--seed", "1", "--json"]
const runOnce = (flags) => {
  const r = spawnSync(process.execPath, [...flags.split(" ").filter((f) => f !== ""), "--import", report,
    `${root}packages/cli/dist/bin.js`, ...args], { cwd: root, maxBuffer: 64 * 2 ** 20, encoding: "utf8" })
  const line = r.stderr.split("\n").reverse().find((l) => l.startsWith("rein-bench-cpu "))
  if (r.status !== 0 || line === undefined) throw new Error(r.stderr)
  return { cpu: Math.round(Number(line.slice(15)) / 1000), json: r.stdout }
}
const out = variants.map(() => [])
const load0 = os.loadavg()[0]
let reference
for (let r = 0; r < Number(rounds); r++) {
  for (let k = 0; k < variants.length; k++) {
    const i = (k + r) % variants.length
    const { cpu, json } = runOnce(variants[i])
    reference ??= json
    if (json !== reference) throw new Error(`variant "${variants[i]}": another report`)
    out[i].push(cpu)
  }
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
variants.forEach((v, i) => console.log(`"${v}": ${median(out[i])} ms (${Math.min(...out[i])}–${Math.max(...out[i])})`))
console.log(`load ${load0.toFixed(1)}–${os.loadavg()[0].toFixed(1)}`)
