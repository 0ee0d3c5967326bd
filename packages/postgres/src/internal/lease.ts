/**
 * The effectful side of one process's lease on a shared budget: opening it, topping it up, reporting its
 * ceiling, giving back what it does not need, closing it. Every function here runs under the service's
 * one-permit lock (the fast path in `PgBudget.ts` only reads the ceiling and adds to `reserved`), so the
 * ceiling K changes in one place, by two rules:
 * - raised only after the database has committed the higher value (until then the old, lower one binds);
 * - lowered locally before the lower value is sent (so neither value on record is ever below what is used).
 * Every statement that records a ceiling (a report, a top-up, a give-back) records with it, in the same
 * statement, the usage it was computed from, and a top-up or give-back the lease it was computed for: a reader
 * of the row never sees a ceiling above what the row's own usage and lease allow (what is used, plus the
 * reservation it was raised for, plus `exposure` of what is unused). A top-up that recorded the reservations
 * the fast path took while its grant was in flight, under the usage of the report before, did (a CI run read
 * 130.80M over a rule of 123.30M nano-dollars: 0.75 × the $0.01 reservation too much).
 *
 * The reservation a ceiling was raised for (by `raise`, or a top-up for a reservation) is not yet taken when the
 * row is written, so it is not in the row's usage: it is recorded beside it, as `pending`. What a reader of the
 * row may check, per resource: exposed ≤ charged + reserved + pending + max(1, ⌈exposure × (leased − charged −
 * reserved)⌉) (`exposure` 0.25 by default). A ceiling above that is an excess; one above the rule without
 * `pending` is the headroom for that reservation, by design.
 *
 * @internal
 */
import type { SqlClient } from "@effect/sql"
import { SqlError } from "@effect/sql/SqlError"
import type { Clock } from "effect"
import { Effect, Option } from "effect"
import { randomUUID } from "node:crypto"
import type { Shortfall } from "./budgetService.js"
import * as S from "./slice.js"
import * as Q from "./statements.js"

export interface Ctx {
  readonly sql: SqlClient.SqlClient
  readonly name: string
  readonly holder: string
  readonly caps: S.Caps
  /** Fraction of the free pool one top-up leases. */
  readonly fraction: number
  /** Fraction of its lease a process may reserve beyond its last report. */
  readonly exposure: number
  readonly ttlMillis: number
  readonly heartbeatMillis: number
  readonly clock: Clock.Clock
  slice: S.Slice
  /** The pool's free units at the last contact with the database, and when (local clock, ms). */
  free: Q.Free
  freeAt: number
  /**
   * A reservation was asked for since the last heartbeat: only then does the heartbeat lease ahead. A process
   * that does not reserve holds no slice (its first one is leased by its first reservation).
   */
  wanted: boolean
  /**
   * The lease whose last top-up failed at its commit (the connection lost: it may have committed): until the
   * next step reads the row (`reconcile`), the slice may hold less than the row.
   */
  inDoubt: string | undefined
}

/** Records what the pool had free, as just read from the database. */
export const sawFree = (ctx: Ctx, free: Q.Free): void => {
  ctx.free = free
  ctx.freeAt = now(ctx)
}

/**
 * The first resource the pool, as read less than a heartbeat ago, cannot cover: refused without asking the
 * database again (near the end of a budget every waiting reservation would otherwise take a transaction,
 * and the heartbeat would queue behind them). A give-back since then is seen at the next read.
 */
export const knownShort = (ctx: Ctx, needed: S.Vec): boolean =>
  now(ctx) - ctx.freeAt < ctx.heartbeatMillis &&
  S.resources.some((r) => needed[r] > 0 && ctx.free[r] !== null && ctx.free[r] < needed[r])

/** The lease is gone from the database (reclaimed after expiry): a new one must be opened. */
export class Lost {
  readonly _tag = "Lost"
}

const now = (ctx: Ctx) => ctx.clock.unsafeCurrentTimeMillis()

/** Local deadline: the database extended the lease by `ttl` no earlier than `sentAt`; keep a heartbeat's margin. */
const validFrom = (ctx: Ctx, sentAt: number) => sentAt + ctx.ttlMillis - ctx.heartbeatMillis

const minVec = (a: S.Vec, b: S.Vec): S.Vec => ({
  calls: Math.min(a.calls, b.calls),
  cost: Math.min(a.cost, b.cost),
  tokens: Math.min(a.tokens, b.tokens)
})

/** Opens a fresh, empty lease (a new epoch: holds of the old one are no longer settled against it). */
export const open = (ctx: Ctx) =>
  Effect.gen(function*() {
    const id = randomUUID()
    const sentAt = now(ctx)
    yield* Q.openLease(ctx.sql, id, ctx.name, ctx.holder, ctx.ttlMillis)
    ctx.slice = S.fresh(id, ctx.slice.epoch + 1, validFrom(ctx, sentAt))
  })

