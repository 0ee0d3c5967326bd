/**
 * One request inside one deadline and one budget: endpoint `primary` is overloaded (503) twice, Rein
 * retries it once with backoff, then falls back to `secondary`, which answers. The attempt records say
 * exactly what happened; nothing was sent over the network (scripted fake providers).
 *
 * Run: `pnpm build && node examples/dist/core/retry-and-fallback.js`
 */
import { Catalog, Contract, Fake, Rein } from "@rein/core"
import type { Outcome } from "@rein/core"
import { Effect } from "effect"

const catalog = Catalog.make({
  endpoints: [
    {
      id: "primary",
      provider: "fake",
      model: "big-model",
      capabilities: { contextWindow: 128_000, maxOutputTokens: 4_096, structuredOutput: true },
      prices: { inputTokens: 2e-6, outputTokens: 8e-6 }
    },
    {
      id: "secondary",
      provider: "fake",
      model: "small-model",
      capabilities: { contextWindow: 32_000, maxOutputTokens: 2_048, structuredOutput: true },
      prices: { inputTokens: 0.2e-6, outputTokens: 0.8e-6 }
    }
  ]
})

const contract = Contract.make({
  deadline: "5 seconds",
  attemptTimeout: "2 seconds",
  budget: { cost: 0.05, calls: 4 },
  candidates: ["primary", "secondary"],
  retry: { perEndpoint: 1, base: "100 millis", factor: 2, max: "1 second", jitter: 0.2 },
  requires: { structuredOutput: true },
  allowSimulated: true
})

const fake = Fake.make({
  primary: [Fake.fail("overloaded", { latency: "40 millis" })],
  secondary: [
    Fake.succeed({ text: "{\"summary\":\"ok\"}", latency: "60 millis", usage: { inputTokens: 900, outputTokens: 40 } })
  ]
})

/** The request, with its outcome printed as a small table. */
export const program: Effect.Effect<Outcome.Completion, Outcome.Terminal> = Rein.execute(
  { prompt: "Summarise the report as JSON", inputTokens: 900, maxOutputTokens: 400 },
  contract
)
  .pipe(
    Effect.tap((completion) =>
      Effect.sync(() => {
        console.log(`answer from ${completion.endpoint}: ${completion.text}`)
        console.log(`cost ${completion.cost}, attempts:`)
        for (const a of completion.attempts) {
          console.log(
            `  #${a.attempt} ${a.endpoint.padEnd(9)} ${a.role.padEnd(8)} ${a.status.padEnd(7)} ${a.failure ?? ""} ` +
              `start +${a.startMillis.toFixed(0)} ms, backoff after ${a.backoffMillis} ms`
          )
        }
      })
    ),
    Effect.provide(Rein.layer({ catalog, providers: { fake: fake.provider } }))
  )

if (process.argv[1]?.endsWith("retry-and-fallback.js")) Effect.runPromise(program)
