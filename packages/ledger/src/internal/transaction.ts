/**
 * Write transactions that take SQLite's write lock when they begin (`BEGIN IMMEDIATE`).
 *
 * A deferred `BEGIN` (what `sql.withTransaction` issues) reads first and asks for the write lock only at its
 * first write. In WAL mode, if another process committed in between, that upgrade fails at once with
 * `database is locked`: the busy timeout cannot help, since waiting could never succeed on a stale snapshot.
 * An immediate transaction waits (up to the busy timeout) for the lock before it reads anything, so several
 * processes on one file queue their writes instead of failing them.
 *
 * @internal
 */
import { SqlClient } from "@effect/sql"
import type { Connection } from "@effect/sql/SqlConnection"
import { Effect, Scope } from "effect"

/** @internal */
export const immediate = (sql: SqlClient.SqlClient) => {
  // A `BEGIN IMMEDIATE` that timed out opened nothing; `makeWithTransaction` rolls back after any failure,
  // and a `ROLLBACK` with no transaction would fail (and die). Track which connections have one open.
  const open = new WeakSet<Connection>()
  const run = (conn: Connection, statement: string) => conn.executeUnprepared(statement, [], undefined)
  return SqlClient.makeWithTransaction({
    transactionTag: SqlClient.TransactionConnection,
    spanAttributes: [["db.system.name", "sqlite"]],
    acquireConnection: Effect.flatMap(
      Scope.make(),
      (scope) => Effect.map(Scope.extend(sql.reserve, scope), (conn) => [scope, conn] as const)
    ),
    begin: (conn) => Effect.tap(run(conn, "BEGIN IMMEDIATE"), () => open.add(conn)),
    savepoint: (conn, id) => run(conn, `SAVEPOINT effect_sql_${id}`),
    commit: (conn) => Effect.tap(run(conn, "COMMIT"), () => open.delete(conn)),
    rollback: (conn) => open.has(conn) ? Effect.tap(run(conn, "ROLLBACK"), () => open.delete(conn)) : Effect.void,
    rollbackSavepoint: (conn, id) => run(conn, `ROLLBACK TO SAVEPOINT effect_sql_${id}`)
  })
}
