// Two V8 CPU profiles (`node --cpu-prof` of the same script, same number of runs): self time per function in
// each, and the difference (b − a), largest first; with ITEMS=<items profiled>, also in µs per item.
// node bench/ab/cpuprof-diff.mjs <a.cpuprofile> <b.cpuprofile> [top=40]
import { readFileSync } from "node:fs"
const load = (file) => {
  const p = JSON.parse(readFileSync(file, "utf8"))
  const dt = new Map()
  for (let i = 0; i < p.samples.length; i++) dt.set(p.samples[i], (dt.get(p.samples[i]) ?? 0) + (p.timeDeltas[i + 1] ?? 0))
  const self = new Map()
  let busy = 0
  for (const n of p.nodes) {
    const t = dt.get(n.id) ?? 0
    const f = n.callFrame
    if (f.functionName === "(idle)") continue
    busy += t
    const key = `${f.functionName || "(anon)"} ${f.url.replace(/.*\/(packages|node_modules)\//, "")}:${f.lineNumber + 1}`
    self.set(key, (self.get(key) ?? 0) + t)
  }
  return { self, busy }
}
const a = load(process.argv[2])
const b = load(process.argv[3])
const top = Number(process.argv[4] ?? 40)
const items = Number(process.env.ITEMS ?? 0)
const per = (us) => items > 0 ? `${(us / items).toFixed(2).padStart(6)} µs/item` : ""
console.log(`busy: a ${(a.busy / 1000).toFixed(0)} ms, b ${(b.busy / 1000).toFixed(0)} ms, b − a ${((b.busy - a.busy) / 1000).toFixed(0)} ms ${per(b.busy - a.busy)}`)
const keys = new Set([...a.self.keys(), ...b.self.keys()])
const rows = [...keys].map((k) => [k, a.self.get(k) ?? 0, b.self.get(k) ?? 0])
rows.sort((x, y) => Math.abs(y[2] - y[1]) - Math.abs(x[2] - x[1]))
for (const [k, x, y] of rows.slice(0, top)) {
  console.log(`${((y - x) / 1000).toFixed(0).padStart(6)} ms ${per(y - x)}  (${(x / 1000).toFixed(0)} → ${(y / 1000).toFixed(0)})  ${k}`)
}
