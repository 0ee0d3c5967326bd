// A/B helper (not part of the bench): traces how many provider calls are in flight over a Rein Batch.run
// (N items × L ms at C), sampled at every call's start and end, beside p-limit's run of the same shape.
import { Batch, Guardrails } from "@rein/batch"
import { Contract, Rein } from "@rein/core"
import { Effect, Layer, Scope } from "effect"
import pLimit from "p-limit"
import { catalog, request, response } from "../dist/fixtures.js"
const [N, L, C] = (process.argv[2] ?? "400,200,100").split(",").map(Number)
let inFlight = 0
let t0 = 0
const events = []
const call = () => {
  inFlight++
  events.push([performance.now() - t0, inFlight])
  return new Promise((r) => setTimeout(() => { inFlight--; events.push([performance.now() - t0, inFlight]); r(1) }, L))
}
const provider = { internalMaxAttempts: 1, call: () => Effect.as(Effect.promise(call), response) }
const context = Effect.runSync(Effect.flatMap(Scope.make(), (s) => Layer.buildWithScope(Rein.layer({ catalog, providers: { mem: provider } }), s)))
const contract = Contract.make({ deadline: "1 minute", candidates: ["mem/a"] })
const items = Array.from({ length: N }, (_, i) => i)
const rein = () => Effect.runPromise(Batch.run(items, { contract, request: () => request, guardrails: Guardrails.make({ concurrency: C }) }).pipe(Effect.provide(context)))
const plimit = async () => { const limit = pLimit(C); await Promise.all(items.map(() => limit(call))) }
const summary = (name, wall) => {
  // time-weighted mean of in-flight while calls remain, and the gaps where fewer than C were in flight
  let area = 0, under = 0, prev = events[0]
  for (const e of events.slice(1)) { area += prev[1] * (e[0] - prev[0]); if (prev[1] < C) under += e[0] - prev[0]; prev = e }
  const starts = events.filter((e, i) => i === 0 || e[1] > events[i - 1][1]).map((e) => e[0])
  const lastStart = starts[starts.length - 1]
  let underBeforeDrain = 0
  prev = events[0]
  for (const e of events.slice(1)) { if (e[0] > lastStart) break; if (prev[1] < C) underBeforeDrain += e[0] - prev[0]; prev = e }
  console.log(JSON.stringify({ name, wall: Math.round(wall), firstStart: +events[0][0].toFixed(1), lastStart: +lastStart.toFixed(1), lastEnd: +events[events.length - 1][0].toFixed(1), meanInFlight: +(area / (events[events.length - 1][0] - events[0][0])).toFixed(1), msUnderCBeforeDrain: +underBeforeDrain.toFixed(1) }))
}
const rounds = Number(process.argv[3] ?? 2)
for (let r = 0; r < rounds; r++) {
  for (const [name, f] of [["rein", rein], ["p-limit", plimit]]) {
    events.length = 0; t0 = performance.now()
    await f()
    summary(name, performance.now() - t0)
  }
}
