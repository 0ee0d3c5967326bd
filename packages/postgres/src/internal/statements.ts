/**
 * Every query the shared budget sends, in one place. Amounts are integer units (cost in nano-dollars) in
 * `bigint` columns, read back as `float8` (exact below 2^53). Time is the database's `clock_timestamp()`,
 * never a process clock. Row locks are always taken lease row first, budget row second, so a top-up, a
 * give-back, a close and a reclaim never deadlock one another.
 *
 * @internal
 */
import type { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import type { Caps, Free, Resource, Vec } from "./slice.js"

type Sql = SqlClient.SqlClient

interface CapsRow {
  readonly cost_cap: number | null
  readonly tokens_cap: number | null
  readonly calls_cap: number | null
}

interface GrantRow {
  readonly calls_grant: number
  readonly cost_grant: number
  readonly tokens_grant: number
  readonly calls_free: number | null
  readonly cost_free: number | null
  readonly tokens_free: number | null
}

interface FreeRow {
  readonly calls_free: number | null
  readonly cost_free: number | null
  readonly tokens_free: number | null
}

export type { Free }

const freeOf = (row: FreeRow): Free => ({ calls: row.calls_free, cost: row.cost_free, tokens: row.tokens_free })

const interval = (sql: Sql, millis: number) => sql`(${millis}::float8 * interval '1 millisecond')`

/**
 * A lease's ceiling with the usage it was computed from: written together by every statement that records a
 * ceiling, so the row never shows a ceiling counting usage it does not show (nor the other way round). `pending`
 * is the reservation the ceiling was raised for, not yet taken when it was recorded (zero but for a raise or a
 * top-up for a reservation): so the row tells that headroom from an excess.
 */
export interface LeaseRecord {
  readonly exposed: Vec
  readonly charged: Vec
  readonly reserved: Vec
  readonly pending: Vec
}

const recorded = (sql: Sql, row: LeaseRecord) =>
  sql`calls_exposed = ${row.exposed.calls}, cost_exposed = ${row.exposed.cost},
    tokens_exposed = ${row.exposed.tokens}, calls_charged = ${row.charged.calls},
    cost_charged = ${row.charged.cost}, tokens_charged = ${row.charged.tokens},
    calls_reserved = ${row.reserved.calls}, cost_reserved = ${row.reserved.cost},
    tokens_reserved = ${row.reserved.tokens}, calls_pending = ${row.pending.calls},
    cost_pending = ${row.pending.cost}, tokens_pending = ${row.pending.tokens}`

/** Creates the budget row if it is absent and returns the caps on record (which may differ from ours). */
export const ensureBudget = (sql: Sql, name: string, caps: Caps) =>
  Effect.gen(function*() {
    yield* sql`INSERT INTO rein_budgets (name, cost_cap, tokens_cap, calls_cap)
      VALUES (${name}, ${caps.cost}, ${caps.tokens}, ${caps.calls}) ON CONFLICT (name) DO NOTHING`
    const rows = yield* sql<CapsRow>`SELECT cost_cap::float8 AS cost_cap, tokens_cap::float8 AS tokens_cap,
      calls_cap::float8 AS calls_cap FROM rein_budgets WHERE name = ${name}`
    const row = rows[0]!
    return { cost: row.cost_cap, tokens: row.tokens_cap, calls: row.calls_cap } satisfies Caps
  })

/** Opens an empty lease that expires `ttl` ms from now on the database clock. */
export const openLease = (sql: Sql, id: string, name: string, holder: string, ttl: number) =>
  sql`INSERT INTO rein_budget_leases (id, budget, holder, expires_at, heartbeat_at)
    VALUES (${id}, ${name}, ${holder}, clock_timestamp() + ${interval(sql, ttl)}, clock_timestamp())`

/**
 * Reports the lease's ceiling and the usage it was computed from, extends it by `ttl`, and reads what the pool
 * has free; `None` when the lease is gone or already expired (it was reclaimed, or will be: the process must stop
 * serving from it).
 */
export const report = (sql: Sql, id: string, row: LeaseRecord, ttl: number) =>
  Effect.map(
    sql<FreeRow>`UPDATE rein_budget_leases l SET ${recorded(sql, row)},
      expires_at = clock_timestamp() + ${interval(sql, ttl)}, heartbeat_at = clock_timestamp()
      FROM rein_budgets b WHERE l.id = ${id} AND l.expires_at > clock_timestamp() AND b.name = l.budget
      RETURNING (b.calls_cap - b.calls_spent - b.calls_leased)::float8 AS calls_free,
        (b.cost_cap - b.cost_spent - b.cost_leased)::float8 AS cost_free,
        (b.tokens_cap - b.tokens_spent - b.tokens_leased)::float8 AS tokens_free`,
    (rows) => Option.map(Option.fromNullable(rows[0]), freeOf)
  )

/**
 * The one conditional update that leases from the pool. For each resource with `ask` set, the grant is
 * `clamp(ceil(free × fraction), need, free)`: a fixed fraction of what is left, so slices shrink with the
 * remainder and the last ones are exactly what is needed. `None` when some resource has less than `need` free.
 */
export const grant = (sql: Sql, name: string, needed: Vec, ask: Vec, fraction: number) => {
  const one = (r: Resource) =>
    sql`CASE WHEN ${sql(`${r}_free`)} IS NULL OR ${ask[r]}::int = 0 THEN 0 ELSE LEAST(${sql(`${r}_free`)},
      GREATEST(${needed[r]}::bigint, CEIL(${sql(`${r}_free`)} * ${fraction}::float8)::bigint)) END`
  const fits = (r: Resource) => sql`(${sql(`${r}_free`)} IS NULL OR ${sql(`${r}_free`)} >= ${needed[r]}::bigint)`
  return Effect.map(
    sql<GrantRow>`WITH b AS (
        SELECT name, cost_cap - cost_spent - cost_leased AS cost_free,
          tokens_cap - tokens_spent - tokens_leased AS tokens_free,
          calls_cap - calls_spent - calls_leased AS calls_free
        FROM rein_budgets WHERE name = ${name} FOR UPDATE
      ), g AS (
        SELECT name, ${one("calls")} AS calls_grant, ${one("cost")} AS cost_grant, ${one("tokens")} AS tokens_grant
        FROM b WHERE ${fits("calls")} AND ${fits("cost")} AND ${fits("tokens")}
      )
      UPDATE rein_budgets r SET calls_leased = r.calls_leased + g.calls_grant,
        cost_leased = r.cost_leased + g.cost_grant, tokens_leased = r.tokens_leased + g.tokens_grant
      FROM g WHERE r.name = g.name
      RETURNING g.calls_grant::float8 AS calls_grant, g.cost_grant::float8 AS cost_grant,
        g.tokens_grant::float8 AS tokens_grant,
        (r.calls_cap - r.calls_spent - r.calls_leased)::float8 AS calls_free,
        (r.cost_cap - r.cost_spent - r.cost_leased)::float8 AS cost_free,
        (r.tokens_cap - r.tokens_spent - r.tokens_leased)::float8 AS tokens_free`,
    (rows) =>
      Option.map(Option.fromNullable(rows[0]), (row) => ({
        granted: { calls: row.calls_grant, cost: row.cost_grant, tokens: row.tokens_grant } satisfies Vec,
        free: freeOf(row)
      }))
  )
}

/**
 * Adds a grant to the lease's holding and records, in the same statement, its new ceiling with the usage that
 * ceiling was computed from (a reader of the row never sees a ceiling counting usage the row does not), and
 * extends it by `ttl` from now, as a heartbeat would: the top-up has held the row locked since `claimLease`, so
 * however long the grant waited for the budget row, no reclaim can have taken the lease meanwhile, and it is
 * not left to expire behind the grant (same transaction as `grant`).
 */
export const addToLease = (sql: Sql, id: string, granted: Vec, row: LeaseRecord, ttl: number) =>
  sql`UPDATE rein_budget_leases SET calls_leased = calls_leased + ${granted.calls},
    cost_leased = cost_leased + ${granted.cost}, tokens_leased = tokens_leased + ${granted.tokens},
    ${recorded(sql, row)},
    expires_at = clock_timestamp() + ${interval(sql, ttl)}, heartbeat_at = clock_timestamp()
    WHERE id = ${id}`

/** Locks the lease row and extends it; `false` when it is gone or expired. First statement of a top-up. */
export const claimLease = (sql: Sql, id: string, ttl: number) =>
  Effect.map(
    sql<{ readonly id: string }>`UPDATE rein_budget_leases SET expires_at = clock_timestamp() + ${interval(sql, ttl)},
      heartbeat_at = clock_timestamp() WHERE id = ${id} AND expires_at > clock_timestamp() RETURNING id`,
    (rows) => rows.length === 1
  )

/**
 * What a lease holds, as committed; `None` when it is gone. Waits for a transaction still writing the row (a
 * top-up whose commit is in doubt, its backend not yet done), so it reads that transaction's outcome.
 */
export const leasedOf = (sql: Sql, id: string) =>
  Effect.map(
    sql<Vec>`SELECT calls_leased::float8 AS calls, cost_leased::float8 AS cost, tokens_leased::float8 AS tokens
      FROM rein_budget_leases WHERE id = ${id} FOR SHARE`,
    (rows) =>
      Option.map(Option.fromNullable(rows[0]), (row): Vec => ({ calls: row.calls, cost: row.cost, tokens: row.tokens }))
  )

/** What the pool has free now, per resource (`null`: unlimited). */
export const free = (sql: Sql, name: string) =>
  Effect.map(
    sql<FreeRow>`SELECT (calls_cap - calls_spent - calls_leased)::float8 AS calls_free,
      (cost_cap - cost_spent - cost_leased)::float8 AS cost_free,
      (tokens_cap - tokens_spent - tokens_leased)::float8 AS tokens_free
      FROM rein_budgets WHERE name = ${name}`,
    (rows) => freeOf(rows[0]!)
  )

/**
 * Gives `amount` of a live lease back to the pool and records the ceiling computed for what it then holds, with
 * the usage it was computed from, in one statement; returns what the pool has free after it. `None` when the
 * lease is gone.
 */
export const giveBack = (sql: Sql, id: string, name: string, amount: Vec, row: LeaseRecord) =>
  Effect.map(
    sql<FreeRow>`WITH l AS (
        UPDATE rein_budget_leases SET calls_leased = calls_leased - ${amount.calls},
          cost_leased = cost_leased - ${amount.cost}, tokens_leased = tokens_leased - ${amount.tokens},
          ${recorded(sql, row)}
        WHERE id = ${id} AND expires_at > clock_timestamp() RETURNING id
      )
      UPDATE rein_budgets SET calls_leased = calls_leased - ${amount.calls},
        cost_leased = cost_leased - ${amount.cost}, tokens_leased = tokens_leased - ${amount.tokens}
      FROM l WHERE rein_budgets.name = ${name} RETURNING
        (calls_cap - calls_spent - calls_leased)::float8 AS calls_free,
        (cost_cap - cost_spent - cost_leased)::float8 AS cost_free,
        (tokens_cap - tokens_spent - tokens_leased)::float8 AS tokens_free`,
    (rows) => Option.map(Option.fromNullable(rows[0]), freeOf)
  )

/**
 * Closes a lease: what the process charged (and still had in flight) becomes spent, the whole lease leaves
 * `leased`. A lease already reclaimed is not found, and nothing is charged twice.
 */
export const closeLease = (sql: Sql, id: string, name: string, spent: Vec) =>
  sql`WITH l AS (
      DELETE FROM rein_budget_leases WHERE id = ${id}
      RETURNING calls_leased, cost_leased, tokens_leased
    )
    UPDATE rein_budgets b SET calls_spent = b.calls_spent + ${spent.calls},
      cost_spent = b.cost_spent + ${spent.cost}, tokens_spent = b.tokens_spent + ${spent.tokens},
      calls_leased = b.calls_leased - l.calls_leased, cost_leased = b.cost_leased - l.cost_leased,
      tokens_leased = b.tokens_leased - l.tokens_leased
    FROM l WHERE b.name = ${name}`

/**
 * Reclaims the budget's expired leases in one statement: each one's ceiling (what its dead holder may have
 * reserved, calls that may have been billed) is charged as spent; the rest of its lease returns to the pool;
 * both are recorded in `rein_budget_reclaims`.
 * Returns how many leases were reclaimed.
 */
export const reclaim = (sql: Sql, name: string) =>
  Effect.map(
    sql<{ readonly n: number }>`WITH dead AS (
        DELETE FROM rein_budget_leases WHERE budget = ${name} AND expires_at < clock_timestamp()
        RETURNING id, holder, expires_at, calls_leased, cost_leased, tokens_leased,
          calls_exposed, cost_exposed, tokens_exposed
      ), logged AS (
        INSERT INTO rein_budget_reclaims (lease_id, budget, holder, calls_charged, cost_charged, tokens_charged,
          calls_returned, cost_returned, tokens_returned, expired_at)
        SELECT id, ${name}, holder, calls_exposed, cost_exposed, tokens_exposed, calls_leased - calls_exposed,
          cost_leased - cost_exposed, tokens_leased - tokens_exposed, expires_at FROM dead
      ), t AS (
        SELECT COUNT(*) AS n, COALESCE(SUM(calls_leased), 0) AS calls_leased,
          COALESCE(SUM(cost_leased), 0) AS cost_leased, COALESCE(SUM(tokens_leased), 0) AS tokens_leased,
          COALESCE(SUM(calls_exposed), 0) AS calls_exposed, COALESCE(SUM(cost_exposed), 0) AS cost_exposed,
          COALESCE(SUM(tokens_exposed), 0) AS tokens_exposed FROM dead
      )
      UPDATE rein_budgets b SET calls_spent = b.calls_spent + t.calls_exposed,
        cost_spent = b.cost_spent + t.cost_exposed, tokens_spent = b.tokens_spent + t.tokens_exposed,
        calls_leased = b.calls_leased - t.calls_leased, cost_leased = b.cost_leased - t.cost_leased,
        tokens_leased = b.tokens_leased - t.tokens_leased
      FROM t WHERE b.name = ${name} AND t.n > 0 RETURNING t.n::float8 AS n`,
    (rows) => rows[0]?.n ?? 0
  )

interface HoldingRow {
  readonly cost_cap: number | null
  readonly tokens_cap: number | null
  readonly calls_cap: number | null
  readonly calls_spent: number
  readonly cost_spent: number
  readonly tokens_spent: number
  readonly id: string | null
  readonly live: boolean | null
  readonly calls_leased: number | null
  readonly cost_leased: number | null
  readonly tokens_leased: number | null
  readonly calls_exposed: number | null
  readonly cost_exposed: number | null
  readonly tokens_exposed: number | null
  readonly calls_used: number | null
  readonly cost_used: number | null
  readonly tokens_used: number | null
}

/**
 * One lease of a budget as on record: `used` is what it charged and reserved when its ceiling was last recorded
 * (a report, a top-up or a give-back: the same statement wrote both).
 */
export interface LeaseHolding {
  readonly id: string
  /** Not expired on the database clock (an expired one is reclaimed by the next process to look). */
  readonly live: boolean
  readonly leased: Vec
  readonly exposed: Vec
  /**
   * Charged + reserved + pending, as last recorded: a reservation a top-up or a raise was for (`pending`) is
   * not yet in `reserved` on the row, but is taken from the slice as soon as that statement commits.
   */
  readonly used: Vec
}

/** A budget's caps, spent and leases, as one statement read them (one snapshot). */
export interface Holdings {
  readonly caps: Caps
  readonly spent: Vec
  readonly leases: ReadonlyArray<LeaseHolding>
}

const vecOf = (row: HoldingRow, column: "leased" | "exposed" | "used"): Vec => ({
  calls: row[`calls_${column}`] ?? 0,
  cost: row[`cost_${column}`] ?? 0,
  tokens: row[`tokens_${column}`] ?? 0
})

/** The budget's caps, spent and every lease (live or expired), in one snapshot. */
export const holdings = (sql: Sql, name: string) =>
  Effect.map(
    sql<HoldingRow>`SELECT b.cost_cap::float8 AS cost_cap, b.tokens_cap::float8 AS tokens_cap,
        b.calls_cap::float8 AS calls_cap, b.calls_spent::float8 AS calls_spent,
        b.cost_spent::float8 AS cost_spent, b.tokens_spent::float8 AS tokens_spent,
        l.id, l.expires_at > clock_timestamp() AS live,
        l.calls_leased::float8 AS calls_leased, l.cost_leased::float8 AS cost_leased,
        l.tokens_leased::float8 AS tokens_leased, l.calls_exposed::float8 AS calls_exposed,
        l.cost_exposed::float8 AS cost_exposed, l.tokens_exposed::float8 AS tokens_exposed,
        (l.calls_charged + l.calls_reserved + l.calls_pending)::float8 AS calls_used,
        (l.cost_charged + l.cost_reserved + l.cost_pending)::float8 AS cost_used,
        (l.tokens_charged + l.tokens_reserved + l.tokens_pending)::float8 AS tokens_used
      FROM rein_budgets b LEFT JOIN rein_budget_leases l ON l.budget = b.name WHERE b.name = ${name}`,
    (rows): Holdings | undefined => {
      const first = rows[0]
      if (first === undefined) return undefined
      return {
        caps: { cost: first.cost_cap, tokens: first.tokens_cap, calls: first.calls_cap },
        spent: { calls: first.calls_spent, cost: first.cost_spent, tokens: first.tokens_spent },
        leases: rows.flatMap((row) =>
          row.id === null ? [] : [{
            id: row.id,
            live: row.live === true,
            leased: vecOf(row, "leased"),
            exposed: vecOf(row, "exposed"),
            used: vecOf(row, "used")
          }]
        )
      }
    }
  )
