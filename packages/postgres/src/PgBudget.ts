/**
 * A hard budget shared by many processes through PostgreSQL, without a round trip per request. Each process
 * leases a slice of the budget with one conditional `UPDATE` at its first reservation (a process that does
 * not reserve holds none: what it does not use stays in the pool for the others) and serves reservations from
 * it in memory (a synchronous fast path, `unsafeReserve`); while it reserves, it tops the slice up in the
 * background when it runs low (less unused than half the slice a top-up would lease now; a heartbeat with no
 * reservation since the last one leases nothing), leases
 * smaller slices as the remainder shrinks (a fixed fraction of what is free, never less than what the
 * reservation needs, so the last reservations are exact), gives back what it holds beyond what it needs (at
 * rest, with no reservation since its last heartbeat and none in flight, all it has unused), and returns
 * everything it did not use when its scope closes. The same holds for the call cap and the token cap.
 *
 * What is left, as the fast path reports it (`unsafeLeft`: the pool's free units as last read, plus the
 * slice, minus what the slice has charged and reserved), is exact for this process's own use: every give-back
 * and top-up moves units between the slice and the recorded pool in one step. What other processes took
 * since is seen at the next contact with the database: at the latest, the next heartbeat. (`left` reads the
 * pool first.)
 *
 * Crashes: a process reports to the database, at each heartbeat and before it reserves past it, a ceiling
 * (what it has charged and reserved plus a small headroom, `exposure` of what its slice holds unused: not of
 * what it spent, so a process that spent much holds no large ceiling). If it dies, its lease
 * expires after `ttlMillis` on the database clock; the next process to look reclaims it: the ceiling is
 * charged as spent (its calls in flight may have been billed), the rest returns to the pool. A live process
 * whose lease may have expired (no heartbeat got through) stops serving from it.
 *
 * The guarantee: charged plus reserved over all processes never exceeds the cap; a call in flight when its
 * process died is charged as spent, and at most `exposure` of what that process's slice held unused more.
 *
 * @since 0.1.0
 */
import { SqlClient } from "@effect/sql"
import { SqlError } from "@effect/sql/SqlError"
import * as Input from "@rein/core/Input"
import type { Scope } from "effect"
import { Duration, Effect, Either, Layer, Queue, Schema } from "effect"
import { bounded, holderLabel } from "./internal/bounded.js"
import type { Charged, Hold, Left, Reservation, Service, Shortfall } from "./internal/budgetService.js"
import { SharedBudget } from "./internal/budgetService.js"
import * as G from "./internal/grantable.js"
import * as L from "./internal/lease.js"
import { Millis, Name } from "./internal/optionSchemas.js"
import * as S from "./internal/slice.js"
import { describe } from "./internal/sqlError.js"
import * as Q from "./internal/statements.js"
import * as Migrations from "./Migrations.js"

/**
 * The shared budget could not be set up, or its database could not be reached.
 *
 * @example
 * ```ts
 * import { PgBudget } from "@rein/postgres"
 *
 * const error = new PgBudget.PgBudgetError({ reason: "CapsMismatch", message: "cost: 10 on record, 20 asked" })
 * ```
 * @category errors
 * @since 0.1.0
 */
export class PgBudgetError extends Schema.TaggedError<PgBudgetError>()("PgBudgetError", {
  reason: Schema.Literal("InvalidOptions", "CapsMismatch", "Unavailable"),
  message: Schema.String
}) {}

const Fraction = Schema.Number.pipe(Schema.greaterThan(0), Schema.lessThanOrEqualTo(1))

