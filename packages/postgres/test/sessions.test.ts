// The rows a distributed run's sessions leave in the shared services (its budget, soft-cap totals, rate
// buckets) go an hour after the session ended, unless something still holds a lease on them; `status` and
// `start` delete them. (Times are moved back in SQL: nothing waits an hour.)
import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Guardrails } from "@rein/batch"
import { Contract, Fake, Rein } from "@rein/core"
import { Effect, Layer, Scope } from "effect"
import { Exit } from "effect"
import { Migrations, PgBatchRun, PgBudget, PgWorker } from "../src/index.js"
import { catalog, identity, itemsOf, request } from "./fixtures/batch-items.js"
import type { Item } from "./fixtures/batch-items.js"
import { available, fresh, PgLive } from "./pg.js"

const contract = Contract.make({ deadline: "1 minute", candidates: ["fake/a"], allowSimulated: true })
const fake = Fake.make({
  "fake/a": [Fake.succeed({ text: "ok", latency: "1 millis", usage: { inputTokens: 100, outputTokens: 50 } })]
})
const ReinLive = Rein.layer({ catalog, providers: { fake: fake.provider }, health: false })

const Live = Layer.tap(PgLive, (ctx) => Effect.provide(Migrations.run, ctx))

// A run with every kind of shared row: a soft cap (rein_run_limits), a rate (rein_rate_buckets), a budget.
const runToEnd = (runId: string, items: ReadonlyArray<Item>, resume: "none" | "reuse-all" = "none") =>
  Effect.gen(function*() {
    yield* PgBatchRun.start({
      runId,
      identity,
      resume,
      items,
      request,
      itemId: (item) => item.id,
      contract,
      guardrails: Guardrails.make({ maxTotalTokens: 1_000_000, requestsPerMinute: 60_000 }),
      budget: { calls: 1_000 }
    })
    yield* PgWorker.run({
      runId,
      item: (index) => Effect.succeed(items[index]!),
      request,
      itemId: (item) => item.id,
      identity,
      contract,
      guardrails: Guardrails.make({ concurrency: 8 }),
      leaseMillis: 5_000,
      heartbeatMillis: 200
    }).pipe(Effect.provide(PgBatchRun.sharedLimits(runId)), Effect.provide(ReinLive))
  })

const rowsOf = (runId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const prefix = `rein-batch/${runId}/%`
    const budgets = yield* sql<{ readonly name: string }>`SELECT name FROM rein_budgets WHERE name LIKE ${prefix}`
    const limits = yield* sql<{ readonly name: string }>`SELECT name FROM rein_run_limits WHERE name LIKE ${prefix}`
    const buckets = yield* sql<{ readonly key: string }>`SELECT key FROM rein_rate_buckets
      WHERE key LIKE ${`requests:${prefix}`} OR key LIKE ${`tokens:${prefix}`}`
    return { budgets: budgets.length, limits: limits.length, buckets: buckets.length }
  })

// Moves the run's end (its records and its stop) back two hours on the database clock.
const endedHoursAgo = (runId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.zipRight(
      sql`UPDATE rein_batch_items SET finished_at = finished_at - interval '2 hours' WHERE run_id = ${runId}`,
      sql`UPDATE rein_batch_runs SET stopped_at = stopped_at - interval '2 hours' WHERE run_id = ${runId}`
    ))

describe.skipIf(!available)("the shared services' rows of a run's sessions", () => {
  layer(Live, { timeout: "120 seconds", excludeTestServices: true })((it) => {
    it.effect("an ended session's rows stay an hour, are kept while a lease on them lives, then status deletes them", () =>
      Effect.gen(function*() {
        const runId = fresh("ended")
        yield* runToEnd(runId, itemsOf(30, []))
        const status = yield* PgBatchRun.status(runId)
        expect(status.status).toBe("finished")
        // Just ended: kept (an operator may read its totals).
        expect(yield* rowsOf(runId)).toEqual({ budgets: 1, limits: 1, buckets: 1 })
        yield* endedHoursAgo(runId)
        // A live lease on the session's budget (a worker still holding it) keeps them.
        const name = (yield* SqlClient.SqlClient)<{ readonly name: string }>`SELECT name FROM rein_budgets
          WHERE name LIKE ${`rein-batch/${runId}/%`}`
        const scope = yield* Scope.make()
        yield* Scope.extend(PgBudget.make({ name: (yield* name)[0]!.name, calls: 1_000 }), scope)
        yield* PgBatchRun.status(runId)
        expect((yield* rowsOf(runId)).budgets).toBe(1)
        yield* Scope.close(scope, Exit.void)
        yield* PgBatchRun.status(runId)
        expect(yield* rowsOf(runId)).toEqual({ budgets: 0, limits: 0, buckets: 0 })
        // The run itself, its items and records are untouched.
        expect((yield* PgBatchRun.status(runId)).items.done).toBe(30)
      }))

    it.effect("a session replaced by a new one an hour ago goes at the next start of any run; the running one stays", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const runId = fresh("replaced")
        const items = itemsOf(20, [])
        yield* runToEnd(runId, items)
        const first = yield* sql<{ readonly name: string }>`SELECT name FROM rein_budgets
          WHERE name LIKE ${`rein-batch/${runId}/%`}`
        // A second session, still running (its worker holds a live lease on its budget while we look).
        yield* PgBatchRun.start({
          runId,
          identity,
          resume: "none",
          items,
          request,
          itemId: (item) => item.id,
          contract,
          guardrails: Guardrails.make({ maxTotalTokens: 1_000_000, requestsPerMinute: 60_000 }),
          budget: { calls: 1_000 }
        })
        yield* sql`UPDATE rein_batch_runs SET started_at = started_at - interval '2 hours' WHERE run_id = ${runId}`
        const scope = yield* Scope.make()
        yield* Scope.extend(Layer.build(PgBatchRun.sharedLimits(runId)), scope)
        expect((yield* rowsOf(runId)).budgets).toBe(2)
        // Any run's start deletes every run's expired sessions: the first session's rows, not the running one's.
        yield* PgBatchRun.start({ runId: fresh("other"), identity, resume: "none", items: [], request })
        const left = yield* sql<{ readonly name: string }>`SELECT name FROM rein_budgets
          WHERE name LIKE ${`rein-batch/${runId}/%`}`
        expect(left.map((r) => r.name)).not.toContain(first[0]!.name)
        expect(yield* rowsOf(runId)).toEqual({ budgets: 1, limits: 1, buckets: 1 })
        yield* Scope.close(scope, Exit.void)
      }))
  })
})
