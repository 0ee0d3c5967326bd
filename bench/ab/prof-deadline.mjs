import { Effect, Layer, Scope } from "effect"
const core = await import(process.argv[2] + "/index.js")
const { Catalog, Contract, Rein } = core
const catalog = Catalog.make({ endpoints: [{ id: "mem/a", provider: "mem", model: "a", capabilities: { contextWindow: 128000, maxOutputTokens: 4096 }, prices: { inputTokens: 1e-6, outputTokens: 2e-6 } }] })
const contract = Contract.make({ deadline: 50, teardownGrace: 250, candidates: ["mem/a"], retry: { perEndpoint: 0 } })
const never = { internalMaxAttempts: 1, call: () => Effect.never }
const request = { prompt: "hello", inputTokens: 10, maxOutputTokens: 10 }
const layer = Rein.layer({ catalog, providers: { mem: never }, health: false })
const ctx = await Effect.runPromise(Effect.flatMap(Scope.make(), (s) => Layer.buildWithScope(layer, s)))
const rein = Effect.provide(Rein.execute(request, contract), ctx)
const N = Number(process.argv[3] ?? 1000)
for (let r = 0; r < 8; r++) {
  const c0 = process.cpuUsage(); const t0 = performance.now()
  await Effect.runPromise(Effect.forEach(Array.from({ length: N }), () => Effect.either(rein), { concurrency: "unbounded", discard: true }))
  const c = process.cpuUsage(c0)
  console.log(N, "wall", Math.round(performance.now() - t0), "cpu ms", Math.round((c.user + c.system) / 1000))
}
