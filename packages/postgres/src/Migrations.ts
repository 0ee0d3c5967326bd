/**
 * The schema of `@rein/postgres`, as versioned migrations recorded in `rein_migrations`. Running them is idempotent and safe from many processes at once: the whole run holds a
 * transaction-scoped advisory lock, so the second process waits for the first and then finds nothing to do.
 *
 * Tables (amounts are integer units: cost in nano-dollars, tokens, calls; `null` caps are unlimited):
 * - `rein_budgets`: one row per shared budget: its caps, what is `spent` (settled by closed or reclaimed
 *   leases) and what is `leased` (held by live leases). Always `spent + leased ≤ cap`.
 * - `rein_budget_leases`: one row per process holding a slice: `leased` (its slice), `exposed` (the ceiling
 *   charged as spent if it dies), `charged` / `reserved` (its usage at its last report, for operators) and
 *   `expires_at` on the database clock, extended by each heartbeat.
 * - `rein_budget_reclaims`: one row per expired lease reclaimed: what was `charged` as spent (its ceiling) and
 *   what was `returned` to the pool (the rest of its slice).
 * - `rein_batch_runs` (0004): one row per distributed batch run: its manifest (identity and fingerprint, as
 *   an artifact's first line), the identity fingerprint of the current session, a summary of the contract and
 *   guardrails, `created_at` and the session's `started_at` on the database clock (the batch deadline counts
 *   from it), `status` (`running`, `stopped`, `finished`) and the stop (first trigger wins; its item id).
 * - `rein_batch_items` (0004): one row per accepted item: id, submission index, input and prompt fingerprints
 *   (never the prompt or the input), `state` (`pending`, `leased`, `done`), the lease (owner, fencing token,
 *   expiry and time taken on the database clock), how many times it was leased, and the outcome of its terminal record.
 * - `rein_batch_records` (0004): the run's artifact: every terminal record in the order written (the JSONL
 *   file's lines), with no prompt or input text.
 *
 * @since 0.1.0
 */
import { SqlClient } from "@effect/sql"
import type { SqlError } from "@effect/sql/SqlError"
import { Effect } from "effect"

const amounts = (kind: string) =>
  `calls_${kind} bigint NOT NULL DEFAULT 0,
  cost_${kind} bigint NOT NULL DEFAULT 0,
  tokens_${kind} bigint NOT NULL DEFAULT 0`

const budgets = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  Effect.all([
    sql.unsafe(`CREATE TABLE rein_budgets (
      name text PRIMARY KEY,
      calls_cap bigint CHECK (calls_cap >= 0),
      cost_cap bigint CHECK (cost_cap >= 0),
      tokens_cap bigint CHECK (tokens_cap >= 0),
      ${amounts("spent")},
      ${amounts("leased")},
      created_at timestamptz NOT NULL DEFAULT clock_timestamp()
    )`),
    sql.unsafe(`CREATE TABLE rein_budget_leases (
      id text PRIMARY KEY,
      budget text NOT NULL REFERENCES rein_budgets (name),
      holder text NOT NULL,
      ${amounts("leased")},
      ${amounts("exposed")},
      ${amounts("charged")},
      ${amounts("reserved")},
      expires_at timestamptz NOT NULL,
      heartbeat_at timestamptz NOT NULL,
      opened_at timestamptz NOT NULL DEFAULT clock_timestamp()
    )`),
    sql.unsafe(`CREATE INDEX rein_budget_leases_expiry ON rein_budget_leases (budget, expires_at)`),
    sql.unsafe(`CREATE TABLE rein_budget_reclaims (
      lease_id text PRIMARY KEY,
      budget text NOT NULL REFERENCES rein_budgets (name),
      holder text NOT NULL,
      ${amounts("charged")},
      ${amounts("returned")},
      expired_at timestamptz NOT NULL,
      reclaimed_at timestamptz NOT NULL DEFAULT clock_timestamp()
    )`)
  ], { discard: true }))