/**
 * The options of a shared budget. Absent caps are unlimited. A budget's caps are fixed when its row is first
 * created: a process asking for other caps under the same name fails with `CapsMismatch`.
 *
 * @example
 * ```ts
 * import { Schema } from "effect"
 * import { PgBudget } from "@rein/postgres"
 *
 * const options = Schema.decodeUnknownSync(PgBudget.Options)({ name: "run-42", cost: 10, calls: 500 })
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const Options = Schema.Struct({
  /** The budget's name: every process using this name shares its caps. */
  name: Name,
  /** Cap on cost, in dollars (kept in nano-dollars: at most 2^53 of them, about $9M, are exact). */
  cost: Schema.optional(
    Schema.Number.pipe(Schema.finite(), Schema.nonNegative(), Schema.lessThanOrEqualTo(Number.MAX_SAFE_INTEGER / 1e9))
  ),
  /** Cap on tokens. */
  tokens: Schema.optional(Schema.NonNegativeInt),
  /** Cap on calls (attempts). */
  calls: Schema.optional(Schema.NonNegativeInt),
  /** Fraction of the free pool one top-up leases (default 0.1). */
  slice: Schema.optional(Fraction),
  /** Fraction of what its slice holds unused a process may reserve beyond what it last reported (default 0.25). */
  exposure: Schema.optional(Fraction),
  /** How often a process reports and extends its lease (default 1000 ms). */
  heartbeatMillis: Schema.optional(Millis),
  /** How long a lease lives without a heartbeat (default 5000 ms; at least three heartbeats). */
  ttlMillis: Schema.optional(Millis),
  /** Bound on one database interaction (default 2000 ms): past it the reservation is refused. */
  queryTimeoutMillis: Schema.optional(Millis),
  /** A label for operators in `rein_budget_leases.holder` (default `hostname:pid`). */
  holder: Schema.optional(Schema.String)
}).pipe(
  Schema.filter((o) =>
    (o.ttlMillis ?? 5000) >= 3 * (o.heartbeatMillis ?? 1000) ||
    { path: ["ttlMillis"], message: "Expected at least three heartbeats (3 × heartbeatMillis)" }
  )
)

/**
 * @category models
 * @since 0.1.0
 */
export type Options = typeof Options.Encoded

const decode = (input: Options) =>
  Schema.decodeUnknown(Options)(input).pipe(
    Effect.mapError((e) => new PgBudgetError({ reason: "InvalidOptions", message: Input.formatParseError(e) }))
  )

const unavailable = <A, E extends { readonly message: string }, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.mapError(effect, (e) => new PgBudgetError({ reason: "Unavailable", message: describe(e) }))

const checkCaps = (asked: S.Caps, onRecord: S.Caps, name: string) => {
  const differ = S.resources.filter((r) => asked[r] !== onRecord[r])
  if (differ.length === 0) return Effect.void
  const show = (r: S.Resource, v: number | null) => (v === null ? "unlimited" : String(S.toPublic(r, v)))
  return Effect.fail(
    new PgBudgetError({
      reason: "CapsMismatch",
      message: `budget "${name}": ` +
        differ.map((r) => `${r}: ${show(r, onRecord[r])} on record, ${show(r, asked[r])} asked`).join("; ")
    })
  )
}

interface HoldMeta {
  readonly need: S.Vec
  readonly epoch: number
}

