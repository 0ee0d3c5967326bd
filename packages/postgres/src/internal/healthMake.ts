/**
 * Builds the shared health over a time source: the database clock (`PgHealth.make`), or in tests a virtual one
 * substituted for it in every statement.
 *
 * @internal
 */
import { SqlClient } from "@effect/sql"
import * as H from "@rein/core/Health"
import * as Input from "@rein/core/Input"
import type { Role } from "@rein/core/Planner"
import type { Scope } from "effect"
import { Deferred, Duration, Effect, Either, Option, Schema } from "effect"
import { randomUUID } from "node:crypto"
import * as Migrations from "../Migrations.js"
import { bounded as holderBounded, holderLabel } from "./bounded.js"
import { Options, PgHealthError } from "./healthOptions.js"
import type { Ctx, PgPermit } from "./healthService.js"
import * as S from "./healthService.js"
import * as Q from "./healthStatements.js"
import * as Hr from "./hearing.js"
import type { Connection } from "./listenConnection.js"
import * as L from "./listener.js"
import * as M from "./mirror.js"
import { describe } from "./sqlError.js"

const unavailable = <A, E extends { readonly message: string }, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.mapError(effect, (e) => new PgHealthError({ reason: "Unavailable", message: describe(e) }))

const configOf = (o: typeof Options.Type): H.Config => ({
  consecutiveFailures: o.consecutiveFailures ?? H.defaults.consecutiveFailures,
  windowSize: o.windowSize ?? H.defaults.windowSize,
  minimumVolume: o.minimumVolume ?? H.defaults.minimumVolume,
  failureRatio: o.failureRatio ?? H.defaults.failureRatio,
  cooldown: Duration.millis(o.cooldownMillis ?? Duration.toMillis(H.defaults.cooldown)),
  cooldownGrowth: o.cooldownGrowth ?? H.defaults.cooldownGrowth,
  maxCooldown: Duration.millis(o.maxCooldownMillis ?? Duration.toMillis(H.defaults.maxCooldown)),
  probes: o.probes ?? H.defaults.probes,
  capacity: o.capacity ?? H.defaults.capacity,
  depositRatio: o.depositRatio ?? H.defaults.depositRatio
})

/** The settings every process of a health must share, as recorded in `rein_health.config`. */
const recorded = (s: H.Settings) => ({
  consecutiveFailures: s.config.consecutiveFailures,
  windowSize: s.windowSize,
  minimumVolume: s.config.minimumVolume,
  failureRatio: s.config.failureRatio,
  cooldownMillis: s.baseCooldown,
  cooldownGrowth: s.config.cooldownGrowth,
  maxCooldownMillis: s.maxCooldown,
  probes: s.config.probes,
  capacity: s.config.capacity,
  depositRatio: s.config.depositRatio
})

const checkConfig = (name: string, asked: Record<string, number>, onRecord: string) => {
  const record = JSON.parse(onRecord) as Record<string, unknown>
  const differ = Object.keys(asked).filter((k) => record[k] !== asked[k])
  return differ.length === 0 ? Effect.void : Effect.fail(
    new PgHealthError({
      reason: "ConfigMismatch",
      message: `health "${name}": ` + differ.map((k) => `${k}: ${String(record[k])} on record, ${asked[k]} asked`)
        .join("; ")
    })
  )
}

export interface Source {
  readonly sql: SqlClient.SqlClient
  /** Where to listen (`listenConnection.of(pg)`), when the client can. */
  readonly listen: Connection | undefined
}

/** Pings sent back to back (each a round trip) while the listening connection is set up, before any wait. */
const EAGER_PINGS = 200

/**
 * Waits until this instance hears its own ping on the channel, so that a notification sent after `make` returns
 * reaches it; past that, the heartbeat's poll covers. The first pings are paced by their own round trips, not by
 * the clock, so that setting up a health never waits on time that does not pass (a `TestClock`): setting up the
 * listening connection takes a few round trips. Only when those go unheard, or one of them fails or times out,
 * does it wait on the clock, at most a heartbeat, and then go on polling. Answers whether the last ping sent got
 * an answer (the database is still there); the caller bounds the whole of it.
 */
