/**
 * Every query of a distributed batch run, in one place. Time is the database's `clock_timestamp()`, never
 * a process clock: lease expiry, the run's start and its deadline are all read and compared in the database.
 * The item rows never hold a prompt or an input, only their fingerprints.
 *
 * @internal
 */
import type { SqlClient } from "@effect/sql"
import type { ArtifactStore } from "@rein/batch"
import { Effect } from "effect"

type Sql = SqlClient.SqlClient

const interval = (sql: Sql, millis: number) => sql`(${millis}::float8 * interval '1 millisecond')`

/** The run row as read. @internal */
export interface RunRow {
  readonly run_id: string
  readonly manifest: unknown
  readonly identity_fingerprint: string
  readonly settings: unknown
  readonly deadline_millis: number | null
  readonly status: "running" | "stopped" | "finished"
  readonly stop: unknown
  readonly stop_item_id: string | null
  readonly fenced_out: number
  readonly created_at: string
  readonly started_at: string
  /** When the stop was recorded (a deadline's stop: when the deadline passed), if there is one. */
  readonly stopped_at: string | null
  /** Milliseconds since the session started, on the database clock. */
  readonly elapsed_millis: number
}

const RUN_COLUMNS = `run_id, manifest, identity_fingerprint, settings, deadline_millis, status, stop, stop_item_id,
  fenced_out::float8 AS fenced_out, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS created_at,
  to_char(started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS started_at,
  to_char(stopped_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS stopped_at,
  (extract(epoch FROM clock_timestamp() - started_at) * 1000)::float8 AS elapsed_millis`

/** The run row, if any. @internal */
export const readRun = (sql: Sql, runId: string) =>
  Effect.map(
    sql<RunRow>`SELECT ${sql.literal(RUN_COLUMNS)} FROM rein_batch_runs WHERE run_id = ${runId}`,
    (rows) => rows[0]
  )

/**
 * The same row, locked for the rest of the transaction (a start and a finish never interleave). `NO KEY`: a
 * worker's `finish` inserts records, whose foreign key takes a key-share lock on this row while the worker holds
 * item rows that the start's submission then locks; under `FOR UPDATE` the two deadlocked (40P01). The run's key
 * never changes, so the weaker lock still orders every start, stop and finish of the run. @internal
 */
export const lockRun = (sql: Sql, runId: string) =>
  Effect.map(
    sql<RunRow>`SELECT ${sql.literal(RUN_COLUMNS)} FROM rein_batch_runs WHERE run_id = ${runId} FOR NO KEY UPDATE`,
    (rows) => rows[0]
  )

/**
 * Creates the run row (nothing when it exists), created when the start's transaction began (`now()`: before
 * its items were read). @internal
 */
export const insertRun = (
  sql: Sql,
  run: {
    readonly runId: string
    readonly manifest: ArtifactStore.Manifest
    readonly settings: unknown
    readonly deadlineMillis: number | null
  }
) =>
  sql`INSERT INTO rein_batch_runs (run_id, manifest, identity_fingerprint, settings, deadline_millis, created_at)
    VALUES (${run.runId}, ${JSON.stringify(run.manifest)}::jsonb, ${run.manifest.identityFingerprint},
      ${JSON.stringify(run.settings)}::jsonb, ${run.deadlineMillis}, now())
    ON CONFLICT (run_id) DO NOTHING RETURNING run_id`

/**
 * A new session of a run that ended: running again from now, the stop cleared, under this identity and with
 * these settings and deadline. @internal
 */
export const restartRun = (
  sql: Sql,
  run: {
    readonly runId: string
    readonly identityFingerprint: string
    readonly settings: unknown
    readonly deadlineMillis: number | null
  }
) =>
  sql`UPDATE rein_batch_runs SET status = 'running', stop = NULL, stop_item_id = NULL, stopped_at = NULL,
    started_at = clock_timestamp(), identity_fingerprint = ${run.identityFingerprint},
    settings = ${JSON.stringify(run.settings)}::jsonb, deadline_millis = ${run.deadlineMillis}
    WHERE run_id = ${run.runId}`

