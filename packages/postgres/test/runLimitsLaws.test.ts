// Batch's RunLimits laws — the same property suites the in-memory limits pass — run unchanged against
// PgRunLimits on a real PostgreSQL: each sample gets a run (and buckets) of its own name. The laws drive
// time with a TestClock, so these limits read Effect's Clock (`clock: "effect"`) where the default reads the
// database's; the statements are the same.
import { SqlClient } from "@effect/sql"
import { describe, layer } from "@effect/vitest"
import { RunLimitsLaws } from "@rein/batch/testing"
import { Effect } from "effect"
import { PgRunLimits } from "../src/index.js"
import { available, fresh, PgLive } from "./pg.js"

// Each sample opens leases and charges through the database: fewer samples than in memory, the same laws.
const RUNS = 20

describe.skipIf(!available)("the RunLimits laws, against PgRunLimits on a real PostgreSQL", () => {
  layer(PgLive, { timeout: "120 seconds", excludeTestServices: true })((it) => {
    for (const [index, law] of RunLimitsLaws.laws(() => Effect.die("replaced per test")).entries()) {
      it.effect(law.name, () =>
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          const make: RunLimitsLaws.Make = (config) =>
            // Heartbeats and polls a minute apart: the laws jump the TestClock by up to 20 s at a time, and each
            // jump would otherwise wake them for round trips that no law looks at.
            PgRunLimits.make(config, {
              name: fresh("law"),
              clock: "effect",
              heartbeatMillis: 60_000,
              ttlMillis: 180_000,
              pollMillis: 60_000
            }).pipe(
              Effect.provideService(SqlClient.SqlClient, sql)
            )
          yield* RunLimitsLaws.laws(make, { numRuns: RUNS })[index]!.check
        }), 120_000)
    }
  })
})
