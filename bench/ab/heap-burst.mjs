// A/B helper (not part of the bench): V8's sampling heap profiler (collected objects included) over bench 4's
// burst (1,000 50 ms expiries at once), two configurations in separate processes: bytes per request by
// allocating function (self), the difference b − a, largest first. node bench/ab/heap-burst.mjs on journal [top=25]
import { execFileSync } from "node:child_process"
import { fileURLToPath } from "node:url"
const here = fileURLToPath(import.meta.url)
if (process.argv[2] === "child") {
  const config = process.argv[3]
  const { Session } = await import("node:inspector/promises")
  const { Effect, Layer, Scope } = await import("effect")
  const { Contract, Rein, Journal } = await import("@rein/core")
  const { catalog, request } = await import("../dist/fixtures.js")
  const contract = Contract.make({ deadline: 50, teardownGrace: 250, candidates: ["mem/a"], retry: { perEndpoint: 0 } })
  const base = Rein.layer({ catalog, providers: { mem: { internalMaxAttempts: 1, call: () => Effect.never } }, health: config === "off" ? false : { failureRatio: 0.9, depositRatio: 2 } })
  const layer = config === "journal" ? Layer.merge(Layer.orDie(base), Layer.succeed(Journal.Journal, Journal.make(() => Effect.void))) : Layer.orDie(base)
  const rein = Effect.provide(Rein.execute(request, contract), await Effect.runPromise(Effect.flatMap(Scope.make(), (s) => Layer.buildWithScope(layer, s))))
  const burst = () => Effect.runPromise(Effect.forEach(Array.from({ length: 1000 }), () => Effect.either(rein), { concurrency: "unbounded", discard: true }))
  await burst(); await burst()
  const session = new Session(); session.connect()
  await session.post("HeapProfiler.enable")
  await session.post("HeapProfiler.startSampling", { samplingInterval: 128, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true })
  for (let i = 0; i < 5; i++) await burst()
  const { profile } = await session.post("HeapProfiler.stopSampling")
  const self = {}
  const walk = (n) => { const f = n.callFrame; const k = `${f.functionName || "(anon)"} ${f.url.replace(/.*node_modules\/.pnpm\/[^/]+\/node_modules\//, "").replace(/.*\/packages\//, "")}:${f.lineNumber + 1}`; self[k] = (self[k] ?? 0) + n.selfSize / 5000; n.children.forEach(walk) }
  walk(profile.head)
  console.log(JSON.stringify(self))
} else {
  const [a, b, top = 25] = process.argv.slice(2)
  const run = (c) => JSON.parse(execFileSync(process.execPath, [here, "child", c], { encoding: "utf8", maxBuffer: 1 << 24 }).trim().split("\n").at(-1))
  const A = run(a), B = run(b)
  const sum = (o) => Object.values(o).reduce((x, y) => x + y, 0)
  console.log(`bytes per request (sampled): ${a} ${sum(A).toFixed(0)}, ${b} ${sum(B).toFixed(0)}, ${b} − ${a} ${(sum(B) - sum(A)).toFixed(0)}`)
  const keys = [...new Set([...Object.keys(A), ...Object.keys(B)])].map((k) => [k, (B[k] ?? 0) - (A[k] ?? 0)]).sort((x, y) => Math.abs(y[1]) - Math.abs(x[1]))
  for (const [k, d] of keys.slice(0, Number(top))) console.log(`${d.toFixed(0).padStart(7)} B  (${(A[k] ?? 0).toFixed(0)} → ${(B[k] ?? 0).toFixed(0)})  ${k}`)
}
