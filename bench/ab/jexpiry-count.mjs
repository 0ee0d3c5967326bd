// A/B helper (not part of the bench): bench 4's burst counted, not timed, split at the last provider call started
// (start | expiry): per request, Effect run-loop steps (a supervisor with op supervision on), scheduler tasks
// (`Scheduler.defaultScheduler.scheduleTask`), clock readings (`Clock.unsafeCurrentTimeNanos` of the services'
// clock), and bytes allocated (a young generation large enough that no collection runs in the burst: the used heap
// after − before). Rein's rows run on a runtime carrying their services, as bench 4 does (`runtimeOf`). Each
// configuration in a child process of its own. Load-independent.
// node bench/ab/jexpiry-count.mjs lean jfloor off on journal [@<core dist dir> after a config: that build]
import { execFileSync } from "node:child_process"
import { fileURLToPath } from "node:url"
const here = fileURLToPath(import.meta.url)
if (process.argv[2] === "child") {
  const [config, dir] = process.argv[3].split("@")
  const { Effect, FiberRefs, Layer, Runtime, RuntimeFlags, RuntimeFlagsPatch, Scheduler, Scope, Supervisor, Clock } = await import("effect")
  const { default: v8 } = await import("node:v8")
  const { leanBound, journaledLean, memoryJournal } = await import("../dist/fixtures.js")
  const { Catalog, Contract, Rein, Journal } = await import((dir ?? fileURLToPath(new URL("../../packages/core/dist", import.meta.url))) + "/index.js")
  const N = 1000
  let started = 0
  const hang = Effect.suspend(() => { if (++started === N) mark(); return Effect.never })
  const catalog = Catalog.make({ endpoints: [{ id: "mem/a", provider: "mem", model: "a", capabilities: { contextWindow: 128000, maxOutputTokens: 4096 }, prices: { inputTokens: 1e-6, outputTokens: 2e-6 } }] })
  const contract = Contract.make({ deadline: 50, teardownGrace: 250, candidates: ["mem/a"], retry: { perEndpoint: 0 } })
  const base = Rein.layer({ catalog, providers: { mem: { internalMaxAttempts: 1, call: () => hang } }, health: config === "off" ? false : { failureRatio: 0.9, depositRatio: 2 } })
  const layer = config === "journal" ? Layer.merge(Layer.orDie(base), Layer.succeed(Journal.Journal, Journal.make(() => Effect.void))) : Layer.orDie(base)
  const rein = config === "lean" || config === "jfloor" ? undefined : await Effect.runPromise(Effect.flatMap(Scope.make(), (s) => Layer.buildWithScope(layer, s)))
  const runtime = rein === undefined ? Runtime.defaultRuntime : Runtime.make({ context: rein, runtimeFlags: Runtime.defaultRuntimeFlags, fiberRefs: FiberRefs.empty() })
  const one = config === "lean" ? leanBound(hang, 50) : config === "jfloor" ? await (async () => {
    const { journalWork } = await import("../dist/deadline.js")
    return journaledLean(hang, Effect.runSync(Effect.provide(Journal.Journal, memoryJournal)), await journalWork(), 50)
  })() : Rein.execute({ prompt: "hello", inputTokens: 10, maxOutputTokens: 10 }, contract)
  // Counters, per phase (0: start, 1: expiry).
  let phase = 0
  const steps = [0, 0], tasks = [0, 0], clocks = [0, 0], bytes = [0, 0]
  let h0 = 0
  function mark() { const h = v8.getHeapStatistics().used_heap_size; bytes[0] = h - h0; h0 = h; phase = 1 }
  const sched = Scheduler.defaultScheduler, scheduleTask = sched.scheduleTask.bind(sched)
  sched.scheduleTask = (task, priority, fiber) => { tasks[phase]++; return scheduleTask(task, priority, fiber) }
  const clock = rein === undefined ? undefined : Effect.runSync(Effect.clockWith(Effect.succeed))
  if (clock !== undefined) {
    const read = clock.unsafeCurrentTimeNanos.bind(clock)
    clock.unsafeCurrentTimeNanos = () => { clocks[phase]++; return read() }
  }
  class Count extends Supervisor.AbstractSupervisor {
    get value() { return Effect.void }
    onEffect() { steps[phase]++ }
  }
  const all = Effect.forEach(Array.from({ length: N }), () => Effect.either(one), { concurrency: "unbounded", discard: true })
  const burst = async (supervised) => {
    globalThis.gc(); started = 0; phase = 0; steps.fill(0); tasks.fill(0); clocks.fill(0); bytes.fill(0)
    const profiler = new v8.GCProfiler(); profiler.start()
    h0 = v8.getHeapStatistics().used_heap_size
    await Runtime.runPromise(runtime)(supervised ? Effect.supervised(Effect.withRuntimeFlagsPatch(all, RuntimeFlagsPatch.enable(RuntimeFlags.OpSupervision)), new Count()) : all)
    bytes[1] = v8.getHeapStatistics().used_heap_size - h0
    const gcs = profiler.stop()?.statistics?.length ?? 0
    return gcs
  }
  if (process.env.SITES) {
    // SITES=start|expiry: V8's sampling heap profile (collected objects included) of that phase over 5 bursts:
    // bytes per request by allocating function.
    const { Session } = await import("node:inspector/promises")
    const session = new Session(); session.connect(); await session.post("HeapProfiler.enable")
    await burst(false); await burst(false)
    const want = process.env.SITES === "start" ? 0 : 1
    const self = {}
    for (let i = 0; i < 5; i++) {
      const m = mark
      let on = false
      const begin = async () => { on = true; await session.post("HeapProfiler.startSampling", { samplingInterval: 64, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true }) }
      if (want === 0) await begin()
      else mark = function () { m(); void begin() }
      await burst(false)
      mark = m
      const { profile } = await session.post("HeapProfiler.stopSampling")
      const walk = (n) => { const f = n.callFrame; const k = `${f.functionName || "(anon)"} ${f.url.replace(/.*node_modules\/.pnpm\/[^/]+\/node_modules\//, "").replace(/.*\/packages\//, "")}:${f.lineNumber + 1}`; self[k] = (self[k] ?? 0) + n.selfSize / 5000; n.children.forEach(walk) }
      walk(profile.head)
    }
    console.log(JSON.stringify(self))
    process.exit(0)
  }
  if (process.env.GC) {
    // GC=1 (run with the default heap): per burst, the collections and their total pause (ms), 7 bursts after 2.
    await burst(false); await burst(false)
    const rs = []
    for (let i = 0; i < 7; i++) {
      globalThis.gc(); started = 0; phase = 0
      const profiler = new v8.GCProfiler(); profiler.start()
      await Runtime.runPromise(runtime)(all)
      const st = profiler.stop()?.statistics ?? []
      rs.push([st.filter((x) => x.gcType === "Scavenge").length, st.length, st.reduce((a, x) => a + x.cost, 0) / 1000])
    }
    console.log(JSON.stringify(rs))
    process.exit(0)
  }
  if (process.env.LIVE) {
    // LIVE=1: bytes live per request in flight (a full collection once the last call started, against one before).
    await burst(false); await burst(false)
    globalThis.gc(); const before = v8.getHeapStatistics().used_heap_size; let live = 0
    const m = mark
    mark = function () { m(); globalThis.gc(); live = v8.getHeapStatistics().used_heap_size - before; if (process.env.LIVE === "snapshot") v8.writeHeapSnapshot(`/tmp/jexpiry-${config}.heapsnapshot`) }
    started = 0
    await Runtime.runPromise(runtime)(all)
    console.log(JSON.stringify({ live: live / N }))
    process.exit(0)
  }
  await burst(false); await burst(false); await burst(true)
  const out = { steps: [...steps] }
  const gcs = await burst(false)
  Object.assign(out, { tasks: [...tasks], clocks: [...clocks], bytes: [...bytes], gcs })
  console.log(JSON.stringify(out))
} else {
  const f = (xs, d = 1, k = 1) => xs.map((x) => (x / 1000 / k).toFixed(d)).join(" / ")  // per request (N = 1,000)
  console.log("per request, start / expiry (split at the last call started)")
  for (const c of process.argv.slice(2)) {
    const r = JSON.parse(execFileSync(process.execPath, ["--expose-gc", "--min-semi-space-size=256", "--max-semi-space-size=256", here, "child", c], { encoding: "utf8" }).trim().split("\n").at(-1))
    console.log(`${c.padEnd(10)} steps ${f(r.steps).padEnd(12)} scheduler tasks ${f(r.tasks, 2).padEnd(12)} clock reads ${f(r.clocks, 2).padEnd(12)} KB ${f(r.bytes, 2, 1024)}${r.gcs ? `  (${r.gcs} collections: bytes not exact)` : ""}`)
  }
}