const none: S.Vec = S.zero()

/**
 * The ceiling `next` to record, with the usage it was computed from (a copy: the fast path goes on changing
 * the slice while the statement is in flight) and the reservation it was raised for (`pending`). Lowered
 * locally before it is sent (rule 2 above): from here on the fast path reserves under both values, so neither
 * one on record is below what is used.
 */
const recordOf = (s: S.Slice, next: S.Vec, pending: S.Vec = none): Q.LeaseRecord => {
  s.exposed = minVec(s.exposed, next)
  return { exposed: next, charged: { ...s.charged }, reserved: { ...s.reserved }, pending }
}

/** Reports `row` and extends the lease; a lost lease is replaced by a fresh one. */
const report = (ctx: Ctx, s: S.Slice, row: Q.LeaseRecord) =>
  Effect.gen(function*() {
    const sentAt = now(ctx)
    const free = yield* Q.report(ctx.sql, s.id, row, ctx.ttlMillis)
    if (Option.isNone(free)) return yield* open(ctx)
    sawFree(ctx, free.value)
    if (ctx.slice === s) {
      s.exposed = row.exposed
      s.validUntil = validFrom(ctx, sentAt)
    }
  })

/**
 * Reports usage and a recomputed ceiling (which may be lower: adopted before sending) and extends the lease.
 * At rest (`resting`: nothing reserved since the last heartbeat, nothing in flight), the ceiling is what the
 * slice used, with no headroom: its next reservation goes through the database. A lost lease is replaced by a
 * fresh one.
 */
export const renew = (ctx: Ctx, resting = false) =>
  Effect.suspend(() => {
    const s = ctx.slice
    return report(ctx, s, recordOf(s, resting ? S.usedCeiling(s, ctx.caps) : S.ceiling(s, ctx.caps, ctx.exposure)))
  })

/**
 * Raises the ceiling so that `n` more fits under it (the lease already holds enough): the ceiling for what is
 * used and `n`, which for another resource may be lower than the one on record (adopted before sending).
 */
export const raise = (ctx: Ctx, n: S.Vec) =>
  Effect.suspend(() => {
    const s = ctx.slice
    return report(ctx, s, recordOf(s, S.ceiling(s, ctx.caps, ctx.exposure, n), n))
  })

/**
 * Leases more: `needed` units at least where `ask` is set, in one transaction (lock the lease, one
 * conditional update of the pool, record the grant with the new ceiling and the usage it was computed from,
 * and extend the lease). Fails with the first shortfall when the pool cannot cover `needed`; with `Lost` when
 * the lease was reclaimed.
 */
export const topUp = (ctx: Ctx, needed: S.Vec, ask: S.Vec, reservationNeed: S.Vec) =>
  Effect.uninterruptibleMask((restore) => {
    const s = ctx.slice
    // The transaction's statements stay interruptible (a top-up stuck behind the pool's row lock is cancelled
    // when its caller gives up); its COMMIT is not (`withTransaction`), and neither is what follows it here: an
    // interruption that arrives while PostgreSQL commits takes effect only once the grant is in the local slice
    // too. (Before, it took effect between the two: the row held the grant, the slice did not, until close.)
    let written = false
    const transaction = ctx.sql.withTransaction(restore(Effect.gen(function*() {
      if (!(yield* Q.claimLease(ctx.sql, s.id, ctx.ttlMillis))) return { _tag: "Lost" } as const
      const granted = yield* Q.grant(ctx.sql, ctx.name, needed, ask, ctx.fraction)
      if (Option.isNone(granted)) return { _tag: "Short", free: yield* Q.free(ctx.sql, ctx.name) } as const
      // Computed from the slice as it is now, reservations the fast path took while the grant was in flight
      // included, and recorded with that same usage.
      const planned: S.Slice = { ...s, leased: S.add(s.leased, granted.value.granted) }
      const row = recordOf(s, S.ceiling(planned, ctx.caps, ctx.exposure, reservationNeed), reservationNeed)
      const sentAt = now(ctx)
      yield* Q.addToLease(ctx.sql, s.id, granted.value.granted, row, ctx.ttlMillis)
      written = true
      return { _tag: "Granted", granted: granted.value.granted, row, sentAt, free: granted.value.free } as const
    }))).pipe(
      // `withTransaction` dies when its COMMIT or ROLLBACK fails (the connection lost): here a failure of the
      // database like any other (before, it killed the heartbeat, or the reservation's fiber). A COMMIT that
      // failed may have committed: what the lease holds is in doubt until the next step reads it.
      Effect.catchSomeDefect((defect) => defect instanceof SqlError ? Option.some(Effect.fail(defect)) : Option.none()),
      Effect.tapError((e) =>
        Effect.sync(() => {
          if (written && e instanceof SqlError) ctx.inDoubt = s.id
        })
      )
    )
    return Effect.flatMap(transaction, (outcome): Effect.Effect<void, Lost | Shortfall> => {
      switch (outcome._tag) {
        case "Lost":
          return Effect.fail(new Lost())
        case "Short":
          sawFree(ctx, outcome.free)
          return Effect.fail(shortfallOf(ctx, reservationNeed, needed))
        case "Granted":
          sawFree(ctx, outcome.free)
          if (ctx.slice === s) {
            s.leased = S.add(s.leased, outcome.granted)
            s.exposed = outcome.row.exposed
            s.validUntil = validFrom(ctx, outcome.sentAt)
          }
          return Effect.void
      }
    })
  })

