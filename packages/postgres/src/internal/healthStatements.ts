/**
 * Every query the shared health sends, in one place. Time is `now`: milliseconds since the epoch on the
 * database clock (`clock_timestamp()`), read once per statement; tests substitute a virtual clock for it,
 * nothing else. A breaker row changes only by compare-and-set (`WHERE version = $v`, the version bumped), and
 * each successful compare-and-set notifies `rein_health` in the same statement (delivered at commit). A bucket
 * (`rein_health.global_tokens`, `rein_health_breakers.tokens`) changes only by relative updates. Locks, when a
 * transaction takes several: the health row first, then breaker rows, then probe rows.
 *
 * @internal
 */
import type { SqlClient } from "@effect/sql"
import type { Fragment } from "@effect/sql/Statement"
import type * as Health from "@rein/core/Health"
import { Effect, Option } from "effect"

type Sql = SqlClient.SqlClient

/** The notification channel every process listens on. */
export const CHANNEL = "rein_health"

/** The time expression of a statement: the database clock in production. */
export type Now = (sql: Sql) => Fragment

export const databaseClock: Now = (sql) => sql`(extract(epoch FROM clock_timestamp()) * 1000)::float8`

/** A breaker row as read, with the database's time of the read and what the caller asked about. */
export interface Row {
  readonly now: number
  readonly globalTokens: number
  /** `null`: no row yet (a fresh endpoint). */
  readonly version: number | null
  readonly state: Health.EndpointState
  /** Whether the probe slot asked about is still held (taken and not expired). */
  readonly held: boolean
}

interface RawRow {
  readonly now: number
  readonly global_tokens: number
  readonly version: number | null
  readonly state: Health.BreakerState | null
  readonly consecutive: number | null
  readonly window_bits: number | null
  readonly window_length: number | null
  readonly open_until: number | null
  readonly cooldown_millis: number | null
  readonly tokens: number | null
  readonly probes: number
  readonly held: boolean
}

const toRow = (raw: RawRow, fresh: Health.EndpointState): Row => ({
  now: raw.now,
  globalTokens: raw.global_tokens,
  version: raw.version,
  held: raw.held,
  state: raw.version === null ? { ...fresh, probesInFlight: raw.probes } : {
    state: raw.state!,
    consecutive: raw.consecutive!,
    window: raw.window_bits!,
    windowLength: raw.window_length!,
    openUntil: raw.open_until!,
    cooldownMillis: raw.cooldown_millis!,
    probesInFlight: raw.probes,
    tokens: raw.tokens!,
    degraded: 0
  }
})

/** Creates the health's row if absent (a full global bucket) and returns the config on record. */
export const ensureHealth = (sql: Sql, name: string, config: string, capacity: number) =>
  Effect.gen(function*() {
    yield* sql`INSERT INTO rein_health (name, config, global_tokens) VALUES (${name}, ${config}::jsonb, ${capacity})
      ON CONFLICT (name) DO NOTHING`
    const rows = yield* sql<{ readonly config: string }>`SELECT config::text AS config FROM rein_health
      WHERE name = ${name}`
    return rows[0]!.config
  })

/** Creates an endpoint's breaker row, fresh (closed, a full bucket), if absent. */
export const ensureBreaker = (sql: Sql, name: string, endpoint: string, fresh: Health.EndpointState) =>
  sql`INSERT INTO rein_health_breakers (health, endpoint, state, consecutive, window_bits, window_length, open_until,
      cooldown_millis, tokens)
    VALUES (${name}, ${endpoint}, 'closed', 0, 0, 0, 0, ${fresh.cooldownMillis}, ${fresh.tokens})
    ON CONFLICT (health, endpoint) DO NOTHING`

const columns = `b.version::float8 AS version, b.state, b.consecutive, b.window_bits, b.window_length,
  b.open_until, b.cooldown_millis, b.tokens`

/**
 * Reads one endpoint's breaker, its live probe slots (not expired), the global bucket and the time; `held`:
 * whether the slot `probe` is still live.
 */
export const read = (
  sql: Sql,
  now: Now,
  name: string,
  endpoint: string,
  probe: string | null,
  fresh: Health.EndpointState
) =>
  Effect.map(
    sql<RawRow>`WITH t AS (SELECT ${now(sql)} AS now)
      SELECT t.now, h.global_tokens, ${sql.unsafe(columns)},
        (SELECT count(*) FROM rein_health_probes p WHERE p.health = h.name AND p.endpoint = ${endpoint}
          AND p.expires_at > t.now)::float8 AS probes,
        EXISTS (SELECT 1 FROM rein_health_probes p WHERE p.id = ${probe} AND p.expires_at > t.now) AS held
      FROM t, rein_health h LEFT JOIN rein_health_breakers b ON b.health = h.name AND b.endpoint = ${endpoint}
      WHERE h.name = ${name}`,
    (rows) => toRow(rows[0]!, fresh)
  )

/** Reads every breaker of the health (the poll), with the global bucket and the time. */
export const readAll = (sql: Sql, now: Now, name: string) =>
  Effect.map(
    sql<RawRow & { readonly endpoint: string }>`WITH t AS (SELECT ${now(sql)} AS now)
      SELECT t.now, h.global_tokens, b.endpoint, ${sql.unsafe(columns)},
        (SELECT count(*) FROM rein_health_probes p WHERE p.health = h.name AND p.endpoint = b.endpoint
          AND p.expires_at > t.now)::float8 AS probes, false AS held
      FROM t, rein_health h JOIN rein_health_breakers b ON b.health = h.name
      WHERE h.name = ${name}`,
    (rows) => rows
  )