const batch = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  Effect.all([
    sql.unsafe(`CREATE TABLE rein_batch_runs (
      run_id text PRIMARY KEY,
      manifest jsonb NOT NULL,
      identity_fingerprint text NOT NULL,
      settings jsonb NOT NULL DEFAULT '{}',
      deadline_millis float8 CHECK (deadline_millis > 0),
      status text NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'stopped', 'finished')),
      stop jsonb,
      stop_item_id text,
      stopped_at timestamptz,
      fenced_out bigint NOT NULL DEFAULT 0,
      created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
      started_at timestamptz NOT NULL DEFAULT clock_timestamp()
    )`),
    sql.unsafe(`CREATE SEQUENCE rein_batch_lease_tokens`),
    sql.unsafe(`CREATE TABLE rein_batch_items (
      run_id text NOT NULL REFERENCES rein_batch_runs (run_id) ON DELETE CASCADE,
      item_id text NOT NULL,
      idx integer NOT NULL CHECK (idx >= 0),
      input_fingerprint text NOT NULL,
      prompt_fingerprint text NOT NULL,
      state text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'leased', 'done')),
      lease_owner text,
      lease_token bigint,
      lease_expires timestamptz,
      leased_at timestamptz,
      leases integer NOT NULL DEFAULT 0,
      outcome text,
      category text,
      cost float8,
      finished_at timestamptz,
      PRIMARY KEY (run_id, item_id),
      UNIQUE (run_id, idx)
    )`),
    sql.unsafe(`CREATE INDEX rein_batch_items_open ON rein_batch_items (run_id, idx) WHERE state <> 'done'`),
    sql.unsafe(`CREATE INDEX rein_batch_items_owner ON rein_batch_items (lease_owner) WHERE state = 'leased'`),
    sql.unsafe(`CREATE TABLE rein_batch_records (
      run_id text NOT NULL REFERENCES rein_batch_runs (run_id) ON DELETE CASCADE,
      seq bigserial,
      item_id text NOT NULL,
      record jsonb NOT NULL,
      written_at timestamptz NOT NULL DEFAULT clock_timestamp(),
      PRIMARY KEY (run_id, seq)
    )`)
  ], { discard: true }))

/**
 * The migrations, by version. A new version is a new key; a released one is never edited.
 *
 * @example
 * ```ts
 * import { Migrations } from "@rein/postgres"
 *
 * const versions = Object.keys(Migrations.migrations) // ["0001_budgets", "0004_batch"]
 * ```
 * @category migrations
 * @since 0.1.0
 */
export const migrations = {
  "0001_budgets": budgets,
  "0004_batch": batch
}

const LOCK = "rein_postgres_migrations"

/**
 * Brings the schema up to date, in one transaction holding a transaction-scoped advisory lock: concurrent
 * runs wait for one another, and a run finds done what an earlier one recorded in `rein_migrations`.
 *
 * @example
 * ```ts
 * import { PgClient } from "@effect/sql-pg"
 * import { Effect, Redacted } from "effect"
 * import { Migrations } from "@rein/postgres"
 *
 * const program = Migrations.run.pipe(
 *   Effect.provide(PgClient.layer({ url: Redacted.make("postgres://localhost/rein") }))
 * )
 * ```
 * @category migrations
 * @since 0.1.0
 */
export const run: Effect.Effect<void, SqlError, SqlClient.SqlClient> = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) =>
    sql.withTransaction(Effect.gen(function*() {
      yield* sql`SELECT pg_advisory_xact_lock(hashtext(${LOCK}))`
      yield* sql`CREATE TABLE IF NOT EXISTS rein_migrations (
        version integer PRIMARY KEY,
        name text NOT NULL,
        applied_at timestamptz NOT NULL DEFAULT clock_timestamp()
      )`
      const done = new Set((yield* sql<{ readonly version: number }>`SELECT version FROM rein_migrations`)
        .map((row) => row.version))
      const pending = Object.entries(migrations)
        .map(([key, effect]) => ({ version: Number(key.slice(0, 4)), name: key.slice(5), effect }))
        .filter((m) => !done.has(m.version))
        .sort((a, b) => a.version - b.version)
      for (const m of pending) {
        yield* m.effect
        yield* sql`INSERT INTO rein_migrations (version, name) VALUES (${m.version}, ${m.name})`
      }
    }))
)