/**
 * After a top-up whose commit is in doubt: what the lease holds as committed (with the grant or without it)
 * becomes the slice's. First in every step under the lock; nothing to do otherwise.
 */
export const reconcile = (ctx: Ctx) =>
  Effect.suspend(() => {
    const s = ctx.slice
    if (ctx.inDoubt !== s.id) return Effect.void
    return Effect.map(Q.leasedOf(ctx.sql, s.id), (leased) => {
      ctx.inDoubt = undefined
      // A lease that is gone is replaced at its next report.
      if (Option.isSome(leased) && ctx.slice === s) s.leased = leased.value
    })
  })

/** The first resource the pool cannot cover, with what is left of it for this process. */
export const shortfallOf = (ctx: Ctx, reservationNeed: S.Vec, needed: S.Vec): Shortfall => {
  const s = ctx.slice
  const resource = S.resources.find((r) => ctx.caps[r] !== null && (ctx.free[r] ?? 0) < needed[r]) ??
    S.resources.find((r) => ctx.caps[r] !== null && needed[r] > 0) ?? "calls"
  const left = Math.max(0, (ctx.free[resource] ?? 0) + s.leased[resource] - S.used(s, resource))
  return {
    resource,
    needed: S.toPublic(resource, reservationNeed[resource]),
    left: S.toPublic(resource, left)
  }
}

/**
 * Gives back what the lease holds beyond twice the slice a top-up would get now; at rest (`resting`, after a
 * `renew` at rest), all it holds unused: a process that stopped reserving keeps nothing from the others.
 */
export const trim = (ctx: Ctx, resting = false) =>
  Effect.gen(function*() {
    const s = ctx.slice
    const slice = S.sliceNow(s, ctx.caps, ctx.free, ctx.fraction)
    const keep = S.zero()
    for (const r of S.resources) keep[r] = resting ? 0 : 2 * slice[r]
    const amount = S.surplus(s, ctx.caps, keep)
    if (S.isZero(amount)) return
    // Lowered before the statement: if it fails, the database still holds more than this process uses.
    s.leased = S.sub(s.leased, amount)
    // The ceiling for what it then holds (lower: a quarter of less unused), recorded with the give-back.
    const row = recordOf(s, resting ? S.usedCeiling(s, ctx.caps) : S.ceiling(s, ctx.caps, ctx.exposure))
    // In the same step, the amount is counted free (as it will be once given back): what is left, as the fast
    // path reports it (free + leased − used), does not drop by the give-back while the statement is in flight,
    // nor after it (the pool read back below includes it).
    const before = ctx.free
    ctx.free = addFree(before, amount)
    const after = yield* Q.giveBack(ctx.sql, s.id, ctx.name, amount, row).pipe(
      Effect.onError(() =>
        Effect.sync(() => {
          // Not given back (or not known to be): it stays in this lease on record, returned when the lease
          // closes; counting it nowhere until the next read of the pool errs on the side of less.
          ctx.free = before
        })
      )
    )
    if (Option.isNone(after)) return yield* open(ctx)
    sawFree(ctx, after.value)
    if (ctx.slice === s) s.exposed = row.exposed
  })

const addFree = (free: Q.Free, amount: S.Vec): Q.Free => ({
  calls: free.calls === null ? null : free.calls + amount.calls,
  cost: free.cost === null ? null : free.cost + amount.cost,
  tokens: free.tokens === null ? null : free.tokens + amount.tokens
})

const usedVec = (s: S.Slice): S.Vec => S.add(s.charged, s.reserved)

/** Closes the lease: what was charged, and what is still in flight, is spent; the rest returns. */
export const close = (ctx: Ctx) => Q.closeLease(ctx.sql, ctx.slice.id, ctx.name, usedVec(ctx.slice))
