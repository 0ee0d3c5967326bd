/**
 * Why did that attempt happen? A request runs with an in-memory journal: endpoint `a` answers 429 with
 * Retry-After 30 s, which cannot fit the 10 s deadline, so Rein falls back — skipping `c`, whose worst-case
 * cost does not fit the budget — to `b`. Then the journal is replayed (every decision reproduced byte for
 * byte) and explained.
 *
 * Run: `pnpm build && node examples/dist/core/journal-explain.js`
 */
import { Catalog, Contract, Fake, Journal, Rein } from "@rein/core"
import type { Outcome } from "@rein/core"
import { Effect, Either, Layer } from "effect"

const endpoint = (id: string, price: number) => ({
  id,
  provider: "fake",
  model: id,
  capabilities: { contextWindow: 8_000, maxOutputTokens: 500 },
  prices: { inputTokens: price, outputTokens: price }
})

const catalog = Catalog.make({ endpoints: [endpoint("a", 1e-6), endpoint("c", 1e-3), endpoint("b", 1e-6)] })
const contract = Contract.make({
  deadline: "10 seconds",
  candidates: ["a", "c", "b"],
  budget: { cost: 0.01 },
  allowSimulated: true
})
const fake = Fake.make({ a: [Fake.fail("rate_limited", { retryAfter: "30 seconds" })], b: [Fake.succeed()] })

/** Executes, then replays and explains the journal. Returns the explanation text. */
export const program: Effect.Effect<string, Outcome.Terminal> = Effect.gen(function*() {
  yield* Rein.execute({ id: "example-1", prompt: "hello", inputTokens: 100, maxOutputTokens: 100 }, contract)
  const [record] = yield* Effect.flatMap(Journal.MemoryJournal, (j) => j.records)
  const replayed = Journal.replay(record!)
  console.log(
    Either.isRight(replayed)
      ? `replay: ${replayed.right} decisions reproduced`
      : `replay mismatch: ${replayed.left.field}`
  )
  const { text } = Journal.explain(record!)
  console.log(text)
  return text
}).pipe(
  Effect.provide(Layer.mergeAll(Rein.layer({ catalog, providers: { fake: fake.provider } }), Journal.layerMemory))
)

if (process.argv[1]?.endsWith("journal-explain.js")) Effect.runPromise(program)