/** The session starts now (a new run, once its items are submitted). @internal */
export const startedNow = (sql: Sql, runId: string) =>
  sql`UPDATE rein_batch_runs SET started_at = clock_timestamp() WHERE run_id = ${runId}`

/** Sets this transaction's level to READ COMMITTED (its first statement). @internal */
export const readCommitted = (sql: Sql) => sql`SET TRANSACTION ISOLATION LEVEL READ COMMITTED`

/** This transaction's isolation level (`read committed`, `repeatable read`, `serializable`, …). @internal */
export const isolation = (sql: Sql) =>
  Effect.map(
    sql<{ readonly level: string }>`SELECT current_setting('transaction_isolation') AS level`,
    (rows) => rows[0]?.level ?? "read committed"
  )

/** An item as submitted. @internal */
export interface ItemKey {
  readonly itemId: string
  readonly index: number
  readonly inputFingerprint: string
  readonly promptFingerprint: string
}

/**
 * Opens this transaction's submission: a temporary table of the items submitted so far (id, index, where each
 * was, fingerprints), dropped at commit or rollback. Its primary key is what finds two items with one id, in
 * the database, however many items a submission has; the run's items are then changed from it alone
 * (`applySubmission`), so a change that lost to a deadlock runs again without reading the source again. @internal
 */
export const openSubmission = (sql: Sql) =>
  Effect.zipRight(
    sql`DROP TABLE IF EXISTS pg_temp.rein_submission`,
    sql`CREATE TEMP TABLE rein_submission (item_id text PRIMARY KEY, idx integer NOT NULL, place text,
      input_fingerprint text NOT NULL, prompt_fingerprint text NOT NULL) ON COMMIT DROP`
  )

/** An item as submitted, with where it is in its source (for an error message; `null`: its index). @internal */
export interface Submitted extends ItemKey {
  readonly place: string | null
}

/**
 * An item of a submission whose index is not the run's: `recordedIdx` is the index the run has for it (`holder`
 * null), or the item is new and the run has another item, `holder`, at its index (`recordedIdx` null). @internal
 */
export interface Moved {
  readonly item_id: string
  readonly idx: number
  readonly place: string | null
  readonly recorded_idx: number | null
  readonly holder: string | null
}

/**
 * Records a chunk of items in the submission, in one statement (the run is not touched, nothing is locked).
 * Answers how many ids were new: fewer than the chunk's items means an id came twice (in this chunk or an
 * earlier one), and the caller fails the transaction. @internal
 */
export const stageItems = (sql: Sql, items: ReadonlyArray<Submitted>) =>
  Effect.map(
    sql<{ readonly fresh: number }>`WITH fresh AS (
        INSERT INTO rein_submission (item_id, idx, place, input_fingerprint, prompt_fingerprint)
        SELECT * FROM jsonb_to_recordset(${
      JSON.stringify(items.map((i) => ({
        item_id: i.itemId,
        idx: i.index,
        place: i.place,
        input_fingerprint: i.inputFingerprint,
        prompt_fingerprint: i.promptFingerprint
      })))
    }::jsonb) AS t(item_id text, idx int, place text, input_fingerprint text, prompt_fingerprint text)
        ON CONFLICT (item_id) DO NOTHING RETURNING 1)
      SELECT count(*)::int AS fresh FROM fresh`,
    (rows) => rows[0]!.fresh
  )

/**
 * Adds the submission's items to the run, in one statement: the items new to the run are inserted (an item
 * already there with the same input keeps its state; one whose input changed is pending again under its new
 * fingerprints: its old record cannot be reused for it). When an item's index is not the run's (the items were
 * reordered, or a new item is where the run has another), the run is left as it was and the first such item is
 * answered: the caller fails the transaction. The caller holds the run row (no other start adds items
 * meanwhile). @internal
 */
