/**
 * Benchmark 9: a hard budget shared through PostgreSQL. Reserve + settle per second on one hot budget, in
 * one process, through `PgBudget` (slices leased from the database, reservations served in memory) against
 * a round trip per reservation (one conditional `UPDATE … RETURNING` to reserve, one to settle: the naive
 * shared budget), side by side, interleaved. The server is a throwaway PostgreSQL on loopback
 * (`@rein/postgres/testing/TestServer`, fsync off), so the round trip is the cheapest it can be.
 */
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { PgBudget } from "@rein/postgres"
import { TestServer } from "@rein/postgres/testing"
import { Effect, Exit, Layer, Redacted, Scope } from "effect"
import type { Benchmark, Contender, RunOptions, Section } from "./harness.js"
import { fmtNs, fmtRatio, interleave, table } from "./harness.js"

const WORST = 0.001 // dollars per reservation
const ACTUAL = 0.0004

const run = async (options: RunOptions): Promise<Section> => {
  const scope = Effect.runSync(Scope.make())
  try {
    const server = await Effect.runPromise(Scope.extend(TestServer.start, scope))
    const layer = PgClient.layer({ url: Redacted.make(server.url), maxConnections: 4 })
    const context = await Effect.runPromise(Scope.extend(Layer.buildWithScope(layer, scope), scope))
    const provide = <A, E>(effect: Effect.Effect<A, E, SqlClient.SqlClient | Scope.Scope>) =>
      Effect.runPromise(Effect.provide(Scope.extend(effect, scope), context))
    const budget = await provide(PgBudget.make({ name: "bench-slices", cost: 1e9 }))
    const sql = await provide(SqlClient.SqlClient)
    await provide(PgBudget.make({ name: "bench-round-trip", cost: 1e9 }))
    const nanos = (dollars: number) => Math.round(dollars * 1e9)

    const sliced = (n: number) =>
      Effect.runPromise(Effect.gen(function*() {
        for (let i = 0; i < n; i++) {
          const hold = yield* budget.reserve({ cost: WORST, tokens: null })
          yield* budget.settle(hold, { cost: ACTUAL, tokens: 0 })
        }
      }))
    const roundTrip = (n: number) =>
      Effect.runPromise(Effect.gen(function*() {
        for (let i = 0; i < n; i++) {
          const rows = yield* sql`UPDATE rein_budgets SET cost_spent = cost_spent + ${nanos(WORST)}
            WHERE name = 'bench-round-trip' AND cost_cap - cost_spent - cost_leased >= ${nanos(WORST)} RETURNING name`
          if (rows.length !== 1) return yield* Effect.dieMessage("round-trip budget refused")
          yield* sql`UPDATE rein_budgets SET cost_spent = cost_spent - ${nanos(WORST)} + ${nanos(ACTUAL)}
            WHERE name = 'bench-round-trip'`
        }
      }))
    const contenders: ReadonlyArray<Contender> = [
      { name: "PgBudget: slices, reservations in memory", run: sliced },
      { name: "a round trip per reservation (UPDATE to reserve, UPDATE to settle)", run: roundTrip }
    ]
    const timings = await interleave(contenders, {
      rounds: options.quick ? 2 : 7,
      sampleMillis: options.quick ? 100 : 400,
      log: options.log
    })
    const [slices, trips] = timings
    const perSecond = (ns: number) => Math.round(1e9 / ns).toLocaleString("en-US")
    const rows = timings.map((t) => [t.name, fmtNs(t.median), perSecond(t.median), fmtRatio(trips!.median / t.median)])
    const notes = [
      "One process, one hot budget, reserve then settle in a loop; median of interleaved rounds (ns per",
      "reserve + settle). PostgreSQL on loopback with fsync off: a real network round trip costs more."
    ].join("\n")
    return {
      markdown: `${notes}\n\n${table(["contender", "ns / reserve+settle", "per second", "vs round trip"], rows)}`,
      goals: [{
        benchmark: "9. shared budget on PostgreSQL",
        goal: "per-request overhead with slices under one database round trip",
        measured: `${fmtNs(slices!.median)} ns with slices, ${fmtNs(trips!.median)} ns with two round trips`,
        status: slices!.median < trips!.median / 2 ? "PASS" : "FAIL"
      }]
    }
  } finally {
    await Effect.runPromise(Scope.close(scope, Exit.void))
  }
}

export const sharedBudget: Benchmark = {
  id: 9,
  title: "Shared budget on PostgreSQL",
  requires: { module: "@rein/postgres", skipped: "skipped: @rein/postgres is not built" },
  run
}
