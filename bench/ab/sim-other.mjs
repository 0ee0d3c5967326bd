// A/B helper (not part of the bench): bench 6's simulation in process (`bench/ab/prof-sim.mjs 4` in each checkout),
// this checkout against another (a fully built worktree of an older commit), alternated in separate processes:
// medians of each process's first run and of its warm runs (2–4), with min–max and the load.
// node bench/ab/sim-other.mjs <other checkout root> [rounds]
import { spawnSync } from "node:child_process"
import os from "node:os"
import { fileURLToPath } from "node:url"
const sides = { other: process.argv[2], this: fileURLToPath(new URL("../../", import.meta.url)) }
const rounds = Number(process.argv[3] ?? 5)
const out = { other: { first: [], warm: [] }, this: { first: [], warm: [] } }
const load0 = os.loadavg()[0]
for (let r = 0; r < rounds; r++) {
  for (const side of r % 2 === 0 ? ["other", "this"] : ["this", "other"]) {
    const run = spawnSync(process.execPath, [`${sides[side]}/bench/ab/prof-sim.mjs`, "4"], { cwd: sides[side], encoding: "utf8" })
    if (run.status !== 0) throw new Error(run.stderr)
    const cpu = run.stdout.trim().split("\n").map((l) => JSON.parse(l).cpuMs)
    out[side].first.push(cpu[0])
    out[side].warm.push(...cpu.slice(1))
  }
}
const med = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const show = (xs) => `${med(xs)} ms (${Math.min(...xs)}–${Math.max(...xs)})`
for (const side of ["other", "this"]) console.log(`${side}: first run ${show(out[side].first)}, warm ${show(out[side].warm)}`)
console.log(`load ${load0.toFixed(1)}–${os.loadavg()[0].toFixed(1)}`)
