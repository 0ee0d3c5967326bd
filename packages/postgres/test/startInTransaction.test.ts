// PgBatchRun.start inside the caller's own transaction. In a REPEATABLE READ or SERIALIZABLE one, a change that
// loses to a concurrent one (SQLSTATE 40001) cannot be run again inside it (its snapshot is fixed: it would lose
// again, every time): start fails at once with `Conflict`, which names what to do, and the caller's transaction
// can still be rolled back and run again whole. In a READ COMMITTED one, start works as on its own.
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { describe, expect, layer } from "@effect/vitest"
import { Contract } from "@rein/core"
import { Context, Effect, Either, Layer, Redacted } from "effect"
import { Migrations, PgBatchRun } from "../src/index.js"
import { identity, itemsOf, request } from "./fixtures/batch-items.js"
import { available, fresh, PgLive, Server } from "./pg.js"

const contract = Contract.make({ deadline: "1 minute", candidates: ["fake/a"], allowSimulated: true })
const Live = Layer.tap(PgLive, (ctx) => Effect.provide(Migrations.run, ctx))
const items = itemsOf(5, [])
const startOf = (runId: string) =>
  PgBatchRun.start({ runId, identity, resume: "none", items, request, itemId: (i) => i.id, contract })

/** Another client, for a change made outside the caller's transaction while it is open. */
const other = Effect.flatMap(Server, (server) =>
  Effect.map(
    Layer.build(PgClient.layer({ url: Redacted.make(server.url), maxConnections: 1 })),
    Context.get(PgClient.PgClient)
  ))

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
      // Outside the transaction (a statement finds its transaction in the context, whatever its client).
      yield* outside`UPDATE rein_batch_runs SET settings = settings WHERE run_id = ${runId}`.pipe(
        Effect.mapInputContext((ctx: Context.Context<never>) => Context.omit(SqlClient.TransactionConnection)(ctx))
      )
      return yield* Effect.either(startOf(runId))
    }))
  })

describe.skipIf(!available)("PgBatchRun.start in the caller's transaction", () => {
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

    it.scoped("in a READ COMMITTED one, a concurrent change does not fail it", () =>
      Effect.gen(function*() {
        const runId = fresh("rc")
        yield* startOf(runId)
        const joined = yield* joinAfterConcurrentChange(runId, "READ COMMITTED")
        expect(Either.map(joined, (s) => s.session)).toEqual(Either.right("joined"))
      }))
  })
})
