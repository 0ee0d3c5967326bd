/**
 * A child of benchmark 12: `node distributed-child.js <input as JSON>`. Connects, prints READY, waits for GO on
 * stdin, then either works on the run as one `PgWorker` (`mode: "worker"`) or runs the same items in one process
 * with `Batch.run` (`mode: "single"`), over core's Fake provider at a fixed latency. Prints `DONE <json>` with its
 * CPU time and what it did.
 */
import { PgClient } from "@effect/sql-pg"
import { Batch, Guardrails } from "@rein/batch"
import { Catalog, Contract, Fake, Rein } from "@rein/core"
import { PgWorker } from "@rein/postgres"
import { Effect, Redacted } from "effect"
import { identity, itemId, itemsOf, request } from "./distributed-items.js"

interface Input {
  readonly url: string
  readonly runId: string
  readonly items: number
  readonly concurrency: number
  readonly latencyMillis: number
  readonly mode: "worker" | "single"
}

const catalog = Catalog.make({
  endpoints: [{
    id: "fake/a",
    provider: "fake",
    model: "a",
    capabilities: { contextWindow: 100_000, maxOutputTokens: 1_000 },
    prices: { inputTokens: 1e-6, outputTokens: 2e-6, request: 0 }
  }]
})
const contract = Contract.make({ deadline: "5 minutes", candidates: ["fake/a"], allowSimulated: true })

const main = async () => {
  const input = JSON.parse(process.argv[2]!) as Input
  const fake = Fake.make({
    "fake/a": [
      Fake.succeed({
        text: "ok",
        latency: `${input.latencyMillis} millis`,
        usage: { inputTokens: 100, outputTokens: 50 }
      })
    ]
  })
  const items = itemsOf(input.items)
  const guardrails = Guardrails.make({ concurrency: input.concurrency })
  const go = new Promise<void>((resolve) =>
    process.stdin.on("data", (c: Buffer) => c.toString().includes("GO") && resolve())
  )
  const program = Effect.gen(function*() {
    yield* Effect.sync(() => void process.stdout.write("READY\n"))
    yield* Effect.promise(() => go)
    const cpu0 = process.cpuUsage()
    const t0 = performance.now()
    // When this worker's last record committed (ms after GO): the time it waited after it is its tail.
    let lastRecorded = 0
    const did = input.mode === "worker"
      ? yield* Effect.map(
        PgWorker.run({
          runId: input.runId,
          item: (index) => Effect.succeed(items[index]!),
          request,
          itemId,
          identity,
          contract,
          guardrails,
          leaseMillis: 10_000,
          onRecorded: () => Effect.sync(() => void (lastRecorded = performance.now() - t0))
        }),
        (s) => s.stats.succeeded
      )
      : yield* Effect.map(Batch.run(items, { contract, guardrails, request, itemId }), (s) => s.stats.succeeded)
    const cpu = process.cpuUsage(cpu0)
    const doneMillis = Math.round(performance.now() - t0)
    const last = Math.round(lastRecorded)
    yield* Effect.sync(() =>
      void process.stdout.write(
        `DONE ${JSON.stringify({ succeeded: did, cpuMicros: cpu.user + cpu.system, doneMillis, lastRecorded: last })}\n`
      )
    )
  })
  await Effect.runPromise(
    program.pipe(
      Effect.provide(Rein.layer({ catalog, providers: { fake: fake.provider }, health: false })),
      Effect.provide(PgClient.layer({ url: Redacted.make(input.url), maxConnections: 8 }))
    )
  )
  process.exit(0)
}

main().catch((e) => {
  process.stderr.write(`${String(e)}\n`)
  process.exit(1)
})