/**
 * Makes the shared budget in the current scope: migrates, creates the budget row if absent, opens this
 * process's lease (empty: its first reservation leases a slice) and starts its heartbeat; closing the scope
 * gives back what was not used.
 *
 * @example
 * ```ts
 * import { PgClient } from "@effect/sql-pg"
 * import { Effect, Redacted } from "effect"
 * import { PgBudget } from "@rein/postgres"
 *
 * const program = Effect.scoped(Effect.gen(function*() {
 *   const budget = yield* PgBudget.make({ name: "nightly", cost: 10 })
 *   const hold = yield* budget.reserve({ cost: 0.02, tokens: null })
 *   yield* budget.settle(hold, { cost: 0.013, tokens: 900 })
 * })).pipe(Effect.provide(PgClient.layer({ url: Redacted.make("postgres://localhost/rein") })))
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const make = (input: Options): Effect.Effect<Service, PgBudgetError, SqlClient.SqlClient | Scope.Scope> =>
  Effect.gen(function*() {
    const o = yield* decode(input)
    const sql = yield* SqlClient.SqlClient
    const caps: S.Caps = {
      cost: o.cost === undefined ? null : S.toNanos(o.cost),
      tokens: o.tokens ?? null,
      calls: o.calls ?? null
    }
    yield* unavailable(Migrations.run)
    yield* checkCaps(caps, yield* unavailable(Q.ensureBudget(sql, o.name, caps)), o.name)
    const ctx: L.Ctx = {
      sql,
      name: o.name,
      holder: holderLabel(o.holder),
      caps,
      fraction: o.slice ?? 0.1,
      exposure: o.exposure ?? 0.25,
      ttlMillis: o.ttlMillis ?? 5000,
      heartbeatMillis: o.heartbeatMillis ?? 1000,
      clock: yield* Effect.clock,
      slice: S.fresh("", 0, 0),
      free: { calls: caps.calls, cost: caps.cost, tokens: caps.tokens },
      freeAt: Number.NEGATIVE_INFINITY,
      wanted: false,
      inDoubt: undefined
    }
    const timeout = Duration.millis(o.queryTimeoutMillis ?? 2000)
    const lock = yield* Effect.makeSemaphore(1)
    const db = <A, E>(effect: Effect.Effect<A, E>) =>
      lock.withPermits(1)(effect).pipe(
        bounded(timeout, () =>
          new PgBudgetError({ reason: "Unavailable", message: "the database did not answer in time" }))
      )
    yield* unavailable(db(L.open(ctx)))
    const wake = yield* Queue.sliding<void>(1)
    yield* Effect.forkScoped(maintain(ctx, db, wake))
    yield* Effect.addFinalizer(() =>
      db(L.close(ctx)).pipe(
        Effect.catchAll((e) => Effect.logWarning(`@rein/postgres: lease not closed: ${describe(e)}`))
      )
    )
    return service(ctx, db, wake)
  })

type Db = <A, E>(effect: Effect.Effect<A, E>) => Effect.Effect<A, E | PgBudgetError>

/**
 * The heartbeat: on each tick (or when the fast path asks), reclaim the dead, report, top up (only for a
 * process that reserved since the last tick: one that does not reserve takes no slice from the others), trim.
 * A process at rest (no reservation since the last tick, none in flight) gives back all its slice has unused.
 */
const maintain = (ctx: L.Ctx, db: Db, wake: Queue.Queue<void>) =>
  Effect.gen(function*() {
    const tick = Effect.gen(function*() {
      const wanted = ctx.wanted
      ctx.wanted = false
      const resting = !wanted && S.isZero(ctx.slice.reserved)
      yield* Q.reclaim(ctx.sql, ctx.name)
      yield* L.reconcile(ctx)
      yield* L.renew(ctx, resting)
      const low = S.low(ctx.slice, ctx.caps, ctx.free, ctx.fraction)
      if (wanted && !S.isZero(low)) {
        // A prefetch asks for nothing it must have: a shortfall here only means the pool is empty.
        yield* L.topUp(ctx, S.zero(), low, S.zero()).pipe(
          Effect.catchAll((e) =>
            e instanceof L.Lost ? L.open(ctx) : e instanceof SqlError ? Effect.fail(e) : Effect.void
          )
        )
      }
      yield* L.trim(ctx, resting)
    })
    const step = db(tick).pipe(
      Effect.catchAll((e) => Effect.logWarning(`@rein/postgres: heartbeat failed: ${describe(e)}`))
    )
    yield* step.pipe(
      Effect.zipRight(Effect.raceFirst(Queue.take(wake), Effect.sleep(Duration.millis(ctx.heartbeatMillis)))),
      Effect.forever
    )
  })

