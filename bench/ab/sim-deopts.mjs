// A/B helper (not part of the bench): the deoptimizations and TurboFan compilations of bench 6's cold hour (the first
// run of a fresh process, as `sim-cold-split.mjs` runs it: the binary's V8 flag, module loading included), counted
// with `--trace-deopt --trace-opt` for each checkout, processes alternated (order swapped every round); medians
// with min–max, and every deoptimization whose innermost frame is in core's `Health.js` (site and reason) from the
// last round. Counts do not depend on the load (± a few from V8's concurrent compilation).
// node bench/ab/sim-deopts.mjs [rounds=5] [checkout,checkout…] [row=outage|ok]
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import os from "node:os"
import path from "node:path"
import { fileURLToPath } from "node:url"
const rounds = Number(process.argv[2] ?? 5)
const roots = (process.argv[3] ?? fileURLToPath(new URL("../../", import.meta.url))).split(",")
const row = process.argv[4] ?? "outage"
const child = fileURLToPath(new URL("./sim-cold-split.mjs", import.meta.url))
const counts = Object.fromEntries(roots.map((r) => [r, { deopts: [], opts: [], health: [] }]))
const med = (xs) => { const s = [...xs].sort((a, b) => a - b); return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2 }
const sites = {}
for (let r = 0; r < rounds; r++) {
  for (const root of r % 2 === 0 ? roots : [...roots].reverse()) {
    // V8's trace to a file (through a pipe part of it was lost at the child's exit).
    const file = path.join(os.tmpdir(), `sim-deopts-${process.pid}.txt`)
    const fd = fs.openSync(file, "w")
    spawnSync(process.execPath, ["--no-allocation-site-pretenuring", "--trace-deopt-verbose", "--trace-opt", child], {
      env: { ...process.env, SIM_COLD_CHILD: `${root},${row}` },
      stdio: ["ignore", fd, fd]
    })
    fs.closeSync(fd)
    const out = fs.readFileSync(file, "utf8")
    fs.rmSync(file)
    const lines = out.split("\n")
    const here = []
    let deopts = 0
    for (let i = 0; i < lines.length; i++) {
      const m = /bailout \(kind: [^,]*, reason: ([^)]*)\): begin/.exec(lines[i])
      if (m === null) continue
      deopts++
      const at = lines.slice(i + 1, i + 6).join(" ").match(/deoptimize at <([^>]*)>((?: inlined at <[^>]*>)*)/)
      if (at !== null && at[1].includes("packages/core/dist/Health.js")) {
        here.push(`${m[1]} at ${(at[1] + at[2]).replaceAll(/file:\/\/[^ >]*?packages\//g, "")}`)
      }
    }
    const c = counts[root]
    c.deopts.push(deopts)
    c.opts.push(lines.filter((l) => l.includes("completed optimizing")).length)
    c.health.push(here.length)
    sites[root] = here
  }
}
for (const root of roots) {
  const c = counts[root]
  const fmt = (xs) => `${med(xs)} (${Math.min(...xs)}–${Math.max(...xs)})`
  console.log(`${root}: ${row}, ${rounds} fresh processes: deopts ${fmt(c.deopts)}, TurboFan compilations ${fmt(c.opts)}, deopts in Health.js ${fmt(c.health)}`)
  for (const s of sites[root]) console.log(`  ${s}`)
}
