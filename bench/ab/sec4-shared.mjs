// A/B helper (not part of the bench): bench 4's rows as the harness ran them before #22's child processes, all
// in one process (a warm-up run of each row, then rounds with the order rotated), printing per burst sample: CPU,
// p99, scavenges and the major GCs other than the harness's own gc() (with their duration). In that shared
// process the first Rein row after the floor rows took an incremental mark-compact that no other Rein row took.
// node --expose-gc bench/ab/sec4-shared.mjs [rounds]   (`node --expose-gc --trace-gc …` shows each GC's reason)
import { PerformanceObserver } from "node:perf_hooks"
import os from "node:os"
import { allRows } from "../dist/deadline.js"
const R = Number(process.argv[2] ?? 5)
const gcs = []
new PerformanceObserver((l) => { for (const e of l.getEntries()) gcs.push(e) }).observe({ entryTypes: ["gc"] })
const rows = await allRows()
for (const row of rows) await row.measure()
const by = new Map()
for (let r = 0; r < R; r++) {
  for (let k = 0; k < rows.length; k++) {
    const row = rows[(k + r) % rows.length]
    const g0 = gcs.length, c0 = process.cpuUsage()
    const s = (await row.measure()).sort((a, b) => a - b)
    const c = process.cpuUsage(c0)
    await new Promise((res) => setTimeout(res, 20))
    if (row.shape !== "burst") continue
    const gs = gcs.slice(g0), major = gs.filter((e) => e.detail.kind === 4).slice(1) // the first is the row's own gc()
    const line = `${((c.user + c.system) / 1000).toFixed(0)}/${s[Math.ceil(0.99 * s.length) - 1].toFixed(0)}/${gs.filter((e) => e.detail.kind === 1).length}/${major.map((e) => e.duration.toFixed(0)).join("+") || "-"}`
    by.set(row.name, [...(by.get(row.name) ?? []), line])
  }
}
console.log(`burst rows, per round: CPU ms / p99 ms / scavenges / extra major GCs (ms); load ${os.loadavg()[0].toFixed(1)}`)
for (const [name, lines] of by) console.log(name.slice(0, 60).padEnd(60), lines.join("  "))
