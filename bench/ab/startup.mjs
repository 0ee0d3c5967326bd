// A/B helper (not part of the bench): the whole-process CPU of short `rein` commands (start-up, module loading),
// this checkout's build against another checkout's (its `packages/cli/dist/bin.js`), interleaved; medians with
// min–max, and the modules each loads (count-modules.mjs, in a separate run so the hook's cost is not timed).
// node bench/ab/startup.mjs <other checkout root> [rounds]
import { spawnSync } from "node:child_process"
import os from "node:os"
import { fileURLToPath, pathToFileURL } from "node:url"

const root = fileURLToPath(new URL("../../", import.meta.url))
const other = process.argv[2]
const rounds = Number(process.argv[3] ?? 5)
const cpuReport = pathToFileURL(`${root}bench/dist/cpu-report.js`).href
const counter = pathToFileURL(`${root}bench/ab/count-modules.mjs`).href
const inputs = ["--catalog", "examples/catalog.json", "--contract", "examples/contract.json"]
const commands = {
  "--version": ["--version"],
  "simulate 1 s": ["simulate", ...inputs, "--scenario", "bench/ab/second.json", "--json"],
  plan: ["plan", ...inputs, "--json"],
  "batch --help": ["batch", "--help"]
}

const runOnce = (checkout, args, preload) => {
  const r = spawnSync(process.execPath, ["--import", preload, `${checkout}/packages/cli/dist/bin.js`, ...args], {
    cwd: root,
    encoding: "utf8",
    maxBuffer: 64 * 2 ** 20
  })
  if (r.status !== 0) throw new Error(`${checkout} ${args.join(" ")}: exit ${r.status}\n${r.stderr}`)
  return r.stderr.split("\n").reverse().find((l) => l.startsWith("rein-"))
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const sides = { other, this: root }
for (const [name, args] of Object.entries(commands)) {
  const load0 = os.loadavg()[0]
  const cpu = { other: [], this: [] }
  for (let r = 0; r < rounds; r++) {
    for (const side of r % 2 === 0 ? ["other", "this"] : ["this", "other"]) {
      cpu[side].push(Math.round(Number(runOnce(sides[side], args, cpuReport).slice(15)) / 1000))
    }
  }
  const modules = Object.fromEntries(Object.keys(sides).map((s) => [s, runOnce(sides[s], args, counter).slice(13)]))
  const fmt = (xs) => `${median(xs)} ms (${Math.min(...xs)}–${Math.max(...xs)})`
  console.log(`${name}: other ${fmt(cpu.other)} [${modules.other}] | this ${fmt(cpu.this)} [${modules.this}] | load ${
    load0.toFixed(1)}–${os.loadavg()[0].toFixed(1)}`)
}