const service = (ctx: L.Ctx, db: Db, wake: Queue.Queue<void>): Service => {
  const holds = new WeakMap<Hold, HoldMeta>()
  const limits: Left = {
    cost: ctx.caps.cost === null ? null : S.toDollars(ctx.caps.cost),
    tokens: ctx.caps.tokens,
    calls: ctx.caps.calls
  }
  const leftNow = (): Left => {
    const s = ctx.slice
    const of = (r: S.Resource) =>
      ctx.caps[r] === null ? null : S.toPublic(r, Math.max(0, (ctx.free[r] ?? 0) + s.leased[r] - S.used(s, r)))
    return { cost: of("cost"), tokens: of("tokens"), calls: of("calls") }
  }
  // A worst case that is not an amount (NaN, ±Infinity) is refused: a NaN would make every comparison with the
  // slice false (admitting anything) and every report to the database fail.
  const notAmount = (reservation: Reservation): Either.Either<never, Shortfall> | undefined => {
    const resource = reservation.cost !== null && !Number.isFinite(reservation.cost)
      ? "cost"
      : reservation.tokens !== null && !Number.isFinite(reservation.tokens)
      ? "tokens"
      : undefined
    return resource === undefined ? undefined : Either.left({
      resource,
      needed: reservation[resource] ?? 0,
      left: leftNow()[resource] ?? Number.POSITIVE_INFINITY
    })
  }
  const unsafeReserve = (reservation: Reservation): Either.Either<Hold, Shortfall> | undefined => {
    const s = ctx.slice
    const bad = notAmount(reservation)
    if (bad !== undefined) return bad
    const need = S.need(reservation)
    ctx.wanted = true
    if (ctx.clock.unsafeCurrentTimeMillis() >= s.validUntil) return undefined
    if (S.blocked(s, ctx.caps, need) !== undefined) return undefined
    S.take(s, need)
    const hold: Hold = { reservation }
    holds.set(hold, { need, epoch: s.epoch })
    if (S.nearCeiling(s, ctx.caps, ctx.exposure) || !S.isZero(S.low(s, ctx.caps, ctx.free, ctx.fraction))) {
      Queue.unsafeOffer(wake, undefined)
    }
    return Either.right(hold)
  }
  // Under the lock: other slow reservations wait, so a top-up is not taken by the next one in line.
  const slowReserve = (reservation: Reservation) => {
    const need = S.need(reservation)
    const attempts = Effect.gen(function*() {
      for (let attempt = 0; attempt < 4; attempt++) {
        const fast = unsafeReserve(reservation)
        if (fast !== undefined) return yield* fast
        yield* reserveStep(ctx, need)
      }
      return yield* Effect.fail(L.shortfallOf(ctx, need, S.short(ctx.slice, ctx.caps, need)))
    })
    return db(attempts).pipe(
      Effect.catchIf(
        (e): e is PgBudgetError | SqlError => e instanceof PgBudgetError || e instanceof SqlError,
        (e) =>
          // Fail closed: without the database, only what the slice already covers can be admitted; the
          // shortfall says why, so the executor stops with `BudgetExhausted` marked `unavailable`.
          Effect.zipRight(
            Effect.logWarning(`@rein/postgres: reservation refused, database unavailable: ${describe(e)}`),
            Effect.fail<Shortfall>({
              ...L.shortfallOf(ctx, need, S.short(ctx.slice, ctx.caps, need)),
              reason: "unavailable"
            })
          )
      )
    )
  }
  const settleNow = (hold: Hold, c: Charged) => {
    const meta = holds.get(hold)
    if (meta === undefined) return
    holds.delete(hold)
    // A hold of a lost lease was charged at its ceiling when the lease was reclaimed.
    if (meta.epoch !== ctx.slice.epoch) return
    S.settle(ctx.slice, meta.need, S.charged(c, meta.need))
    if (S.blocked(ctx.slice, ctx.caps, S.zero()) !== undefined) Queue.unsafeOffer(wake, undefined)
  }
  const budget: Service = {
    limits,
    left: db(Effect.map(Q.free(ctx.sql, ctx.name), (free) => {
      L.sawFree(ctx, free)
    })).pipe(Effect.ignore, Effect.zipRight(Effect.sync(leftNow))),
    reserve: (reservation) => Effect.suspend(() => unsafeReserve(reservation) ?? slowReserve(reservation)),
    settle: (hold, c) => Effect.sync(() => settleNow(hold, c)),
    release: (hold) =>
      Effect.sync(() => {
        const meta = holds.get(hold)
        if (meta === undefined) return
        holds.delete(hold)
        if (meta.epoch === ctx.slice.epoch) S.release(ctx.slice, meta.need)
      }),
    unsafeReserve,
    unsafeSettle: settleNow,
    unsafeLeft: leftNow
  }
  // Under the lock, so this process's own lease is not being reported, topped up or trimmed meanwhile. The pool
  // read in passing is this process's view of it from now on: units given back elsewhere since its last
  // contact with the database are then not refused as known short (`unsafeLeft` counts them).
  G.register(
    budget,
    db(Effect.flatMap(Q.holdings(ctx.sql, ctx.name), (holdings) =>
      holdings === undefined
        ? Effect.fail(new PgBudgetError({ reason: "Unavailable", message: `budget "${ctx.name}" not found` }))
        : Effect.sync(() => {
          L.sawFree(ctx, G.freeOf(holdings))
          return G.grantable(holdings, { id: ctx.slice.id, used: S.add(ctx.slice.charged, ctx.slice.reserved) })
        })))
  )
  return budget
}