export const applySubmission = (sql: Sql, runId: string) =>
  Effect.map(
    sql<{ readonly moved: Moved | null }>`WITH
      -- The first item whose index is not the run's: the run has it elsewhere, or another item where it is.
      moved AS (
        SELECT m.item_id, m.idx, m.place, i.idx AS recorded_idx, NULL::text AS holder
        FROM rein_submission m JOIN rein_batch_items i ON i.run_id = ${runId} AND i.item_id = m.item_id
        WHERE i.idx <> m.idx
        UNION ALL
        SELECT m.item_id, m.idx, m.place, NULL::int, h.item_id
        FROM rein_submission m JOIN rein_batch_items h ON h.run_id = ${runId} AND h.idx = m.idx
        WHERE h.item_id <> m.item_id
          AND NOT EXISTS (SELECT 1 FROM rein_batch_items x WHERE x.run_id = ${runId} AND x.item_id = m.item_id)
        ORDER BY idx LIMIT 1),
      -- New items are inserted; an item already there is left unlocked (ON CONFLICT DO UPDATE would lock it even
      -- when it changes nothing, in submission order, against the workers' writes in id order: a deadlock),
      -- and only one whose input changed is updated (an UPDATE locks only the rows it changes).
      -- An item already there is never offered to the INSERT: ON CONFLICT (run_id, item_id) looks for it with
      -- a scan that can miss a row a worker's lease or write moves to a new version and commits meanwhile, and
      -- the insert then fails on the other unique key, (run_id, idx), with 23505. This statement's snapshot
      -- always sees the row (a start holds the run row, so no other start adds items meanwhile).
      ins AS (
        INSERT INTO rein_batch_items (run_id, item_id, idx, input_fingerprint, prompt_fingerprint)
        SELECT ${runId}, m.item_id, m.idx, m.input_fingerprint, m.prompt_fingerprint
        FROM rein_submission m WHERE NOT EXISTS (SELECT 1 FROM moved)
          AND NOT EXISTS (SELECT 1 FROM rein_batch_items x WHERE x.run_id = ${runId} AND x.item_id = m.item_id)
        ON CONFLICT (run_id, item_id) DO NOTHING),
      -- The rows of changed inputs, of the whole submission, locked in item_id order first (as the workers'
      -- heartbeat and finish lock them): updated in the join's order, or in item_id order a chunk at a time,
      -- they deadlocked (40P01) with a worker's group write.
      changed AS MATERIALIZED (
        SELECT i.item_id FROM rein_batch_items i JOIN rein_submission m ON m.item_id = i.item_id
        WHERE i.run_id = ${runId} AND i.input_fingerprint <> m.input_fingerprint AND NOT EXISTS (SELECT 1 FROM moved)
        ORDER BY i.item_id FOR UPDATE OF i),
      up AS (
        UPDATE rein_batch_items i SET input_fingerprint = m.input_fingerprint,
          prompt_fingerprint = m.prompt_fingerprint,
          state = 'pending', lease_owner = NULL, lease_token = NULL, lease_expires = NULL
        FROM changed JOIN rein_submission m ON m.item_id = changed.item_id
        WHERE i.run_id = ${runId} AND i.item_id = changed.item_id AND i.input_fingerprint <> m.input_fingerprint)
      -- (A data-modifying WITH runs whole whether or not the query reads it.)
      SELECT (SELECT row_to_json(moved) FROM moved) AS moved`,
    (rows) => rows[0]!.moved
  )

/** Where the submission recorded each of these ids (the first item that had it). @internal */
export const submittedAt = (sql: Sql, itemIds: ReadonlyArray<string>) =>
  sql<{ readonly item_id: string; readonly idx: number; readonly place: string | null }>`
    SELECT item_id, idx, place FROM rein_submission
    WHERE item_id IN (SELECT jsonb_array_elements_text(${JSON.stringify(itemIds)}::jsonb))`

/**
 * Opens this transaction's set of reusable records: the (item id, input fingerprint) pairs a resume policy
 * reuses, kept in the database while the records are read a page at a time, dropped at commit or rollback.
 * @internal
 */