/** The global bucket and the time (for a poll of a health with no breaker row yet). */
export const readGlobal = (sql: Sql, now: Now, name: string) =>
  Effect.map(
    sql<{ readonly now: number; readonly global_tokens: number }>`SELECT ${now(sql)} AS now, global_tokens
      FROM rein_health WHERE name = ${name}`,
    (rows) => rows[0]!
  )

export const rowOf = (raw: RawRow, fresh: Health.EndpointState): Row => toRow(raw, fresh)

/** What a compare-and-set writes besides the breaker's new state. */
export interface Change {
  /** Retry tokens taken from the endpoint's bucket (0 or 1): the statement fails if it has fewer. */
  readonly withdraw: number
  /** A probe slot to take: its id, holder and lifetime (ms). */
  readonly take: { readonly id: string; readonly holder: string; readonly ttl: number } | null
  /** A probe slot to give back (its attempt ended). */
  readonly release: string | null
  /** The notification's payload. */
  readonly payload: string
}

/**
 * The compare-and-set: writes the breaker's new state if its version is still `version` (and bumps it), takes
 * or gives back a probe slot and withdraws from the endpoint's bucket in the same statement, and notifies.
 * `None`: the version moved (or the bucket was short): read again.
 */
export const compareAndSet = (
  sql: Sql,
  now: Now,
  name: string,
  endpoint: string,
  version: number,
  next: Health.EndpointState,
  change: Change
) =>
  Effect.map(
    sql<{ readonly version: number; readonly tokens: number }>`WITH t AS (SELECT ${now(sql)} AS now), u AS (
        UPDATE rein_health_breakers b SET version = b.version + 1, state = ${next.state},
          consecutive = ${next.consecutive}, window_bits = ${next.window}, window_length = ${next.windowLength},
          open_until = ${next.openUntil}, cooldown_millis = ${next.cooldownMillis},
          tokens = b.tokens - ${change.withdraw}, updated_at = clock_timestamp()
        WHERE b.health = ${name} AND b.endpoint = ${endpoint} AND b.version = ${version}
          AND b.tokens >= ${change.withdraw}::float8 - 1e-9
        RETURNING b.version::float8 AS version, b.tokens
      ), taken AS (
        INSERT INTO rein_health_probes (id, health, endpoint, holder, expires_at)
        SELECT ${change.take?.id ?? null}, ${name}, ${endpoint}, ${change.take?.holder ?? ""},
          t.now + ${change.take?.ttl ?? 0}::float8
        FROM u, t WHERE ${change.take !== null}::boolean
      ), released AS (
        DELETE FROM rein_health_probes WHERE id = ${change.release} AND EXISTS (SELECT 1 FROM u)
      )
      SELECT u.version, u.tokens, pg_notify(${CHANNEL}, ${change.payload}) FROM u`,
    (rows) => Option.fromNullable(rows[0])
  )

/** Takes a retry token from the global bucket; `false` when it has less than one. */
export const withdrawGlobal = (sql: Sql, name: string) =>
  Effect.map(
    sql`UPDATE rein_health SET global_tokens = global_tokens - 1 WHERE name = ${name}
      AND global_tokens >= 1 - 1e-9 RETURNING name`,
    (rows) => rows.length === 1
  )

/**
 * Adds the deposits of `firsts` first attempts to the global bucket (capped at `capacity`: adding n deposits
 * at once caps exactly as adding them one by one) and returns the bucket.
 */
export const depositGlobal = (sql: Sql, name: string, firsts: number, ratio: number, capacity: number) =>
  Effect.map(
    sql<{ readonly global_tokens: number }>`UPDATE rein_health
      SET global_tokens = LEAST(${capacity}::float8, global_tokens + ${firsts}::float8 * ${ratio}::float8)
      WHERE name = ${name} RETURNING global_tokens`,
    (rows) => rows[0]?.global_tokens ?? 0
  )

/** Adds `firsts` deposits to an endpoint's bucket (an endpoint without a row has a full bucket: no change). */
export const depositEndpoint = (
  sql: Sql,
  name: string,
  endpoint: string,
  firsts: number,
  ratio: number,
  capacity: number
) =>
  sql`UPDATE rein_health_breakers
    SET tokens = LEAST(${capacity}::float8, tokens + ${firsts}::float8 * ${ratio}::float8)
    WHERE health = ${name} AND endpoint = ${endpoint} AND tokens < ${capacity}::float8`

/** Extends the live probe slots of `holder` by `ttl` (an expired one stays expired: it may be someone else's). */
export const renewProbes = (sql: Sql, now: Now, holder: string, ttl: number) =>
  sql`WITH t AS (SELECT ${now(sql)} AS now)
    UPDATE rein_health_probes p SET expires_at = t.now + ${ttl}::float8 FROM t
    WHERE p.holder = ${holder} AND p.expires_at > t.now`

/** Deletes the probe rows of `holder` (its scope closes: its attempts are over). */
export const dropOwnProbes = (sql: Sql, holder: string) => sql`DELETE FROM rein_health_probes WHERE holder = ${holder}`

/** Deletes the health's probe rows expired more than `keepMillis` ago (garbage: an expired slot counts nowhere). */
export const dropExpiredProbes = (sql: Sql, now: Now, name: string, keepMillis: number) =>
  sql`WITH t AS (SELECT ${now(sql)} AS now)
    DELETE FROM rein_health_probes p USING t WHERE p.health = ${name} AND p.expires_at < t.now - ${keepMillis}::float8`
