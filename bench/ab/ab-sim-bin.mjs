// A/B helper (not part of the bench): bench 6 through the binary, the current build against an older one
// (packages/cli/dist-base), interleaved; the child's own CPU (bench/dist/cpu-report.js) per run.
// node bench/ab/ab-sim-bin.mjs [rounds]

import os from "node:os"
import { fileURLToPath, pathToFileURL } from "node:url"
const root = fileURLToPath(new URL("../../", import.meta.url))
const report = pathToFileURL(`${root}bench/dist/cpu-report.js`).href
const args = ["simulate", "--catalog", "examples/catalog.json", "--contract", "examples/contract.json", "--scenario", "bench/scenarios/hour-outage.json", "--seed", "1", "--json"]
import { spawnSync } from "node:child_process"
const cpuOf = (dir) => {
  const r = spawnSync(process.execPath, ["--import", report, `packages/cli/${dir}/bin.js`, ...args], { cwd: root, maxBuffer: 64 * 2 ** 20, encoding: "utf8" })
  const line = r.stderr.split("\n").reverse().find((l) => l.startsWith("rein-bench-cpu "))
  if (r.status !== 0 || line === undefined) throw new Error(r.stderr)
  return Math.round(Number(line.slice(15)) / 1000)
}
const R = Number(process.argv[2] ?? 3)
const out = { base: [], current: [] }
const load0 = os.loadavg()[0]
for (let r = 0; r < R; r++) for (const [name, dir] of r % 2 === 0 ? [["base", "dist-base"], ["current", "dist"]] : [["current", "dist"], ["base", "dist-base"]]) out[name].push(cpuOf(dir))
console.log(JSON.stringify({ load: `${load0.toFixed(1)}–${os.loadavg()[0].toFixed(1)}`, binaryCpuMs: out }))
