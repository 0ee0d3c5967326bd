// A top-up interrupted at the point after PostgreSQL committed it: its grant is in the lease row, and must be in
// the process's slice too (before, the interruption took effect between the commit and the local update: the
// process served from less than the row held, and a reader of the row saw more leased than the process knew of,
// until its close). The commit is held there deterministically (`heldCommits.ts`): the budget's client commits
// synchronously while a synchronous standby that never connects is named; the test interrupts the reservation
// waiting for the top-up, then ends the commit's wait, which leaves the transaction committed. The same hold
// makes a commit whose answer is lost (its connection ended while it waited) and a holder killed at that point.
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { describe, expect, layer } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Layer, Redacted, Schedule, Scope } from "effect"
import { PgBudget } from "../src/index.js"
import { cancelWait, committing, holdCommits, releaseCommits, synchronousUrl } from "./heldCommits.js"
import { available, fresh, PgLive, Server } from "./pg.js"
import { bundle, spawnChild } from "./processes.js"
import { firstHeartbeat, topUpWaiting } from "./rowLocks.js"

const NANOS = 1e9

interface Row {
  readonly id: string
  /** Cost leased, ceiling and used (charged + reserved) as on record, in nano-dollars. */
  readonly l: number
  readonly k: number
  readonly u: number
}

const leaseRows = (name: string) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) =>
      sql<Row>`SELECT id, cost_leased::float8 AS l, cost_exposed::float8 AS k,
        (cost_charged + cost_reserved)::float8 AS u FROM rein_budget_leases WHERE budget = ${name}`
  ).pipe(Effect.orDie)

/** The budget row's cost: spent and leased, in nano-dollars. */
const budgetRow = (name: string) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) =>
      sql<{ readonly spent: number; readonly leased: number }>`SELECT cost_spent::float8 AS spent,
        cost_leased::float8 AS leased FROM rein_budgets WHERE name = ${name}`
  ).pipe(Effect.map((rows) => rows[0]!), Effect.orDie)

/** A budget whose heartbeat runs only when its fast path wakes it (a minute apart otherwise). */
const quiet = { heartbeatMillis: 60_000, ttlMillis: 180_000, queryTimeoutMillis: 30_000 }

