// Success path, one call per runPromise: Rein's three configurations and cockatiel, 15 interleaved rounds.
import { Rein } from "@rein/core"
import { circuitBreaker, ConsecutiveBreaker, ConstantBackoff, handleAll, retry, timeout, TimeoutStrategy, wrap } from "cockatiel"
import { Effect, Runtime } from "effect"
import { contextOf, overheadContract, reinVariants, request, succeeding, succeedingAsync } from "../dist/fixtures.js"
import { interleave } from "../dist/harness.js"
const contenders = []
for (const v of reinVariants) {
  const ctx = await contextOf(v, { mem: succeeding() })
  const rt = Runtime.make({ context: ctx, fiberRefs: Runtime.defaultRuntime.fiberRefs, runtimeFlags: Runtime.defaultRuntime.runtimeFlags })
  const rp = Runtime.runPromise(rt); const eff = Rein.execute(request, overheadContract)
  contenders.push({ name: v.name, run: async (n) => { for (let i = 0; i < n; i++) await rp(eff) } })
}
const f = succeedingAsync()
const policy = wrap(retry(handleAll, { maxAttempts: 2, backoff: new ConstantBackoff(0) }), circuitBreaker(handleAll, { halfOpenAfter: 10000, breaker: new ConsecutiveBreaker(5) }), timeout(30000, TimeoutStrategy.Aggressive))
contenders.push({ name: "cockatiel", run: async (n) => { for (let i = 0; i < n; i++) await policy.execute(() => f()) } })
const t = await interleave(contenders, { rounds: Number(process.argv[2] ?? 15), sampleMillis: 120 })
const ck = t.at(-1)
for (const x of t) console.log(x.name.padEnd(34), "cpu", Math.round(x.cpu.median), `(${Math.round(x.cpu.min)}–${Math.round(x.cpu.max)})`, "wall", Math.round(x.median), "÷ cockatiel cpu", (x.cpu.median / ck.cpu.median).toFixed(2), "wall", (x.median / ck.median).toFixed(2))
