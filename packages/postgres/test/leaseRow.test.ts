// A lease row is written whole: every statement that records a ceiling (or changes the lease it is computed
// from) records, in the same statement, the usage that ceiling was computed from. A reader of the row then
// never sees a ceiling above what its own usage and lease allow (what the process uses, plus `exposure` of
// what its slice holds unused). Each case makes the interleaving that broke it deterministic with real row
// locks: another transaction holds the budget row (a top-up waits for it in its one conditional update,
// after it locked its lease row), and a read queued behind the top-up on the lease row sees the row exactly
// as the top-up commits it, before any later heartbeat writes it again.
import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Deferred, Effect, Either, Fiber, Schedule } from "effect"
import { PgBudget } from "../src/index.js"
import { available, fresh, PgLive } from "./pg.js"
import { firstHeartbeat, inTransaction, lockPool, waitingFor } from "./rowLocks.js"

interface LeaseRow {
  readonly id: string
  /** Cost leased, ceiling, used (charged + reserved) and pending (the reservation the ceiling was raised for) as
   * on record, in nano-dollars. */
  readonly l: number
  readonly k: number
  readonly u: number
  readonly p: number
}

const NANOS = 1e9

const leaseRow = (name: string, holder: string, forUpdate: boolean) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => {
    const query = sql<LeaseRow>`SELECT id, cost_leased::float8 AS l, cost_exposed::float8 AS k,
      (cost_charged + cost_reserved)::float8 AS u, cost_pending::float8 AS p FROM rein_budget_leases
      WHERE budget = ${name} AND holder = ${holder}`
    const rows = forUpdate
      ? sql<LeaseRow>`SELECT id, cost_leased::float8 AS l, cost_exposed::float8 AS k,
          (cost_charged + cost_reserved)::float8 AS u, cost_pending::float8 AS p FROM rein_budget_leases
          WHERE budget = ${name} AND holder = ${holder} FOR UPDATE`
      : query
    return Effect.map(rows, (r) => r[0])
  }).pipe(Effect.orDie)

/**
 * The ceiling on record is at most what the row's usage, pending reservation and lease allow (`exposure` 0.25,
 * nano-dollars).
 */
const expectQuarterRule = (row: LeaseRow) => {
  expect(row.k - row.u - row.p, JSON.stringify(row)).toBeLessThanOrEqual(Math.ceil(0.25 * (row.l - row.u)))
}

/** Polls until the backend `pid` has finished its statement (autocommit: committed). */
const idle = (pid: number) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) =>
      sql<{ readonly state: string }>`SELECT state FROM pg_stat_activity WHERE pid = ${pid}::int`.pipe(
        Effect.filterOrFail((rows) => rows[0]?.state === "idle", () => "not yet"),
        Effect.retry(Schedule.spaced("5 millis")),
        Effect.timeout("20 seconds"),
        Effect.orDie
      )
  )

const fastPath = (budget: PgBudget.Service, cost: number) => {
  const hold = budget.unsafeReserve!({ cost, tokens: null })
  expect(hold !== undefined && Either.isRight(hold), `a fast-path reservation of $${cost}`).toBe(true)
}

/** A budget whose heartbeat runs only when its fast path wakes it (a minute apart otherwise). */
const quiet = { heartbeatMillis: 60_000, ttlMillis: 180_000, queryTimeoutMillis: 30_000 }

