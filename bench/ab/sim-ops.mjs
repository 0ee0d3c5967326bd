// A/B helper (not part of the bench): bench 6's hour in process, counted rather than timed (the same on a loaded
// machine): Effect operations run and fiber resumptions scheduled, per simulated request, by a checkout's build.
// node bench/ab/sim-ops.mjs [checkout root] (default: this one)
import { checkout } from "./sim-checkout.mjs"
const { root, cli, Effect, catalog, contract, scenario: decoded } = await checkout(process.argv[2])
const scenario = decoded("bench/scenarios/hour-outage.json")
// Every fiber's run loop counts its operations (`currentOpCount`, reset at each start); a resumption is scheduled
// through `drainQueueLaterOnExecutor`.
const fiber = await Effect.runPromise(Effect.withFiberRuntime((f) => Effect.succeed(Object.getPrototypeOf(f))))
const count = { ops: 0, resumptions: 0 }
const { drainQueueLaterOnExecutor, runLoop } = fiber
fiber.runLoop = function(effect) {
  const out = runLoop.call(this, effect)
  count.ops += this.currentOpCount
  return out
}
fiber.drainQueueLaterOnExecutor = function() {
  count.resumptions++
  return drainQueueLaterOnExecutor.call(this)
}
const report = await Effect.runPromise(cli.Simulate.simulate(catalog, contract, scenario, 1))
const per = (n) => (n / report.requests).toFixed(1)
console.log(`${root}: ${per(count.ops)} operations and ${per(count.resumptions)} scheduled resumptions per request`)
