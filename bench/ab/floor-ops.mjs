// A/B helper (not part of the bench): bench 6's floor row "bare Rein.execute per arrival, no simulator" (the shape of
// `reinHour` in bench/src/simulation-floors.ts: 10,000 arrivals every 360 virtual ms, a provider that sleeps 300 ms,
// the services provided once) counted, not timed, with a checkout's own core, virtual clock and `effect`: Effect
// operations per request by kind (the op, and the function it carries, or for a `Success`/`Sync` the continuation it
// resumes), scheduled resumptions, and bytes allocated per request (a second hour, `v8.GCProfiler`: exact, load-free).
// node bench/ab/floor-ops.mjs [checkout root] [top=40]
import v8 from "node:v8"
import { pathToFileURL } from "node:url"
import { checkout } from "./sim-checkout.mjs"
const self = await checkout(process.argv[2])
const { root, cli, catalog, contract } = self
const load = (p) => import(pathToFileURL(`${root}/${p}`).href)
const core = await load("packages/core/dist/index.js")
const Virtual = await load("packages/cli/dist/internal/virtual.js")
const { Context, Deferred, Duration, Effect, Exit } = await load("node_modules/effect/dist/esm/index.js")
const TOP = Number(process.argv[3] ?? 40)
const ARRIVALS = Number(process.env.N ?? 10_000)
const SEQ = process.env.SEQ !== undefined
const seq = []
const health = cli.Scenario.healthConfig(self.scenario("bench/scenarios/hour-outage.json"))

const arrivals = (one) =>
  Effect.gen(function*() {
    const done = yield* Deferred.make()
    let pending = 0
    let arriving = true
    const settled = Effect.suspend(() => --pending === 0 && !arriving ? Deferred.succeed(done, undefined) : Effect.void)
    for (let i = 0; i < ARRIVALS; i++) {
      pending++
      yield* Effect.fork(Effect.ensuring(Effect.either(one(i)), settled))
      yield* Effect.sleep(Duration.millis(360))
    }
    arriving = false
    if (pending > 0) yield* Deferred.await(done)
  })
const answer = { text: "(simulated answer)", usage: { inputTokens: 600, outputTokens: 120 } }
const provider = { internalMaxAttempts: 1, simulated: true, call: () => Effect.as(Effect.sleep(Duration.millis(300)), answer) }
const hour = Effect.flatMap(core.Health.make(health), (h) =>
  Effect.provide(
    arrivals((i) =>
      core.Rein.execute({ id: `sim-${i + 1}`, prompt: "simulated request", inputTokens: 600, maxOutputTokens: 300 }, contract)
    ),
    Context.make(core.Rein.Rein, { catalog, providers: new Map([["fake", provider]]) }).pipe(Context.add(core.Health.Health, h))
  ))
const runHour = async () => {
  const { exit } = await Effect.runPromise(Virtual.run(hour))
  if (!Exit.isSuccess(exit)) throw new Error(`the hour did not end: ${String(exit)}`)
}

await runHour() // warm
// RUNS=<n>: only run the hour n more times (e.g. under `node --cpu-prof`), and print CPU per run.
if (process.env.RUNS) {
  for (let r = 0; r < Number(process.env.RUNS); r++) {
    const c0 = process.cpuUsage()
    await runHour()
    const c = process.cpuUsage(c0)
    console.log(`run ${r}: ${((c.user + c.system) / 1000).toFixed(0)} ms CPU`)
  }
  process.exit(0)
}
// Bytes: every allocation (collected ones included) of an hour, the median of BYTES_ROUNDS (default 3) hours.
const hourBytes = async () => {
  const profiler = new v8.GCProfiler()
  profiler.start()
  const before = v8.getHeapStatistics().used_heap_size
  await runHour()
  const after = v8.getHeapStatistics().used_heap_size
  let freed = 0
  for (const s of profiler.stop()?.statistics ?? []) freed += s.beforeGC.heapStatistics.usedHeapSize - s.afterGC.heapStatistics.usedHeapSize
  return after - before + freed
}
const samples = []
for (let r = 0; r < Number(process.env.BYTES_ROUNDS ?? 3); r++) samples.push(await hourBytes())
const bytes = samples.sort((a, b) => a - b)[Math.floor(samples.length / 2)]

