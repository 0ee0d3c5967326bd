// A/B helper (not part of the bench): whole-process CPU of short `rein` commands, this checkout's binary against
// another checkout's (its `packages/cli/dist/bin.js`; e.g. a copy of an older build's `packages/`, `examples/`,
// `bench/`, `scripts/` and a link to `node_modules`), alternated every round (order swapped each round): medians
// with min–max, the median of the per-round differences (this − other) and in how many rounds this was lower,
// the load before and after. Every round's stdout, stderr and exit code are compared between the two.
// node bench/ab/startup-pair.mjs <other checkout root> [rounds=15] [command names, comma-separated]
import { spawnSync } from "node:child_process"
import os from "node:os"
import { fileURLToPath, pathToFileURL } from "node:url"

const root = fileURLToPath(new URL("../../", import.meta.url))
const other = process.argv[2]
const rounds = Number(process.argv[3] ?? 15)
const cpuReport = pathToFileURL(`${root}bench/dist/cpu-report.js`).href
const inputs = ["--catalog", "examples/catalog.json", "--contract", "examples/contract.json"]
const all = {
  "simulate 1 s": ["simulate", ...inputs, "--scenario", "bench/scenarios/second.json", "--seed", "1", "--json"],
  "--help": ["--help"],
  "plan --json": ["plan", ...inputs, "--json"],
  "batch --help": ["batch", "--help"]
}
const names = process.argv[4]?.split(",") ?? Object.keys(all)

const runOnce = (checkout, args) => {
  const r = spawnSync(process.execPath, ["--import", cpuReport, `${checkout}/packages/cli/dist/bin.js`, ...args], {
    cwd: root,
    encoding: "utf8",
    maxBuffer: 64 * 2 ** 20
  })
  const line = r.stderr.split("\n").reverse().find((l) => l.startsWith("rein-bench-cpu "))
  if (line === undefined) throw new Error(`${checkout} ${args.join(" ")}: no CPU line\n${r.stderr}`)
  const stderr = r.stderr.slice(0, r.stderr.lastIndexOf("\nrein-bench-cpu "))
  return { cpu: Number(line.slice(15)) / 1000, out: `${r.status}\n${r.stdout}\n${stderr}` }
}
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length % 2 === 1 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2
}
const fmt = (xs) => `${median(xs).toFixed(0)} ms (${Math.min(...xs).toFixed(0)}–${Math.max(...xs).toFixed(0)})`
for (const name of names) {
  const args = all[name]
  const load0 = os.loadavg()[0]
  const cpu = { other: [], this: [] }
  for (let r = 0; r < rounds; r++) {
    const got = {}
    for (const side of r % 2 === 0 ? ["other", "this"] : ["this", "other"]) {
      const { cpu: ms, out } = runOnce(side === "this" ? root : other, args)
      cpu[side].push(ms)
      got[side] = out
    }
    if (got.this !== got.other) throw new Error(`${name}: round ${r + 1}, the two binaries' output differs`)
  }
  const diffs = cpu.this.map((t, i) => t - cpu.other[i])
  console.log(`${name}: other ${fmt(cpu.other)} | this ${fmt(cpu.this)} | paired ${median(diffs).toFixed(0)} ms, lower in ${
    diffs.filter((d) => d < 0).length}/${rounds} | load ${load0.toFixed(1)}–${os.loadavg()[0].toFixed(1)}`)
}
