// A statement the server refuses is reported with the server's message and its SQLSTATE by every shared
// service (the budget, the health, the rate buckets under the run limits), as the batch's errors are: here its
// tables were dropped after the migrations ran, so each service's first statement fails (42P01).
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import { Migrations, PgBudget, PgHealth, PgRunLimits } from "../src/index.js"
import { TestServer } from "../src/testing.js"
import { available } from "./pg.js"

describe.skipIf(!available)("a refused statement's SQLSTATE", () => {
  it.live(
    "the budget, the health and the run limits' buckets name it in their Unavailable message",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const server = yield* TestServer.start
        const context = yield* Layer.build(PgClient.layer({ url: Redacted.make(server.url), maxConnections: 4 }))
        yield* Effect.provide(
          Effect.gen(function*() {
            const sql = yield* SqlClient.SqlClient
            yield* Migrations.run
            yield* sql`DROP TABLE rein_budgets, rein_health, rein_rate_buckets CASCADE`
          }),
          context
        )
        const budget = yield* Effect.flip(PgBudget.make({ name: "b", cost: 1 }).pipe(Effect.provide(context)))
        const health = yield* Effect.flip(PgHealth.make({ name: "h" }).pipe(Effect.provide(context)))
        const limits = yield* Effect.flip(
          PgRunLimits.make({ concurrency: 1, requestsPerMinute: 60 }, { name: "r" }).pipe(Effect.provide(context))
        )
        const refused: ReadonlyArray<
          { readonly error: { readonly reason: string; readonly message: string }; readonly table: string }
        > = [
          { error: budget, table: "rein_budgets" },
          { error: health, table: "rein_health" },
          { error: limits, table: "rein_rate_buckets" }
        ]
        for (const { error, table } of refused) {
          expect(error.reason).toBe("Unavailable")
          expect(error.message).toContain(`relation "${table}" does not exist (SQLSTATE 42P01)`)
        }
      })),
    120_000
  )
})
