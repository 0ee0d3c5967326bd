// Commits held at the point after PostgreSQL has committed them locally, to interrupt a client there
// deterministically. The test server runs with `synchronous_commit=off`; a client that connects with
// `synchronousUrl` commits with `on`, and while `synchronous_standby_names` names a standby that never connects,
// each of its commits that wrote something waits (wait event `SyncRep`) after its commit record is written and
// before it answers. Cancelling that wait (`pg_cancel_backend`) or clearing the standby's name ends it: the
// transaction stays committed ("The transaction has already committed locally") and the client gets its answer.
// Only such a client waits: the test's own connections commit with `off`.
import { SqlClient } from "@effect/sql"
import { Deferred, Effect, Fiber, Schedule } from "effect"

/** The server's `url`, for a client whose commits wait for the (absent) synchronous standby while it is named. */
export const synchronousUrl = (url: string) => `${url}?options=-c%20synchronous_commit%3Don`

/** Polls until a backend waits at a commit for the synchronous standby (`pid`: that one); answers its pid. */
export const committing = (pid?: number) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) =>
      sql<{ readonly pid: number }>`SELECT pid FROM pg_stat_activity WHERE wait_event = 'SyncRep'
        AND (${pid ?? null}::int IS NULL OR pid = ${pid ?? null}::int)`.pipe(
        Effect.filterOrFail((rows) => rows.length > 0, () => "not yet"),
        Effect.retry(Schedule.spaced("5 millis")),
        Effect.map((rows) => rows[0]!.pid),
        Effect.timeout("20 seconds"),
        Effect.orDie
      )
  )

/** Ends `pid`'s wait at its commit: the transaction stays committed, its client gets its answer. */
export const cancelWait = (pid: number) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => sql`SELECT pg_cancel_backend(${pid}::int)`).pipe(Effect.orDie)

/**
 * One probe: a transaction that writes, committed with `synchronous_commit = on`. `true` when its commit waited
 * (then it is released), `false` when it returned at once (the standby's name not yet in effect).
 */
const probe = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const pid = yield* Deferred.make<number>()
  const fiber = yield* Effect.fork(sql.withTransaction(Effect.gen(function*() {
    yield* sql`SET LOCAL synchronous_commit = on`
    // A commit waits only if its transaction wrote to the log.
    const rows = yield* sql<{ readonly pid: number }>`INSERT INTO rein_test_probes DEFAULT VALUES
      RETURNING pg_backend_pid() AS pid`
    yield* Deferred.succeed(pid, rows[0]!.pid)
  })))
  const backend = yield* Deferred.await(pid)
  const held = yield* Effect.race(Effect.as(Fiber.join(fiber), false), Effect.as(committing(backend), true))
  if (held) {
    yield* cancelWait(backend)
    yield* Fiber.join(fiber)
  }
  return held
})

/**
 * From now on, every commit of a `synchronousUrl` client waits for the standby; answers once that is in effect
 * (a probe's commit waited: the checkpointer has read the new setting).
 */
export const holdCommits = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE IF NOT EXISTS rein_test_probes (at timestamptz DEFAULT clock_timestamp())`
  yield* sql.unsafe(`ALTER SYSTEM SET synchronous_standby_names = 'never_connects'`)
  yield* sql`SELECT pg_reload_conf()`
  yield* probe.pipe(Effect.repeat({ until: (held) => held }), Effect.timeout("20 seconds"))
}).pipe(Effect.orDie)

/** Commits no longer wait; the ones waiting are released (committed, answered). */
export const releaseCommits = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql.unsafe(`ALTER SYSTEM RESET synchronous_standby_names`)
  yield* sql`SELECT pg_reload_conf()`
}).pipe(Effect.orDie)
