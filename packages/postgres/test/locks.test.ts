// Row-lock order of the distributed batch's statements: a worker's heartbeat (every lease it holds) and its
// terminal group writes (`finish`, from the fence or the sweep) and its release lock the same item rows, on
// different connections at once; they must take them in one order, or PostgreSQL aborts one with a deadlock
// (40P01). And a statement that lost to a deadlock or a serialization failure is retried.
import { SqlClient } from "@effect/sql"
import type { SqlError } from "@effect/sql/SqlError"
import { describe, expect, layer } from "@effect/vitest"
import { Resume } from "@rein/batch"
import { Contract } from "@rein/core"
import { Deferred, Effect, Either, Fiber, Layer, Schedule, Stream } from "effect"
import { Migrations, PgBatchRun } from "../src/index.js"
import * as Q from "../src/internal/batchStatements.js"
import { describe as describeError, retryConflicts } from "../src/internal/sqlError.js"
import { unavailable } from "../src/PgBatchRun.js"
import { identity, itemsOf, request } from "./fixtures/batch-items.js"
import { available, fresh, PgLive } from "./pg.js"

const contract = Contract.make({ deadline: "1 minute", candidates: ["fake/a"], allowSimulated: true })

const Live = Layer.tap(PgLive, (ctx) => Effect.provide(Migrations.run, ctx))

// A terminal's record is its JSON text (as the fence queues it).
const recordOf = (row: Q.LeaseRow) =>
  JSON.stringify(Resume.makeRecord({
    itemId: row.item_id,
    index: row.idx,
    promptFingerprint: row.prompt_fingerprint,
    inputFingerprint: row.input_fingerprint,
    identityFingerprint: "id",
    outcome: "failure",
    category: "batch_aborted",
    usage: { inputTokens: 0, outputTokens: 0 },
    cost: 0,
    attempts: 0,
    durationMillis: 0,
    error: null
  }))

// Provokes a deadlock whose victim is the first attempt of `victim`, deterministically: the other transaction
// locks x and then waits (its deadlock timeout is a minute) for y, which the victim holds; the victim, once the
// other waits, asks for x, and its own deadlock check (10 ms later) finds the cycle. Answers the outcome of
// `wrap(victim)` and how many attempts the victim made.
const provoke = <E>(
  wrap: (victim: Effect.Effect<void, SqlError, SqlClient.SqlClient>) => Effect.Effect<void, E, SqlClient.SqlClient>
) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const table = sql(fresh("probe").replaceAll("-", "_"))
    yield* sql`CREATE TABLE ${table} (id text PRIMARY KEY)`
    yield* sql`INSERT INTO ${table} VALUES ('x'), ('y')`
    const holdsX = yield* Deferred.make<void>()
    const holdsY = yield* Deferred.make<void>()
    const other = yield* Effect.fork(sql.withTransaction(Effect.gen(function*() {
      yield* sql`SET LOCAL deadlock_timeout = '1min'`
      yield* sql`SELECT id FROM ${table} WHERE id = 'x' FOR UPDATE`
      yield* Deferred.succeed(holdsX, undefined)
      yield* Deferred.await(holdsY)
      yield* sql`SELECT id FROM ${table} WHERE id = 'y' FOR UPDATE`
    })))
    yield* Deferred.await(holdsX)
    // `pg_locks` is read afresh at each call, also inside a transaction.
    const waiting = sql<{ readonly n: number }>`SELECT count(*)::int AS n FROM pg_locks WHERE NOT granted`
    let attempts = 0
    const victim = sql.withTransaction(Effect.gen(function*() {
      attempts++
      yield* sql`SET LOCAL deadlock_timeout = '10ms'`
      yield* sql`SELECT id FROM ${table} WHERE id = 'y' FOR UPDATE`
      if (attempts === 1) {
        yield* Deferred.succeed(holdsY, undefined)
        yield* Effect.repeat(waiting, { until: (rows) => rows[0]!.n > 0, schedule: Schedule.spaced("5 millis") })
      }
      yield* sql`SELECT id FROM ${table} WHERE id = 'x' FOR UPDATE`
    }))
    const outcome = yield* Effect.either(wrap(victim))
    yield* Fiber.join(other)
    return { outcome, attempts }
  })

type Item = { readonly id: string; readonly text: string }