export const openReusable = (sql: Sql) =>
  Effect.zipRight(
    sql`DROP TABLE IF EXISTS pg_temp.rein_reusable`,
    sql`CREATE TEMP TABLE rein_reusable (item_id text, input_fingerprint text, PRIMARY KEY (item_id, input_fingerprint))
      ON COMMIT DROP`
  )

/** Adds pairs to the set of reusable records. @internal */
export const addReusable = (
  sql: Sql,
  pairs: ReadonlyArray<{ readonly itemId: string; readonly inputFingerprint: string }>
) =>
  sql`INSERT INTO rein_reusable (item_id, input_fingerprint)
    SELECT item_id, input_fingerprint FROM jsonb_to_recordset(${
    JSON.stringify(pairs.map((p) => ({ item_id: p.itemId, input_fingerprint: p.inputFingerprint })))
  }::jsonb) AS t(item_id text, input_fingerprint text)
    ON CONFLICT DO NOTHING`

/**
 * Puts back to pending every finished item with no reusable record for its id and input fingerprint (in the
 * set `addReusable` filled), its rows locked in `item_id` order first (as the workers' statements lock them).
 * Answers how many. @internal
 */
export const reopenUnreusable = (sql: Sql, runId: string) =>
  Effect.map(
    sql<{ readonly n: number }>`WITH locked AS MATERIALIZED (
        SELECT item_id FROM rein_batch_items i WHERE run_id = ${runId} AND state = 'done'
          AND NOT EXISTS (SELECT 1 FROM rein_reusable r
            WHERE r.item_id = i.item_id AND r.input_fingerprint = i.input_fingerprint)
        ORDER BY item_id FOR UPDATE),
      up AS (
        UPDATE rein_batch_items i SET state = 'pending', lease_owner = NULL, lease_token = NULL, lease_expires = NULL
        FROM locked WHERE i.run_id = ${runId} AND i.item_id = locked.item_id AND i.state = 'done' RETURNING 1)
      SELECT count(*)::int AS n FROM up`,
    (rows) => rows[0]!.n
  )

/** A leased item. @internal */
export interface LeaseRow {
  readonly item_id: string
  readonly idx: number
  readonly input_fingerprint: string
  readonly prompt_fingerprint: string
  readonly lease_token: string
  readonly leases: number
}

/**
 * Leases up to `limit` items, lowest index first: pending ones, and leased ones whose lease expired on the
 * database clock (their holder died or stalled). Rows another transaction is leasing are skipped, so
 * concurrent workers never wait on each other nor take the same item. Each lease gets a new fencing token.
 * When `admitting`, nothing is leased once the run has a stop or its deadline passed on the database clock
 * (the sweep after a stop leases with `admitting` off).
 * @internal
 */
export const lease = (
  sql: Sql,
  runId: string,
  owner: string,
  limit: number,
  ttlMillis: number,
  admitting: boolean
) =>
  // One reading of the database clock for the whole statement (a CTE with a volatile function is never
  // inlined): the lease is decided, and recorded as taken, at the same instant, so `leased_at` is never past
  // the deadline the statement checked.
  // Pending, or leased with the lease expired, written as "not done, and not a live lease" (the same rows: a
  // state is one of the three): the planner then expects most of the run's open rows to qualify and walks the
  // open index in `idx` order, stopping at `limit` (and dropping the dead index entries it passes). Written as
  // `state = 'pending' OR …`, without statistics on the new run (a fresh table, a run not yet analyzed) it
  // expected one row and chose a bitmap scan of every open row of the run, dead versions included, and a sort
  // of them all, at every lease: bench 12's PostgreSQL CPU per item grew with the run and with each run on the
  // same table.
  sql<LeaseRow>`WITH t AS (SELECT clock_timestamp() AS now), picked AS (
      SELECT item_id FROM rein_batch_items
      WHERE run_id = ${runId}
        AND state <> 'done' AND (state <> 'leased' OR lease_expires < (SELECT now FROM t))
        AND (NOT ${admitting} OR EXISTS (SELECT 1 FROM rein_batch_runs r WHERE r.run_id = ${runId}
          AND r.stop IS NULL AND (r.deadline_millis IS NULL
            OR (SELECT now FROM t) < r.started_at + r.deadline_millis * interval '1 millisecond')))
      ORDER BY idx LIMIT ${limit} FOR UPDATE SKIP LOCKED)
    UPDATE rein_batch_items i SET state = 'leased', lease_owner = ${owner},
      lease_token = nextval('rein_batch_lease_tokens'),
      lease_expires = (SELECT now FROM t) + ${interval(sql, ttlMillis)},
      leased_at = (SELECT now FROM t), leases = i.leases + 1
    FROM picked WHERE i.run_id = ${runId} AND i.item_id = picked.item_id
    RETURNING i.item_id, i.idx, i.input_fingerprint, i.prompt_fingerprint, i.lease_token::text AS lease_token, i.leases`

