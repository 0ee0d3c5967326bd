/**
 * One process's side of the shared token buckets: a lease per bucket it uses, a slice of tokens taken from
 * the bucket's pool and spent in memory (`tryTake`: no round trip), an exchange with the database when the
 * slice runs short (report what was used, take a new slice, or learn how long to wait), and a heartbeat that
 * reclaims dead leases, reports usage, gives an idle slice back and extends the leases.
 *
 * The caller runs every function here that talks to the database under one lock and one time bound. An exchange that fails or times
 * out leaves the lease's state unknown: the slice is dropped (fail closed: nothing is taken from a slice the
 * database may not have granted) and a new lease is opened at the next take; the old one expires and is
 * reclaimed.
 *
 * @internal
 */
import type { SqlClient } from "@effect/sql"
import type { SqlError } from "@effect/sql/SqlError"
import type { Clock } from "effect"
import { Effect, Option } from "effect"
import { randomUUID } from "node:crypto"
import * as Q from "./rateStatements.js"

/** A bucket's shape: a full bucket and its refill. */
export type Shape = Q.Shape

export interface Ctx {
  readonly sql: SqlClient.SqlClient
  readonly holder: string
  /** Fraction of a full bucket one top-up asks for (at least what is needed). */
  readonly fraction: number
  readonly ttlMillis: number
  readonly heartbeatMillis: number
  /** The local clock (Effect's): lease validity, idleness, waits. */
  readonly clock: Clock.Clock
  /** The bucket's clock, as SQL, read at each call. */
  readonly now: () => Q.Now
}

/** One bucket as this process holds it. */
export interface Local {
  readonly key: string
  readonly shape: Shape
  /** The lease's id ("" when it has none: opened at the next exchange). */
  id: string
  /** What the lease holds on record after the last exchange. */
  granted: number
  /** Net tokens used since the last exchange (refunds subtract, debts add). */
  used: number
  /** The pool's level at the last exchange. */
  level: number
  /** Local time until which the lease is surely live. */
  validUntil: number
  /** Whether anything was taken since the last heartbeat. */
  busy: boolean
}

const now = (ctx: Ctx) => ctx.clock.unsafeCurrentTimeMillis()

/** What the slice can still give: its grant less what was used (a refund is not spent before it is reported). */
export const available = (local: Local): number => local.granted - Math.max(0, local.used)

/** Creates the bucket if absent (failing on a shape that differs from the one on record) and opens a lease. */
export const open = (ctx: Ctx, key: string, shape: Shape) =>
  Effect.gen(function*() {
    const onRecord = yield* Q.ensureBucket(ctx.sql, key, shape, ctx.now())
    const local: Local = {
      key,
      shape: onRecord,
      id: "",
      granted: 0,
      used: 0,
      level: onRecord.capacity,
      validUntil: Number.NEGATIVE_INFINITY,
      busy: false
    }
    return { onRecord, local }
  })

/** Whether the slice is live and has `need` left. */
export const canTake = (ctx: Ctx, local: Local, need: number): boolean =>
  now(ctx) < local.validUntil && available(local) >= need

/** Takes `amount` from the slice now when it is live and has `need` (≥ amount) left; `false` otherwise. */
export const tryTake = (ctx: Ctx, local: Local, amount: number, need: number): boolean => {
  if (!canTake(ctx, local, need)) return false
  local.used += amount
  local.busy = true
  return true
}

/** Adds to what was used (a debt: positive) or gives back (a refund: negative), reported at the next exchange. */
export const adjust = (local: Local, delta: number): void => {
  local.used += delta
}

const lose = (local: Local): void => {
  local.id = ""
  local.granted = 0
  local.used = 0
  local.validUntil = Number.NEGATIVE_INFINITY
}

