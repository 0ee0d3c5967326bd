// Bench 1's first table (success path, one call per runPromise) with every contender of the bench, interleaved
// as the harness does (gc(), warm-up, sample), printing a marker before each timed sample: run with
// `node --expose-gc --trace-deopt bench/ab/ovh-deopts.mjs [rounds] [calls]` and count deopts per contender's sample
// (see ovh-deopts-count.sh). Without --trace-deopt it prints CPU and wall per call per contender.
import * as OtelTracer from "@effect/opentelemetry/Tracer"
import { BasicTracerProvider, BatchSpanProcessor } from "@opentelemetry/sdk-trace-base"
import { Rein, Telemetry } from "@rein/core"
import { circuitBreaker, ConsecutiveBreaker, ConstantBackoff, handleAll, retry, timeout, TimeoutStrategy, wrap } from "cockatiel"
import { Effect, ExecutionPlan, Layer, Runtime } from "effect"
import pRetry from "p-retry"
import { attemptContext, contextOf, overheadContract, reinVariants, request, succeeding, succeedingAsync } from "../dist/fixtures.js"
const rounds = Number(process.argv[2] ?? 5), calls = Number(process.argv[3] ?? 12000)
const skip = (process.env.SKIP ?? "").split(",").filter((s) => s !== "")
const runtimeOf = (ctx) => Runtime.make({ context: ctx, fiberRefs: Runtime.defaultRuntime.fiberRefs, runtimeFlags: Runtime.defaultRuntime.runtimeFlags })
const cs = []
const effectC = (name, effect, rt = Runtime.defaultRuntime) => { const rp = Runtime.runPromise(rt); cs.push({ name, run: async (n) => { for (let i = 0; i < n; i++) await rp(effect) } }) }
for (const v of reinVariants) effectC(v.name, Rein.execute(request, overheadContract), runtimeOf(await contextOf(v, { mem: succeeding() })))
if (!skip.includes("traced")) {
  const provider = new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor({ export: (_s, done) => done({ code: 0 }), shutdown: () => Promise.resolve() })] })
  const tracer = Effect.runSync(Effect.provideService(OtelTracer.make, OtelTracer.OtelTracer, provider.getTracer("bench")))
  const base = reinVariants[1]
  const ctx = await contextOf({ name: "traced", layer: (p) => Layer.merge(base.layer(p), Telemetry.layer) }, { mem: succeeding() })
  effectC("traced", Effect.withTracer(Rein.execute(request, overheadContract), tracer), runtimeOf(ctx))
}
if (!skip.includes("peers")) {
  const p = succeeding()
  effectC("bare", p.call(request, attemptContext))
  effectC("retry+timeout", Effect.retry(Effect.timeout(p.call(request, attemptContext), "30 seconds"), { times: 2 }))
  class Model extends Effect.Tag("bench/Model")() {}
  const plan = ExecutionPlan.make({ provide: Layer.succeed(Model, p), attempts: 2 }, { provide: Layer.succeed(Model, p) })
  effectC("plan", Effect.withExecutionPlan(Effect.flatMap(Model, (m) => m.call(request, attemptContext)), plan))
  const f = succeedingAsync()
  const policy = wrap(retry(handleAll, { maxAttempts: 2, backoff: new ConstantBackoff(0) }), circuitBreaker(handleAll, { halfOpenAfter: 10000, breaker: new ConsecutiveBreaker(5) }), timeout(30000, TimeoutStrategy.Aggressive))
  cs.push({ name: "cockatiel", run: async (n) => { for (let i = 0; i < n; i++) await policy.execute(() => f()) } })
  cs.push({ name: "p-retry", run: async (n) => { for (let i = 0; i < n; i++) await pRetry(() => f(), { retries: 2, minTimeout: 0, factor: 1, randomize: false }) } })
}
for (const c of cs) { await c.run(2000); await c.run(2000) }
const res = cs.map(() => ({ cpu: [], wall: [] }))
for (let r = 0; r < rounds; r++) for (let k = 0; k < cs.length; k++) {
  const i = (k + r) % cs.length
  globalThis.gc(); await cs[i].run(Number(process.env.WARM ?? 3000))
  console.log(`@@SAMPLE ${cs[i].name}`)
  const c0 = process.cpuUsage(), t0 = process.hrtime.bigint()
  await cs[i].run(calls)
  const w = Number(process.hrtime.bigint() - t0), u = process.cpuUsage(c0)
  console.log(`@@END`)
  res[i].cpu.push((u.user + u.system) * 1000 / calls); res[i].wall.push(w / calls)
}
const med = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[s.length >> 1] }
for (let i = 0; i < cs.length; i++) console.log(`@@RESULT ${cs[i].name.padEnd(34)} cpu ${Math.round(med(cs[i] && res[i].cpu))} wall ${Math.round(med(res[i].wall))}`)