/** What a worker learns at each heartbeat. @internal */
export interface BeatRow {
  readonly stop: unknown
  readonly status: RunRow["status"]
  readonly elapsed_millis: number
  readonly deadline_millis: number | null
  /** Items neither done nor held by a live lease of another worker. */
  readonly open: number
}

/**
 * The item rows of the leases this owner holds, locked in `item_id` order. Every statement that updates
 * several item rows and may wait for one (the heartbeat, `releaseOwned`, `finish`, `reopenUnreusable`) locks them
 * in this one order first: a worker's heartbeat, its group writes and its sweep run on different connections
 * at once, and two of them locking the same rows in different orders (an index scan's order, a join's)
 * deadlocked (40P01). `lease` never waits (`SKIP LOCKED`), so its order does not matter. @internal
 */
const lockOwned = (sql: Sql, runId: string, owner: string) =>
  sql`SELECT item_id FROM rein_batch_items WHERE run_id = ${runId} AND lease_owner = ${owner} AND state = 'leased'
    ORDER BY item_id FOR UPDATE`

/** Extends every lease this owner holds by `ttl` and reads the run's stop and clock. @internal */
export const heartbeat = (sql: Sql, runId: string, owner: string, ttlMillis: number) =>
  Effect.map(
    sql<BeatRow>`WITH mine AS MATERIALIZED (${lockOwned(sql, runId, owner)}), beat AS (
        UPDATE rein_batch_items i SET lease_expires = clock_timestamp() + ${interval(sql, ttlMillis)}
        FROM mine WHERE i.run_id = ${runId} AND i.item_id = mine.item_id RETURNING 1)
      SELECT stop, status, (extract(epoch FROM clock_timestamp() - started_at) * 1000)::float8 AS elapsed_millis,
        deadline_millis, (SELECT count(*) FROM beat)::float8 AS open
      FROM rein_batch_runs WHERE run_id = ${runId}`,
    (rows) => rows[0]
  )

/** The run's stop and clock, as `heartbeat` reads them, without extending any lease. @internal */
export const look = (sql: Sql, runId: string) =>
  Effect.map(
    sql<Omit<BeatRow, "open">>`SELECT stop, status,
        (extract(epoch FROM clock_timestamp() - started_at) * 1000)::float8 AS elapsed_millis, deadline_millis
      FROM rein_batch_runs WHERE run_id = ${runId}`,
    (rows) => rows[0]
  )

/** Gives this worker's leases back to the queue (items it leased and never started). @internal */
export const releaseOwned = (sql: Sql, runId: string, owner: string) =>
  sql`WITH mine AS MATERIALIZED (${lockOwned(sql, runId, owner)})
    UPDATE rein_batch_items i SET state = 'pending', lease_owner = NULL, lease_expires = NULL
    FROM mine WHERE i.run_id = ${runId} AND i.item_id = mine.item_id`

