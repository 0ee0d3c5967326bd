// A/B helper (not part of the bench): bench 6's hour in process, a plan of hours each run with (`g`) or without (`n`) a
// full `gc()` before it, with markers on stdout, so that V8's traces can be counted per hour. Prints each hour's CPU.
// ROOT=<checkout> node --expose-gc --trace-opt --trace-deopt bench/ab/sim-gc-compiles.mjs [n,n,n,g,n,g,n,g] > out.txt
// then, per hour after a gc(): awk '/=== HOUR/ {h=$3" "$4} /completed compiling/ {c[h]++} /=== CPU/ && $4=="g" {print c[$3" "$4]}' out.txt
// and the optimized code a gc() threw away: grep 'weak objects' out.txt (h/sim22).
import { checkout } from "./sim-checkout.mjs"
const side = await checkout(process.env.ROOT)
const scenario = side.scenario("bench/scenarios/hour-outage.json")
const hour = () => side.Effect.runPromise(side.cli.Simulate.simulate(side.catalog, side.contract, scenario, 1))
const plan = (process.argv[2] ?? "n,n,n,g,n,g,n,g").split(",")
for (const [i, k] of plan.entries()) {
  if (k === "g") globalThis.gc()
  await new Promise((r) => setImmediate(r))
  console.log(`=== HOUR ${i} ${k}`)
  const c0 = process.cpuUsage()
  await hour()
  const c = process.cpuUsage(c0)
  console.log(`=== CPU ${i} ${k} ${((c.user + c.system) / 1000).toFixed(0)}`)
}