// A join that loses to a deadlock, deterministically: the run's two items are done, submitted in descending id
// order; the join changes both inputs, one item per chunk. Another transaction (a worker's) holds item-1 until
// the join waits for it, then asks for the run row, which the join holds: a cycle, whose victim is the join
// (its deadlock check comes first: the other's is a minute away). Answers the join's outcome and the items'
// states after it.
const deadlockedJoin = (source: (items: ReadonlyArray<Item>) => Iterable<Item> | Stream.Stream<Item, Error>) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const runId = fresh("victim")
    const items = [{ id: "item-2", text: "two" }, { id: "item-1", text: "one" }]
    const start = (texts: Iterable<Item> | Stream.Stream<Item, Error>) =>
      PgBatchRun.start({
        runId,
        identity,
        resume: "none",
        items: texts,
        submitChunk: 1,
        request,
        itemId: (i) => i.id,
        contract
      })
    yield* start(items)
    const rows = yield* Q.lease(sql, runId, "w", 2, 60_000, true)
    yield* Q.finish(
      sql,
      runId,
      rows.map((row) => ({ itemId: row.item_id, token: row.lease_token, record: recordOf(row) }))
    )
    const holds = yield* Deferred.make<void>()
    const join = yield* Effect.fork(
      Effect.zipRight(Deferred.await(holds), start(source(items.map((i) => ({ ...i, text: `${i.text}, changed` })))))
    )
    const waiting = sql<{ readonly n: number }>`SELECT count(*)::int AS n FROM pg_locks WHERE NOT granted`
    yield* sql.withTransaction(Effect.gen(function*() {
      yield* sql`SET LOCAL deadlock_timeout = '1min'`
      yield* sql`SELECT item_id FROM rein_batch_items WHERE run_id = ${runId} AND item_id = 'item-1' FOR UPDATE`
      yield* Deferred.succeed(holds, undefined)
      yield* Effect.repeat(waiting, { until: (r) => r[0]!.n > 0, schedule: Schedule.spaced("5 millis") })
      yield* Q.countFenced(sql, runId, 0)
    }))
    const joined = yield* Effect.either(Fiber.join(join))
    const after = yield* sql<{ readonly state: string }>`SELECT state FROM rein_batch_items
      WHERE run_id = ${runId} ORDER BY item_id`
    return { runId, joined, after: after.map((r) => r.state) }
  })