/** How many items are not done and not held by this owner (pending, or held by another holder). @internal */
export const remaining = (sql: Sql, runId: string, owner: string) =>
  Effect.map(
    sql<{ readonly open: number }>`SELECT count(*)::float8 AS open FROM rein_batch_items
      WHERE run_id = ${runId} AND state <> 'done' AND lease_owner IS DISTINCT FROM ${owner}`,
    (rows) => rows[0]!
  )

/** A terminal record to write under a lease. @internal */
export interface Terminal {
  readonly itemId: string
  readonly token: string
  /** The record's JSON text (`artifactRead.recordJson`, which checked it): serialised once, never again here. */
  readonly record: string
}

/** The group's rows as one JSON array, the records' texts spliced in as they are (not parsed and written again). */
const terminalsJson = (terminals: ReadonlyArray<Terminal>): string => {
  let text = "["
  for (let i = 0; i < terminals.length; i++) {
    const t = terminals[i]!
    text += `${i === 0 ? "" : ","}{"item_id":${JSON.stringify(t.itemId)},"token":${
      JSON.stringify(t.token)
    },"record":${t.record}}`
  }
  return `${text}]`
}

/**
 * Writes terminal records, each fenced by its lease token: an item is marked done and its record appended
 * only while the lease that wrote it is still the item's lease (not taken over, not finished by anyone
 * else). One statement for the whole group, so the item and its record commit together; its rows are locked in
 * `item_id` order first (as the heartbeat locks them). Returns the ids written; the others were fenced out.
 * @internal
 */
export const finish = (sql: Sql, runId: string, terminals: ReadonlyArray<Terminal>) =>
  sql<{ readonly item_id: string }>`WITH input AS (
      SELECT * FROM jsonb_to_recordset(${
    terminalsJson(terminals)
  }::jsonb) AS t(item_id text, token bigint, record jsonb)),
    locked AS MATERIALIZED (
      SELECT i.item_id FROM rein_batch_items i JOIN input ON i.item_id = input.item_id
      WHERE i.run_id = ${runId} AND i.state = 'leased' AND i.lease_token = input.token
      ORDER BY i.item_id FOR UPDATE OF i),
    done AS (
      UPDATE rein_batch_items i SET state = 'done', lease_owner = NULL, lease_expires = NULL,
        outcome = input.record->>'outcome', category = input.record->>'category',
        cost = CASE WHEN jsonb_typeof(input.record->'cost') = 'number' THEN (input.record->>'cost')::float8 END,
        finished_at = clock_timestamp()
      FROM locked, input WHERE i.run_id = ${runId} AND i.item_id = locked.item_id AND input.item_id = locked.item_id
        AND i.state = 'leased' AND i.lease_token = input.token
      RETURNING i.item_id, input.record)
    INSERT INTO rein_batch_records (run_id, item_id, record) SELECT ${runId}, item_id, record FROM done
    RETURNING item_id`

/** Counts results dropped by the fence. @internal */
export const countFenced = (sql: Sql, runId: string, n: number) =>
  sql`UPDATE rein_batch_runs SET fenced_out = fenced_out + ${n} WHERE run_id = ${runId}`

// The moment the session's deadline passes (NULL without one).
const DEADLINE_AT = `started_at + deadline_millis * interval '1 millisecond'`

/**
 * Records the run's stop unless one is recorded already; returns the stop on record (the first). A batch
 * timeout is recorded as stopped when the deadline passed, however late a worker noticed. @internal
 */
export const stop = (sql: Sql, runId: string, stop: unknown, itemId: string | null) =>
  Effect.flatMap(
    sql<{ readonly stop: unknown }>`UPDATE rein_batch_runs SET stop = ${JSON.stringify(stop)}::jsonb,
      stop_item_id = ${itemId}, status = 'stopped',
      stopped_at = CASE WHEN ${JSON.stringify(stop)}::jsonb->>'kind' = 'batch_timeout' AND deadline_millis IS NOT NULL
        THEN LEAST(clock_timestamp(), ${sql.literal(DEADLINE_AT)}) ELSE clock_timestamp() END
      WHERE run_id = ${runId} AND stop IS NULL RETURNING stop`,
    (rows) =>
      rows.length > 0
        ? Effect.succeed(rows[0]!.stop)
        : Effect.map(
          sql<{ readonly stop: unknown }>`SELECT stop FROM rein_batch_runs WHERE run_id = ${runId}`,
          (r) => r[0]?.stop
        )
  )

