/**
 * The shared health's steps against the database: acquiring (a probe slot, a retry token) by compare-and-set,
 * completing (the breaker's transition, computed by core's pure `Health.settle`) by compare-and-set, flushing
 * deposits, the heartbeat (renew probe slots, poll every breaker) and the notification listener. `PgHealth.ts`
 * wires them into a `Health.Service`.
 *
 * @internal
 */
import type { SqlClient } from "@effect/sql"
import type { SqlError } from "@effect/sql/SqlError"
import type * as Health from "@rein/core/Health"
import * as H from "@rein/core/Health"
import type { Role } from "@rein/core/Planner"
import type { Clock } from "effect"
import { Duration, Effect, Either, Option, Schema, Stream } from "effect"
import { randomUUID } from "node:crypto"
import * as B from "./bounded.js"
import * as Q from "./healthStatements.js"
import * as Hr from "./hearing.js"
import * as L from "./listener.js"
import * as M from "./mirror.js"

export interface Ctx {
  readonly sql: SqlClient.SqlClient
  /** The notification channel and this instance's pings on it, when the client can listen. */
  readonly hearing: Hr.Hearing | undefined
  readonly now: Q.Now
  readonly name: string
  /** This instance's id in `rein_health_probes.holder`: a label and a random suffix. */
  readonly holder: string
  readonly settings: Health.Settings
  readonly heartbeatMillis: number
  readonly probeTtlMillis: number
  readonly timeout: Duration.Duration
  readonly clock: Clock.Clock
  readonly mirror: M.Mirror
}

/** A permit of the shared health: a probe carries the id of its slot row. */
export interface PgPermit extends Health.Permit {
  readonly slot: string | null
}

/** The database did not answer in time. */
export class Timeout {
  readonly _tag = "Timeout"
}

/** A refusal decided inside a transaction (which is then rolled back). */
class Refused {
  readonly _tag = "Refused"
  constructor(readonly reason: Health.Refusal) {}
}

/** The compare-and-set lost (the row moved): read again. */
class Moved {
  readonly _tag = "Moved"
}

const ATTEMPTS = 8

export const localMillis = (ctx: Ctx): number => Number(ctx.clock.unsafeCurrentTimeNanos()) / 1e6

/** Bounds a database step by the query timeout. */
export const bounded = <A, E, R>(ctx: Ctx, effect: Effect.Effect<A, E, R>) =>
  B.bounded(ctx.timeout, () => new Timeout())(effect)

const applyRow = (ctx: Ctx, endpoint: string, row: Q.Row): void =>
  M.apply(ctx.mirror, endpoint, row.version ?? 0, row.state, row.now, localMillis(ctx))

const payload = (ctx: Ctx, endpoint: string, version: number, next: Health.EndpointState, dbNow: number) =>
  JSON.stringify({
    h: ctx.name,
    e: endpoint,
    v: version,
    s: next.state,
    c: next.consecutive,
    w: next.window,
    l: next.windowLength,
    u: next.openUntil - dbNow,
    d: next.cooldownMillis,
    p: next.probesInFlight,
    t: next.tokens
  })

const Notification = Schema.parseJson(Schema.Struct({
  h: Schema.String,
  e: Schema.String,
  v: Schema.Number,
  s: Schema.Literal("closed", "open", "half_open"),
  c: Schema.Number,
  w: Schema.Number,
  l: Schema.Number,
  u: Schema.Number,
  d: Schema.Number,
  p: Schema.Number,
  t: Schema.Number
}))
const decodeNotification = Schema.decodeUnknownOption(Notification)
/** Applies a notification of another (or this) process's compare-and-set; notes this instance's own ping. */
export const onNotification = (ctx: Ctx, hearing: Hr.Hearing, raw: string): void => {
  if (Hr.note(hearing, raw)) return
  const n = decodeNotification(raw)
  if (Option.isNone(n) || n.value.h !== ctx.name) return
  const { c, d, e, l, p, s, t, u, v, w } = n.value
  const local = localMillis(ctx)
  const state: Health.EndpointState = {
    state: s,
    consecutive: c,
    window: w,
    windowLength: l,
    openUntil: u,
    cooldownMillis: d,
    probesInFlight: p,
    tokens: t,
    degraded: 0
  }
  M.apply(ctx.mirror, e, v, state, 0, local)
}

/** Adds this process's pending deposits to the shared buckets (given back to the mirror if it fails). */
export const flush = (ctx: Ctx) =>
  Effect.suspend(() => {
    const { settings: { config } } = ctx
    const taken = M.takeDeposits(ctx.mirror)
    if (taken.firsts === 0 && taken.endpoints.size === 0) return Effect.void
    const ids = [...taken.endpoints.keys()].sort()
    return ctx.sql.withTransaction(Effect.gen(function*() {
      const global = yield* Q.depositGlobal(ctx.sql, ctx.name, taken.firsts, config.depositRatio, config.capacity)
      for (const id of ids) {
        yield* Q.depositEndpoint(ctx.sql, ctx.name, id, taken.endpoints.get(id)!, config.depositRatio, config.capacity)
      }
      return global
    })).pipe(
      Effect.tap((global) => Effect.sync(() => void (ctx.mirror.global = global))),
      Effect.onError(() => Effect.sync(() => M.restoreDeposits(ctx.mirror, taken))),
      Effect.asVoid
    )
  })