const openLease = (ctx: Ctx, local: Local) =>
  Effect.gen(function*() {
    const id = randomUUID()
    const sentAt = now(ctx)
    yield* Q.openLease(ctx.sql, id, local.key, ctx.holder, ctx.ttlMillis)
    local.id = id
    local.validUntil = sentAt + ctx.ttlMillis - ctx.heartbeatMillis
  })

/**
 * One exchange (under the caller's lock): reports and takes per `ask`; a lost lease is replaced and the ask
 * made again once. The answer, or `None` when the lease was lost twice.
 */
export const exchange = (
  ctx: Ctx,
  local: Local,
  ask: { readonly give: number; readonly need: number; readonly want: number; readonly overflow: boolean }
): Effect.Effect<Option.Option<Q.Answer>, SqlError> =>
  Effect.gen(function*() {
    for (let round = 0; round < 2; round++) {
      if (local.id === "") yield* openLease(ctx, local)
      const sent = local.used
      const sentAt = now(ctx)
      // What is given back leaves the slice before the statement is sent: if it commits and its answer is
      // lost, the fast path must not spend it.
      const give = Math.min(ask.give, Math.max(0, available(local)))
      local.granted -= give
      const answer = yield* Q.exchange(ctx.sql, local.id, { ...ask, give, used: sent }, ctx.now(), ctx.ttlMillis)
      if (Option.isNone(answer)) {
        lose(local)
        continue
      }
      local.used -= sent
      local.granted = answer.value.granted
      local.level = answer.value.level
      local.validUntil = sentAt + ctx.ttlMillis - ctx.heartbeatMillis
      return answer
    }
    return Option.none<Q.Answer>()
  }).pipe(
    // The exchange's outcome is unknown: nothing more is taken from this lease (it expires and is reclaimed).
    Effect.onError(() => Effect.sync(() => lose(local)))
  )

/** The slice one top-up asks for: a fraction of a full bucket, at least `need`. */
export const want = (ctx: Ctx, local: Local, need: number): number =>
  Math.max(need, Math.ceil(local.shape.capacity * ctx.fraction))

/**
 * The heartbeat (under the caller's lock): reclaim every expired lease, report what each bucket used (giving
 * an idle slice back), and extend the other leases; a lease found gone is dropped.
 */
export const heartbeat = (ctx: Ctx, locals: Iterable<Local>) =>
  Effect.gen(function*() {
    yield* Q.reclaim(ctx.sql)
    const quiet: Array<Local> = []
    for (const local of locals) {
      if (local.id === "") continue
      const give = local.busy ? 0 : Math.max(0, available(local))
      local.busy = false
      if (local.used !== 0 || give > 0) {
        const sent = local.used
        const sentAt = now(ctx)
        local.granted -= give
        const answer = yield* Q.exchange(
          ctx.sql,
          local.id,
          { used: sent, give, need: 0, want: 0, overflow: false },
          ctx.now(),
          ctx.ttlMillis
        ).pipe(Effect.onError(() => Effect.sync(() => lose(local))))
        if (Option.isNone(answer)) lose(local)
        else {
          local.used -= sent
          local.granted = answer.value.granted
          local.level = answer.value.level
          local.validUntil = sentAt + ctx.ttlMillis - ctx.heartbeatMillis
        }
      } else {
        quiet.push(local)
      }
    }
    const sentAt = now(ctx)
    const alive = yield* Q.extend(ctx.sql, quiet.map((l) => l.id), ctx.ttlMillis)
    for (const local of quiet) {
      if (alive.has(local.id)) local.validUntil = sentAt + ctx.ttlMillis - ctx.heartbeatMillis
      else lose(local)
    }
  })

/** Closes every lease: usage reported, the unused rest back to the pool. */
export const close = (ctx: Ctx, locals: Iterable<Local>) =>
  Effect.forEach(
    [...locals].filter((l) => l.id !== ""),
    (local) => Q.closeLease(ctx.sql, local.id, local.used, ctx.now(), ctx.ttlMillis),
    { discard: true }
  )
