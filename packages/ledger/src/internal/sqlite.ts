/**
 * An `@effect/sql` client on one SQLite file through `libsql`, whose registry package ships its native binary
 * (`@libsql/<platform>` optional dependencies): installing the ledger compiles nothing.
 *
 * One connection per client, serialised by a semaphore (SQLite has one writer per file anyway). The file is
 * opened in WAL mode with the busy timeout set before the first statement, so that a process opening a file
 * another process is writing waits for the lock instead of failing with `database is locked`. Locking across
 * processes is SQLite's own (POSIX advisory locks on the file and its `-shm`), the same as any SQLite build.
 *
 * libsql (0.5) does not reset a statement whose step failed with `SQLITE_BUSY`: SQLite keeps such a statement
 * in progress so that it can be stepped again, and while it is, every `COMMIT` on the connection fails with
 * `cannot commit transaction - SQL statements in progress`. Two rules keep a busy failure from outliving its
 * statement: statements without parameters or rows (`BEGIN IMMEDIATE`, `COMMIT`, `ROLLBACK`, savepoints) run
 * through `exec`, which finalises them; and a prepared statement that fails busy outside a transaction
 * replaces the connection (nothing is open on it then), so the stuck statement is never used again.
 *
 * @internal
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import { SqlClient } from "@effect/sql"
import type { Connection } from "@effect/sql/SqlConnection"
import { SqlError } from "@effect/sql/SqlError"
import * as Statement from "@effect/sql/Statement"
import { Context, Duration, Effect, Layer, Schedule, Scope, Stream } from "effect"
import Database from "libsql"

/** @internal */
export interface Options {
  readonly filename: string
  /** How long a statement waits for another connection's lock, in milliseconds. */
  readonly busyTimeoutMillis: number
}

type Row = Record<string, unknown>
type Transform = (<A extends object>(rows: ReadonlyArray<A>) => ReadonlyArray<A>) | undefined

// Prepared statements kept per connection; the ledger issues a few dozen distinct ones.
const CACHE_SIZE = 200

const failed = (message: string) => (cause: unknown) => new SqlError({ cause, message })

const isBusy = (cause: unknown): boolean => {
  const code = typeof cause === "object" && cause !== null && "code" in cause ? cause.code : undefined
  return typeof code === "string" && (code.startsWith("SQLITE_BUSY") || code.startsWith("SQLITE_LOCKED"))
}

const openSync = (options: Options): Database.Database => {
  // SQLite keeps the timeout in a C int.
  const db = new Database(options.filename, { timeout: Math.min(2 ** 31 - 1, options.busyTimeoutMillis) })
  try {
    db.pragma("journal_mode = WAL")
    return db
  } catch (cause) {
    db.close()
    throw cause
  }
}

/**
 * Opens the file, again while the open fails busy, for up to the busy timeout. SQLite answers `SQLITE_BUSY` at
 * once, without waiting in its busy handler, where waiting could deadlock: switching a new file to WAL while
 * another process holds a lock it is trying to escalate is such a case (seen in CI: 4 to 6 processes opening
 * one new ledger file at once, one failed with `database is locked` within the 5 s timeout).
 */
const openRetrying = (options: Options) =>
  Effect.try({
    try: (): Handle => ({ db: openSync(options), prepared: new Map() }),
    catch: failed(`Failed to open ${options.filename}`)
  }).pipe(
    Effect.retry({
      while: (error) => isBusy(error.cause),
      schedule: Schedule.exponential("5 millis").pipe(
        Schedule.union(Schedule.spaced("100 millis")),
        Schedule.jittered,
        Schedule.upTo(Duration.millis(options.busyTimeoutMillis))
      )
    })
  )

/** The open connection and its prepared statements, replaced together after a busy failure. */
interface Handle {
  readonly db: Database.Database
  readonly prepared: Map<string, Database.Statement>
}

