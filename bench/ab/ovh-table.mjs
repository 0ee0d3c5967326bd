// Bench 1's success-path table exactly as the bench runs it (its entries, toContender, warm-up, interleave), in
// one process; prints health off ÷ on. Usage: node --expose-gc bench/ab/ovh-table.mjs [rounds] [mode] [order]
// order: comma-separated entry indices (0 off, 1 on, 2 journal, 3 traced, 4.. peers), default all in bench order.
// PRE=<rounds>: first the bench's four tables (success and flaky path, runPromise and fiber, every entry) with
// that many rounds, so that the measured table runs in the process state the bench's pair table runs in.
import { peers, reinEntries, toContender, tracedEntry } from "../dist/overhead.js"
import { interleave } from "../dist/harness.js"
import { loadavg } from "node:os"
const rounds = Number(process.argv[2] ?? 15), mode = process.argv[3] ?? "runPromise"
const all = [...reinEntries, tracedEntry, ...peers]
const entries = process.argv[4] === undefined ? all : process.argv[4].split(",").map((i) => all[Number(i)])
const load0 = loadavg()[0]
// KEEP=1: a fiber stays alive (suspended) beside the calls, as a program's main fiber would: a full gc() then
// keeps the maps of Effect's fiber runtime, and the code that checks them stays optimized (PROFILE.md, #22).
const { Effect: KeepEffect } = await import("effect")
const kept = process.env.KEEP === undefined ? undefined : KeepEffect.runFork(KeepEffect.never)
const warm = []
for (const e of entries) warm.push(toContender(e, await e.make("success"), "runPromise", "success"))
await interleave(warm, { rounds: 5, sampleMillis: 120 })
if (process.env.PRE !== undefined) {
  for (const path of ["success", "flaky"]) for (const m of ["runPromise", "fiber"]) {
    const pre = []
    for (const e of all) pre.push(toContender(e, await e.make(path), m, path))
    await interleave(pre, { rounds: Number(process.env.PRE), sampleMillis: 120 })
  }
}
const cs = []
for (const e of entries) cs.push(toContender(e, await e.make("success"), mode, "success"))
if (process.env.MARK !== undefined) for (const c of cs) { const run = c.run; c.run = (n) => { console.log(`RUN ${c.name} ${n}`); return run(n) } }
const warmx = Number(process.env.WARMX ?? 1)
if (warmx !== 1) for (const c of cs) { const run = c.run; c.run = (n) => run(n === 3000 ? n * warmx : n) }
console.log("TABLE START")
const t = await interleave(cs, { rounds, sampleMillis: 120, calls: process.env.CALLS === undefined ? undefined : Number(process.env.CALLS) })
console.log("TABLE END")
const off = t.find((x) => x.name.includes("health off")), on = t.find((x) => x.name === "Rein (journal off, health on)")
for (const x of t) console.log(x.name.padEnd(44), "wall", Math.round(x.median), "cpu", Math.round(x.cpu.median), "calls/sample", x.calls / rounds, "max", Math.round(x.max))
if (off && on) console.log("off÷on wall", (off.median / on.median).toFixed(3), "cpu", (off.cpu.median / on.cpu.median).toFixed(3), "load", load0.toFixed(1), "→", loadavg()[0].toFixed(1))
if (process.env.ALLOC !== undefined) {
  const { allocated } = await import("../dist/harness.js")
  const rein = cs.slice(0, 3), b = rein.map(() => [])
  for (let r = 0; r < 7; r++) for (let k = 0; k < rein.length; k++) {
    const i = (k + r) % rein.length
    globalThis.gc(); await rein[i].run(3000)
    b[i].push((await allocated(() => rein[i].run(20000))).bytes / 20000)
  }
  for (let i = 0; i < rein.length; i++) console.log(rein[i].name.padEnd(44), "bytes/call", b[i].map(Math.round).join(" "))
}
if (kept !== undefined) kept.unsafeInterruptAsFork(kept.id())
