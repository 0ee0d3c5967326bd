// A/B helper (not part of the bench): a CPU profile of bench 4's burst restricted to the expiry phase (samples
// after the last provider call started), summed over bursts; self time by function, and by where code lives.
// [PROVIDE=once] [BY=rein: each sample charged to the innermost Rein frame on its stack] node --expose-gc bench/ab/prof-expiry.mjs <lean|off|on|journal>[@<core dist dir>] [bursts=20] [top=35]
import { Session } from "node:inspector"
import { Effect, Layer, Scope } from "effect"
import { leanBound } from "../dist/fixtures.js"
const [config, dir] = process.argv[2].split("@")
const B = Number(process.argv[3] ?? 20), TOP = Number(process.argv[4] ?? 35)
const { Catalog, Contract, Rein, Journal } = await import((dir ?? new URL("../../packages/core/dist", import.meta.url).pathname) + "/index.js")
const catalog = Catalog.make({ endpoints: [{ id: "mem/a", provider: "mem", model: "a", capabilities: { contextWindow: 128000, maxOutputTokens: 4096 }, prices: { inputTokens: 1e-6, outputTokens: 2e-6 } }] })
const contract = Contract.make({ deadline: 50, teardownGrace: 250, candidates: ["mem/a"], retry: { perEndpoint: 0 } })
let mark = 0n
const hang = Effect.suspend(() => { mark = process.hrtime.bigint(); return Effect.never })
const base = Rein.layer({ catalog, providers: { mem: { internalMaxAttempts: 1, call: () => hang } }, health: config === "off" ? false : { failureRatio: 0.9, depositRatio: 2 } })
const layer = config === "journal" ? Layer.merge(Layer.orDie(base), Layer.succeed(Journal.Journal, Journal.make(() => Effect.void))) : Layer.orDie(base)
// PROVIDE=once: the services provided around the whole burst, not around each request (as bench 4 does).
const ctx = config === "lean" ? undefined : await Effect.runPromise(Effect.flatMap(Scope.make(), (s) => Layer.buildWithScope(layer, s)))
const once = process.env.PROVIDE === "once"
const one = config === "lean" ? leanBound(hang, 50) : once ? Rein.execute({ prompt: "hello", inputTokens: 10, maxOutputTokens: 10 }, contract) : Effect.provide(Rein.execute({ prompt: "hello", inputTokens: 10, maxOutputTokens: 10 }, contract), ctx)
const all = Effect.forEach(Array.from({ length: 1000 }), () => Effect.either(one), { concurrency: "unbounded", discard: true })
const burst = () => Effect.runPromise(once && ctx ? Effect.provide(all, ctx) : all)
const s = new Session(); s.connect()
const post = (m, p) => new Promise((res, rej) => s.post(m, p ?? {}, (e, r) => e ? rej(e) : res(r)))
await post("Profiler.enable"); await post("Profiler.setSamplingInterval", { interval: 100 })
await burst(); await burst()
const self = new Map(); let total = 0
for (let b = 0; b < B; b++) {
  globalThis.gc?.()
  await post("Profiler.start"); await burst(); const { profile: p } = await post("Profiler.stop")
  const from = Number(mark / 1000n) // µs, the profile's clock (monotonic)
  const byId = new Map(p.nodes.map((n) => [n.id, n]))
  const parentOf = new Map()
  for (const n of p.nodes) for (const c of n.children ?? []) parentOf.set(c, n)
  let t = p.startTime
  for (let i = 0; i < p.samples.length; i++) {
    t += p.timeDeltas[i]; const d = p.timeDeltas[i + 1] ?? 0
    if (t < from) continue
    let node = byId.get(p.samples[i])
    if (node.callFrame.functionName === "(idle)") continue
    // BY=rein: charged to the innermost Rein (core) frame on the sample's stack, else to "(no Rein frame)".
    if (process.env.BY === "rein") {
      let n = node
      while (n !== undefined && !n.callFrame.url.includes("/core/dist")) n = parentOf.get(n.id)
      node = n ?? { callFrame: { functionName: "(no Rein frame)", url: "", lineNumber: -1 } }
    }
    const f = node.callFrame
    const key = `${f.functionName || "(anon)"} ${f.url.replace(/.*\/(packages|node_modules)\//, "").replace(/^\.pnpm\/[^/]*\/node_modules\//, "")}:${f.lineNumber + 1}`
    self.set(key, (self.get(key) ?? 0) + d); total += d
  }
}
console.log(`${config}: expiry phase, ${B} bursts of 1,000, busy ${(total / 1000).toFixed(0)} ms = ${(total / B / 1000).toFixed(1)} µs per request`)
for (const [k, t] of [...self].sort((a, b) => b[1] - a[1]).slice(0, TOP)) console.log(`  ${(t / B / 1000).toFixed(2).padStart(6)} µs ${(100 * t / total).toFixed(1).padStart(5)} %  ${k}`)