describe.skipIf(!available)("row-lock order of the batch statements", () => {
  layer(Live, { timeout: "120 seconds", excludeTestServices: true })((it) => {
    it.effect(
      "heartbeats and group writes of one worker on the same rows never deadlock",
      () =>
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          const n = 1_000
          const items = itemsOf(n, [])
          for (let round = 0; round < 3; round++) {
            const runId = fresh("locks")
            yield* PgBatchRun.start({ runId, identity, resume: "none", items, request, itemId: (i) => i.id, contract })
            const rows = yield* Q.lease(sql, runId, "w", n, 60_000, true)
            expect(rows.length).toBe(n)
            // Groups in descending index order: the opposite of the order the heartbeat's scan meets them.
            const groups: Array<Array<Q.Terminal>> = []
            const sorted = [...rows].sort((a, b) => b.idx - a.idx)
            for (let i = 0; i < sorted.length; i += 100) {
              groups.push(
                sorted.slice(i, i + 100).map((row) => ({
                  itemId: row.item_id,
                  token: row.lease_token,
                  record: recordOf(row)
                }))
              )
            }
            // Two heartbeats beat without pause for as long as the groups are being written.
            let writing = true
            const beats = Effect.repeat(Q.heartbeat(sql, runId, "w", 60_000), { while: () => writing })
            const writes = Effect.ensuring(
              Effect.forEach(groups, (g) => Q.finish(sql, runId, g), { concurrency: 1 }),
              Effect.sync(() => (writing = false))
            )
            yield* Effect.all([beats, beats, writes], { concurrency: "unbounded" })
            const done = yield* sql<{ readonly n: number }>`SELECT count(*)::int AS n FROM rein_batch_items
            WHERE run_id = ${runId} AND state = 'done'`
            expect(done[0]!.n).toBe(n)
          }
        }),
      120_000
    )
    it.effect(
      "a start joining a running run and its workers' group writes never deadlock",
      () =>
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          const n = 1_000
          // Ids in the opposite order of the submission: a start meets rows in submission order, `finish` by id.
          const items = itemsOf(n, []).map((item, i) => ({ ...item, id: `item-${String(n - i).padStart(5, "0")}` }))
          for (let round = 0; round < 3; round++) {
            const runId = fresh("join")
            const start = PgBatchRun.start({
              runId,
              identity,
              resume: "none",
              items,
              request,
              itemId: (i) => i.id,
              contract
            })
            yield* start
            const rows = yield* Q.lease(sql, runId, "w", n, 60_000, true)
            const sorted = [...rows].sort((a, b) => b.idx - a.idx)
            const groups: Array<Array<Q.Terminal>> = []
            for (let i = 0; i < sorted.length; i += 100) {
              groups.push(
                sorted.slice(i, i + 100).map((row) => ({
                  itemId: row.item_id,
                  token: row.lease_token,
                  record: recordOf(row)
                }))
              )
            }
            // Another process joins the run (submits the same items, holding the run row) while the groups commit.
            const writes = Effect.forEach(groups, (g) => Q.finish(sql, runId, g), { concurrency: 1 })
            const [joined] = yield* Effect.all([start, writes], { concurrency: "unbounded" })
            expect(joined.session).toBe("joined")
            const done = yield* sql<{ readonly n: number }>`SELECT count(*)::int AS n FROM rein_batch_items
            WHERE run_id = ${runId} AND state = 'done'`
            expect(done[0]!.n).toBe(n)
          }
        }),
      120_000
    )

    // With one item per chunk, a join that locked a chunk's rows in id order still locked item-2 (its first
    // chunk) before item-1 (its second).
    it.effect.each([2_000, 1])(
      "a join that changes inputs locks their rows in id order (%i per chunk): a worker's group write holding the first never deadlocks",
      (submitChunk) =>
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          const runId = fresh("changed")
          // Submitted in descending id order: a join that updated in submission order locked item-2 first.
          const items = [{ id: "item-2", text: "two" }, { id: "item-1", text: "one" }]
          const start = (texts: ReadonlyArray<typeof items[number]>) =>
            PgBatchRun.start({
              runId,
              identity,
              resume: "none",
              items: texts,
              submitChunk,
              request,
              itemId: (i) => i.id,
              contract
            })
          yield* start(items)
          const rows = yield* Q.lease(sql, runId, "w", 2, 60_000, true)
          const terminals = rows.map((row) => ({ itemId: row.item_id, token: row.lease_token, record: recordOf(row) }))
          // Another process joins with both inputs changed, once the worker holds item-1.
          const holds = yield* Deferred.make<void>()
          const join = yield* Effect.fork(
            Effect.zipRight(Deferred.await(holds), start(items.map((i) => ({ ...i, text: `${i.text}, changed` }))))
          )
          const waiting = sql<{ readonly n: number }>`SELECT count(*)::int AS n FROM pg_locks WHERE NOT granted`
          // The worker's group write, in one transaction: it holds item-1 (the first in id order) until the join
          // waits for a row, then writes both. A join that held item-2 and waited for item-1 made a cycle: this
          // transaction's deadlock check (10 ms) found it and aborted it.
          const written = yield* Effect.either(sql.withTransaction(Effect.gen(function*() {
            yield* sql`SET LOCAL deadlock_timeout = '10ms'`
            yield* sql`SELECT item_id FROM rein_batch_items WHERE run_id = ${runId} AND item_id = 'item-1' FOR UPDATE`
            yield* Deferred.succeed(holds, undefined)
            yield* Effect.repeat(waiting, { until: (r) => r[0]!.n > 0, schedule: Schedule.spaced("5 millis") })
            return yield* Q.finish(sql, runId, terminals)
          })))
          const joined = yield* Effect.either(Fiber.join(join))
          expect(Either.isRight(written) ? written.right.length : describeError(written.left)).toBe(2)
          expect(Either.isRight(joined) ? joined.right.session : joined.left.message).toBe("joined")
          // The join committed after the write: both items run again under their new inputs.
          const after = yield* sql<{ readonly state: string }>`SELECT state FROM rein_batch_items
            WHERE run_id = ${runId} ORDER BY item_id`
          expect(after.map((r) => r.state)).toEqual(["pending", "pending"])
        }),
      60_000
    )

    it.effect.each(
      [
        ["an array", (items: ReadonlyArray<Item>) => items],
        ["an iterator, read once only", (items: ReadonlyArray<Item>) => items.values()],
        [
          "a stream of an async iterable, read once only",
          (items: ReadonlyArray<Item>) =>
            Stream.fromAsyncIterable(
              (async function*() {
                yield* items
              })(),
              (e) => new Error(String(e))
            )
        ]
      ] as const
    )(
      "a joining start that lost to a deadlock runs again and joins with all its items (%s)",
      ([, source]) =>
        Effect.gen(function*() {
          const { after, joined, runId } = yield* deadlockedJoin(source)
          // Read again, a spent source gave nothing (a short join) or the rest (refused as out of order).
          expect(Either.isRight(joined) ? joined.right : joined.left.message).toEqual({
            runId,
            session: "joined",
            items: 2,
            reopened: 0
          })
          // Both inputs changed: both items run again under their new inputs.
          expect(after).toEqual(["pending", "pending"])
        }),
      60_000
    )

    it.effect(
      "a statement that lost to a deadlock fails with its SQLSTATE in the message",
      () =>
        Effect.gen(function*() {
          const { attempts, outcome } = yield* provoke((victim) => Effect.mapError(victim, unavailable))
          expect(attempts).toBe(1)
          expect(Either.isLeft(outcome) && outcome.left.message).toBe(
            "Failed to execute statement: deadlock detected (SQLSTATE 40P01)"
          )
        }),
      60_000
    )

    it.effect("a transaction that lost to a deadlock runs again and commits", () =>
      Effect.gen(function*() {
        const { attempts, outcome } = yield* provoke(retryConflicts)
        expect(Either.isRight(outcome)).toBe(true)
        expect(attempts).toBe(2)
      }), 60_000)
  })
})
