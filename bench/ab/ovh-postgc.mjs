// CPU per call in buckets of calls after a full gc(), per Rein configuration (success path, one call per
// runPromise), alternating configurations, median over reps. node --expose-gc bench/ab/ovh-postgc.mjs [reps] [bucket] [buckets]
import { Rein } from "@rein/core"
import { Runtime } from "effect"
import { contextOf, overheadContract, reinVariants, request, succeeding } from "../dist/fixtures.js"
const reps = Number(process.argv[2] ?? 9), B = Number(process.argv[3] ?? 250), K = Number(process.argv[4] ?? 24)
const cs = []
// KEEP=1: a fiber stays alive (suspended) beside the calls, as a program's main fiber would: a full gc() then
// keeps the maps of Effect's fiber runtime, and the code that checks them stays optimized (PROFILE.md, #22).
const { Effect: KeepEffect } = await import("effect")
const kept = process.env.KEEP === undefined ? undefined : KeepEffect.runFork(KeepEffect.never)
for (const v of reinVariants) { if (process.env.ONLY !== undefined && !v.name.includes(process.env.ONLY)) continue
  const ctx = await contextOf(v, { mem: succeeding() })
  const rt = Runtime.make({ context: ctx, fiberRefs: Runtime.defaultRuntime.fiberRefs, runtimeFlags: Runtime.defaultRuntime.runtimeFlags })
  const rp = Runtime.runPromise(rt); const eff = Rein.execute(request, overheadContract)
  cs.push({ name: v.name, run: async (n) => { for (let i = 0; i < n; i++) await rp(eff) } })
}
for (const c of cs) await c.run(20000)
const cpu = cs.map(() => Array.from({ length: K }, () => []))
const wall = cs.map(() => Array.from({ length: K }, () => []))
for (let r = 0; r < reps; r++) for (let k = 0; k < cs.length; k++) {
  const i = (k + r) % cs.length
  if (process.env.NOGC === undefined) globalThis.gc()
  for (let b = 0; b < K; b++) {
    const c0 = process.cpuUsage(), t0 = process.hrtime.bigint()
    await cs[i].run(B)
    const w = Number(process.hrtime.bigint() - t0), u = process.cpuUsage(c0)
    cpu[i][b].push((u.user + u.system) * 1000 / B); wall[i][b].push(w / B)
  }
}
const med = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[s.length >> 1] }
console.log("calls after gc():", Array.from({ length: K }, (_, b) => (b + 1) * B).join(" "))
for (let i = 0; i < cs.length; i++) {
  console.log(cs[i].name, "\n  cpu µs ", cpu[i].map((x) => (med(x) / 1000).toFixed(1)).join(" "), "\n  wall µs", wall[i].map((x) => (med(x) / 1000).toFixed(1)).join(" "))
}
console.log("load", (await import("node:os")).loadavg()[0])
if (kept !== undefined) kept.unsafeInterruptAsFork(kept.id())
