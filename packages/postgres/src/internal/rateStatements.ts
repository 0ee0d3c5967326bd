/**
 * Every query the shared token buckets send (tables of migration "0003_rate_limits"). A bucket's time is
 * milliseconds on its clock, a `float8`: the database's `clock_timestamp()` by default (`now` below is then
 * that expression), or a reading of Effect's `Clock` passed in (tests on a `TestClock`). Lease expiry is
 * always on the database clock. Locks are taken lease row first, bucket row second.
 *
 * The invariant every statement keeps: `level + leased ≤ capacity`. What leases hold counts as still in
 * the bucket, so a refill never fills the pool past `capacity − leased`: the tokens of the whole fleet (the
 * pool plus every unused slice) never exceed a full bucket.
 *
 * @internal
 */
import type { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"

type Sql = SqlClient.SqlClient

/** The database clock, in milliseconds since the epoch. */
export const databaseNow = (sql: Sql) => sql`(extract(epoch from clock_timestamp()) * 1000)::float8`

/** The bucket's clock in SQL: the database's own, or a reading passed in. */
export type Now = typeof databaseNow

/** A clock reading passed in (milliseconds). */
export const givenNow = (millis: number): Now => (sql) => sql`${millis}::float8`

const ttl = (sql: Sql, millis: number) => sql`clock_timestamp() + (${millis}::float8 * interval '1 millisecond')`

/** The shape of a bucket on record. */
export interface Shape {
  readonly capacity: number
  readonly perMs: number
}

/** Creates the bucket (full) if it is absent; the shape on record, which may differ from the one asked. */
export const ensureBucket = (sql: Sql, key: string, shape: Shape, now: Now) =>
  Effect.gen(function*() {
    yield* sql`INSERT INTO rein_rate_buckets (key, capacity, per_ms, level, refilled_at)
      VALUES (${key}, ${shape.capacity}, ${shape.perMs}, ${shape.capacity}, ${now(sql)})
      ON CONFLICT (key) DO NOTHING`
    const rows = yield* sql<{ readonly capacity: number; readonly per_ms: number }>`SELECT capacity, per_ms
      FROM rein_rate_buckets WHERE key = ${key}`
    return { capacity: rows[0]!.capacity, perMs: rows[0]!.per_ms } satisfies Shape
  })

/** Opens an empty lease on a bucket, expiring `ttlMillis` from now on the database clock. */
export const openLease = (sql: Sql, id: string, key: string, holder: string, ttlMillis: number) =>
  sql`INSERT INTO rein_rate_leases (id, key, holder, granted, expires_at)
    VALUES (${id}, ${key}, ${holder}, 0, ${ttl(sql, ttlMillis)})`

/** What one exchange with a bucket sends. */
export interface Exchange {
  /** Net tokens used from the lease since the last exchange: a refund makes it negative, a debt exceed `granted`. */
  readonly used: number
  /** Unused tokens given back to the pool. */
  readonly give: number
  /** Tokens the caller must have now (0: a report only). */
  readonly need: number
  /** Tokens asked for the slice (at least `need`; more when the pool has them). */
  readonly want: number
  /** Take `need` even when the pool has less (the pool goes into debt): `RateLimiter`'s "delay". */
  readonly overflow: boolean
}

/** What a bucket answers. */
export interface Answer {
  /** What the lease holds on record now. */
  readonly granted: number
  /** Tokens granted by this exchange. */
  readonly got: number
  /** The pool's level after the exchange (negative: a debt). */
  readonly level: number
  /** How long until the pool can cover `need` (0 when it could). */
  readonly waitMillis: number
  /** The bucket's clock at the exchange. */
  readonly now: number
}

interface AnswerRow {
  readonly granted: number
  readonly got: number
  readonly level: number
  readonly wait_ms: number
  readonly now: number
}

/**
 * One exchange, in one statement: lock the lease (it must be live) and its bucket, refill the pool (never
 * past `capacity − leased`), take what the lease reports used (from its grant; a debt beyond it and a
 * refund go to the pool), take back what it gives, then grant `need`..`want` if the pool covers `need`
 * (or `need` into debt when `overflow`), and extend the lease. `None` when the lease is gone or expired.
 */
export const exchange = (sql: Sql, id: string, e: Exchange, now: Now, ttlMillis: number) =>
  Effect.map(
    sql<AnswerRow>`WITH l AS (
        SELECT id, key, granted FROM rein_rate_leases
        WHERE id = ${id} AND expires_at > clock_timestamp() FOR UPDATE
      ), b AS (
        SELECT r.key, r.capacity, r.per_ms, r.leased, l.granted, t.now, GREATEST(r.refilled_at, t.now) AS at,
          LEAST(r.capacity - r.leased, r.level + GREATEST(0, t.now - r.refilled_at) * r.per_ms) AS level0
        FROM rein_rate_buckets r JOIN l ON r.key = l.key, (SELECT ${now(sql)} AS now) t
        FOR UPDATE OF r
      ), u AS (
        SELECT *, LEAST(GREATEST(${e.used}::float8, 0), granted) AS consumed FROM b
      ), g AS (
        SELECT *, LEAST(${e.give}::float8, granted - consumed) AS given FROM u
      ), p AS (
        SELECT *, LEAST(capacity - (leased - consumed - given),
          level0 - (${e.used}::float8 - consumed) + given) AS level1 FROM g
      ), q AS (
        SELECT *,
          CASE WHEN ${e.need}::float8 <= 0 AND ${e.want}::float8 <= 0 THEN 0
            WHEN level1 >= ${e.need}::float8
              THEN GREATEST(0, LEAST(GREATEST(FLOOR(level1), ${e.need}::float8), GREATEST(${e.need}::float8, ${e.want}::float8)))
            WHEN ${e.overflow}::boolean THEN ${e.need}::float8
            ELSE 0 END AS got,
          CASE WHEN level1 >= ${e.need}::float8 THEN 0 ELSE (${e.need}::float8 - level1) / per_ms END AS wait_ms
        FROM p
      ), lease AS (
        UPDATE rein_rate_leases x SET granted = GREATEST(0, q.granted - q.consumed - q.given + q.got),
          expires_at = ${ttl(sql, ttlMillis)}
        FROM q WHERE x.id = ${id} RETURNING x.granted
      ), bucket AS (
        UPDATE rein_rate_buckets r SET level = q.level1 - q.got, leased = GREATEST(0, q.leased - q.consumed - q.given + q.got),
          refilled_at = q.at
        FROM q WHERE r.key = q.key RETURNING r.level
      )
      SELECT (SELECT granted FROM lease) AS granted, q.got, (SELECT level FROM bucket) AS level, q.wait_ms,
        q.now FROM q`,
    (rows) =>
      Option.map(Option.fromNullable(rows[0]), (row): Answer => ({
        granted: row.granted,
        got: row.got,
        level: row.level,
        waitMillis: row.wait_ms,
        now: row.now
      }))
  )

/** Extends every live lease of this process; the ids that were found (the others are lost). */
export const extend = (sql: Sql, ids: ReadonlyArray<string>, ttlMillis: number) =>
  ids.length === 0 ? Effect.succeed(new Set<string>()) : Effect.map(
    sql<{ readonly id: string }>`UPDATE rein_rate_leases SET expires_at = ${ttl(sql, ttlMillis)}
      WHERE id IN ${sql.in(ids)} AND expires_at > clock_timestamp() RETURNING id`,
    (rows) => new Set(rows.map((r) => r.id))
  )

/**
 * Reclaims every expired lease, of any bucket, in one statement: what it held leaves `leased` (so the pool
 * may refill up to a full bucket again) and is logged in `rein_rate_reclaims`. It does not go back into the
 * pool: part of it may have been used by the holder before it died. Returns how many were reclaimed.
 */
export const reclaim = (sql: Sql) =>
  Effect.map(
    sql<{ readonly n: number }>`WITH dead AS (
        DELETE FROM rein_rate_leases WHERE expires_at < clock_timestamp()
        RETURNING id, key, holder, granted, expires_at
      ), logged AS (
        INSERT INTO rein_rate_reclaims (lease_id, key, holder, granted, expired_at)
        SELECT id, key, holder, granted, expires_at FROM dead
      ), t AS (
        SELECT key, SUM(granted) AS granted FROM dead GROUP BY key
      ), upd AS (
        UPDATE rein_rate_buckets b SET leased = GREATEST(0, b.leased - t.granted) FROM t WHERE b.key = t.key
        RETURNING 1
      )
      SELECT (SELECT COUNT(*) FROM dead)::float8 AS n`,
    (rows) => rows[0]?.n ?? 0
  )

/**
 * Closes a lease: what it used leaves it (a refund or a debt goes to the pool), what it did not use goes
 * back to the pool, and the row is deleted. A lease already reclaimed is not found.
 */
export const closeLease = (sql: Sql, id: string, used: number, now: Now, ttlMillis: number) =>
  Effect.flatMap(
    exchange(sql, id, { used, give: Number.MAX_VALUE, need: 0, want: 0, overflow: false }, now, ttlMillis),
    () => sql`DELETE FROM rein_rate_leases WHERE id = ${id} AND granted = 0`
  )

/**
 * A fixed-window counter (`RateLimiterStore.fixedWindow`), one round trip: a window that has expired starts
 * over; `tokens` are counted unless that would pass `limit`; each token counted moves the window's end by
 * `refillMillis`. Answers the count (with `tokens` even when refused) and the time to the window's end.
 */
export const fixedWindow = (
  sql: Sql,
  key: string,
  tokens: number,
  refillMillis: number,
  limit: number | undefined,
  now: Now
) =>
  Effect.gen(function*() {
    yield* sql`INSERT INTO rein_rate_windows (key, count, expires_at) VALUES (${key}, 0, 0)
      ON CONFLICT (key) DO NOTHING`
    const rows = yield* sql<{ readonly count: number; readonly ttl: number }>`WITH t AS (SELECT ${now(sql)} AS now),
      cur AS (
        SELECT w.key, t.now, CASE WHEN w.expires_at <= t.now THEN 0 ELSE w.count END AS count,
          CASE WHEN w.expires_at <= t.now THEN t.now ELSE w.expires_at END AS ends
        FROM rein_rate_windows w, t WHERE w.key = ${key} FOR UPDATE OF w
      ), u AS (
        UPDATE rein_rate_windows w SET count = cur.count + ${tokens}::float8,
          expires_at = cur.ends + ${refillMillis}::float8 * ${tokens}::float8
        FROM cur WHERE w.key = cur.key
          AND (${limit ?? null}::float8 IS NULL OR cur.count + ${tokens}::float8 <= ${limit ?? null}::float8)
        RETURNING w.count, w.expires_at
      )
      SELECT COALESCE((SELECT count FROM u), cur.count + ${tokens}::float8) AS count,
        COALESCE((SELECT expires_at FROM u), cur.ends) - cur.now AS ttl FROM cur`
    return [rows[0]!.count, rows[0]!.ttl] as const
  })
