// EXPLAIN (ANALYZE, BUFFERS) of the lease and finish statements (as batchStatements.ts writes them, literals in
// place of parameters) at bench 12's row counts: 2,000 items, 512 leased and finished in groups of 16, 64 held
// by four owners. Not part of the bench.
//   [N=2000] [PRIOR=2] [ANALYZE=1] [OLDQ=1] node bench/ab/explain-lease.mjs
// N: the run's items; PRIOR: that many finished runs of 2,000 items first (bench 12's earlier runs on its one server); ANALYZE: the
// table analyzed before (the plans without statistics are the ones a fresh table gets); OLDQ: the lease's
// predicate as it was at 7987c0e (`state = 'pending' OR (state = 'leased' AND …)`).
import { PgClient } from "@effect/sql-pg"
import { SqlClient } from "@effect/sql"
import { Migrations, PgBatchRun } from "@rein/postgres"
import { TestServer } from "@rein/postgres/testing"
import { Effect, Redacted } from "effect"
import { identity, itemId, itemsOf, request } from "../dist/distributed-items.js"

const program = Effect.gen(function*() {
  const server = yield* TestServer.start
  const db = PgClient.layer({ url: Redacted.make(server.url), maxConnections: 2 })
  return yield* Effect.provide(Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* Migrations.run
    const lease = (owner, n, run = "x") => `WITH t AS (SELECT clock_timestamp() AS now), picked AS (
      SELECT item_id FROM rein_batch_items
      WHERE run_id = '${run}'
        AND ${
      process.env.OLDQ
        ? "(state = 'pending' OR (state = 'leased' AND lease_expires < (SELECT now FROM t)))"
        : "state <> 'done' AND (state <> 'leased' OR lease_expires < (SELECT now FROM t))"
    }
        AND (NOT true OR EXISTS (SELECT 1 FROM rein_batch_runs r WHERE r.run_id = '${run}'
          AND r.stop IS NULL AND (r.deadline_millis IS NULL
            OR (SELECT now FROM t) < r.started_at + r.deadline_millis * interval '1 millisecond')))
      ORDER BY idx LIMIT ${n} FOR UPDATE SKIP LOCKED)
    UPDATE rein_batch_items i SET state = 'leased', lease_owner = '${owner}',
      lease_token = nextval('rein_batch_lease_tokens'),
      lease_expires = (SELECT now FROM t) + interval '10 seconds',
      leased_at = (SELECT now FROM t), leases = i.leases + 1
    FROM picked WHERE i.run_id = '${run}' AND i.item_id = picked.item_id
    RETURNING i.item_id, i.lease_token::text AS lease_token`
    const finish = (rows, run = "x") => `WITH input AS (
      SELECT * FROM jsonb_to_recordset('${JSON.stringify(rows.map((r) => ({ item_id: r.item_id, token: r.lease_token, record: { itemId: r.item_id, outcome: "success", category: null, cost: 0.0001, text: "ok".repeat(20) } })))}'::jsonb) AS t(item_id text, token bigint, record jsonb)),
    locked AS MATERIALIZED (
      SELECT i.item_id FROM rein_batch_items i JOIN input ON i.item_id = input.item_id
      WHERE i.run_id = '${run}' AND i.state = 'leased' AND i.lease_token = input.token
      ORDER BY i.item_id FOR UPDATE OF i),
    done AS (
      UPDATE rein_batch_items i SET state = 'done', lease_owner = NULL, lease_expires = NULL,
        outcome = input.record->>'outcome', category = input.record->>'category',
        cost = CASE WHEN jsonb_typeof(input.record->'cost') = 'number' THEN (input.record->>'cost')::float8 END,
        finished_at = clock_timestamp()
      FROM locked, input WHERE i.run_id = '${run}' AND i.item_id = locked.item_id AND input.item_id = locked.item_id
        AND i.state = 'leased' AND i.lease_token = input.token
      RETURNING i.item_id, input.record)
    INSERT INTO rein_batch_records (run_id, item_id, record) SELECT '${run}', item_id, record FROM done
    RETURNING item_id`
    // PRIOR runs before, every item leased and finished (as bench 12's earlier runs on its one server).
    for (let p = 0; p < Number(process.env.PRIOR ?? 0); p++) {
      yield* PgBatchRun.start({ runId: `p${p}`, identity, resume: "none", items: itemsOf(2000), request, itemId })
      for (let g = 0; g < 125; g++) yield* sql.unsafe(finish(yield* sql.unsafe(lease(`o${g % 4}`, 16, `p${p}`)), `p${p}`))
    }
    yield* PgBatchRun.start({ runId: "x", identity, resume: "none", items: itemsOf(Number(process.env.N ?? 2000)), request, itemId })
    // 500 items leased and finished in groups of 16 (4 owners), then 64 held.
    for (let g = 0; g < 32; g++) {
      const rows = yield* sql.unsafe(lease(`o${g % 4}`, 16))
      yield* sql.unsafe(finish(rows))
    }
    for (let o = 0; o < 4; o++) yield* sql.unsafe(lease(`o${o}`, 16))
    if (process.env.ANALYZE) yield* sql.unsafe("ANALYZE rein_batch_items")
    const explain = (q) => Effect.map(sql.unsafe(`EXPLAIN (ANALYZE, BUFFERS, TIMING OFF) ${q}`), (rs) => rs.map((r) => r["QUERY PLAN"]).join("\n"))
    console.log(yield* explain(lease("a", 4)))
    const rows = yield* sql.unsafe(lease("b", 16))
    console.log(yield* explain(finish(rows)))
  }), db)
})
Effect.runPromise(Effect.scoped(program)).catch((e) => { console.error(e); process.exit(1) })