const makeConnection = (options: Options) =>
  Effect.gen(function*() {
    // Every use of `current` is synchronous and under the client's semaphore.
    let current: Handle = yield* Effect.acquireRelease(
      openRetrying(options),
      () => Effect.sync(() => current.db.close())
    )

    const prepare = (sql: string): Database.Statement => {
      const cached = current.prepared.get(sql)
      if (cached !== undefined) return cached
      const statement = current.db.prepare(sql)
      if (current.prepared.size >= CACHE_SIZE) current.prepared.clear()
      current.prepared.set(sql, statement)
      return statement
    }
    const recover = (cause: unknown) => {
      if (!isBusy(cause) || current.db.inTransaction) return
      const stale = current
      current = { db: openSync(options), prepared: new Map() }
      stale.db.close()
    }

    // `prepared`: whether the failure can have left a prepared statement in progress.
    const attempt = <A>(message: string, body: () => A, prepared = true) =>
      Effect.try({
        try: body,
        catch: (cause) => {
          try {
            if (prepared) recover(cause)
          } catch {
            // Reopening failed too: the next statement reports it.
          }
          return new SqlError({ cause, message })
        }
      })

    const rows = (sql: string, params: ReadonlyArray<unknown>, raw: boolean) =>
      Effect.withFiberRuntime<ReadonlyArray<Row>, SqlError>((fiber) =>
        attempt("Failed to execute statement", (): ReadonlyArray<Row> => {
          const statement = prepare(sql)
          statement.safeIntegers(Context.get(fiber.currentContext, SqlClient.SafeIntegers))
          if (statement.reader) return statement.all(...params) as Array<Row>
          const result = statement.run(...params)
          return raw ? [{ changes: result.changes, lastInsertRowid: result.lastInsertRowid }] : []
        })
      )
    const transformed = (effect: Effect.Effect<ReadonlyArray<Row>, SqlError>, transform: Transform) =>
      transform === undefined ? effect : Effect.map(effect, transform)

    const values = (sql: string, params: ReadonlyArray<unknown>) =>
      attempt("Failed to execute statement", (): ReadonlyArray<ReadonlyArray<unknown>> => {
        const statement = prepare(sql)
        if (!statement.reader) {
          statement.run(...params)
          return []
        }
        try {
          return statement.raw(true).all(...params) as Array<ReadonlyArray<unknown>>
        } finally {
          statement.raw(false)
        }
      })

    const unprepared = (sql: string, params: ReadonlyArray<unknown>) =>
      params.length > 0 ? rows(sql, params, false) : Effect.suspend(() => {
        const statement = attempt("Failed to prepare statement", () => current.db.prepare(sql))
        return Effect.flatMap(statement, (s) =>
          s.reader
            ? attempt("Failed to execute statement", () => s.all() as Array<Row>)
            : attempt("Failed to execute statement", () => {
              current.db.exec(sql)
              return []
            }, false))
      })

    const connection: Connection = {
      execute: (sql, params, transform) => transformed(rows(sql, params, false), transform),
      executeRaw: (sql, params) => rows(sql, params, true),
      executeValues: values,
      executeUnprepared: (sql, params, transform) => transformed(unprepared(sql, params), transform),
      executeStream: (sql, params, transform) =>
        Stream.fromIterableEffect(transformed(rows(sql, params, false), transform))
    }
    return connection
  })

/** The client on `options.filename`, closed with the scope. @internal */
export const make = (
  options: Options
): Effect.Effect<SqlClient.SqlClient, SqlError, Scope.Scope | Reactivity.Reactivity> =>
  Effect.gen(function*() {
    const connection = yield* makeConnection(options)
    const semaphore = yield* Effect.makeSemaphore(1)
    // A transaction holds the connection until its scope closes; single statements take it one at a time.
    const transactionAcquirer = Effect.uninterruptibleMask((restore) =>
      Effect.as(
        Effect.zipRight(
          restore(semaphore.take(1)),
          Effect.tap(Effect.scope, (scope) => Scope.addFinalizer(scope, semaphore.release(1)))
        ),
        connection
      )
    )
    return yield* SqlClient.make({
      acquirer: semaphore.withPermits(1)(Effect.succeed(connection)),
      transactionAcquirer,
      compiler: Statement.makeCompilerSqlite(),
      spanAttributes: [["db.system.name", "sqlite"]]
    })
  })

/** @internal */
export const layer = (options: Options): Layer.Layer<SqlClient.SqlClient, SqlError> =>
  Layer.scoped(SqlClient.SqlClient, make(options)).pipe(Layer.provide(Reactivity.layer))
