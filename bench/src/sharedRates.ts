/**
 * Benchmark 10: rate limits shared through PostgreSQL. Admit + release per second on one hot pair of buckets
 * (requests and tokens per minute), in one process: batch's in-memory `RunLimits` (the floor: no sharing),
 * `PgRunLimits` (slices leased from the database, admissions served in memory), and a round trip per
 * admission (one conditional `UPDATE … RETURNING` that refills and takes: the naive shared bucket), side by
 * side, interleaved. The buckets are large enough (6e9 requests and 6e11 tokens a minute: a loop admitting every
 * microsecond drains 6e6 requests in seconds, as a quiet run showed) that none of them waits: this measures the cost of an admission, not the limit. The server is a throwaway
 * PostgreSQL on loopback (`@rein/postgres/testing/TestServer`, fsync off).
 */
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { RunLimits } from "@rein/batch"
import { PgRunLimits } from "@rein/postgres"
import { TestServer } from "@rein/postgres/testing"
import { Effect, Exit, Layer, Redacted, Scope } from "effect"
import type { Benchmark, Contender, RunOptions, Section } from "./harness.js"
import { fmtNs, fmtRatio, interleave, table } from "./harness.js"

const CONFIG: RunLimits.Config = {
  concurrency: 1,
  requestsPerMinute: 6_000_000_000,
  tokensPerMinute: 600_000_000_000
}
const TOKENS = 1_200

const admitLoop = (limits: RunLimits.Service) => (n: number) =>
  Effect.runPromise(Effect.gen(function*() {
    for (let i = 0; i < n; i++) {
      const admission = yield* limits.admit("fake/a", TOKENS)
      if (admission._tag !== "Hold") return yield* Effect.dieMessage(`waited ${admission.millis} ms`)
      yield* limits.release(admission, TOKENS)
    }
  }))

const run = async (options: RunOptions): Promise<Section> => {
  const scope = Effect.runSync(Scope.make())
  try {
    const server = await Effect.runPromise(Scope.extend(TestServer.start, scope))
    const layer = PgClient.layer({ url: Redacted.make(server.url), maxConnections: 4 })
    const context = await Effect.runPromise(Scope.extend(Layer.buildWithScope(layer, scope), scope))
    const provide = <A, E>(effect: Effect.Effect<A, E, SqlClient.SqlClient | Scope.Scope>) =>
      Effect.runPromise(Effect.provide(Scope.extend(effect, scope), context))
    const shared = await provide(PgRunLimits.make(CONFIG, { name: "bench-rates", rateKey: "bench-rates" }))
    const memory = await Effect.runPromise(RunLimits.memory(CONFIG))
    const sql = await provide(SqlClient.SqlClient)
    // The naive bucket: its own rows (created full), one statement per admission for each of the two buckets.
    await provide(PgRunLimits.make(CONFIG, { name: "bench-naive", rateKey: "bench-naive" }))
    const take = (key: string, amount: number) =>
      sql`WITH t AS (SELECT (extract(epoch from clock_timestamp()) * 1000)::float8 AS now)
        UPDATE rein_rate_buckets b SET level = LEAST(b.capacity, b.level + GREATEST(0, t.now - b.refilled_at) * b.per_ms)
          - ${amount}::float8, refilled_at = GREATEST(b.refilled_at, t.now)
        FROM t WHERE b.key = ${key}
          AND LEAST(b.capacity, b.level + GREATEST(0, t.now - b.refilled_at) * b.per_ms) >= ${amount}::float8
        RETURNING b.level`
    const roundTrip = (n: number) =>
      Effect.runPromise(Effect.gen(function*() {
        for (let i = 0; i < n; i++) {
          const requests = yield* take("requests:bench-naive", 1)
          const tokens = yield* take("tokens:bench-naive", TOKENS)
          if (requests.length !== 1 || tokens.length !== 1) return yield* Effect.dieMessage("naive bucket refused")
        }
      }))
    const contenders: ReadonlyArray<Contender> = [
      { name: "RunLimits.memory (per process, not shared)", run: admitLoop(memory) },
      { name: "PgRunLimits: slices, admissions in memory", run: admitLoop(shared) },
      { name: "a round trip per admission (one UPDATE per bucket)", run: roundTrip }
    ]
    const timings = await interleave(contenders, {
      rounds: options.quick ? 2 : 7,
      sampleMillis: options.quick ? 100 : 400,
      log: options.log
    })
    const [floor, slices, trips] = timings
    const perSecond = (ns: number) => Math.round(1e9 / ns).toLocaleString("en-US")
    const rows = timings.map((t) => [
      t.name,
      fmtNs(t.median),
      `${fmtNs(t.min)}–${fmtNs(t.max)}`,
      perSecond(t.median),
      fmtRatio(t.median / floor!.median)
    ])
    const notes = [
      "One process, one hot pair of buckets, admit then release in a loop; median of interleaved rounds (ns per",
      "admit + release), min–max beside it. PostgreSQL on loopback with fsync off: a real network round trip costs",
      "more. PgRunLimits leases 5% of a bucket per top-up, so nearly every admission is served from its slice."
    ].join("\n")
    return {
      markdown: `${notes}\n\n${
        table(["contender", "ns / admit+release", "min–max", "per second", "vs in memory"], rows)
      }`,
      goals: [{
        benchmark: "10. shared rate limits on PostgreSQL",
        goal: "per-admission overhead with slices under one database round trip",
        measured: `${fmtNs(slices!.median)} ns with slices, ${fmtNs(trips!.median)} ns with a round trip per bucket`,
        status: slices!.median < trips!.median / 2 ? "PASS" : "FAIL"
      }]
    }
  } finally {
    await Effect.runPromise(Scope.close(scope, Exit.void))
  }
}

export const sharedRates: Benchmark = {
  id: 10,
  title: "Shared rate limits on PostgreSQL",
  requires: { module: "@rein/postgres", skipped: "skipped: @rein/postgres is not built" },
  run
}