/** Reads one breaker, creating its row first when a write needs one. */
const readRow = (ctx: Ctx, endpoint: string, slot: string | null) =>
  Q.read(ctx.sql, ctx.now, ctx.name, endpoint, slot, ctx.mirror.fresh)

/**
 * One try at an acquisition through the database: read, judge with core's `Health.admit` (at the database time
 * the attempt will start), and if a probe slot or a retry token is needed, take it by compare-and-set (the
 * global token in the same transaction). `Moved`: read again.
 */
const acquireOnce = (ctx: Ctx, endpoint: string, role: Role, afterMillis: number) =>
  Effect.gen(function*() {
    const row = yield* readRow(ctx, endpoint, null)
    applyRow(ctx, endpoint, row)
    const degraded = ctx.mirror.degraded.get(endpoint) ?? 0
    const judged = H.admit(ctx.settings, { ...row.state, degraded }, row.now + afterMillis, role, row.globalTokens)
    if (Either.isLeft(judged)) return yield* Effect.fail(new Refused(judged.left))
    const { next, probe } = judged.right
    const extra = role !== "first"
    if (!probe && !extra && M.sameBreaker(row.state, next)) return { probe: false, slot: null }
    if (row.version === null) {
      yield* Q.ensureBreaker(ctx.sql, ctx.name, endpoint, ctx.mirror.fresh)
      return yield* Effect.fail(new Moved())
    }
    const version = row.version
    const slot = probe ? randomUUID() : null
    const written: Health.EndpointState = { ...next, tokens: row.state.tokens - (extra ? 1 : 0) }
    const change: Q.Change = {
      withdraw: extra ? 1 : 0,
      take: slot === null ? null : { id: slot, holder: ctx.holder, ttl: ctx.probeTtlMillis + afterMillis },
      release: null,
      payload: payload(ctx, endpoint, version + 1, written, row.now)
    }
    const done = yield* ctx.sql.withTransaction(Effect.gen(function*() {
      if (extra && !(yield* Q.withdrawGlobal(ctx.sql, ctx.name))) {
        return yield* Effect.fail(new Refused("no_retry_token"))
      }
      const set = yield* Q.compareAndSet(ctx.sql, ctx.now, ctx.name, endpoint, version, next, change)
      if (Option.isNone(set)) return yield* Effect.fail(new Moved())
      return set.value
    }))
    M.apply(ctx.mirror, endpoint, done.version, { ...written, tokens: done.tokens }, row.now, localMillis(ctx))
    if (extra) ctx.mirror.global = Math.max(0, row.globalTokens - 1)
    return { probe, slot }
  })

/**
 * An acquisition through the database, retried while the compare-and-set loses. Fails closed: a database that
 * cannot be reached (or is slower than the query timeout) refuses the attempt, and the mirror treats the
 * endpoint as open for a heartbeat so that the planner does not pick it again at once.
 */
export const acquireSlow = (
  ctx: Ctx,
  endpoint: string,
  role: Role,
  afterMillis: number,
  candidates: ReadonlyArray<string> | undefined
): Effect.Effect<PgPermit, Health.Refusal> =>
  Effect.gen(function*() {
    yield* flush(ctx)
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const got = yield* Effect.either(acquireOnce(ctx, endpoint, role, afterMillis))
      if (Either.isRight(got)) {
        if (role === "first") M.deposit(ctx.mirror, endpoint, candidates)
        return { endpoint, probe: got.right.probe, slot: got.right.slot } satisfies PgPermit
      }
      if (got.left instanceof Refused) return yield* Effect.fail(got.left.reason)
    }
    // Outrun by other processes eight times in a row: refused like a contended slot (the planner decides again).
    return yield* Effect.fail<Health.Refusal>(role === "first" ? "no_probe_slot" : "no_retry_token")
  }).pipe(
    (effect) => bounded(ctx, effect),
    Effect.catchIf(
      (e): e is Timeout | SqlError => typeof e !== "string",
      (e) =>
        Effect.zipRight(
          Effect.sync(() => M.unreachable(ctx.mirror, endpoint, localMillis(ctx), ctx.heartbeatMillis)),
          Effect.zipRight(
            Effect.logWarning(`@rein/postgres: attempt on ${endpoint} refused, database unavailable: ${e._tag}`),
            Effect.fail<Health.Refusal>("breaker_open")
          )
        )
    )
  )