describe.skipIf(!available)("PgBudget: a top-up interrupted after PostgreSQL committed it", () => {
  layer(PgLive, { timeout: "90 seconds", excludeTestServices: true })((it) => {
    it.scoped("the grant is in the local slice too: left, the next reservation and close agree with the row", () =>
      Effect.gen(function*() {
        const server = yield* Server
        const name = fresh("committed")
        const holder = "interrupted"
        // The budget on a client of its own, whose commits can be held; the test reads on the layer's client.
        const client = yield* Layer.build(PgClient.layer({ url: Redacted.make(synchronousUrl(server.url)) }))
        const scope = yield* Scope.make()
        const budget = yield* PgBudget.make({ ...quiet, name, cost: 10, slice: 0.1, holder }).pipe(
          Effect.provide(client),
          Scope.extend(scope)
        )
        yield* firstHeartbeat(name, holder)
        // Its first reservation leases $1 (a tenth of the pool); $0.10 stays in flight throughout.
        yield* budget.reserve({ cost: 0.1, tokens: null })
        yield* holdCommits
        // $2 more is $1.10 short: the reservation tops up, in one transaction whose commit is held.
        const reserving = yield* Effect.fork(budget.reserve({ cost: 2, tokens: null }))
        const backend = yield* committing()
        // The reservation's caller gives up while PostgreSQL commits the top-up …
        yield* Fiber.interrupt(reserving)
        // … and the commit completes: the grant ($1.10) is in the lease row.
        yield* cancelWait(backend)
        yield* releaseCommits
        // `left` waits for the budget's lock, so for the interrupted top-up to end; it reads the pool, then adds
        // what the process holds unused: the row's $2.10 less $0.10 used, so $9.90 in all. (Before: its slice
        // without the grant, $1, and $8.80.)
        const left = yield* budget.left
        const [row] = yield* leaseRows(name)
        expect({ l: row!.l, u: row!.u }).toEqual({ l: 2.1 * NANOS, u: 0.1 * NANOS })
        expect(left.cost).toBe((10 * NANOS - row!.u) / NANOS)
        // The interrupted reservation took nothing; $1 more fits in what the lease holds (under the ceiling the
        // top-up recorded for the $2): served without a top-up, the row's lease unchanged.
        yield* budget.reserve({ cost: 1, tokens: null })
        expect((yield* leaseRows(name))[0]!.l).toBe(2.1 * NANOS)
        // Close: what is in flight ($1.10) is spent, and exactly the rest of the row's lease ($1) returns.
        const used = 1.1 * NANOS
        const before = yield* budgetRow(name)
        yield* Scope.close(scope, Exit.void)
        const after = yield* budgetRow(name)
        expect(yield* leaseRows(name)).toEqual([])
        expect(after).toEqual({ spent: before.spent + used, leased: before.leased - 2.1 * NANOS })
        expect(after.spent + after.leased).toBe(before.spent + before.leased - (2.1 * NANOS - used))
      }))

    it.scoped("a top-up whose commit's answer is lost (connection ended after the commit): the next step reads the row", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const server = yield* Server
        const name = fresh("in-doubt")
        const holder = "in-doubt"
        const client = yield* Layer.build(PgClient.layer({ url: Redacted.make(synchronousUrl(server.url)) }))
        const budget = yield* PgBudget.make({ ...quiet, name, cost: 10, slice: 0.1, holder }).pipe(
          Effect.provide(client)
        )
        yield* firstHeartbeat(name, holder)
        yield* budget.reserve({ cost: 0.1, tokens: null })
        yield* holdCommits
        const reserving = yield* Effect.fork(Effect.exit(budget.reserve({ cost: 2, tokens: null })))
        const backend = yield* committing()
        // The connection ends while the commit waits: the transaction stays committed, the client is told only
        // that its connection broke (the commit is in doubt).
        yield* sql`SELECT pg_terminate_backend(${backend}::int)`
        yield* releaseCommits
        const exit = yield* Fiber.join(reserving)
        // Refused as the database being unavailable (a failure, not a defect) …
        expect(Exit.isFailure(exit) && exit.cause._tag === "Fail" && exit.cause.error.reason, String(exit))
          .toBe("unavailable")
        expect((yield* leaseRows(name))[0]!.l).toBe(2.1 * NANOS)
        // … and the next step under the lock reads what the lease holds, the grant included: $1 more is served
        // from it without another top-up, and $8.90 is left in all ($10 less $1.10 used).
        yield* budget.reserve({ cost: 1, tokens: null })
        expect((yield* leaseRows(name))[0]!.l).toBe(2.1 * NANOS)
        expect((yield* budget.left).cost).toBe(8.9)
      }))

    it.scoped(
      "a holder killed with SIGKILL while PostgreSQL commits its top-up: the grant lands in its lease and is returned by the reclaim",
      () =>
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          const server = yield* Server
          const name = fresh("killed-commit")
          const cap = 3 * NANOS
          const doomed = yield* spawnChild(yield* bundle("budget-worker"), {
            cost: 3,
            seed: 13,
            loops: 4,
            slice: 0.1,
            gated: false,
            url: synchronousUrl(server.url),
            name,
            patienceMillis: 60_000,
            heartbeatMillis: 250,
            ttlMillis: 2000,
            // Its top-up is held below for longer than the default bound on a step: not given up meanwhile.
            queryTimeoutMillis: 30_000
          })
          yield* doomed.waitFor(/(?:^R .*\n[^]*?){4}/m)
          // Its next top-up locks its lease row and waits for the budget row, held by the test …
          const { pool, topUp } = yield* topUpWaiting(name)
          const [before] = yield* leaseRows(name)
          // … then gets it, records the grant and commits: the commit is held, and the holder killed meanwhile.
          yield* holdCommits
          yield* Deferred.succeed(pool.release, undefined)
          yield* Fiber.join(pool.fiber)
          yield* committing(topUp)
          yield* doomed.kill("SIGKILL")
          yield* doomed.exited
          yield* releaseCommits
          // The transaction stays committed: the lease holds the grant, with the ceiling recorded with it, which
          // covers what the dead holder had charged and had in flight.
          const lease = yield* leaseRows(name).pipe(
            Effect.map((rows) => rows[0]!),
            Effect.filterOrFail((row) => row.l > before!.l, () => "not committed yet"),
            Effect.retry(Schedule.spaced("20 millis")),
            Effect.timeout("20 seconds"),
            Effect.orDie
          )
          expect(lease.id).toBe(before!.id)
          let used = 0
          const open = new Map<string, number>()
          for (const line of doomed.stdout().split("\n")) {
            const [kind, id, cost] = line.split(" ")
            if (kind === "R") open.set(id!, Number(cost))
            if (kind === "C") {
              open.delete(id!)
              used += Number(cost)
            }
          }
          for (const c of open.values()) used += c
          expect(lease.k).toBeGreaterThanOrEqual(used)
          const held = yield* budgetRow(name)
          expect(held.leased).toBe(lease.l)
          expect(held.spent + held.leased).toBeLessThanOrEqual(cap)
          // Once it expires, a live process reclaims it: exactly its ceiling is charged, the rest of the lease
          // (the grant included) returns to the pool.
          yield* PgBudget.make({ cost: 3, name, heartbeatMillis: 250, ttlMillis: 2000 })
          const [reclaimed] = yield* sql<
            { readonly charged: number; readonly returned: number }
          >`SELECT cost_charged::float8 AS charged, cost_returned::float8 AS returned FROM rein_budget_reclaims
            WHERE budget = ${name} AND lease_id = ${lease.id}`.pipe(
            Effect.filterOrFail((rows) => rows.length === 1, () => "not reclaimed yet"),
            Effect.retry(Schedule.spaced("50 millis")),
            Effect.timeout("30 seconds"),
            Effect.orDie
          )
          expect(reclaimed).toEqual({ charged: lease.k, returned: lease.l - lease.k })
          const after = yield* budgetRow(name)
          expect(after.spent).toBe(held.spent + lease.k)
          expect(after.spent + after.leased).toBeLessThanOrEqual(cap)
        }),
      90_000
    )
  })
})
