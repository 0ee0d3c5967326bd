// A/B helper (not part of the bench): where the binary's hour spends its CPU along the hour. Runs `rein simulate`
// through packages/cli/dist/bin.js on bench 6's hour cut or stretched to other lengths (and without its outage),
// alternated, whole-process CPU of the child (bench/dist/cpu-report.js): what the first requests cost against
// the later ones (the JIT's warm-up), and what the outage adds. Medians (min–max), the load.
// node bench/ab/sim-bin-scale.mjs [rounds]
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

const root = fileURLToPath(new URL("../../", import.meta.url))
const rounds = Number(process.argv[2] ?? 5)
const hour = JSON.parse(fs.readFileSync(`${root}bench/scenarios/hour-outage.json`, "utf8"))
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sim-bin-scale-"))
const variants = { "3 requests (1.08 s)": { duration: "1080 millis" }, "1,000 (6 min)": { duration: "6 minutes" },
  "5,000 (30 min)": { duration: "30 minutes" }, "10,000 (the hour)": {}, "20,000 (2 h)": { duration: "2 hours" },
  "10,000, no outage": { endpoints: {} } }
const files = Object.entries(variants).map(([name, change], i) => {
  const file = path.join(dir, `${i}.json`)
  fs.writeFileSync(file, JSON.stringify({ ...hour, ...change }))
  return [name, file]
})
const cpu = (file) => {
  const r = spawnSync(process.execPath, ["--import", `${root}bench/dist/cpu-report.js`, `${root}packages/cli/dist/bin.js`,
    "simulate", "--catalog", "examples/catalog.json", "--contract", "examples/contract.json", "--scenario", file,
    "--seed", "1", "--json"], { cwd: root, encoding: "utf8", maxBuffer: 64 * 2 ** 20 })
  const line = r.stderr.split("\n").reverse().find((l) => l.startsWith("rein-bench-cpu "))
  if (r.status !== 0 || line === undefined) throw new Error(r.stderr)
  return Math.round(Number(line.slice(15)) / 1000)
}
const load0 = os.loadavg()[0]
const out = files.map(() => [])
for (let r = 0; r < rounds; r++) {
  const order = files.map((_, i) => i)
  if (r % 2 === 1) order.reverse()
  for (const i of order) out[i].push(cpu(files[i][1]))
}
fs.rmSync(dir, { recursive: true, force: true })
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
files.forEach(([name], i) => console.log(`${name.padEnd(20)} ${median(out[i])} ms (${Math.min(...out[i])}–${Math.max(...out[i])})`))
console.log(`${rounds} rounds, load ${load0.toFixed(1)}–${os.loadavg()[0].toFixed(1)}`)
