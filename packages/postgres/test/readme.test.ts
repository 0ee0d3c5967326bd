// The README's "Turning it on" (packages/postgres/README.md, and the root README's section on many
// processes), compiled and run against a real PostgreSQL. The code between the markers is the READMEs',
// verbatim: a test below checks that both still show exactly it.
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { describe, expect, it } from "@effect/vitest"
import { Catalog, Contract, Fake, Rein } from "@rein/core"
import { PgBudget } from "@rein/postgres"
import { Config, ConfigProvider, Effect, Layer, Redacted } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { TestServer } from "../src/testing.js"
import { available } from "./pg.js"

const catalog = Catalog.make({
  endpoints: [{
    id: "fake/a",
    provider: "fake",
    model: "model-a",
    capabilities: { contextWindow: 8_000, maxOutputTokens: 1_000, tools: true, structuredOutput: true },
    prices: { inputTokens: 1e-6, outputTokens: 2e-6 }
  }]
})
const contract = Contract.make({ deadline: "30 seconds", candidates: ["fake/a"], allowSimulated: true })
const request = { prompt: "Summarise the incident report", inputTokens: 2_000, maxOutputTokens: 500 }

// --- README example starts here ---
// Every process that uses the name "nightly" shares one $10 / 2,000-call budget.
const SharedBudgetLive = PgBudget.layer({ name: "nightly", cost: 10, calls: 2000 }).pipe(
  Layer.provide(PgClient.layerConfig({ url: Config.redacted("DATABASE_URL") }))
)

const answer = Rein.execute(request, contract).pipe(
  Effect.catchTag("BudgetExhausted", (e) =>
    // `unavailable`: the database could not be reached and the slice in hand did not cover the call.
    Effect.fail(e.unavailable === true ? "budget store unreachable" : `${e.resource} budget spent`)),
  Effect.provide(SharedBudgetLive)
)
// --- README example ends here ---

const readmeSnippet = (): string => {
  const source = fs.readFileSync(fileURLToPath(import.meta.url), "utf8")
  const start = source.indexOf("// --- README example starts here ---\n")
  const end = source.indexOf("// --- README example ends here ---")
  return source.slice(start + "// --- README example starts here ---\n".length, end)
}

const here = path.dirname(fileURLToPath(import.meta.url))

describe.skipIf(!available)("README: many processes, one budget", () => {
  it.live(
    "the request runs against the shared budget; closing the layer charges what it spent",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const server = yield* TestServer.start
        const fake = Fake.make({
          "fake/a": [Fake.succeed({ text: "ok", usage: { inputTokens: 2_000, outputTokens: 100 } })]
        })
        const config = ConfigProvider.fromMap(new Map([["DATABASE_URL", server.url]]))
        const completion = yield* answer.pipe(
          Effect.provide(Rein.layer({ catalog, providers: { fake: fake.provider } })),
          Effect.provide(Layer.setConfigProvider(config))
        )
        expect(completion.text).toBe("ok")
        // The layer is closed: its lease is gone and the call is charged as spent, at its actual cost.
        const rows = yield* Effect.flatMap(SqlClient.SqlClient, (sql) =>
          sql<{ readonly cost: number; readonly calls: number; readonly leases: number }>`SELECT
          cost_spent::float8 AS cost, calls_spent::float8 AS calls,
          (SELECT COUNT(*) FROM rein_budget_leases)::float8 AS leases FROM rein_budgets WHERE name = 'nightly'`).pipe(
            Effect.provide(PgClient.layer({ url: Redacted.make(server.url) }))
          )
        expect(rows).toEqual([{ cost: (2_000 * 1e-6 + 100 * 2e-6) * 1e9, calls: 1, leases: 0 }])
      })),
    60_000
  )

  it("every ts block of this package's README is compiled: the block run above, or a file of test/readme/", () => {
    const readme = fs.readFileSync(path.join(here, "../README.md"), "utf8")
    const blocks = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!)
    const files = fs.readdirSync(path.join(here, "readme")).map((f) =>
      fs.readFileSync(path.join(here, "readme", f), "utf8")
    )
    expect(blocks.length).toBeGreaterThan(1)
    for (const block of blocks) {
      expect(block.includes(readmeSnippet()) || files.includes(block), block).toBe(true)
    }
  })

  it("both READMEs show this code verbatim", () => {
    const snippet = readmeSnippet()
    for (const readme of [path.join(here, "../README.md"), path.join(here, "../../../README.md")]) {
      expect(fs.readFileSync(readme, "utf8"), readme).toContain(snippet)
    }
  })
})