const awaitListening = (ctx: Ctx, hearing: Hr.Hearing, answered: { last: boolean }) =>
  Effect.gen(function*() {
    const ping = Effect.map(
      Effect.either(S.bounded(ctx, Hr.ping(ctx.sql, hearing, 0))),
      (e) => void (answered.last = e._tag === "Right")
    )
    for (let i = 0; i < EAGER_PINGS; i++) {
      if (yield* Deferred.isDone(hearing.heard)) return
      yield* ping
      // A database that stops answering must not cost a query timeout per eager ping.
      if (!answered.last) break
    }
    const step = Duration.millis(Math.max(10, ctx.heartbeatMillis / 10))
    for (let i = 0; i < 10; i++) {
      if (Option.isSome(yield* Effect.timeoutOption(Deferred.await(hearing.heard), step))) return
      yield* ping
    }
    yield* Effect.logWarning("@rein/postgres: health notifications not heard yet; polling each heartbeat")
  })

/**
 * Waits for the listening connection within ten query timeouts: past them, or once the loop gave up, setting
 * up goes on (the heartbeat polls) if the database answered the last ping, and fails `Unavailable` if not.
 */
const listening = (ctx: Ctx) =>
  Effect.gen(function*() {
    const hearing = ctx.hearing
    if (hearing === undefined) return
    const answered = { last: true }
    yield* Effect.timeoutOption(awaitListening(ctx, hearing, answered), Duration.times(ctx.timeout, SETUP_QUERIES))
    if (answered.last || (yield* Deferred.isDone(hearing.heard))) return
    return yield* new PgHealthError({
      reason: "Unavailable",
      message: `the database did not answer within ${SETUP_QUERIES} query timeouts while setting up`
    })
  })

/** What setting up may wait for (migrations under another process's lock included): ten query timeouts. */
const SETUP_QUERIES = 10

/** Makes the shared health in the current scope over the time source `now`. */
export const makeWith = (
  input: typeof Options.Encoded,
  source: Source,
  now: Q.Now
): Effect.Effect<H.Service, PgHealthError, Scope.Scope> =>
  Effect.gen(function*() {
    const o = yield* Schema.decodeUnknown(Options)(input).pipe(
      Effect.mapError((e) => new PgHealthError({ reason: "InvalidOptions", message: Input.formatParseError(e) }))
    )
    const settings = H.settingsOf(configOf(o))
    const name = o.name ?? "default"
    const { sql } = source
    const timeout = Duration.millis(o.queryTimeoutMillis ?? 1000)
    // Setting up is bounded too: a database that does not answer fails the layer (typed), never hangs it.
    const setup = <A, E extends { readonly message: string }>(effect: Effect.Effect<A, E>) =>
      unavailable(
        holderBounded(Duration.times(timeout, SETUP_QUERIES), () => ({
          message: `the database did not answer within ${SETUP_QUERIES} query timeouts while setting up`
        }))(effect)
      )
    yield* setup(Effect.provideService(Migrations.run, SqlClient.SqlClient, sql))
    const asked = recorded(settings)
    const onRecord = yield* setup(Q.ensureHealth(sql, name, JSON.stringify(asked), settings.config.capacity))
    yield* checkConfig(name, asked, onRecord)
    const holder = `${holderLabel(o.holder)}:${randomUUID().slice(0, 8)}`
    const ctx: Ctx = {
      sql,
      hearing: source.listen === undefined ? undefined : yield* Hr.make(
        holder,
        {
          name: Q.CHANNEL,
          opened: yield* L.open(source.listen, Q.CHANNEL, Duration.millis(o.heartbeatMillis ?? 1000))
        },
        "health",
        Duration.toMillis(timeout)
      ),
      now,
      name,
      holder,
      settings,
      heartbeatMillis: o.heartbeatMillis ?? 1000,
      probeTtlMillis: o.probeTtlMillis ?? 5000,
      timeout,
      clock: yield* Effect.clock,
      mirror: M.make(settings)
    }
    yield* unavailable(
      S.bounded(ctx, S.poll(ctx)).pipe(
        Effect.mapError((e) => e._tag === "Timeout" ? { message: "the database did not answer in time" } : e)
      )
    )
    yield* Effect.forkScoped(S.listen(ctx))
    yield* listening(ctx)
    yield* Effect.forkScoped(S.heartbeat(ctx))
    yield* Effect.addFinalizer(() =>
      S.bounded(ctx, Effect.zipRight(S.flush(ctx), Q.dropOwnProbes(ctx.sql, ctx.holder))).pipe(
        Effect.catchAll((e) => Effect.logWarning(`@rein/postgres: health not closed cleanly: ${e._tag}`))
      )
    )
    return service(ctx, o.fastPath ?? true)
  })

