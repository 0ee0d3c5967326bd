/**
 * The SQLite schema of the ledger. The state machine is enforced twice: by the store's code, and here by
 * triggers, so that no statement — not even one written by hand against the file — can skip a state, start
 * anywhere but `created`, rewrite an execution's identity, or edit or delete a receipt.
 *
 * The schema is versioned in SQLite's `user_version`: migration `i` takes a file from version `i` to `i + 1`.
 * Files written before versioning are at `user_version` 0 and hold version 1's tables; version 1's statements
 * are all `IF NOT EXISTS` / `OR IGNORE`, so they are a no-op on such a file and create a new one.
 *
 * @internal
 */
import type { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { transitions } from "../Execution.js"
import { immediate } from "./transaction.js"

const hex64 = (column: string) => `(${column} IS NULL OR (length(${column}) = 64 AND ${column} NOT GLOB '*[^0-9a-f]*'))`
const code = (column: string) => `(length(${column}) BETWEEN 1 AND 64 AND ${column} NOT GLOB '*[^a-z0-9_]*')`

/** Version 1: executions, receipts, nonces and the triggers of the state machine. @internal */
export const statements: ReadonlyArray<string> = [
  `CREATE TABLE IF NOT EXISTS ledger_transitions (
    from_state TEXT NOT NULL,
    to_state TEXT NOT NULL,
    PRIMARY KEY (from_state, to_state)
  ) WITHOUT ROWID`,
  ...transitions.map(([from, to]) =>
    `INSERT OR IGNORE INTO ledger_transitions (from_state, to_state) VALUES ('${from}', '${to}')`
  ),
  `CREATE TABLE IF NOT EXISTS ledger_executions (
    id TEXT PRIMARY KEY,
    organisation TEXT NOT NULL,
    connection TEXT NOT NULL,
    operation TEXT NOT NULL,
    origin TEXT NOT NULL,
    idempotency_key TEXT,
    request_digest TEXT NOT NULL CHECK ${hex64("request_digest")},
    state TEXT NOT NULL,
    code TEXT NOT NULL CHECK ${code("code")},
    confirmation TEXT CHECK ${hex64("confirmation")},
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    UNIQUE (organisation, idempotency_key)
  )`,
  `CREATE INDEX IF NOT EXISTS ledger_executions_state ON ledger_executions (state)`,
  `CREATE TABLE IF NOT EXISTS ledger_receipts (
    execution_id TEXT NOT NULL REFERENCES ledger_executions (id),
    seq INTEGER NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('transition', 'evidence')),
    from_state TEXT,
    to_state TEXT NOT NULL,
    code TEXT NOT NULL CHECK ${code("code")},
    source TEXT NOT NULL,
    digest TEXT CHECK ${hex64("digest")},
    refers_to INTEGER,
    at INTEGER NOT NULL,
    PRIMARY KEY (execution_id, seq)
  )`,
  `CREATE TABLE IF NOT EXISTS ledger_nonces (
    issuer TEXT NOT NULL,
    nonce TEXT NOT NULL,
    execution_id TEXT NOT NULL,
    used_at INTEGER NOT NULL,
    PRIMARY KEY (issuer, nonce)
  )`,
  `CREATE TRIGGER IF NOT EXISTS ledger_executions_first_state
    BEFORE INSERT ON ledger_executions WHEN NEW.state <> 'created'
    BEGIN SELECT RAISE(ABORT, 'ledger: the first state must be created'); END`,
  `CREATE TRIGGER IF NOT EXISTS ledger_executions_transition
    BEFORE UPDATE OF state ON ledger_executions
    WHEN NOT EXISTS (SELECT 1 FROM ledger_transitions WHERE from_state = OLD.state AND to_state = NEW.state)
    BEGIN SELECT RAISE(ABORT, 'ledger: illegal transition'); END`,
  `CREATE TRIGGER IF NOT EXISTS ledger_executions_identity
    BEFORE UPDATE OF id, organisation, connection, operation, origin, idempotency_key, request_digest, created_at
    ON ledger_executions
    BEGIN SELECT RAISE(ABORT, 'ledger: execution identity is immutable'); END`,
  `CREATE TRIGGER IF NOT EXISTS ledger_executions_no_delete
    BEFORE DELETE ON ledger_executions
    BEGIN SELECT RAISE(ABORT, 'ledger: executions are never deleted'); END`,
  `CREATE TRIGGER IF NOT EXISTS ledger_receipts_no_update
    BEFORE UPDATE ON ledger_receipts
    BEGIN SELECT RAISE(ABORT, 'ledger: receipts are immutable'); END`,
  `CREATE TRIGGER IF NOT EXISTS ledger_receipts_no_delete
    BEFORE DELETE ON ledger_receipts
    BEGIN SELECT RAISE(ABORT, 'ledger: receipts are immutable'); END`,
  `CREATE TRIGGER IF NOT EXISTS ledger_nonces_no_update
    BEFORE UPDATE ON ledger_nonces
    BEGIN SELECT RAISE(ABORT, 'ledger: nonces are single-use'); END`,
  `CREATE TRIGGER IF NOT EXISTS ledger_nonces_no_delete
    BEFORE DELETE ON ledger_nonces
    BEGIN SELECT RAISE(ABORT, 'ledger: nonces are single-use'); END`
]

/**
 * Version 2: who owns a running dispatch. One row per execution in `dispatch_started` whose dispatcher holds a
 * lease; it is deleted when the execution leaves `dispatch_started`. An execution in `dispatch_started`
 * without a row (started before version 2) has no live owner.
 *
 * @internal
 */
export const leases: ReadonlyArray<string> = [
  `CREATE TABLE IF NOT EXISTS ledger_leases (
    execution_id TEXT PRIMARY KEY REFERENCES ledger_executions (id),
    owner TEXT NOT NULL,
    token TEXT NOT NULL,
    expires_at INTEGER NOT NULL
  ) WITHOUT ROWID`
]

/** @internal */
export const migrations: ReadonlyArray<ReadonlyArray<string>> = [statements, leases]

/** The schema version this code writes. @internal */
export const version = migrations.length

/** A ledger file written by a newer version of the ledger than this one. @internal */
export class NewerSchema extends Error {
  constructor(readonly found: number) {
    super(`ledger file has schema version ${found}; this version of @rein/ledger reads up to ${version}`)
  }
}

const userVersion = (sql: SqlClient.SqlClient) =>
  Effect.map(sql.unsafe<{ readonly user_version: number }>("PRAGMA user_version"), (rows) => rows[0]?.user_version ?? 0)

/**
 * Brings the file to {@link version}. Safe when several processes open one file at once: the version is read
 * again inside an immediate transaction (which holds the write lock), so exactly one process applies each
 * step and the others find the file current. A current file is recognised without taking the lock.
 *
 * @internal
 */
export const migrate = (sql: SqlClient.SqlClient) =>
  Effect.gen(function*() {
    const seen = yield* userVersion(sql)
    if (seen > version) return yield* Effect.fail(new NewerSchema(seen))
    if (seen === version) return
    yield* immediate(sql)(Effect.gen(function*() {
      const current = yield* userVersion(sql)
      if (current > version) return yield* Effect.fail(new NewerSchema(current))
      for (const step of migrations.slice(current)) {
        yield* Effect.forEach(step, (statement) => sql.unsafe(statement), { discard: true })
      }
      if (current < version) yield* sql.unsafe(`PRAGMA user_version = ${version}`)
    }))
  })
