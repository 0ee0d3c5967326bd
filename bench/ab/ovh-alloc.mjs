// Bench 1's success path, one call per runPromise: bytes allocated, CPU and wall per call for each Rein
// configuration and cockatiel, measured in turn (interleaved rounds: gc(), 3,000 untimed calls, then the sample). Usage: node --expose-gc bench/ab/ovh-alloc.mjs [rounds] [calls]
import { Rein } from "@rein/core"
import { circuitBreaker, ConsecutiveBreaker, ConstantBackoff, handleAll, retry, timeout, TimeoutStrategy, wrap } from "cockatiel"
import { Runtime } from "effect"
import { contextOf, overheadContract, reinVariants, request, succeeding, succeedingAsync } from "../dist/fixtures.js"
import { allocated } from "../dist/harness.js"
const rounds = Number(process.argv[2] ?? 5), calls = Number(process.argv[3] ?? 20000)
const only = process.env.ONLY
const cs = []
for (const v of reinVariants) {
  if (only !== undefined && !v.name.includes(only)) continue
  const ctx = await contextOf(v, { mem: succeeding() })
  const rt = Runtime.make({ context: ctx, fiberRefs: Runtime.defaultRuntime.fiberRefs, runtimeFlags: Runtime.defaultRuntime.runtimeFlags })
  const rp = Runtime.runPromise(rt); const eff = Rein.execute(request, overheadContract)
  cs.push({ name: v.name, run: async (n) => { for (let i = 0; i < n; i++) await rp(eff) } })
}
const f = succeedingAsync()
const policy = wrap(retry(handleAll, { maxAttempts: 2, backoff: new ConstantBackoff(0) }), circuitBreaker(handleAll, { halfOpenAfter: 10000, breaker: new ConsecutiveBreaker(5) }), timeout(30000, TimeoutStrategy.Aggressive))
cs.push({ name: "cockatiel retry + breaker + timeout", run: async (n) => { for (let i = 0; i < n; i++) await policy.execute(() => f()) } })
for (const c of cs) await c.run(5000)
const res = cs.map(() => ({ b: [], cpu: [], wall: [] }))
for (let r = 0; r < rounds; r++) for (let k = 0; k < cs.length; k++) {
  const i = (k + r) % cs.length
  globalThis.gc(); await cs[i].run(3000)
  const c0 = process.cpuUsage(), t0 = process.hrtime.bigint()
  const { bytes } = await allocated(() => cs[i].run(calls))
  const wall = Number(process.hrtime.bigint() - t0), u = process.cpuUsage(c0)
  res[i].b.push(bytes / calls); res[i].cpu.push((u.user + u.system) * 1000 / calls); res[i].wall.push(wall / calls)
}
const med = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[s.length >> 1] }
const ck = med(res[cs.length - 1].cpu)
for (let i = 0; i < cs.length; i++) console.log(cs[i].name.padEnd(34), "cpu÷cockatiel", (med(res[i].cpu) / ck).toFixed(2), "bytes/call", Math.round(med(res[i].b)), "cpu ns", Math.round(med(res[i].cpu)), "wall ns", Math.round(med(res[i].wall)), "bytes min-max", Math.round(Math.min(...res[i].b)), Math.round(Math.max(...res[i].b)))
console.log("load", (await import("node:os")).loadavg()[0])
