// A/B helper (not part of the bench): bench 6's in-process row as the bench runs it, two builds. Each child process
// (`sim-threads.mjs --child`, GC=1 FLOORS=1: a full `gc()` before every hour and bench 6's floor rows between hours,
// as the bench's rounds do) runs the hour cold, then `warm` more times; children of the two builds alternate, order
// swapped every round. Prints per build: the cold hour, the hours after a `gc()` (CPU, main thread, other threads),
// the median of the per-round differences of the children's medians, and the load.
// node bench/ab/sim-gc-ab.mjs <other checkout root> [rounds=5] [warm=3]
import { spawnSync } from "node:child_process"
import os from "node:os"
import { fileURLToPath } from "node:url"
const other = process.argv[2]
const rounds = Number(process.argv[3] ?? 5)
const warm = Number(process.argv[4] ?? 3)
const threads = fileURLToPath(new URL("./sim-threads.mjs", import.meta.url))
const sides = { other, this: "-" }
const got = { other: { cold: [], warm: [], main: [], others: [], per: [] }, this: { cold: [], warm: [], main: [], others: [], per: [] } }
const med = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2
}
const load0 = os.loadavg()[0]
for (let r = 0; r < rounds; r++) {
  for (const side of r % 2 === 0 ? ["other", "this"] : ["this", "other"]) {
    const p = spawnSync(process.execPath, ["--expose-gc", threads, "--child", sides[side], String(warm)], {
      encoding: "utf8",
      maxBuffer: 64 * 2 ** 20,
      env: { ...process.env, GC: "1", FLOORS: "1" }
    })
    if (p.status !== 0) throw new Error(`${side}: exit ${p.status}\n${p.stderr.slice(-2000)}`)
    const runs = JSON.parse(p.stdout)
    const g = got[side]
    g.cold.push(runs[0].cpu)
    const w = runs.slice(1)
    g.warm.push(...w.map((x) => x.cpu))
    g.main.push(...w.map((x) => x.byThread.main ?? 0))
    g.others.push(...w.map((x) => Object.entries(x.byThread).filter(([k]) => k !== "main").reduce((s, [, v]) => s + v, 0)))
    g.per.push(med(w.map((x) => x.cpu)))
  }
}
const show = (xs) => `${med(xs).toFixed(0)} (${Math.min(...xs).toFixed(0)}–${Math.max(...xs).toFixed(0)})`
for (const side of ["other", "this"]) {
  const g = got[side]
  console.log(`${side.padEnd(5)} cold ${show(g.cold)} ms | after gc() ${show(g.warm)} ms, main ${show(g.main)}, other threads ${show(g.others)}`)
}
const d = got.this.per.map((x, i) => x - got.other.per[i])
console.log(`this − other, per round (children's medians): ${show(d)} ms, lower in ${d.filter((x) => x < 0).length}/${d.length}; cold: ${show(got.this.cold.map((x, i) => x - got.other.cold[i]))} | load ${load0.toFixed(1)}–${os.loadavg()[0].toFixed(1)}`)
