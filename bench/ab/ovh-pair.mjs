// Health off against health on (and optionally two builds), each in its own process (`ovh-one.mjs`), the
// processes alternated and their order rotated every round: bytes and CPU per call, medians over rounds, load.
// Usage: node bench/ab/ovh-pair.mjs [rounds] [roots, comma-separated: default this checkout] [configs: off,on]
import { execFileSync } from "node:child_process"
import { readFileSync } from "node:fs"
import { dirname, resolve } from "node:path"
import { fileURLToPath } from "node:url"
const here = dirname(fileURLToPath(import.meta.url))
const rounds = Number(process.argv[2] ?? 7)
const roots = (process.argv[3] ?? resolve(here, "../..")).split(",")
const configs = (process.argv[4] ?? "off,on").split(",")
const load = () => readFileSync("/proc/loadavg", "utf8").split(" ")[0]
const runs = roots.flatMap((root) => configs.map((config) => ({ root, config })))
const out = runs.map(() => [])
const loads = []
for (let r = 0; r < rounds; r++) {
  loads.push(load())
  for (let k = 0; k < runs.length; k++) {
    const i = (k + r) % runs.length
    const line = execFileSync(process.execPath, ["--expose-gc", resolve(here, "ovh-one.mjs"), runs[i].config, "5", "20000"], { env: { ...process.env, ROOT: runs[i].root } })
    out[i].push(JSON.parse(String(line).trim().split("\n").at(-1)))
  }
}
const med = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1]
for (let i = 0; i < runs.length; i++) {
  const b = out[i].map((x) => x.bytes), c = out[i].map((x) => x.cpu)
  console.log(`${runs[i].root} ${runs[i].config}`.padEnd(50), "bytes/call", Math.round(med(b)), `(${Math.round(Math.min(...b))}–${Math.round(Math.max(...b))})`, "cpu ns/call", Math.round(med(c)), `(${Math.round(Math.min(...c))}–${Math.round(Math.max(...c))})`)
}
for (const root of roots) {
  const o = out[runs.findIndex((x) => x.root === root && x.config === configs[0])], n = out[runs.findIndex((x) => x.root === root && x.config === configs[1])]
  if (o === undefined || n === undefined) continue
  const ratios = o.map((x, r) => x.cpu / n[r].cpu)
  console.log(root, `${configs[0]}÷${configs[1]} cpu per round: median`, med(ratios).toFixed(3), `(${Math.min(...ratios).toFixed(3)}–${Math.max(...ratios).toFixed(3)})`, "bytes diff", Math.round(med(n.map((x) => x.bytes)) - med(o.map((x) => x.bytes))))
}
console.log("load", loads.join(" "), "→", load())
