// Rein configurations of bench 1's success path (one call per runPromise) from a checkout's build, in this
// process only: bytes allocated and CPU per call over rounds (gc(), 3,000 untimed calls, then the sample; with
// several configurations their order rotates every round). Prints one JSON line per configuration, and with two
// the first's CPU ÷ the second's per round. `ovh-pair.mjs` runs it in alternating processes.
// Usage: node --expose-gc bench/ab/ovh-one.mjs <off|on|journal>[,…] [rounds] [calls]; ROOT=<checkout> (default this one).
import { dirname, resolve } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
const root = process.env.ROOT ?? resolve(dirname(fileURLToPath(import.meta.url)), "../..")
const at = (p) => import(pathToFileURL(resolve(root, p)).href)
const { Rein } = await at("packages/core/dist/index.js")
const { Runtime } = await at("packages/core/node_modules/effect/dist/esm/index.js")
const { contextOf, overheadContract, reinVariants, request, succeeding } = await at("bench/dist/fixtures.js")
const { allocated } = await at("bench/dist/harness.js")
const names = (process.argv[2] ?? "off").split(",")
const rounds = Number(process.argv[3] ?? 9), calls = Number(process.argv[4] ?? 20000)
const cs = []
for (const name of names) {
  const ctx = await contextOf(reinVariants[{ off: 0, on: 1, journal: 2 }[name]], { mem: succeeding() })
  const rt = Runtime.make({ context: ctx, fiberRefs: Runtime.defaultRuntime.fiberRefs, runtimeFlags: Runtime.defaultRuntime.runtimeFlags })
  const rp = Runtime.runPromise(rt), eff = Rein.execute(request, overheadContract)
  cs.push({ name, bytes: [], cpu: [], run: async (n) => { for (let i = 0; i < n; i++) await rp(eff) } })
}
for (const c of cs) await c.run(20000)
for (let r = 0; r < rounds; r++) for (let k = 0; k < cs.length; k++) {
  const c = cs[(k + r) % cs.length]
  globalThis.gc(); await c.run(3000)
  const c0 = process.cpuUsage()
  const a = await allocated(() => c.run(calls))
  const u = process.cpuUsage(c0)
  c.bytes.push(a.bytes / calls); c.cpu.push((u.user + u.system) * 1000 / calls)
}
const med = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1]
for (const c of cs) console.log(JSON.stringify({ config: c.name, root, bytes: med(c.bytes), bytesMin: Math.min(...c.bytes), bytesMax: Math.max(...c.bytes), cpu: med(c.cpu), cpuMin: Math.min(...c.cpu) }))
if (cs.length === 2) {
  const q = cs[0].cpu.map((x, r) => x / cs[1].cpu[r])
  console.log(`${cs[0].name}÷${cs[1].name} CPU per round: median ${med(q).toFixed(3)} (${Math.min(...q).toFixed(3)}–${Math.max(...q).toFixed(3)}), ${q.filter((x) => x <= 1).length} of ${q.length} ≤ 1`)
}
