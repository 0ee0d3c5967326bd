// A/B helper (not part of the bench): Effect run-loop steps per request in the expiry phase of bench 4's burst
// (after the last provider call started), counted by a supervisor with op supervision on; by op and the
// function it carries. Load-independent. node bench/ab/ops-expiry.mjs <lean|off|on|journal>[@<core dist dir>] [top=40]
import { Effect, Layer, RuntimeFlags, RuntimeFlagsPatch, Scope, Supervisor } from "effect"
import { leanBound } from "../dist/fixtures.js"
const [config, dir] = process.argv[2].split("@")
const TOP = Number(process.argv[3] ?? 40)
const { Catalog, Contract, Rein, Journal } = await import((dir ?? new URL("../../packages/core/dist", import.meta.url).pathname) + "/index.js")
const catalog = Catalog.make({ endpoints: [{ id: "mem/a", provider: "mem", model: "a", capabilities: { contextWindow: 128000, maxOutputTokens: 4096 }, prices: { inputTokens: 1e-6, outputTokens: 2e-6 } }] })
const contract = Contract.make({ deadline: 50, teardownGrace: 250, candidates: ["mem/a"], retry: { perEndpoint: 0 } })
let started = 0; const N = 1000
const hang = Effect.suspend(() => { started++; return Effect.never })
const base = Rein.layer({ catalog, providers: { mem: { internalMaxAttempts: 1, call: () => hang } }, health: config === "off" ? false : { failureRatio: 0.9, depositRatio: 2 } })
const layer = config === "journal" ? Layer.merge(Layer.orDie(base), Layer.succeed(Journal.Journal, Journal.make(() => Effect.void))) : Layer.orDie(base)
const one = config === "lean" ? leanBound(hang, 50) : Effect.provide(Rein.execute({ prompt: "hello", inputTokens: 10, maxOutputTokens: 10 }, contract), await Effect.runPromise(Effect.flatMap(Scope.make(), (s) => Layer.buildWithScope(layer, s))))
// PHASE=start: the steps until the last call started instead (the start phase).
const START = process.env.PHASE === "start"
const counts = new Map(); const seqs = new Map(); const fibers = new Set(); let total = 0
class Count extends Supervisor.AbstractSupervisor {
  get value() { return Effect.void }
  onEffect(fiber, e) {
    if ((started < N) !== START) return
    total++; fibers.add(fiber)
    const f = e.effect_instruction_i1 ?? e.effect_instruction_i0
    const key = `${e._op} ${typeof f === "function" ? f.name || "(anon)" : ""}`
    counts.set(key, (counts.get(key) ?? 0) + 1)
    if (process.env.SEQ) {
      let seq = seqs.get(fiber); if (!seq) seqs.set(fiber, seq = [])
      const src = typeof f === "function" ? f.toString().replace(/\s+/g, " ").slice(0, 90) : e._op === "Success" ? String(e.effect_instruction_i0?._tag ?? typeof e.effect_instruction_i0) : e._op === "Failure" ? e.effect_instruction_i0?._tag : ""
      seq.push(`${e._op} ${src}`)
    }
  }
}
const all = Effect.forEach(Array.from({ length: N }), () => Effect.either(one), { concurrency: "unbounded", discard: true })
const burst = (sup) => Effect.runPromise(sup ? Effect.supervised(Effect.withRuntimeFlagsPatch(all, RuntimeFlagsPatch.enable(RuntimeFlags.OpSupervision)), new Count()) : all)
await burst(false); started = 0; if (START) { counts.clear(); total = 0; fibers.clear(); seqs.clear() }
await burst(true)
console.log(`${config}: ${(total / N).toFixed(1)} run-loop steps per request in the ${START ? "start" : "expiry"} phase, ${fibers.size} fibers stepping (supervised ones only)`)
for (const [k, c] of [...counts].sort((a, b) => b[1] - a[1]).slice(0, TOP)) console.log(`  ${(c / N).toFixed(2).padStart(6)}  ${k}`)
if (process.env.SEQ) { const fs = [...seqs.values()]; for (const k of [500, 501, 1500, 1501]) if (fs[k]) console.log(`fiber ${k}:\n    ` + fs[k].join("\n    ")) }