const slotOf = (permit: H.Permit): string | null =>
  "slot" in permit && typeof permit.slot === "string" ? permit.slot : null

/** The service over a context: the fast path reads the mirror, the rest asks the database. */
const service = (ctx: Ctx, fastPath: boolean): H.Service => {
  const m = ctx.mirror
  const permits = new Map<string, PgPermit>()
  /** Non-probe permits carry nothing but the endpoint: one per endpoint, reused. */
  const permitOf = (endpoint: string): PgPermit => {
    let p = permits.get(endpoint)
    if (p === undefined) permits.set(endpoint, p = { endpoint, probe: false, slot: null })
    return p
  }
  // A first attempt on an endpoint this process knows closed is admitted here, its deposits recorded to be
  // added at the next heartbeat; an open one is refused here; a half-open one (a probe slot) and every retry or
  // fallback (a token) ask the database.
  const fastAcquire = (
    now: number,
    endpoint: string,
    role: Role,
    candidates: ReadonlyArray<string> | undefined
  ): Either.Either<PgPermit, H.Refusal> | undefined => {
    if (role !== "first") return undefined
    const e = M.stateOf(m, endpoint)
    if (e.degraded > 0) return Either.left("degraded")
    const state = H.current(e, now)
    if (state === "open") return Either.left("breaker_open")
    if (state === "half_open") return undefined
    M.deposit(m, endpoint, candidates)
    return Either.right(permitOf(endpoint))
  }
  // Nothing to record: a neutral end of a plain attempt; on the fast path, a success on a settled breaker.
  const nothingToRecord = (permit: H.Permit, result: H.Result) =>
    !permit.probe &&
    (result._tag === "neutral" || (fastPath && result._tag === "success" && M.settled(m, permit.endpoint)))
  const complete = (permit: H.Permit, result: H.Result): Effect.Effect<void> =>
    nothingToRecord(permit, result)
      ? Effect.void
      : S.completeSlow(ctx, { endpoint: permit.endpoint, probe: permit.probe, slot: slotOf(permit) }, result)
  const acquire = (endpoint: string, role: Role, options?: H.AcquireOptions) =>
    Effect.suspend((): Effect.Effect<H.Permit, H.Refusal> => {
      const after = Math.max(0, options?.afterMillis ?? 0)
      const fast = fastPath ? fastAcquire(S.localMillis(ctx) + after, endpoint, role, options?.candidates) : undefined
      return fast ?? S.acquireSlow(ctx, endpoint, role, after, options?.candidates)
    })
  const degrade = (endpoint: string) =>
    Effect.sync(() => {
      m.degraded.set(endpoint, (m.degraded.get(endpoint) ?? 0) + 1)
      return Effect.sync(() => {
        const n = (m.degraded.get(endpoint) ?? 0) - 1
        if (n > 0) m.degraded.set(endpoint, n)
        else m.degraded.delete(endpoint)
      })
    })
  const view = (ids: ReadonlyArray<string>) =>
    S.bounded(ctx, S.poll(ctx)).pipe(
      Effect.ignore,
      Effect.zipRight(Effect.sync(() => M.view(m, S.localMillis(ctx), ids)))
    )
  const base: H.Service = {
    config: ctx.settings.config,
    view,
    acquire,
    complete,
    degrade,
    breaker: (endpoint) => S.breakerNow(ctx, endpoint)
  }
  if (!fastPath) return H.Health.of(base)
  return H.Health.of({
    ...base,
    unsafeView: (atNanos, ids) => M.view(m, Number(atNanos) / 1e6, ids),
    unsafeAcquire: (atNanos, endpoint, role, candidates) =>
      fastAcquire(Number(atNanos) / 1e6, endpoint, role, candidates),
    unsafeComplete: (_atNanos, permit, result) => complete(permit, result)
  })
}
