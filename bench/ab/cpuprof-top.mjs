// Self time of a V8 CPU profile (`node --cpu-prof`), by function and by where the code lives (Rein's core,
// batch, Effect, node, the bench), as shares of the sampled time (idle and GC listed apart).
// node bench/ab/cpuprof-top.mjs <file.cpuprofile> [top=40] [BY=total: inclusive time of Rein's functions]
import { readFileSync } from "node:fs"
const p = JSON.parse(readFileSync(process.argv[2], "utf8"))
const top = Number(process.argv[3] ?? 40)
const byId = new Map(p.nodes.map((n) => [n.id, n]))
const dt = new Map()
for (let i = 0; i < p.samples.length; i++) {
  const d = p.timeDeltas[i + 1] ?? 0
  dt.set(p.samples[i], (dt.get(p.samples[i]) ?? 0) + d)
}
const where = (url) =>
  url.includes("/packages/core/") && !url.includes("node_modules") ? "core"
  : url.includes("/packages/batch/") && !url.includes("node_modules") ? "batch"
  : url.includes("/effect/") ? "effect"
  : url.includes("/bench/") ? "bench"
  : url.startsWith("node:") ? "node" : url === "" ? "(vm)" : "other"
const self = new Map()
const group = new Map()
let total = 0
for (const n of p.nodes) {
  const t = dt.get(n.id) ?? 0
  total += t
  const f = n.callFrame
  const key = `${f.functionName || "(anon)"} ${f.url.replace(/.*\/(packages|node_modules)\//, "")}:${f.lineNumber + 1}`
  self.set(key, (self.get(key) ?? 0) + t)
  const g = ["(idle)", "(garbage collector)", "(program)"].includes(f.functionName) ? f.functionName : where(f.url)
  group.set(g, (group.get(g) ?? 0) + t)
}
const busy = total - (group.get("(idle)") ?? 0)
console.log(`sampled ${(total / 1000).toFixed(0)} ms, busy ${(busy / 1000).toFixed(0)} ms (shares below are of busy)`)
for (const [g, t] of [...group].sort((a, b) => b[1] - a[1])) {
  if (g !== "(idle)") console.log(`  ${g.padEnd(22)} ${(t / 1000).toFixed(0).padStart(6)} ms ${(100 * t / busy).toFixed(1).padStart(5)} %`)
}
if (process.env.BY === "total") {
  // Inclusive time per Rein function (a function's time counted once per sample even when recursive).
  const parent = new Map()
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id)
  const incl = new Map()
  for (const n of p.nodes) {
    const t = dt.get(n.id) ?? 0
    if (t === 0) continue
    const seen = new Set()
    for (let id = n.id; id !== undefined; id = parent.get(id)) {
      const f = byId.get(id).callFrame
      const w = where(f.url)
      if (w !== "core" && w !== "batch") continue
      const key = `${f.functionName || "(anon)"} ${f.url.replace(/.*\/packages\//, "")}:${f.lineNumber + 1}`
      if (seen.has(key)) continue
      seen.add(key)
      incl.set(key, (incl.get(key) ?? 0) + t)
    }
  }
  console.log("inclusive, Rein's functions:")
  for (const [k, t] of [...incl].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    console.log(`  ${(t / 1000).toFixed(0).padStart(6)} ms ${(100 * t / busy).toFixed(1).padStart(5)} %  ${k}`)
  }
} else {
  console.log("self:")
  for (const [k, t] of [...self].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    if (k.startsWith("(idle)")) continue
    console.log(`  ${(t / 1000).toFixed(0).padStart(6)} ms ${(100 * t / busy).toFixed(1).padStart(5)} %  ${k}`)
  }
}
