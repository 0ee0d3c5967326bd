// Profile helper (not part of the bench): bench 5's shape (1,000 items in flight, cancel-active, item 0 trips
// fail-fast once all have started), a few rounds, to run under `node --cpu-prof`. Prints trigger → last
// teardown and → run returned (wall), and the process's CPU from the trigger to the return, per round.
import { Deferred, Effect, Exit, FiberId, Layer, Scope } from "effect"
const core = await import(process.argv[2] + "/core/dist/index.js")
const batch = await import(process.argv[2] + "/batch/dist/index.js")
const { Catalog, Contract, Failure, Rein } = core
const { Batch, Guardrails } = batch
const N = 1000
const catalog = Catalog.make({ endpoints: [{ id: "mem/a", provider: "mem", model: "a", capabilities: { contextWindow: 128000, maxOutputTokens: 4096 }, prices: { inputTokens: 1e-6, outputTokens: 2e-6 } }] })
const contract = Contract.make({ deadline: "2 minutes", candidates: ["mem/a"], retry: { perEndpoint: 0 } })
const auth = new Failure.ProviderFailure({ kind: "authentication", code: "http_401", dispatched: true })
const now = () => Number(process.hrtime.bigint()) / 1e6
let round
const provider = { internalMaxAttempts: 1, call: (request) => Effect.suspend(() => {
  if (++round.started === N) Deferred.unsafeDone(round.allIn, Exit.void)
  if (request.id !== "0") return Effect.as(Effect.sleep(60_000), { text: "", usage: "unknown" }).pipe(Effect.onInterrupt(() => Effect.sync(() => { round.last = now() })))
  return Deferred.await(round.allIn).pipe(Effect.zipRight(Effect.sleep(20)), Effect.zipRight(Effect.suspend(() => { round.trigger = now(); round.cpu = process.cpuUsage(); return Effect.fail(auth) })))
}) }
const ctx = await Effect.runPromise(Effect.flatMap(Scope.make(), (s) => Layer.buildWithScope(Rein.layer({ catalog, providers: { mem: provider }, health: false }), s)))
const guardrails = Guardrails.make({ concurrency: N, abortMode: "cancel-active", abortOn: ["authentication"] })
const items = Array.from({ length: N }, (_, i) => i)
for (let r = 0; r < Number(process.argv[3] ?? 5); r++) {
  round = { started: 0, allIn: Deferred.unsafeMake(FiberId.none), trigger: NaN, last: NaN }
  await Effect.runPromise(Effect.provide(Batch.run(items, { contract, guardrails, request: (_, i) => ({ id: String(i), prompt: "hello", inputTokens: 10, maxOutputTokens: 10 }) }), ctx))
  const cpu = process.cpuUsage(round.cpu)
  console.log("torn down", Math.round(round.last - round.trigger), "ms, returned", Math.round(now() - round.trigger), "ms, CPU trigger → returned", Math.round((cpu.user + cpu.system) / 1000), "ms")
}