/**
 * Records the batch timeout of a running session whose deadline passed on the database clock and that no
 * worker recorded (none was alive to see it), as stopped when the deadline passed. Nothing when the run
 * has a stop, no deadline, time left, or no open item (its items all done before the deadline: the last
 * worker died after its last record, before it marked the run finished). @internal
 */
export const stopAtDeadline = (sql: Sql, runId: string) =>
  sql`UPDATE rein_batch_runs SET status = 'stopped', stopped_at = ${sql.literal(DEADLINE_AT)},
    stop = jsonb_build_object('_tag', 'BatchTimeout', 'kind', 'batch_timeout',
      'reason', 'the batch deadline of ' || deadline_millis::text || ' ms expired')
    WHERE run_id = ${runId} AND stop IS NULL AND status = 'running' AND deadline_millis IS NOT NULL
      AND clock_timestamp() >= ${sql.literal(DEADLINE_AT)}
      AND EXISTS (SELECT 1 FROM rein_batch_items WHERE run_id = ${runId} AND state <> 'done')`

/** Marks a run whose items are all done as finished (a stopped run stays `stopped`). @internal */
export const finishRun = (sql: Sql, runId: string) =>
  sql`UPDATE rein_batch_runs SET status = 'finished' WHERE run_id = ${runId} AND status = 'running'
    AND NOT EXISTS (SELECT 1 FROM rein_batch_items WHERE run_id = ${runId} AND state <> 'done')`

/** The run's items by state and by outcome category, and what the finished ones cost. @internal */
export const counts = (sql: Sql, runId: string) =>
  sql<
    {
      readonly state: string
      readonly category: string | null
      readonly n: number
      readonly cost: number | null
      readonly unknown_cost: number
    }
  >`SELECT state, category, count(*)::float8 AS n, sum(cost)::float8 AS cost,
    (count(*) FILTER (WHERE state = 'done' AND cost IS NULL))::float8 AS unknown_cost
    FROM rein_batch_items WHERE run_id = ${runId} GROUP BY state, category ORDER BY state, category`

/** A terminal record of the artifact. @internal */
export interface RecordRow {
  readonly record: unknown
}

/** A record with its place in the order written (`at`: its `seq`, as text: a bigint). @internal */
export interface RecordPageRow extends RecordRow {
  readonly at: string
}

/**
 * Up to `limit` records written after `after` (a `seq`; "0": from the first), in the order written. (The text
 * is named `at`, not `seq`: `ORDER BY seq` would sort by an output column of that name, as text.) @internal
 */
export const recordsAfter = (sql: Sql, runId: string, after: string, limit: number) =>
  sql<RecordPageRow>`SELECT seq::text AS at, record FROM rein_batch_records
    WHERE run_id = ${runId} AND seq > ${after}::bigint ORDER BY seq LIMIT ${limit}`

/**
 * Appends a record without a lease (a single-process run through the artifact store); `json` is its JSON text
 * (`artifactRead.recordJson`). @internal
 */
export const appendRecord = (sql: Sql, runId: string, itemId: string, json: string) =>
  sql`INSERT INTO rein_batch_records (run_id, item_id, record) VALUES (${runId}, ${itemId}, ${json}::jsonb)`

/** The name of a run's session in the shared services (`PgRunLimits`, `PgBudget`, their rate buckets). @internal */
export const sessionName = (runId: string, startedAt: string) => `rein-batch/${runId}/${startedAt}`

/** How long the rows of a run's ended session are kept (for operators to read its totals) before they go. @internal */
export const SESSION_RETENTION_MILLIS = 60 * 60 * 1000

const STARTED = `to_char(r.started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`

