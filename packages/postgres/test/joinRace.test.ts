// Starts of one run racing each other and the run's workers. A joining start re-submits items that are
// there already, while workers' leases and group writes move those rows to new versions and commit: the
// join must never fail with a duplicate key (23505) on the submission index, and of starts racing on a new
// run exactly one creates it and the others join it.
import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Contract } from "@rein/core"
import { Effect, Either, Layer } from "effect"
import { Migrations, PgBatchRun } from "../src/index.js"
import * as Q from "../src/internal/batchStatements.js"
import { identity, itemsOf, request } from "./fixtures/batch-items.js"
import { available, fresh, PgLive } from "./pg.js"

const contract = Contract.make({ deadline: "1 minute", candidates: ["fake/a"], allowSimulated: true })

const Live = Layer.tap(PgLive, (ctx) => Effect.provide(Migrations.run, ctx))

const n = 400
const joins = 150
const items = itemsOf(n, [])

const startOf = (runId: string) =>
  PgBatchRun.start({ runId, identity, resume: "none", items, request, itemId: (i) => i.id, contract })

// A worker that leases one item at a time and gives it back, until told to stop: every lease and release
// moves an item row to a new version (its state is indexed) and commits, as fast as it can.
const churn = (runId: string, owner: string, going: () => boolean) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    while (going()) {
      yield* Q.lease(sql, runId, owner, 1, 60_000, true)
      yield* Q.releaseOwned(sql, runId, owner)
    }
  })

describe.skipIf(!available)("starts of one run racing", () => {
  layer(Live, { timeout: "300 seconds", excludeTestServices: true })((it) => {
    it.effect(
      "starts joining a running run while its workers lease and release its items never fail with a duplicate key",
      () =>
        Effect.gen(function*() {
          const runId = fresh("race")
          yield* startOf(runId)
          let going = true
          const churners = Effect.all(Array.from({ length: 6 }, (_, w) => churn(runId, `w${w}`, () => going)), {
            concurrency: "unbounded"
          })
          // Joins, one after another, on two connections, while the workers churn the rows.
          const join = Effect.forEach(Array.from({ length: joins }), () => Effect.either(startOf(runId)))
          const joined = yield* Effect.ensuring(
            Effect.map(Effect.all([join, join], { concurrency: "unbounded" }), (all) => all.flat()),
            Effect.sync(() => (going = false))
          ).pipe(Effect.zipLeft(churners, { concurrent: true }))
          const failed = joined.flatMap((j) => Either.isLeft(j) ? [j.left.message] : [])
          expect(failed).toEqual([])
          expect(joined.every((j) => Either.isRight(j) && j.right.session === "joined")).toBe(true)
        }),
      300_000
    )

    it.effect(
      "of starts racing on a new run, one creates it and the others join it",
      () =>
        Effect.gen(function*() {
          for (let round = 0; round < 10; round++) {
            const runId = fresh("created")
            const started = yield* Effect.all(Array.from({ length: 6 }, () => Effect.either(startOf(runId))), {
              concurrency: "unbounded"
            })
            const sessions = started.map((s) => Either.isRight(s) ? s.right.session : s.left.message).sort()
            expect(sessions).toEqual(["created", "joined", "joined", "joined", "joined", "joined"])
          }
        }),
      300_000
    )
  })
})