describe.skipIf(!available)("PgBudget's lease row: a ceiling is recorded with the usage it was computed from", () => {
  layer(PgLive, { timeout: "60 seconds", excludeTestServices: true })((it) => {
    it.scoped("a top-up begun by the heartbeat, with a fast-path reservation taken while it is in flight", () =>
      Effect.gen(function*() {
        const name = fresh("tick-topup")
        const holder = "ticking"
        const budget = yield* PgBudget.make({ ...quiet, name, cost: 10, slice: 0.1, holder })
        yield* firstHeartbeat(name, holder)
        // Its first reservation leases $1 (a tenth of the pool), with a ceiling of $0.65; $0.40 is spent.
        yield* budget.settle(yield* budget.reserve({ cost: 0.4, tokens: null }), { cost: 0.4, tokens: 0 })
        const pool = yield* lockPool(name)
        // $0.20 more on the fast path leaves it low ($0.40 unused, under half the $0.94 slice it would lease
        // now): its heartbeat wakes, reports $0.60 used (ceiling $0.70) and begins a top-up, which locks its
        // lease row and waits for the budget row.
        fastPath(budget, 0.2)
        const [topUp] = yield* waitingFor(pool.pid)
        // While the top-up waits: $0.10 more on the fast path, under the ceiling just reported.
        fastPath(budget, 0.1)
        // A read queued behind the top-up on the lease row: it sees the row as the top-up commits it.
        const releaseRow = yield* Deferred.make<void>()
        const read = yield* inTransaction(leaseRow(name, holder, true), releaseRow)
        expect(yield* waitingFor(topUp!)).toContain(read.pid)
        yield* Deferred.succeed(pool.release, undefined)
        const row = (yield* Deferred.await(read.result))!
        yield* Deferred.succeed(releaseRow, undefined)
        yield* Fiber.join(pool.fiber)
        yield* Fiber.join(read.fiber)
        // The top-up leased $0.90 more (a tenth of the $9 free) …
        expect(row.l).toBe(1.9 * NANOS)
        // … and its ceiling is what the row's usage and lease allow: recorded with the usage it counts,
        // $0.70 ($0.40 charged, $0.30 in flight), ceiling $0.70 + ¼ × $1.20 = $1.00.
        expectQuarterRule(row)
        expect({ u: row.u, k: row.k }).toEqual({ u: 0.7 * NANOS, k: 1 * NANOS })
      }))

    it.scoped("a give-back while reserving lowers the ceiling with the lease it is computed from", () =>
      Effect.gen(function*() {
        const name = fresh("trim")
        const holder = "trimmed"
        const options = { ...quiet, name, cost: 10 }
        const budget = yield* PgBudget.make({ ...options, slice: 0.1, holder })
        yield* firstHeartbeat(name, holder)
        // It leases $1 with its first reservation ($0.10, kept in flight: it is never at rest) …
        yield* budget.reserve({ cost: 0.1, tokens: null })
        // … then another process leases the other $9 (`slice: 1`).
        const other = yield* PgBudget.make({ ...options, slice: 1, holder: "greedy" })
        yield* other.reserve({ cost: 0.1, tokens: null })
        const before = (yield* leaseRow(name, holder, false))!
        expect(before.l).toBe(1 * NANOS)
        // $0.20 more on the fast path brings it near its $0.35 ceiling: its heartbeat wakes, reports $0.30
        // used, finds the pool empty and gives back what it holds beyond twice the slice it would lease now
        // ($0.07 of its $0.70 unused).
        fastPath(budget, 0.2)
        const row = yield* leaseRow(name, holder, false).pipe(
          Effect.filterOrFail((r) => r !== undefined && r.l < before.l, () => "not given back yet"),
          Effect.retry(Schedule.spaced("5 millis")),
          Effect.timeout("20 seconds"),
          Effect.orDie
        )
        // Given back: $1 − $0.475 (its ceiling before) − $0.14 = $0.385; it holds $0.615, uses $0.30.
        expect(row!.l).toBe(0.615 * NANOS)
        expect(row!.u).toBe(0.3 * NANOS)
        // No heartbeat comes after it (a minute apart): the ceiling read is the one recorded with the give-back.
        expectQuarterRule(row!)
        // What it still uses is covered: the fast path serves up to the ceiling on record, and no further.
        expect(row!.k).toBeGreaterThanOrEqual(row!.u)
      }))

    it.scoped("a top-up in flight past the lease's time to live commits a live lease, not one to be reclaimed", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const name = fresh("stalled")
        const holder = "stalled"
        const options = {
          name,
          cost: 10,
          slice: 0.1,
          heartbeatMillis: 200,
          ttlMillis: 1000,
          queryTimeoutMillis: 30_000
        }
        const budget = yield* PgBudget.make({ ...options, holder })
        // $0.40 in flight throughout (never at rest: its heartbeats give nothing back); its slice is $1.
        yield* budget.reserve({ cost: 0.4, tokens: null })
        const leaseId = (yield* leaseRow(name, holder, false))!.id
        // Another process on the budget, at rest: at each of its heartbeats it reclaims the expired leases.
        yield* PgBudget.make({ ...options, holder: "reclaimer" })
        const pool = yield* lockPool(name)
        // Low after $0.15 more (under its ceiling: at least $0.40 + ¼ × $0.60): its heartbeat begins a top-up,
        // which locks its lease row (extending it by the time to live) and waits for the budget row …
        fastPath(budget, 0.15)
        const [topUp] = yield* waitingFor(pool.pid)
        // … longer than the time to live, on the database clock.
        const t0 = (yield* sql<{ readonly t: number }>`SELECT extract(epoch FROM clock_timestamp())::float8 AS t`)[0]!.t
        yield* sql<{ readonly t: number }>`SELECT extract(epoch FROM clock_timestamp())::float8 AS t`.pipe(
          Effect.filterOrFail((rows) => rows[0]!.t > t0 + (options.ttlMillis + 50) / 1000, () => "not yet"),
          Effect.retry(Schedule.spaced("20 millis"))
        )
        // The other process's reclaim, at its next heartbeat, waits for the lease row the top-up holds.
        const [reclaim] = yield* waitingFor(topUp!)
        yield* Deferred.succeed(pool.release, undefined)
        yield* Fiber.join(pool.fiber)
        // The top-up commits; the reclaim, once it has the row, finds the lease live: the lease this process
        // held all along (its holder alive, talking to the database) is not charged at its ceiling as if dead.
        yield* idle(reclaim!)
        const reclaimed = yield* sql<{ readonly n: number }>`SELECT count(*)::int AS n FROM rein_budget_reclaims
          WHERE budget = ${name} AND lease_id = ${leaseId}`
        expect(reclaimed[0]!.n).toBe(0)
        const row = (yield* leaseRow(name, holder, false))!
        expect(row.id).toBe(leaseId)
        expect(row.l).toBe(1.9 * NANOS)
        expectQuarterRule(row)
      }))

    it.scoped("a raise for one resource records the ceiling for what is used of the others, not the higher one before", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const name = fresh("raise")
        const holder = "raising"
        const budget = yield* PgBudget.make({ ...quiet, name, cost: 10, tokens: 1_000_000, slice: 0.1, holder })
        yield* firstHeartbeat(name, holder)
        // Its first reservation leases $1 and 100,000 tokens, with ceilings of $0.26 and 75,000 tokens; released.
        yield* budget.release(yield* budget.reserve({ cost: 0.01, tokens: 50_000 }))
        // $0.30 does not fit under the cost ceiling but in the lease: the reservation raises the ceiling.
        yield* budget.reserve({ cost: 0.3, tokens: 0 })
        const rows = yield* sql<LeaseRow>`SELECT id, tokens_leased::float8 AS l, tokens_exposed::float8 AS k,
          (tokens_charged + tokens_reserved)::float8 AS u, tokens_pending::float8 AS p FROM rein_budget_leases
          WHERE budget = ${name} AND holder = ${holder}`
        // Tokens: none used, 100,000 leased: a ceiling of a quarter of them, not the 75,000 of before.
        expect(rows[0]!.l).toBe(100_000)
        expectQuarterRule(rows[0]!)
        expect(rows[0]!.k).toBe(25_000)
        // Cost: raised for the $0.30 not yet taken when the row was written, $0.30 + ¼ × $1 over the $0 used;
        // the row tells that headroom from an excess: $0.30 pending (the rule without it would read $0.30 over).
        const cost = (yield* leaseRow(name, holder, false))!
        expect({ u: cost.u, p: cost.p, k: cost.k }).toEqual({ u: 0, p: 0.3 * NANOS, k: 0.55 * NANOS })
        expectQuarterRule(cost)
        // The next raise (for $0.70, the rest of the lease) records the $0.30, taken since, as reserved, and the
        // $0.70 as pending.
        yield* budget.reserve({ cost: 0.7, tokens: 0 })
        const next = (yield* leaseRow(name, holder, false))!
        expect({ u: next.u, p: next.p, k: next.k }).toEqual({ u: 0.3 * NANOS, p: 0.7 * NANOS, k: 1 * NANOS })
        expectQuarterRule(next)
      }))
  })
})