if (process.env.HEAP) {
  // V8's sampling heap profiler (collected objects included): bytes per request by allocating function (self).
  const { Session } = await import("node:inspector/promises")
  const session = new Session()
  session.connect()
  await session.post("HeapProfiler.enable")
  await session.post("HeapProfiler.startSampling", { samplingInterval: 256, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true })
  await runHour()
  const { profile } = await session.post("HeapProfiler.stopSampling")
  const sites = new Map()
  const label = (f) => `${f.functionName || "(anon)"} ${f.url.replace(/.*node_modules\/.pnpm\/[^/]+\/node_modules\//, "").replace(/.*\/packages\//, "")}:${f.lineNumber + 1}`
  const walk = (node) => {
    const k = label(node.callFrame)
    sites.set(k, (sites.get(k) ?? 0) + node.selfSize)
    for (const c of node.children) walk(c)
  }
  walk(profile.head)
  const total = [...sites.values()].reduce((a, b) => a + b, 0)
  console.log(`sampled ${(total / ARRIVALS / 1024).toFixed(2)} KB per request; by allocating function:`)
  for (const [k, v] of [...sites].sort((a, b) => b[1] - a[1]).slice(0, TOP)) console.log(`${(v / ARRIVALS).toFixed(0).padStart(7)} B  ${k}`)
  process.exit(0)
}
// Operations: every op handler of the fiber's prototype wrapped.
const proto = await Effect.runPromise(Effect.withFiberRuntime((f) => Effect.succeed(Object.getPrototypeOf(f))))
const counts = new Map()
let ops = 0, resumptions = 0
const fnName = (f) => typeof f === "function" ? f.name || "(anon)" : ""
const kinds = ["Success", "Failure", "Sync", "Commit", "OnSuccess", "OnFailure", "OnSuccessAndFailure", "OnStep",
  "UpdateRuntimeFlags", "WithRuntime", "Async", "Yield", "While", "Iterator", "Tag", "Left", "Right", "Some", "None", "Micro"]
for (const kind of kinds) {
  const handler = proto[kind]
  if (typeof handler !== "function") continue
  proto[kind] = function(op) {
    ops++
    let key
    if (kind === "Success" || kind === "Sync" || kind === "Failure") {
      const top = this._stack[this._stack.length - 1]
      key = `${kind} -> ${top === undefined ? "(end)" : `${top._op} ${fnName(kind === "Failure" ? top.effect_instruction_i1 : top.effect_instruction_i2 ?? top.effect_instruction_i1)}`}`
    } else {
      key = `${kind} ${fnName(op.effect_instruction_i1 ?? op.effect_instruction_i0)}`
    }
    counts.set(key, (counts.get(key) ?? 0) + 1)
    if (SEQ) {
      const f = kind === "Success" || kind === "Sync" || kind === "Failure" ? this._stack[this._stack.length - 1] : op
      const g = f === undefined ? undefined : kind === "Failure" ? f.effect_instruction_i1 : f.effect_instruction_i2 ?? f.effect_instruction_i1 ?? f.effect_instruction_i0
      const src = typeof g === "function" ? g.toString().replace(/\s+/g, " ").slice(0, 110) : ""
      seq.push(`#${this.id().id} ${key.padEnd(40)} ${src}`)
    }
    return handler.call(this, op)
  }
}
const { drainQueueLaterOnExecutor } = proto
proto.drainQueueLaterOnExecutor = function() {
  resumptions++
  return drainQueueLaterOnExecutor.call(this)
}
await runHour()
const byKind = new Map()
for (const [k, c] of counts) {
  const kind = k.split(" ")[0]
  byKind.set(kind, (byKind.get(kind) ?? 0) + c)
}
const per = (n) => (n / ARRIVALS).toFixed(2)
console.log(`${root}: ${per(ops)} operations, ${per(resumptions)} scheduled resumptions, ${(bytes / ARRIVALS / 1024).toFixed(2)} KB allocated per request (median of ${samples.length} hours: ${samples.map((b) => (b / ARRIVALS / 1024).toFixed(2)).join(", ")})`)
console.log(`by kind: ${[...byKind].sort((a, b) => b[1] - a[1]).map(([k, c]) => `${k} ${per(c)}`).join(", ")}`)
if (SEQ) console.log(seq.join("\n"))
for (const [k, c] of [...counts].sort((a, b) => b[1] - a[1]).slice(0, TOP)) console.log(`  ${per(c).padStart(6)}  ${k}`)
