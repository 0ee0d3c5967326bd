// A/B helper (not part of the bench): the floor under bench 6. The same hour (10,000 arrivals, one every 360
// virtual ms, the same catalog, contract and Health config) run as bare `Rein.execute` calls on the CLI's virtual
// scheduler and clock, against a provider that sleeps 300 ms and answers: no scenario lookup, no breaker
// observation, no tally. Interleaved with `Simulate.simulate` in the same process; CPU per run.
// node --expose-gc bench/ab/sim-floor.mjs [rounds]
import { Catalog, Contract, Health, Rein } from "@rein/core"
import * as cli from "@rein/cli"
import { Deferred, Duration, Effect, Either, Exit } from "effect"
import { readFileSync } from "node:fs"
import os from "node:os"
import * as Virtual from "../../packages/cli/dist/internal/virtual.js"
const read = (p) => JSON.parse(readFileSync(new URL(`../../${p}`, import.meta.url), "utf8"))
const catalog = Either.getOrThrow(Catalog.decode(read("examples/catalog.json")))
const contract = Either.getOrThrow(Contract.decode(read("examples/contract.json")))
const scenario = Either.getOrThrow(cli.Scenario.decode(read("bench/scenarios/hour-outage.json")))
const answer = { text: "(simulated answer)", usage: { inputTokens: 600, outputTokens: 120 } }
const provider = { internalMaxAttempts: 1, simulated: true, call: () => Effect.as(Effect.sleep(Duration.millis(300)), answer) }
const floor = Effect.gen(function*() {
  const health = yield* Health.make(cli.Scenario.healthConfig(scenario))
  const services = { catalog, providers: new Map([["fake", provider]]) }
  const done = yield* Deferred.make()
  let pending = 0
  let arriving = true
  const settled = () => Effect.suspend(() => (--pending === 0 && !arriving ? Deferred.succeed(done, undefined) : Effect.void))
  for (let i = 0; i < 10_000; i++) {
    pending++
    const request = { id: `sim-${i + 1}`, prompt: "simulated request", inputTokens: 600, maxOutputTokens: 300 }
    yield* Effect.fork(Effect.onExit(Rein.execute(request, contract).pipe(Effect.either, Effect.provideService(Rein.Rein, services), Effect.provideService(Health.Health, health)), settled))
    yield* Effect.sleep(Duration.millis(360))
  }
  arriving = false
  if (pending > 0) yield* Deferred.await(done)
})
const R = Number(process.argv[2] ?? 3)
const out = { floor: [], simulate: [] }
const load0 = os.loadavg()[0]
for (let r = 0; r < R; r++) {
  for (const name of r % 2 === 0 ? ["floor", "simulate"] : ["simulate", "floor"]) {
    globalThis.gc?.()
    const c0 = process.cpuUsage()
    if (name === "floor") {
      const { exit } = await Effect.runPromise(Virtual.run(floor))
      if (!Exit.isSuccess(exit)) throw new Error("floor failed")
    } else {
      const report = await Effect.runPromise(cli.Simulate.simulate(catalog, contract, scenario, 1))
      if (report.requests !== 10_000) throw new Error("bad report")
    }
    const c = process.cpuUsage(c0)
    out[name].push(Math.round((c.user + c.system) / 1000))
  }
}
console.log(JSON.stringify({ load: `${load0.toFixed(1)}–${os.loadavg()[0].toFixed(1)}`, cpuMs: out }))
