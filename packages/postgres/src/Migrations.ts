/**
 * The schema of `@rein/postgres`, as versioned migrations recorded in `rein_migrations`. Running them is idempotent and safe from many processes at once: the whole run holds a
 * transaction-scoped advisory lock, so the second process waits for the first and then finds nothing to do.
 *
 * Tables (amounts are integer units: cost in nano-dollars, tokens, calls; `null` caps are unlimited):
 * - `rein_budgets`: one row per shared budget: its caps, what is `spent` (settled by closed or reclaimed
 *   leases) and what is `leased` (held by live leases). Always `spent + leased ≤ cap`.
 * - `rein_budget_leases`: one row per process holding a slice: `leased` (its slice), `exposed` (the ceiling
 *   charged as spent if it dies), `charged` / `reserved` (the usage that ceiling was computed from, written
 *   with it by every report, top-up and give-back: for operators, and for other processes' `grantable`),
 *   `pending` (0005: the reservation that ceiling was raised for, not yet in `reserved` when it was written; 0
 *   otherwise, and on rows of processes older than 0005) and `expires_at` on the database clock, extended by
 *   each heartbeat. A ceiling is at most charged + reserved + pending + max(1, ⌈exposure × (leased − charged −
 *   reserved)⌉), `exposure` being the process's option (0.25 by default).
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
 * Health (`0002_health`, see `PgHealth`; times are milliseconds since the epoch on the database clock,
 * `clock_timestamp()`, in `float8`):
 * - `rein_health`: one row per shared health: its `config` (every process of it must use the same) and the
 *   global retry bucket, `global_tokens`.
 * - `rein_health_breakers`: one row per endpoint of a health: the breaker (`state`, `consecutive`, the
 *   window as bits `window_bits` / `window_length`, `open_until`, `cooldown_millis`), changed only by
 *   compare-and-set on `version`; and the endpoint's retry bucket, `tokens`, changed only by relative updates
 *   (a deposit, a withdrawal in the same statement as a compare-and-set).
 * - `rein_health_probes`: one row per half-open probe slot taken: its `holder` (a process) and `expires_at`,
 *   extended by the holder's heartbeat. A slot counts while it has not expired: a dead holder's slot is free
 *   again at `expires_at`, with nothing to reclaim.
 *
 * Why not `@effect/sql`'s `Migrator` (checked against `@effect/sql` 0.52.1, `src/Migrator.ts`): `Migrator.make`
 * first runs `ensureMigrationsTable`, whose PostgreSQL branch is
 * `Effect.catchAll(sql("select <table>::regclass"), () => sql("CREATE TABLE <table> (…)"))` (in tagged-template
 * form in the source), and only then
 * `sql.withTransaction(run)` (where `run` takes `LOCK TABLE … IN ACCESS EXCLUSIVE MODE`). On a fresh database
 * the `regclass` cast fails (the table does not exist) and the error is caught in Effect, but not in
 * PostgreSQL:
 * - outside a transaction that is harmless, but then nothing serialises two processes starting at once: both
 *   see no table, both `CREATE TABLE`, and the loser fails (`ensureMigrationsTable`'s error is not caught;
 *   the Migrator's own serialisation, the table lock and the "locked" duplicate insert, starts after it; read
 *   from the code, not reproduced);
 * - inside an enclosing transaction (how this module serialises concurrent starts: `pg_advisory_xact_lock`)
 *   the failed cast aborts the transaction, and the `CREATE TABLE` that follows fails with SQLSTATE 25P02
 *   ("current transaction is aborted, commands ignored until end of transaction block"). Checked on
 *   PostgreSQL 15: `SELECT pg_advisory_xact_lock(1)`, then the caught cast and the `CREATE TABLE`, in one
 *   `withTransaction`, fails with 25P02; the same two statements outside a transaction succeed.
 * Adopting the Migrator later would mean creating its table (`effect_sql_migrations`, another layout than
 * `rein_migrations`) with `CREATE TABLE IF NOT EXISTS` under the advisory lock before calling it, so the cast
 * succeeds, and carrying the versions recorded here over to it.
 *
 * Rate limits (`0003_rate_limits`, rate limits and run limits; see `PgRateLimiterStore`, `PgRunLimits`):
 * - `rein_rate_buckets`: one row per shared token bucket (`key`): `capacity`, refill `per_ms`, the pool's
 *   `level` at `refilled_at` (milliseconds on the bucket's clock; a negative level is a debt) and what live
 *   leases hold (`leased`). Always `level + leased ≤ capacity`: a refill never fills past what is leased.
 * - `rein_rate_leases`: one row per process and bucket: `granted` (taken from the pool, not yet reported
 *   used) and `expires_at` on the database clock, extended by each heartbeat.
 * - `rein_rate_reclaims`: one row per expired lease reclaimed, with what it still held.
 * - `rein_rate_windows`: one row per fixed-window counter (`RateLimiterStore.fixedWindow`).
 * - `rein_run_limits`: one row per shared run: its soft caps, the `tokens` / `cost` totals and the stop
 *   (first trigger wins: `stop` as JSON text, `stop_kind`, `stop_item_id`, `stopped_at`, `stopped_by`).
 * - `rein_run_cooldowns`: one row per run and endpoint cooling after a 429: `until_ms` on the bucket's clock.
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

const health = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  Effect.all([
    sql.unsafe(`CREATE TABLE rein_health (
      name text PRIMARY KEY,
      config jsonb NOT NULL,
      global_tokens float8 NOT NULL,
      created_at timestamptz NOT NULL DEFAULT clock_timestamp()
    )`),
    sql.unsafe(`CREATE TABLE rein_health_breakers (
      health text NOT NULL REFERENCES rein_health (name),
      endpoint text NOT NULL,
      version bigint NOT NULL DEFAULT 0,
      state text NOT NULL CHECK (state IN ('closed', 'open', 'half_open')),
      consecutive integer NOT NULL,
      window_bits integer NOT NULL,
      window_length integer NOT NULL,
      open_until float8 NOT NULL,
      cooldown_millis float8 NOT NULL,
      tokens float8 NOT NULL,
      updated_at timestamptz NOT NULL DEFAULT clock_timestamp(),
      PRIMARY KEY (health, endpoint)
    )`),
    sql.unsafe(`CREATE TABLE rein_health_probes (
      id text PRIMARY KEY,
      health text NOT NULL,
      endpoint text NOT NULL,
      holder text NOT NULL,
      expires_at float8 NOT NULL,
      taken_at timestamptz NOT NULL DEFAULT clock_timestamp(),
      FOREIGN KEY (health, endpoint) REFERENCES rein_health_breakers (health, endpoint)
    )`),
    sql.unsafe(`CREATE INDEX rein_health_probes_live ON rein_health_probes (health, endpoint, expires_at)`),
    sql.unsafe(`CREATE INDEX rein_health_probes_holder ON rein_health_probes (holder)`)
  ], { discard: true }))

const rateLimits = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  Effect.all([
    sql.unsafe(`CREATE TABLE rein_rate_buckets (
      key text PRIMARY KEY,
      capacity float8 NOT NULL CHECK (capacity > 0),
      per_ms float8 NOT NULL CHECK (per_ms > 0),
      level float8 NOT NULL,
      leased float8 NOT NULL DEFAULT 0 CHECK (leased >= 0),
      refilled_at float8 NOT NULL,
      created_at timestamptz NOT NULL DEFAULT clock_timestamp()
    )`),
    sql.unsafe(`CREATE TABLE rein_rate_leases (
      id text PRIMARY KEY,
      key text NOT NULL REFERENCES rein_rate_buckets (key),
      holder text NOT NULL,
      granted float8 NOT NULL DEFAULT 0 CHECK (granted >= 0),
      expires_at timestamptz NOT NULL,
      opened_at timestamptz NOT NULL DEFAULT clock_timestamp()
    )`),
    sql.unsafe(`CREATE INDEX rein_rate_leases_expiry ON rein_rate_leases (expires_at)`),
    sql.unsafe(`CREATE TABLE rein_rate_reclaims (
      lease_id text PRIMARY KEY,
      key text NOT NULL,
      holder text NOT NULL,
      granted float8 NOT NULL,
      expired_at timestamptz NOT NULL,
      reclaimed_at timestamptz NOT NULL DEFAULT clock_timestamp()
    )`),
    sql.unsafe(`CREATE TABLE rein_rate_windows (
      key text PRIMARY KEY,
      count float8 NOT NULL,
      expires_at float8 NOT NULL
    )`),
    sql.unsafe(`CREATE TABLE rein_run_limits (
      name text PRIMARY KEY,
      max_total_tokens float8,
      max_total_cost float8,
      tokens float8 NOT NULL DEFAULT 0,
      cost float8 NOT NULL DEFAULT 0,
      stop text,
      stop_kind text,
      stop_item_id text,
      stopped_at timestamptz,
      stopped_by text,
      created_at timestamptz NOT NULL DEFAULT clock_timestamp()
    )`),
    sql.unsafe(`CREATE TABLE rein_run_cooldowns (
      run text NOT NULL REFERENCES rein_run_limits (name),
      endpoint text NOT NULL,
      until_ms float8 NOT NULL,
      PRIMARY KEY (run, endpoint)
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

// Additive: a column with a default, so rows written before it, and processes that do not write it, read 0.
const budgetPending = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) =>
    sql.unsafe(`ALTER TABLE rein_budget_leases ADD COLUMN calls_pending bigint NOT NULL DEFAULT 0,
    ADD COLUMN cost_pending bigint NOT NULL DEFAULT 0, ADD COLUMN tokens_pending bigint NOT NULL DEFAULT 0`)
)

/**
 * The migrations, by version. A new version is a new key; a released one is never edited.
 *
 * @example
 * ```ts
 * import { Migrations } from "@rein/postgres"
 *
 * const versions = Object.keys(Migrations.migrations) // ["0001_budgets", "0002_health", "0003_rate_limits", "0004_batch",
 * //   "0005_budget_pending"]
 * ```
 * @category migrations
 * @since 0.1.0
 */
export const migrations = {
  "0001_budgets": budgets,
  "0002_health": health,
  "0003_rate_limits": rateLimits,
  "0004_batch": batch,
  "0005_budget_pending": budgetPending
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
