// Where a burst's CPU goes: start (until every call started) vs expiry (the rest), Rein vs the lean bound.
import { Effect, Layer, Scope } from "effect"
import { leanBound } from "../dist/fixtures.js"
const core = await import(process.argv[2] + "/index.js")
const { Catalog, Contract, Rein } = core
const catalog = Catalog.make({ endpoints: [{ id: "mem/a", provider: "mem", model: "a", capabilities: { contextWindow: 128000, maxOutputTokens: 4096 }, prices: { inputTokens: 1e-6, outputTokens: 2e-6 } }] })
const contract = Contract.make({ deadline: 50, teardownGrace: 250, candidates: ["mem/a"], retry: { perEndpoint: 0 } })
let started = 0, mark = null
const N = 1000
const hang = Effect.suspend(() => { ++started; mark = process.cpuUsage(); return Effect.never })
const never = { internalMaxAttempts: 1, call: () => hang }
const request = { prompt: "hello", inputTokens: 10, maxOutputTokens: 10 }
const ctx = await Effect.runPromise(Effect.flatMap(Scope.make(), (s) => Layer.buildWithScope(Rein.layer({ catalog, providers: { mem: never }, health: false }), s)))
const rein = Effect.provide(Rein.execute(request, contract), ctx)
const lean = leanBound(hang, 50)
const burst = async (one) => { started = 0; mark = null; globalThis.gc?.(); const c0 = process.cpuUsage(); await Effect.runPromise(Effect.forEach(Array.from({ length: N }), () => Effect.either(one), { concurrency: "unbounded", discard: true })); const c1 = process.cpuUsage(); const us = (a, b) => (b.user + b.system - a.user - a.system); return [us(c0, mark) / N, us(mark, c1) / N] }
await burst(rein); await burst(lean)
const r = { rein: [], lean: [] }
for (let i = 0; i < 7; i++) { r.rein.push((await burst(rein)).map(Math.round)); r.lean.push((await burst(lean)).map(Math.round)) }
const med = (xs) => xs.slice().sort((a, b) => a - b)[xs.length >> 1]
console.log(process.argv[2].split("/").at(-1), "started", started, "µs CPU per request [start, expiry] medians: rein", [med(r.rein.map((x) => x[0])), med(r.rein.map((x) => x[1]))], "lean", [med(r.lean.map((x) => x[0])), med(r.lean.map((x) => x[1]))])
