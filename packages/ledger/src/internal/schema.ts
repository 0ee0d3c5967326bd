/**
 * The SQLite schema of the ledger. The state machine is enforced twice: by the store's code, and here by
 * triggers, so that no statement — not even one written by hand against the file — can skip a state, start
 * anywhere but `created`, rewrite an execution's identity, or edit or delete a receipt.
 *
 * @internal
 */
import { transitions } from "../Execution.js"

const hex64 = (column: string) => `(${column} IS NULL OR (length(${column}) = 64 AND ${column} NOT GLOB '*[^0-9a-f]*'))`
const code = (column: string) => `(length(${column}) BETWEEN 1 AND 64 AND ${column} NOT GLOB '*[^a-z0-9_]*')`

/** @internal */
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