/**
 * Deletes the rows runs' sessions left in the shared services (`rein_budgets` and its leases and reclaims,
 * `rein_run_limits` and its cooldowns, the rate buckets `requests:<name>` / `tokens:<name>` and their leases
 * and reclaims): those of a session that ended (the run started another, or stopped or finished) more than
 * `retentionMillis` ago on the database clock — the end of a run's last session is its last record or its
 * stop — with no item of its run leased and no budget or rate lease of the session live (a dead worker's
 * lease expires first). `runId`: that run's sessions only; `null`: every run's. Answers how many sessions
 * were deleted. @internal
 */
export const cleanSessions = (sql: Sql, runId: string | null, retentionMillis: number = SESSION_RETENTION_MILLIS) =>
  sql.withTransaction(Effect.gen(function*() {
    const rows = yield* sql<{ readonly name: string }>`WITH names AS (
        SELECT name FROM rein_budgets WHERE starts_with(name, 'rein-batch/')
        UNION SELECT name FROM rein_run_limits WHERE starts_with(name, 'rein-batch/')
        UNION SELECT substr(key, 10) FROM rein_rate_buckets WHERE starts_with(key, 'requests:rein-batch/')
        UNION SELECT substr(key, 8) FROM rein_rate_buckets WHERE starts_with(key, 'tokens:rein-batch/')
      ), parsed AS (
        SELECT name, substr(name, 12, length(name) - 36) AS run_id, right(name, 24) AS started
        FROM names WHERE length(name) > 36
      ), sessions AS (
        SELECT p.name, r.run_id, p.started = ${sql.literal(STARTED)} AS last, r.status, r.started_at, r.stopped_at
        FROM parsed p JOIN rein_batch_runs r ON r.run_id = p.run_id
        WHERE ${runId}::text IS NULL OR r.run_id = ${runId}::text
      )
      SELECT s.name FROM sessions s
      WHERE NOT (s.last AND s.status = 'running')
        AND (CASE WHEN s.last THEN COALESCE(GREATEST(s.stopped_at,
            (SELECT max(i.finished_at) FROM rein_batch_items i WHERE i.run_id = s.run_id)), s.started_at)
          ELSE s.started_at END) < clock_timestamp() - ${interval(sql, retentionMillis)}
        AND NOT EXISTS (SELECT 1 FROM rein_batch_items i WHERE i.run_id = s.run_id AND i.state = 'leased'
          AND i.lease_expires >= clock_timestamp())
        AND NOT EXISTS (SELECT 1 FROM rein_budget_leases l WHERE l.budget = s.name
          AND l.expires_at >= clock_timestamp())
        AND NOT EXISTS (SELECT 1 FROM rein_rate_leases l WHERE l.key IN ('requests:' || s.name, 'tokens:' || s.name)
          AND l.expires_at >= clock_timestamp())`
    if (rows.length === 0) return 0
    const names = JSON.stringify(rows.map((row) => row.name))
    const keys = JSON.stringify(rows.flatMap((row) => [`requests:${row.name}`, `tokens:${row.name}`]))
    const inNames = sql`(SELECT jsonb_array_elements_text(${names}::jsonb))`
    const inKeys = sql`(SELECT jsonb_array_elements_text(${keys}::jsonb))`
    yield* sql`DELETE FROM rein_budget_reclaims WHERE budget IN ${inNames}`
    yield* sql`DELETE FROM rein_budget_leases WHERE budget IN ${inNames}`
    yield* sql`DELETE FROM rein_budgets WHERE name IN ${inNames}`
    yield* sql`DELETE FROM rein_run_cooldowns WHERE run IN ${inNames}`
    yield* sql`DELETE FROM rein_run_limits WHERE name IN ${inNames}`
    yield* sql`DELETE FROM rein_rate_reclaims WHERE key IN ${inKeys}`
    yield* sql`DELETE FROM rein_rate_leases WHERE key IN ${inKeys}`
    yield* sql`DELETE FROM rein_rate_buckets WHERE key IN ${inKeys}`
    return rows.length
  }))
