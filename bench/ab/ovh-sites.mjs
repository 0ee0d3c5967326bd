// Bench 1's success path, one call per runPromise, one Rein configuration (VARIANT=off|on|journal): V8's
// sampling heap profiler (collected objects included), bytes per call by allocating function (self).
// node bench/ab/ovh-sites.mjs [variant] [N]
import { Session } from "node:inspector/promises"
import { Rein } from "@rein/core"
import { Runtime } from "effect"
import { contextOf, overheadContract, reinVariants, request, succeeding } from "../dist/fixtures.js"
const which = { off: 0, on: 1, journal: 2 }[process.argv[2] ?? "journal"]
const N = Number(process.argv[3] ?? 20000)
const ctx = await contextOf(reinVariants[which], { mem: succeeding() })
const rt = Runtime.make({ context: ctx, fiberRefs: Runtime.defaultRuntime.fiberRefs, runtimeFlags: Runtime.defaultRuntime.runtimeFlags })
const rp = Runtime.runPromise(rt); const eff = Rein.execute(request, overheadContract)
const run = async (n) => { for (let i = 0; i < n; i++) await rp(eff) }
await run(10000)
const session = new Session()
session.connect()
await session.post("HeapProfiler.enable")
await session.post("HeapProfiler.startSampling", { samplingInterval: 128, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true })
await run(N)
const { profile } = await session.post("HeapProfiler.stopSampling")
const self = new Map()
const label = (f) => `${f.functionName || "(anon)"} ${f.url.replace(/.*node_modules\/.pnpm\/[^/]+\/node_modules\//, "").replace(/.*\/packages\//, "")}:${f.lineNumber + 1}`
const walk = (node) => { const k = label(node.callFrame); self.set(k, (self.get(k) ?? 0) + node.selfSize); for (const c of node.children) walk(c) }
walk(profile.head)
const total = [...self.values()].reduce((a, b) => a + b, 0)
console.log(`${reinVariants[which].name}: total ${(total / N).toFixed(0)} B/call`)
for (const [k, v] of [...self].sort((a, b) => b[1] - a[1]).slice(0, Number(process.env.TOP ?? 40))) console.log(`${(v / N).toFixed(0).padStart(6)} B  ${k}`)
