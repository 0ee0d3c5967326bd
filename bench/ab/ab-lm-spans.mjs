// A/B helper (not part of the bench): ReinLanguageModel over an in-memory model, generateText and streamText, CPU µs
// and KB per call, in this process, for one providers build. Run old and new alternately in separate processes:
// node --expose-gc bench/ab/ab-lm-spans.mjs <providers dist dir> [N]
import { LanguageModel } from "@effect/ai"
import { Catalog, Contract } from "@rein/core"
import { Effect, Layer, Stream } from "effect"
import * as os from "node:os"
import * as path from "node:path"
import { allocated, collect } from "../dist/harness.js"
const dir = path.resolve(process.argv[2])
const N = Number(process.argv[3] ?? 3000)
const { layer } = await import(path.join(dir, "ReinLanguageModel.js"))
const usage = { inputTokens: 10, outputTokens: 2, totalTokens: 12 }
const memory = Layer.effect(LanguageModel.LanguageModel, LanguageModel.make({
  generateText: () => Effect.succeed([{ type: "text", text: "ok" }, { type: "finish", reason: "stop", usage }]),
  streamText: () => Stream.make({ type: "text-start", id: "t" }, { type: "text-delta", id: "t", delta: "ok" },
    { type: "text-end", id: "t" }, { type: "finish", reason: "stop", usage })
}))
const ep = (id) => ({ id, provider: "memory", model: id, capabilities: { contextWindow: 8000, maxOutputTokens: 1000, streaming: true },
  prices: { inputTokens: 1e-6, outputTokens: 2e-6 } })
const catalog = Catalog.make({ endpoints: [ep("a"), ep("b")] })
const contract = Contract.make({ deadline: "30 seconds", candidates: ["a", "b"] })
const context = await Effect.runPromise(Effect.scoped(Layer.build(layer({ contract, catalog, models: { a: memory, b: memory }, inputTokens: () => 10 }))))
const rows = {
  generate: () => Effect.runPromise(Effect.provide(LanguageModel.generateText({ prompt: "hi" }), context)),
  stream: () => Effect.runPromise(Effect.provide(Stream.runDrain(LanguageModel.streamText({ prompt: "hi" })), context))
}
const out = []
for (const [name, f] of Object.entries(rows)) {
  for (let i = 0; i < 500; i++) await f()
  collect()
  const c0 = process.cpuUsage()
  const { bytes } = await allocated(async () => { for (let i = 0; i < N; i++) await f() })
  const c = process.cpuUsage(c0)
  out.push(`${name} ${((c.user + c.system) / N).toFixed(1)} µs ${(bytes / N / 1024).toFixed(2)} KB`)
}
console.log(`${path.basename(dir)} ${out.join(" | ")} load ${os.loadavg()[0].toFixed(2)}`)
