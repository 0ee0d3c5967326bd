// PgBatchRun.start inside the caller's own transaction. In a REPEATABLE READ or SERIALIZABLE one, a change that
// loses to a concurrent one (SQLSTATE 40001) cannot be run again inside it (its snapshot is fixed: it would lose
// again, every time): start fails at once with `Conflict`, which names what to do, and the caller's transaction
// can still be rolled back and run again whole. In a READ COMMITTED one, start works as on its own. And start's
// own transaction runs at READ COMMITTED whatever the sessions' default (where a lost change can run again).
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { describe, expect, layer } from "@effect/vitest"
import { Contract } from "@rein/core"
import { Context, Effect, Either, Layer, Redacted, Stream } from "effect"
import { Migrations, PgBatchRun } from "../src/index.js"
import { identity, itemsOf, request } from "./fixtures/batch-items.js"
import { available, fresh, PgLive, Server } from "./pg.js"

const contract = Contract.make({ deadline: "1 minute", candidates: ["fake/a"], allowSimulated: true })
const Live = Layer.tap(PgLive, (ctx) => Effect.provide(Migrations.run, ctx))
const items = itemsOf(5, [])
const startOf = (runId: string) =>
  PgBatchRun.start({ runId, identity, resume: "none", items, request, itemId: (i) => i.id, contract })

/** Another client (its sessions' default isolation level `level`), for a change made outside a transaction. */
const clientAt = (level?: string) =>
  Effect.flatMap(Server, (server) => {
    const options = level === undefined
      ? ""
      : `?options=${encodeURIComponent(`-c default_transaction_isolation=${level}`)}`
    return Effect.map(
      Layer.build(PgClient.layer({ url: Redacted.make(server.url + options), maxConnections: 2 })),
      Context.get(PgClient.PgClient)
    )
  })
const other = clientAt()

/** Runs `effect` outside the transaction it is in (a statement finds its transaction in the context). */
const outsideOf = <A, E>(effect: Effect.Effect<A, E>) =>
  Effect.mapInputContext(effect, (ctx: Context.Context<never>) => Context.omit(SqlClient.TransactionConnection)(ctx))

/**
 * In a transaction at `level`: reads the run (the snapshot is taken), lets another client change the run's row
 * and commit, then starts the run again (a join): what start answered.
 */
const joinAfterConcurrentChange = (runId: string, level: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const outside = yield* other
    return yield* sql.withTransaction(Effect.gen(function*() {
      yield* sql.unsafe(`SET TRANSACTION ISOLATION LEVEL ${level}`)
      yield* sql`SELECT run_id FROM rein_batch_runs WHERE run_id = ${runId}`
      yield* outsideOf(outside`UPDATE rein_batch_runs SET settings = settings WHERE run_id = ${runId}`)
      return yield* Effect.either(startOf(runId))
    }))
  })

describe.skipIf(!available)("PgBatchRun.start and transaction isolation", () => {
  layer(Live, { timeout: "60 seconds", excludeTestServices: true })((it) => {
    for (const level of ["REPEATABLE READ", "SERIALIZABLE"]) {
      it.scoped(`in a ${level} one, a lost change fails at once with Conflict; run again whole, it joins`, () =>
        Effect.gen(function*() {
          const runId = fresh("tx")
          yield* startOf(runId)
          const lost = yield* joinAfterConcurrentChange(runId, level)
          expect(Either.isLeft(lost), JSON.stringify(lost)).toBe(true)
          if (Either.isRight(lost)) return
          expect(lost.left.reason).toBe("Conflict")
          expect(lost.left.message).toContain(level)
          expect(lost.left.message).toContain("roll it back")
          // The caller runs its transaction again whole: a new snapshot, and the join goes through.
          const sql = yield* SqlClient.SqlClient
          const again = yield* sql.withTransaction(Effect.zipRight(
            sql.unsafe(`SET TRANSACTION ISOLATION LEVEL ${level}`),
            startOf(runId)
          ))
          expect(again.session).toBe("joined")
        }))
    }

    it.scoped("its own transaction runs at READ COMMITTED when the sessions' default is SERIALIZABLE", () =>
      Effect.gen(function*() {
        const runId = fresh("own")
        yield* startOf(runId)
        const serializable = yield* clientAt("serializable")
        const outside = yield* other
        // The run's row changes while the items are read, after the first chunk was staged (the snapshot of a
        // SERIALIZABLE transaction is taken): the join then locks the row (before: 40001 at every retry).
        const source = Stream.fromIterable(items).pipe(Stream.tap((item) =>
          item === items[3]
            ? Effect.orDie(outsideOf(outside`UPDATE rein_batch_runs SET settings = settings WHERE run_id = ${runId}`))
            : Effect.succeed([])
        ))
        const joined = yield* PgBatchRun.start({
          runId,
          identity,
          resume: "none",
          items: source,
          submitChunk: 2,
          request,
          itemId: (i) => i.id,
          contract
        }).pipe(Effect.provideService(SqlClient.SqlClient, serializable), Effect.either)
        expect(Either.map(joined, (s) => s.session)).toEqual(Either.right("joined"))
      }))

    it.scoped("in a READ COMMITTED one, a concurrent change does not fail it", () =>
      Effect.gen(function*() {
        const runId = fresh("rc")
        yield* startOf(runId)
        const joined = yield* joinAfterConcurrentChange(runId, "READ COMMITTED")
        expect(Either.map(joined, (s) => s.session)).toEqual(Either.right("joined"))
      }))
  })
})
