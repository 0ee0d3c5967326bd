// Core's budget laws — the same property suites the in-memory budget passes — run against PgBudget on a real
// PostgreSQL: each case gets a budget of its own name, leased through the database.
import { SqlClient } from "@effect/sql"
import { describe, layer } from "@effect/vitest"
import { BudgetLaws } from "@rein/core/testing"
import { Effect, FastCheck, Scope } from "effect"
import { PgBudget } from "../src/index.js"
import { available, fresh, PgLive } from "./pg.js"

// Each case opens a lease (a round trip or two): fewer runs than in memory, the same laws.
const RUNS = 15

describe.skipIf(!available)("the budget laws, against PgBudget on a real PostgreSQL", () => {
  layer(PgLive, { timeout: "120 seconds", excludeTestServices: true })((it) => {
    for (const [index, law] of BudgetLaws.laws(() => Effect.die("replaced per test")).entries()) {
      it.scoped(law.name, () =>
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          const scope = yield* Effect.scope
          const make: BudgetLaws.Make = (limits) =>
            PgBudget.make({ name: fresh("law"), ...limits }).pipe(
              Effect.provideService(SqlClient.SqlClient, sql),
              Scope.extend(scope),
              Effect.orDie
            )
          const cases = BudgetLaws.laws(make)[index]!.cases
          // Seeded: a failure names the case and reproduces.
          const samples = FastCheck.sample(cases, { numRuns: RUNS, seed: 20261202 })
          for (const check of samples) yield* check
        }))
    }
  })
})
