// A/B helper (not part of the bench): Effect run-loop steps per request in the expiry phase of bench 4's burst
// (after the last provider call started), counted by a supervisor with op supervision on; by op and the
// function it carries. Load-independent. [PHASE=start|all] [SEQ=1] [LEAN_SUPERVISED=1]
// node bench/ab/ops-expiry.mjs <lean|jfloor|off|on|journal>[-once][@<core dist dir>] [top=40]
import { Effect, Layer, RuntimeFlags, RuntimeFlagsPatch, Scope, Supervisor } from "effect"
import { Exit, FiberId, Runtime } from "effect"
import { leanBound, LeanTimeout } from "../dist/fixtures.js"
/** `leanBound(hang, 50)` with its fork on the caller's runtime (bench/src/fixtures.ts forks on the default one). */
const leanOn = (rt) => Effect.async((resume) => {
  const fiber = Runtime.runFork(rt)(hang)
  let expired = false
  const timer = setTimeout(() => { expired = true; fiber.unsafeInterruptAsFork(FiberId.none) }, 50)
  fiber.addObserver((exit) => { clearTimeout(timer); resume(expired ? Exit.fail(new LeanTimeout()) : exit) })
  return Effect.sync(() => { clearTimeout(timer); fiber.unsafeInterruptAsFork(FiberId.none) })
})
const [named, dir] = process.argv[2].split("@")
// `<config>-once`: the services provided once around the burst, not around each request (as bench 4 does).
const once = named.endsWith("-once"), config = named.replace(/-once$/, "")
const TOP = Number(process.argv[3] ?? 40)
const { Catalog, Contract, Rein, Journal } = await import((dir ?? new URL("../../packages/core/dist", import.meta.url).pathname) + "/index.js")
const catalog = Catalog.make({ endpoints: [{ id: "mem/a", provider: "mem", model: "a", capabilities: { contextWindow: 128000, maxOutputTokens: 4096 }, prices: { inputTokens: 1e-6, outputTokens: 2e-6 } }] })
const contract = Contract.make({ deadline: 50, teardownGrace: 250, candidates: ["mem/a"], retry: { perEndpoint: 0 } })
// The expiry phase: from the last call started, or the first request ended if that came first (a request
// whose deadline passed before its call started, under load, ends at admission and never calls).
let started = 0, ended = false; const N = 1000
const hang = Effect.suspend(() => { started++; return Effect.never })
const base = Rein.layer({ catalog, providers: { mem: { internalMaxAttempts: 1, call: () => hang } }, health: config === "off" ? false : { failureRatio: 0.9, depositRatio: 2 } })
const layer = config === "journal" ? Layer.merge(Layer.orDie(base), Layer.succeed(Journal.Journal, Journal.make(() => Effect.void))) : Layer.orDie(base)
const ctx = config === "lean" || config === "jfloor" ? undefined : await Effect.runPromise(Effect.flatMap(Scope.make(), (s) => Layer.buildWithScope(layer, s)))
const execute = Rein.execute({ prompt: "hello", inputTokens: 10, maxOutputTokens: 10 }, contract)
// LEAN_SUPERVISED=1: the lean bound's own fork under the caller's runtime, so that its steps are counted too.
const lean = process.env.LEAN_SUPERVISED ? Effect.flatMap(Effect.runtime(), (rt) => leanOn(rt)) : leanBound(hang, 50)
// jfloor: bench 4's journal floor (the lean bound + one request's journal work through Rein's journal writer).
const jfloor = config === "jfloor" ? await (async () => {
  const { journaledLean, memoryJournal } = await import("../dist/fixtures.js")
  const { journalWork } = await import("../dist/deadline.js")
  return journaledLean(hang, Effect.runSync(Effect.provide(Journal.Journal, memoryJournal)), await journalWork(), 50)
})() : undefined
const one = jfloor ?? (config === "lean" ? lean : once ? execute : Effect.provide(execute, ctx))
// PHASE=start: the steps until the last call started instead (the start phase).
const START = process.env.PHASE === "start", ALL = process.env.PHASE === "all" // all: the whole burst
const counts = new Map(); const seqs = new Map(); const fibers = new Set(); let total = 0
class Count extends Supervisor.AbstractSupervisor {
  get value() { return Effect.void }
  onEffect(fiber, e) {
    if (!ALL && (started < N && !ended) !== START) return
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
const all0 = Effect.forEach(Array.from({ length: N }), () => Effect.tap(Effect.either(one), () => { ended = true }), { concurrency: "unbounded", discard: true })
const all = once && ctx ? Effect.provide(all0, ctx) : all0
const burst = (sup) => Effect.runPromise(sup ? Effect.supervised(Effect.withRuntimeFlagsPatch(all, RuntimeFlagsPatch.enable(RuntimeFlags.OpSupervision)), new Count()) : all)
await burst(false); started = 0; ended = false; if (START || ALL) { counts.clear(); total = 0; fibers.clear(); seqs.clear() }
await burst(true)
console.log(`${config}: ${(total / N).toFixed(1)} run-loop steps per request in the ${ALL ? "whole burst" : START ? "start" : "expiry"} phase, ${fibers.size} fibers stepping (supervised ones only)`)
for (const [k, c] of [...counts].sort((a, b) => b[1] - a[1]).slice(0, TOP)) console.log(`  ${(c / N).toFixed(2).padStart(6)}  ${k}`)
if (process.env.SEQ) { const fs = [...seqs.values()]; for (const k of [500, 501, 1500, 1501]) if (fs[k]) console.log(`fiber ${k}:\n    ` + fs[k].join("\n    ")) }