/**
 * One step of the slow path: read what the lease holds after a top-up in doubt, renew an expired lease, lease
 * what is short, or raise the ceiling.
 */
const reserveStep = (ctx: L.Ctx, need: S.Vec): Effect.Effect<void, Shortfall | SqlError> =>
  Effect.gen(function*() {
    yield* L.reconcile(ctx)
    if (ctx.clock.unsafeCurrentTimeMillis() >= ctx.slice.validUntil) return yield* L.renew(ctx)
    const short = S.short(ctx.slice, ctx.caps, need)
    if (S.isZero(short)) return yield* L.raise(ctx, need)
    if (L.knownShort(ctx, short)) return yield* Effect.fail(L.shortfallOf(ctx, need, short))
    const ask = S.zero()
    for (const r of S.resources) ask[r] = short[r] > 0 ? 1 : 0
    const topped = yield* Effect.either(L.topUp(ctx, short, ask, need))
    if (Either.isLeft(topped)) {
      if (topped.left instanceof L.Lost) yield* L.open(ctx)
      else return yield* Effect.fail(topped.left)
    }
  })

/**
 * The shared budget as the `SharedBudget` service, for the lifetime of the layer.
 *
 * @example
 * ```ts
 * import { PgClient } from "@effect/sql-pg"
 * import { Layer, Redacted } from "effect"
 * import { PgBudget } from "@rein/postgres"
 *
 * const SharedBudgetLive = PgBudget.layer({ name: "nightly", cost: 10, calls: 2000 }).pipe(
 *   Layer.provide(PgClient.layer({ url: Redacted.make("postgres://localhost/rein") }))
 * )
 * ```
 * @category layers
 * @since 0.1.0
 */
export const layer = (options: Options): Layer.Layer<SharedBudget, PgBudgetError, SqlClient.SqlClient> =>
  Layer.scoped(SharedBudget, make(options))

/**
 * The shared budget's tag (mirror of `@rein/core`'s `SharedBudget`, same key, until the packages merge).
 *
 * @since 0.1.0
 */
export { SharedBudget }

/**
 * The budget's shapes (mirrors of `@rein/core`'s `Budget` types until the packages merge).
 *
 * @since 0.1.0
 */
export type { Charged, Hold, Left, Reservation, Service, Shortfall }
