// Row locks held by a transaction of the test's own, to make an interleaving with a budget's statements
// deterministic: a top-up waits for the budget row in its one conditional update (after it locked its lease
// row), and a statement queued behind it on a row sees that row as the top-up commits it.
import { SqlClient } from "@effect/sql"
import { Deferred, Effect, Schedule } from "effect"

/**
 * Runs `query` in a transaction of its own (a forked fiber, its own connection) and keeps that transaction
 * open until `release`: the row locks it takes are held until then. Answers the backend's pid (known before
 * the query runs) and the query's result (once it returns).
 */
export const inTransaction = <A>(
  query: Effect.Effect<A, unknown, SqlClient.SqlClient>,
  release: Deferred.Deferred<void>
) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const pid = yield* Deferred.make<number>()
    const result = yield* Deferred.make<A>()
    const fiber = yield* Effect.fork(
      sql.withTransaction(Effect.gen(function*() {
        const rows = yield* sql<{ readonly pid: number }>`SELECT pg_backend_pid() AS pid`
        yield* Deferred.succeed(pid, rows[0]!.pid)
        yield* Deferred.succeed(result, yield* query)
        yield* Deferred.await(release)
      })).pipe(Effect.orDie)
    )
    return { pid: yield* Deferred.await(pid), result, fiber }
  })

/** Polls until `count` backends wait for a lock held by `pid`; answers their pids. */
export const waitingFor = (pid: number, count = 1) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) =>
      sql<{ readonly pid: number }>`SELECT pid FROM pg_stat_activity WHERE ${pid}::int = ANY(pg_blocking_pids(pid))`
        .pipe(
          Effect.filterOrFail((rows) => rows.length >= count, () => "not yet"),
          Effect.retry(Schedule.spaced("5 millis")),
          Effect.map((rows) => rows.map((r) => r.pid)),
          Effect.timeout("20 seconds"),
          Effect.orDie
        )
  )

/** The budget row locked by another transaction: a top-up's conditional update waits for it. */
export const lockPool = (name: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const release = yield* Deferred.make<void>()
    const held = yield* inTransaction(sql`SELECT 1 FROM rein_budgets WHERE name = ${name} FOR UPDATE`, release)
    return { ...held, release }
  })

/** Polls until `holder`'s first heartbeat (the one its budget runs when made) has reported. */
export const firstHeartbeat = (name: string, holder: string) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) =>
      sql<{ readonly beat: boolean }>`SELECT heartbeat_at > opened_at AS beat FROM rein_budget_leases
      WHERE budget = ${name} AND holder = ${holder}`.pipe(
        Effect.filterOrFail((rows) => rows[0]?.beat === true, () => "not yet"),
        Effect.retry(Schedule.spaced("5 millis")),
        Effect.timeout("20 seconds"),
        Effect.orDie
      )
  )

/**
 * The budget row locked (`lockPool`) until a top-up waits for it in its conditional update of the pool (after
 * it locked its lease row); answers the lock and that top-up's backend pid.
 */
export const topUpWaiting = (name: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const pool = yield* lockPool(name)
    const [topUp] = yield* waitingFor(pool.pid)
    const waiting = yield* sql<{ readonly query: string }>`SELECT query FROM pg_stat_activity WHERE pid = ${topUp!}`
    if (!waiting[0]!.query.includes("calls_grant")) {
      return yield* Effect.die(new Error(`not a top-up waits for the pool: ${waiting[0]!.query}`))
    }
    return { pool, topUp: topUp! }
  }).pipe(Effect.orDie)
