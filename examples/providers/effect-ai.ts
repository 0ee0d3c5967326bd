/**
 * Rein over `@effect/ai`: any `LanguageModel` becomes a one-shot Rein provider. `EffectAiOpenAi.make` builds
 * `@effect/ai-openai`'s client on a guarded HTTP client (a retrying `transformClient` is refused at run
 * time) and sends each endpoint's model with Rein's output bound.
 *
 * The "OpenAI" here is the loopback fault server (it speaks the Responses API): the first model is
 * overloaded (529), so Rein falls back to the second, within one deadline and one budget.
 *
 * Run: `pnpm build && node examples/dist/providers/effect-ai.js`
 */
import { NodeHttpClient, NodeRuntime } from "@effect/platform-node"
import { Catalog, Contract, Rein } from "@rein/core"
import * as EffectAiOpenAi from "@rein/providers/EffectAiOpenAi"
import { FaultServer } from "@rein/providers/testing"
import { Console, Effect, Redacted } from "effect"

const endpoint = (id: string, model: string) => ({
  id,
  provider: "openai",
  model,
  capabilities: { contextWindow: 128_000, maxOutputTokens: 16_384 },
  prices: { inputTokens: 0.4e-6, outputTokens: 1.6e-6 }
})

const catalog = Catalog.make({ endpoints: [endpoint("openai/big", "gpt-big"), endpoint("openai/mini", "gpt-mini")] })

const contract = Contract.make({
  deadline: "10 seconds",
  attemptTimeout: "3 seconds",
  budget: { cost: 0.05, calls: 4 },
  candidates: ["openai/big", "openai/mini"],
  retry: { perEndpoint: 0 }
})

export const program = Effect.scoped(Effect.gen(function*() {
  const server = yield* FaultServer.make({
    scripts: { "gpt-big": [FaultServer.faults.overloaded], "gpt-mini": [FaultServer.ok({ text: "Bonjour." })] }
  })
  // Against api.openai.com, omit apiUrl; a key to a non-loopback http:// URL would be refused.
  const openai = yield* EffectAiOpenAi.make({ apiUrl: server.baseUrl, apiKey: Redacted.make("sk-example") })
  const completion = yield* Rein.execute(
    { prompt: "Say hello in French", inputTokens: 30, maxOutputTokens: 20 },
    contract
  )
    .pipe(Effect.provide(Rein.layer({ catalog, providers: { openai } })))
  yield* Console.log(`answer from ${completion.endpoint}: ${completion.text}`)
  for (const a of completion.attempts) {
    yield* Console.log(`  ${a.endpoint}: ${a.status} ${a.failure ?? ""} ${a.code ?? ""}`)
  }
  return completion
}))

// Run as a script (the platform layer is the caller's choice; here Node's HTTP client).
if (process.argv[1]?.endsWith("effect-ai.js")) program.pipe(Effect.provide(NodeHttpClient.layer), NodeRuntime.runMain)
