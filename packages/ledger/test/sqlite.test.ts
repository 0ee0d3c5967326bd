import { SqlClient } from "@effect/sql"
import { it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { describe, expect } from "vitest"
import * as Sqlite from "../src/internal/sqlite.js"
import { immediate } from "../src/internal/transaction.js"
import { tempDb } from "./helpers.js"

// Two connections to one file, as two processes would have. SQLite's own wait is synchronous and in real
// time, so the blocked side waits 1 ms.
const connect = (filename: string, busyTimeoutMillis: number) =>
  Effect.map(Layer.build(Sqlite.layer({ filename, busyTimeoutMillis })), Context.get(SqlClient.SqlClient))

const count = (sql: SqlClient.SqlClient) =>
  Effect.map(sql<{ readonly n: number }>`SELECT COUNT(*) AS n FROM t`, (rows) => rows[0]?.n)

// Runs `effect` while `holder` keeps the write lock in an open immediate transaction; `effect` runs outside
// that transaction, as another connection's caller.
const whileLocked = <A, E>(holder: SqlClient.SqlClient, effect: Effect.Effect<A, E>) =>
  immediate(holder)(
    Effect.zipRight(
      holder`INSERT INTO t VALUES (0)`,
      Effect.mapInputContext(effect, (context: Context.Context<never>) =>
        Context.omit(SqlClient.TransactionConnection)(context))
    )
  )

describe("the SQLite connection (libsql)", () => {
  it.scoped("a statement that failed busy leaves the connection able to commit", () =>
    Effect.gen(function*() {
      const { filename } = yield* tempDb
      const blocked = yield* connect(filename, 1)
      const holder = yield* connect(filename, 5_000)
      yield* blocked`CREATE TABLE t (x INTEGER)`
      // A write outside a transaction and a `BEGIN IMMEDIATE`, each refused while the lock is held.
      const failures = yield* whileLocked(
        holder,
        Effect.all([
          Effect.flip(blocked`INSERT INTO t VALUES (1)`),
          Effect.flip(immediate(blocked)(blocked`INSERT INTO t VALUES (2)`))
        ])
      )
      for (const failure of failures) expect(String(failure.cause)).toMatch(/database is locked/)
      // The lock is free: a transaction on the same client commits. (Other statements than the failed ones: a
      // statement that is run again is reset first, which would hide a stuck one.)
      yield* immediate(blocked)(blocked`INSERT INTO t VALUES (3)`)
      expect(yield* count(holder)).toBe(2)
    }))

  it.scoped("opens the file in WAL mode with the busy timeout it was given", () =>
    Effect.gen(function*() {
      const { filename } = yield* tempDb
      const sql = yield* connect(filename, 1_234)
      expect(yield* sql`PRAGMA journal_mode`).toEqual([{ journal_mode: "wal" }])
      expect(yield* sql`PRAGMA busy_timeout`).toEqual([{ timeout: 1_234 }])
    }))
})
