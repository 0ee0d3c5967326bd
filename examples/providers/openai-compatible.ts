/**
 * Rein over a local OpenAI-compatible server (vLLM, Ollama, llama.cpp, …). Here the server is Rein's own
 * loopback fault server, scripted to answer 429 with `retry-after-ms` once and then succeed: Rein waits
 * exactly what the server asked (inside the deadline), retries, and records why.
 *
 * Then the same request as a stream: deltas from the one committed endpoint, then the completion.
 *
 * Run: `pnpm build && node examples/dist/providers/openai-compatible.js`
 */
import { NodeHttpClient, NodeRuntime } from "@effect/platform-node"
import { Catalog, Contract, Rein } from "@rein/core"
import { OpenAiCompatible } from "@rein/providers"
import { FaultServer } from "@rein/providers/testing"
import { Console, Effect, Stream } from "effect"

const catalog = Catalog.make({
  endpoints: [
    {
      id: "local/llama",
      provider: "local",
      model: "llama3.1:8b",
      capabilities: { contextWindow: 8_192, maxOutputTokens: 1_024, streaming: true },
      prices: { inputTokens: 0, outputTokens: 0 }
    }
  ]
})

const contract = Contract.make({
  deadline: "10 seconds",
  attemptTimeout: "3 seconds",
  candidates: ["local/llama"],
  retry: { perEndpoint: 2, base: "50 millis", jitter: 0 }
})

export const program = Effect.scoped(Effect.gen(function*() {
  const server = yield* FaultServer.make({
    faults: [FaultServer.rateLimited({ retryAfterMillis: 150 }), FaultServer.ok({ text: "Paris." })]
  })
  // A real deployment would pass e.g. `http://127.0.0.1:11434/v1` (loopback: no https needed).
  const local = yield* OpenAiCompatible.make({ baseUrl: server.baseUrl })
  const layer = Rein.layer({ catalog, providers: { local }, health: false })

  const completion = yield* Rein.execute(
    { prompt: "Capital of France?", inputTokens: 20, maxOutputTokens: 50 },
    contract
  )
    .pipe(Effect.provide(layer))
  yield* Console.log(`answer: ${completion.text} (usage ${JSON.stringify(completion.usage)})`)
  for (const a of completion.attempts) {
    yield* Console.log(`  attempt ${a.attempt} ${a.status} ${a.failure ?? ""} waited-after ${a.backoffMillis} ms`)
  }

  yield* server.enqueue(FaultServer.ok({ deltas: ["Once ", "upon ", "a ", "time."] }))
  yield* Rein.executeStream({ prompt: "Tell me a story", inputTokens: 20, maxOutputTokens: 50 }, contract).pipe(
    Stream.runForEach((event) =>
      event._tag === "Delta"
        ? Console.log(`  delta: ${JSON.stringify(event.text)}`)
        : Console.log(`  completed on ${event.completion.endpoint}`)
    ),
    Effect.provide(layer)
  )
  return completion
}))

// Run as a script (the platform layer is the caller's choice; here Node's HTTP client).
if (process.argv[1]?.endsWith("openai-compatible.js")) {
  program.pipe(Effect.provide(NodeHttpClient.layer), NodeRuntime.runMain)
}
