// A/B helper (not part of the bench): bench 6's hour through the binary, this checkout against another (as in
// sim-bin-other.mjs), alternated in separate processes: whole-process CPU with the median of the paired
// per-round differences (how many rounds this side was lower), then, from one run each with --trace-opt
// --trace-deopt, the TurboFan compilations, their summed compile time and the deoptimizations by reason.
// node bench/ab/sim-bin-jit.mjs <other checkout root> [rounds]
import { spawnSync } from "node:child_process"
import os from "node:os"
import { fileURLToPath, pathToFileURL } from "node:url"

const root = fileURLToPath(new URL("../../", import.meta.url))
const sides = { other: process.argv[2], this: root }
const rounds = Number(process.argv[3] ?? 9)
const report = pathToFileURL(`${root}bench/dist/cpu-report.js`).href
const args = ["simulate", "--catalog", "examples/catalog.json", "--contract", "examples/contract.json", "--scenario",
  "bench/scenarios/hour-outage.json", "--seed", "1", "--json"]
const run = (checkout, flags) =>
  spawnSync(process.execPath, [...flags, `${checkout}/packages/cli/dist/bin.js`, ...args], {
    cwd: root, maxBuffer: 256 * 2 ** 20, encoding: "utf8"
  })
const cpuOf = (checkout) => {
  const r = run(checkout, ["--import", report])
  const line = r.stderr.split("\n").reverse().find((l) => l.startsWith("rein-bench-cpu "))
  if (r.status !== 0 || line === undefined) throw new Error(r.stderr)
  return { cpu: Math.round(Number(line.slice(15)) / 1000), json: r.stdout }
}
const out = { other: [], this: [] }
const load0 = os.loadavg()[0]
let reference
for (let r = 0; r < rounds; r++) {
  for (const side of r % 2 === 0 ? ["other", "this"] : ["this", "other"]) {
    const { cpu, json } = cpuOf(sides[side])
    if (reference !== undefined && json !== reference) throw new Error(`${side}: the report differs`)
    reference = json
    out[side].push(cpu)
  }
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const fmt = (xs) => `${median(xs)} ms (${Math.min(...xs)}–${Math.max(...xs)})`
const diffs = out.this.map((t, i) => t - out.other[i])
console.log(`binary CPU: other ${fmt(out.other)} | this ${fmt(out.this)} | paired this − other ${median(diffs)} ms, ` +
  `lower in ${diffs.filter((d) => d < 0).length}/${rounds} | load ${load0.toFixed(1)}–${os.loadavg()[0].toFixed(1)}`)
for (const [side, checkout] of Object.entries(sides)) {
  const text = run(checkout, ["--trace-opt", "--trace-deopt"]).stdout
  const took = [...text.matchAll(/\[completed compiling .* took ([\d.]+), ([\d.]+), ([\d.]+) ms\]/g)]
  const ms = took.reduce((s, m) => s + Number(m[1]) + Number(m[2]) + Number(m[3]), 0)
  const reasons = {}
  for (const m of text.matchAll(/\[bailout \(kind: [^,]*, reason: ([^)]*)\)/g)) reasons[m[1]] = (reasons[m[1]] ?? 0) + 1
  const deopts = Object.values(reasons).reduce((s, n) => s + n, 0)
  console.log(`${side}: ${took.length} TurboFan compilations (${Math.round(ms)} ms compiling, wall), ${deopts} deopts ` +
    JSON.stringify(reasons))
}
