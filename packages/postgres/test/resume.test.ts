// A new session of a run applies its resume policy over the run's records without holding them: it reads them a
// page at a time and keeps what they make reusable in the database. The heap the process holds while it restarts
// a run of 30,000 records (of about 1 KB each) stays within a bound far below what holding them takes.
import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Fiber, Layer, Schedule } from "effect"
import * as v8 from "node:v8"
import { runInNewContext } from "node:vm"
import { Migrations, PgBatchRun } from "../src/index.js"
import { identity, itemsOf, request } from "./fixtures/batch-items.js"
import type { Item } from "./fixtures/batch-items.js"
import { available, fresh, PgLive } from "./pg.js"

const Live = Layer.tap(PgLive, (ctx) => Effect.provide(Migrations.run, ctx))

const options = (runId: string, items: Iterable<Item>) => ({
  runId,
  identity,
  resume: "reuse-successes" as const,
  items,
  request,
  itemId: (item: Item) => item.id
})

/**
 * Every item done, with a record of about 1 KB of result: a success, but a failure for every tenth item and,
 * for every seventh, a success under another identity (neither is reused under `reuse-successes`).
 */
const finishAll = (sql: SqlClient.SqlClient, runId: string) =>
  Effect.gen(function*() {
    yield* sql`INSERT INTO rein_batch_records (run_id, item_id, record)
      SELECT i.run_id, i.item_id, jsonb_build_object('kind', 'item', 'itemId', i.item_id, 'index', i.idx,
        'promptFingerprint', i.prompt_fingerprint, 'inputFingerprint', i.input_fingerprint,
        'identityFingerprint', CASE WHEN i.idx % 7 = 3 THEN 'another' ELSE r.identity_fingerprint END,
        'outcome', CASE WHEN i.idx % 10 = 0 THEN 'failure' ELSE 'success' END,
        'category', CASE WHEN i.idx % 10 = 0 THEN 'rate_limited' ELSE 'ok' END, 'reusable', true,
        'usage', jsonb_build_object('inputTokens', 100, 'outputTokens', 50), 'cost', 0.001, 'attempts', 1,
        'durationMillis', 5, 'result', repeat(md5(i.item_id), 32))
      FROM rein_batch_items i JOIN rein_batch_runs r ON r.run_id = i.run_id WHERE i.run_id = ${runId}
      ORDER BY i.idx`
    yield* sql`UPDATE rein_batch_items SET state = 'done' WHERE run_id = ${runId}`
    yield* sql`UPDATE rein_batch_runs SET status = 'finished' WHERE run_id = ${runId}`
  })

// A full collection on demand (the flag set now makes `gc` a global of a new context).
v8.setFlagsFromString("--expose-gc")
const gc = runInNewContext("gc") as () => void

/**
 * The most `effect` adds to the heap the process holds: a full collection every 50 ms while it runs, and the
 * heap each one left, less the heap left before it started.
 */
const heldBy = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const live = () => {
      gc()
      return process.memoryUsage().heapUsed
    }
    const before = live()
    let most = before
    let samples = 0
    const sampler = yield* Effect.fork(Effect.repeat(
      Effect.sync(() => {
        most = Math.max(most, live())
        samples++
      }),
      Schedule.spaced("50 millis")
    ))
    const value = yield* Effect.ensuring(effect, Fiber.interrupt(sampler))
    return { value, samples, held: most - before }
  })

describe.skipIf(!available)("a new session's resume policy (PgBatchRun.start on a run that ended)", () => {
  layer(Live, { timeout: "300 seconds", excludeTestServices: true })((it) => {
    it.effect(
      "reads the run's records a page at a time: the heap it holds is bounded, not the records'",
      () =>
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          const runId = fresh("resume")
          const n = 30_000
          const items = itemsOf(n, [])
          yield* PgBatchRun.start(options(runId, items))
          yield* finishAll(sql, runId)
          const bytes = yield* sql<{ readonly bytes: number }>`SELECT sum(pg_column_size(record))::float8 AS bytes
          FROM rein_batch_records WHERE run_id = ${runId}`
          expect(bytes[0]!.bytes).toBeGreaterThan(n * 1_000)

          const { held, samples, value } = yield* heldBy(PgBatchRun.start(options(runId, items)))
          // Reused: the successes under this identity; run again: the failures and the other identity's.
          const again = items.filter((_, i) => i % 10 === 0 || i % 7 === 3).length
          expect(value).toEqual({ runId, session: "restarted", items: n, reopened: again })
          expect((yield* PgBatchRun.status(runId)).items).toMatchObject({ pending: again, done: n - again })
          // The heap was sampled while the restart ran (at least twice: a fast machine restarts in well under a second).
          expect(samples).toBeGreaterThanOrEqual(2)
          // Holding the records decoded takes tens of MB (measured: 78 MB held at 50,000 records, 155 MB at 100,000
          // before the pages; 6–7 MB at 100,000 after); one page of 2,000, a few.
          expect(held).toBeLessThan(24 * 1024 * 1024)
        }),
      300_000
    )
  })
})
