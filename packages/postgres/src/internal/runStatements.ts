/**
 * Every query of the shared run limits (`rein_run_limits`, `rein_run_cooldowns`): the run's row, the soft-cap
 * totals, the stop (first trigger wins: a conditional `UPDATE … WHERE stop IS NULL`), the cooldowns, and the
 * `NOTIFY` that tells the other processes to read again. Cooldown times are on the bucket's clock (`now`).
 *
 * @internal
 */
import type { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { Now } from "./rateStatements.js"

type Sql = SqlClient.SqlClient

/** The channel every process of every run listens on; the payload is the run's name. */
export const CHANNEL = "rein_run_limits"

/** Half the largest double: `a + b` is finite exactly when `|a/2 + b/2|` is at most this (halving is exact). */
const HALF_MAX = Number.MAX_VALUE / 2

/** The run's row is not there (deleted while processes used it, or never created): nothing can be recorded. */
export class RunMissing {
  readonly _tag = "RunMissing"
  readonly message: string
  constructor(readonly name: string) {
    this.message = `run ${JSON.stringify(name)} has no row in rein_run_limits (deleted, or never created)`
  }
}

/** The first row, or `RunMissing` when the run's row is not there. */
const first = <A>(name: string) => (rows: ReadonlyArray<A>): Effect.Effect<A, RunMissing> =>
  rows.length === 0 ? Effect.fail(new RunMissing(name)) : Effect.succeed(rows[0]!)

export interface Caps {
  readonly maxTotalTokens: number | null
  readonly maxTotalCost: number | null
}

/** Creates the run's row if it is absent; the caps on record. */
export const ensureRun = (sql: Sql, name: string, caps: Caps) =>
  Effect.gen(function*() {
    yield* sql`INSERT INTO rein_run_limits (name, max_total_tokens, max_total_cost)
      VALUES (${name}, ${caps.maxTotalTokens}, ${caps.maxTotalCost}) ON CONFLICT (name) DO NOTHING`
    const row = yield* Effect.flatMap(
      sql<{ readonly max_total_tokens: number | null; readonly max_total_cost: number | null }>`
        SELECT max_total_tokens, max_total_cost FROM rein_run_limits WHERE name = ${name}`,
      first(name)
    )
    return { maxTotalTokens: row.max_total_tokens, maxTotalCost: row.max_total_cost } satisfies Caps
  })

export interface Charged {
  /** The totals after the charge. */
  readonly tokens: number
  readonly cost: number
  /** The totals before it (for an overflow's reason). */
  readonly tokensBefore: number
  readonly costBefore: number
  /** Whether each sum was finite (and so taken). */
  readonly tokensOk: boolean
  readonly costOk: boolean
}

interface ChargedRow {
  readonly tokens: number
  readonly cost: number
  readonly tokens_before: number
  readonly cost_before: number
  readonly tokens_ok: boolean
  readonly cost_ok: boolean
}

/**
 * Adds a finished attempt's usage to the totals, in one statement; a sum that would not be finite is not taken.
 * `RunMissing` when the run's row is not there.
 */
export const charge = (sql: Sql, name: string, tokens: number, cost: number) =>
  Effect.map(
    Effect.flatMap(
      sql<ChargedRow>`WITH r AS (
        SELECT name, tokens, cost, abs(tokens * 0.5 + ${tokens}::float8 * 0.5) <= ${HALF_MAX}::float8 AS tokens_ok,
          abs(cost * 0.5 + ${cost}::float8 * 0.5) <= ${HALF_MAX}::float8 AS cost_ok
        FROM rein_run_limits WHERE name = ${name} FOR UPDATE
      ), u AS (
        UPDATE rein_run_limits x SET
          tokens = CASE WHEN r.tokens_ok THEN r.tokens + ${tokens}::float8 ELSE r.tokens END,
          cost = CASE WHEN r.cost_ok THEN r.cost + ${cost}::float8 ELSE r.cost END
        FROM r WHERE x.name = r.name RETURNING x.tokens, x.cost
      )
      SELECT u.tokens, u.cost, r.tokens AS tokens_before, r.cost AS cost_before, r.tokens_ok, r.cost_ok FROM u, r`,
      first(name)
    ),
    (row): Charged => {
      return {
        tokens: row.tokens,
        cost: row.cost,
        tokensBefore: row.tokens_before,
        costBefore: row.cost_before,
        tokensOk: row.tokens_ok,
        costOk: row.cost_ok
      }
    }
  )

/** The run's totals; `RunMissing` when the run's row is not there. */
export const totals = (sql: Sql, name: string) =>
  Effect.map(
    Effect.flatMap(
      sql<{ readonly tokens: number; readonly cost: number }>`SELECT tokens, cost FROM rein_run_limits
        WHERE name = ${name}`,
      first(name)
    ),
    (row) => ({ tokens: row.tokens, cost: row.cost })
  )

/**
 * Records the stop unless the run already stopped (and notifies the other processes when it did); then the
 * stop on record, as JSON text (the winner: this one or an earlier one). `RunMissing` when the run's row is
 * not there.
 */
export const stop = (
  sql: Sql,
  name: string,
  stop: { readonly json: string; readonly kind: string; readonly itemId: string | null },
  holder: string
) =>
  Effect.gen(function*() {
    const won = yield* sql<{ readonly won: number }>`WITH s AS (
        UPDATE rein_run_limits SET stop = ${stop.json}, stop_kind = ${stop.kind}, stop_item_id = ${stop.itemId},
          stopped_at = clock_timestamp(), stopped_by = ${holder}
        WHERE name = ${name} AND stop IS NULL RETURNING name
      )
      SELECT COUNT(pg_notify(${CHANNEL}, s.name))::int AS won FROM s`
    if (won[0]!.won === 1) return stop.json
    // A later statement sees the winner that committed before this one's update.
    const row = yield* Effect.flatMap(
      sql<{ readonly stop: string }>`SELECT stop FROM rein_run_limits WHERE name = ${name}`,
      first(name)
    )
    return row.stop
  })

/** What the other processes may have changed: the stop (JSON text) and the cooldowns still running. */
export interface Shared {
  readonly stop: string | null
  readonly cooldowns: ReadonlyArray<{ readonly endpoint: string; readonly left: number }>
}

/** Reads the stop and the running cooldowns (with the time left in each). */
export const read = (sql: Sql, name: string, now: Now) =>
  Effect.map(
    sql<{ readonly stop: string | null; readonly cooldowns: Shared["cooldowns"] }>`WITH t AS (SELECT ${now(sql)} AS now)
      SELECT r.stop, COALESCE((SELECT json_agg(json_build_object('endpoint', c.endpoint, 'left', c.until_ms - t.now))
        FROM rein_run_cooldowns c WHERE c.run = r.name AND c.until_ms > t.now), '[]'::json) AS cooldowns
      FROM rein_run_limits r, t WHERE r.name = ${name}`,
    (rows): Shared => ({ stop: rows[0]?.stop ?? null, cooldowns: rows[0]?.cooldowns ?? [] })
  )

/**
 * Starts or lengthens an endpoint's cooldown to `now + length` (never shortens it) and notifies the other
 * processes. Answers the time left in it, and whether it is new (none was running).
 */
export const cool = (sql: Sql, name: string, endpoint: string, length: number, now: Now) =>
  Effect.map(
    sql<{ readonly left: number; readonly fresh: boolean }>`WITH t AS (SELECT ${now(sql)} AS now),
      prev AS (SELECT until_ms FROM rein_run_cooldowns WHERE run = ${name} AND endpoint = ${endpoint}),
      up AS (
        INSERT INTO rein_run_cooldowns (run, endpoint, until_ms) SELECT ${name}, ${endpoint}, t.now + ${length}::float8
        FROM t ON CONFLICT (run, endpoint) DO UPDATE
        SET until_ms = GREATEST(rein_run_cooldowns.until_ms, EXCLUDED.until_ms) RETURNING until_ms
      )
      SELECT up.until_ms - t.now AS left,
        COALESCE((SELECT until_ms FROM prev), '-Infinity'::float8) <= t.now AS fresh,
        pg_notify(${CHANNEL}, ${name}) IS NULL AS notified
      FROM up, t`,
    (rows) => rows[0]!
  )