/** One try at recording an attempt's end: read, `Health.settle`, compare-and-set (giving back a held slot). */
const completeOnce = (ctx: Ctx, permit: PgPermit, result: Health.Result) =>
  Effect.gen(function*() {
    const row = yield* readRow(ctx, permit.endpoint, permit.slot)
    const held = permit.slot !== null && row.held
    // A slot that expired (its holder missed heartbeats) may be someone else's now: the attempt ends as a plain one.
    const next = H.settle(ctx.settings, row.state, row.now, { probe: held }, result)
    if (!held && M.sameBreaker(row.state, next)) return applyRow(ctx, permit.endpoint, row)
    if (row.version === null) {
      yield* Q.ensureBreaker(ctx.sql, ctx.name, permit.endpoint, ctx.mirror.fresh)
      return yield* Effect.fail(new Moved())
    }
    const change: Q.Change = {
      withdraw: 0,
      take: null,
      release: held ? permit.slot : null,
      payload: payload(ctx, permit.endpoint, row.version + 1, next, row.now)
    }
    const set = yield* Q.compareAndSet(ctx.sql, ctx.now, ctx.name, permit.endpoint, row.version, next, change)
    if (Option.isNone(set)) return yield* Effect.fail(new Moved())
    M.apply(ctx.mirror, permit.endpoint, set.value.version, next, row.now, localMillis(ctx))
  })

/**
 * Records an attempt's end in the shared breaker, retried while the compare-and-set loses. A database that
 * cannot be reached loses the outcome (logged); a probe slot it held expires at its lifetime.
 */
export const completeSlow = (ctx: Ctx, permit: PgPermit, result: Health.Result): Effect.Effect<void> =>
  Effect.gen(function*() {
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const done = yield* Effect.either(completeOnce(ctx, permit, result))
      if (Either.isRight(done)) return
    }
    yield* Effect.logWarning(`@rein/postgres: outcome on ${permit.endpoint} not recorded: outrun ${ATTEMPTS} times`)
  }).pipe(
    (effect) => bounded(ctx, effect),
    Effect.catchAll((e) =>
      Effect.logWarning(`@rein/postgres: outcome on ${permit.endpoint} not recorded, database unavailable: ${e._tag}`)
    )
  )

/** Reads a breaker from the database (the mirror follows); the mirror's answer when it cannot be reached. */
export const breakerNow = (ctx: Ctx, endpoint: string): Effect.Effect<Health.BreakerState> =>
  bounded(ctx, readRow(ctx, endpoint, null)).pipe(
    Effect.map((row) => {
      applyRow(ctx, endpoint, row)
      return H.current(row.state, row.now)
    }),
    Effect.catchAll(() => Effect.sync(() => H.current(M.stateOf(ctx.mirror, endpoint), localMillis(ctx))))
  )

/** Reads every breaker and the global bucket into the mirror (the poll). */
export const poll = (ctx: Ctx) =>
  Effect.gen(function*() {
    const rows = yield* Q.readAll(ctx.sql, ctx.now, ctx.name)
    const local = localMillis(ctx)
    for (const raw of rows) {
      const row = Q.rowOf(raw, ctx.mirror.fresh)
      M.apply(ctx.mirror, raw.endpoint, row.version ?? 0, row.state, row.now, local)
    }
    ctx.mirror.global = (yield* Q.readGlobal(ctx.sql, ctx.now, ctx.name)).global_tokens
  })

/** The heartbeat: add the deposits, extend this process's probe slots, poll, drop long-expired slots. */
export const heartbeat = (ctx: Ctx) => {
  const tick = Effect.gen(function*() {
    yield* flush(ctx)
    yield* Q.renewProbes(ctx.sql, ctx.now, ctx.holder, ctx.probeTtlMillis)
    yield* poll(ctx)
    yield* Q.dropExpiredProbes(ctx.sql, ctx.now, ctx.name, 60_000)
    // A ping not heard back within the query timeout: listening again (`hearing.ts`).
    if (ctx.hearing !== undefined) yield* Hr.beat(ctx.sql, ctx.hearing, (ping) => ping)
  })
  // A defect in a tick is logged like a failure: the heartbeat never stops while the scope lives.
  return bounded(ctx, tick).pipe(
    Effect.catchAllCause((cause) => Effect.logWarning(`@rein/postgres: health heartbeat failed: ${L.brief(cause)}`)),
    Effect.zipRight(Effect.sleep(Duration.millis(ctx.heartbeatMillis))),
    Effect.forever
  )
}

/**
 * Listens for the compare-and-sets of every process (`LISTEN rein_health`) and applies them to the mirror. A
 * subscription that fails (or dies) is tried again each heartbeat, and one that went deaf silently (the
 * heartbeat's ping not heard back within the query timeout: `PgClient`'s listener does not report a lost connection)
 * at the heartbeat after; the heartbeat's poll covers the gap, so the mirror is never more than a heartbeat behind.
 */
export const listen = (ctx: Ctx): Effect.Effect<void> => {
  const hearing = ctx.hearing
  return hearing === undefined
    ? Effect.void
    : Stream.runForEach(hearing.channel.messages, (raw) => Effect.sync(() => onNotification(ctx, hearing, raw)))
}
