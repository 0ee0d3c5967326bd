/**
 * Batch run limits (`@rein/batch`'s `RunLimits.Service`) shared by many processes through PostgreSQL: runs
 * in several processes that use the same `name` share the soft token and cost caps (their totals), the stop
 * (first trigger wins across processes, recorded once with its item id, sticky), the cooldown after a 429,
 * and the requests- and tokens-per-minute buckets of their provider key (`rateKey`).
 *
 * - **Rates** are token buckets in `rein_rate_buckets`, refilled from the database clock and leased in small
 *   slices (see `PgRateLimiterStore` for the bound): an admission the slice covers takes no round trip.
 * - **Totals** take one round trip per finished attempt (`charge`: one `UPDATE … RETURNING`), so a cap is
 *   exact across processes: what was charged when the run stopped exceeds a cap by at most what the
 *   attempts in flight in all processes charged.
 * - **The stop** is one conditional `UPDATE … WHERE stop IS NULL` and a `NOTIFY`. `whenStopped` and
 *   `stopped` learn of another process's stop by `LISTEN` (when the client is a `PgClient`) and by polling
 *   every `pollMillis`, whichever comes first. Polls also ping the process on the channel: a listening
 *   connection that went deaf while open (its ping not heard back within `queryTimeoutMillis`) is made again.
 * - **Cooldowns** are rows with their end on the bucket's clock, lengthened with `GREATEST` (never shortened)
 *   and pushed like the stop.
 * - **Provider capacity and the startup ramp stay per process**: sharing in-flight slots would cost a round
 *   trip on every admission and every release. With `capacity: { e: n }`, the fleet has at most
 *   `n × processes` attempts in flight on `e`.
 *
 * Without the database: an admission the slice does not cover waits (`Wait`, never an admission without
 * tokens; the batch gate bounds every wait by the item's deadline); a charge that cannot be recorded stops
 * the run (fail closed); a stop that cannot be recorded stops this process and is recorded when the
 * database is back; the totals are the last ones read. The same holds when the run's row was deleted while
 * its processes run: the stop's reason and the warnings name the run.
 *
 * @since 0.1.0
 */
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import type { Termination } from "@rein/batch"
import { RunLimits, Termination as Terminations } from "@rein/batch"
import { Format } from "@rein/core"
import * as Input from "@rein/core/Input"
import type { Scope } from "effect"
import { Deferred, Duration, Effect, Exit, FiberId, Layer, Option, Schema, Stream } from "effect"
import { randomUUID } from "node:crypto"
import { bounded, holderLabel } from "./internal/bounded.js"
import * as B from "./internal/buckets.js"
import * as Hr from "./internal/hearing.js"
import * as LC from "./internal/listenConnection.js"
import * as L from "./internal/listener.js"
import { Name } from "./internal/optionSchemas.js"
import * as E from "./internal/rateEngine.js"
import * as R from "./internal/runStatements.js"
import * as Migrations from "./Migrations.js"

/**
 * The shared run limits could not be set up.
 *
 * @example
 * ```ts
 * import { PgRunLimits } from "@rein/postgres"
 *
 * const error = new PgRunLimits.PgRunLimitsError({ reason: "Mismatch", message: "maxTotalTokens: 10 on record" })
 * ```
 * @category errors
 * @since 0.1.0
 */
export class PgRunLimitsError extends Schema.TaggedError<PgRunLimitsError>()("PgRunLimitsError", {
  reason: Schema.Literal("InvalidOptions", "Mismatch", "Unavailable"),
  message: Schema.String
}) {}

const Millis = E.Millis

/**
 * Where and how the run limits are shared. Every process that uses the same `name` shares one run's caps,
 * totals, stop and cooldowns; every run that uses the same `rateKey` shares its rate buckets.
 *
 * @example
 * ```ts
 * import { Schema } from "effect"
 * import { PgRunLimits } from "@rein/postgres"
 *
 * const options = Schema.decodeUnknownSync(PgRunLimits.Options)({ name: "nightly-42", rateKey: "openai:org-1" })
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const Options = Schema.Struct({
  /** The run's name: processes using it share one run's caps, totals, stop and cooldowns. */
  name: Name,
  /**
   * The provider key whose requests- and tokens-per-minute buckets admissions draw from: the scope the
   * provider limits (an account, an API key); at most 512 bytes, as the name. Default: the run's name.
   */
  rateKey: Schema.optional(Name),
  /** Fraction of a full bucket one top-up asks for (default 0.05; never less than the admission needs). */
  slice: Schema.optional(Schema.Number.pipe(Schema.greaterThan(0), Schema.lessThanOrEqualTo(1))),
  /** How often a process reports and extends its leases (default 1000 ms). */
  heartbeatMillis: Schema.optional(Millis),
  /** How long a lease lives without a heartbeat (default 5000 ms; at least three heartbeats). */
  ttlMillis: Schema.optional(Millis),
  /** How often a process reads the stop and the cooldowns when no notification came (default 1000 ms). */
  pollMillis: Schema.optional(Millis),
  /** Bound on one database interaction (default 2000 ms). */
  queryTimeoutMillis: Schema.optional(Millis),
  /** A label for operators in lease rows and `stopped_by` (default `hostname:pid`). */
  holder: Schema.optional(Schema.String),
  /**
   * The buckets' and cooldowns' clock: the database's `clock_timestamp()` (default), or Effect's `Clock`
   * ("effect": for tests on a `TestClock`; every process sharing a bucket must use the same clock).
   */
  clock: Schema.optional(Schema.Literal("database", "effect"))
}).pipe(Schema.filter(E.threeHeartbeats))

/**
 * @category models
 * @since 0.1.0
 */
export type Options = typeof Options.Encoded

type Stop = Termination.Stop

const decodeTermination = Schema.decodeUnknownOption(Schema.parseJson(Terminations.Termination))

/** A stop read back from its JSON text (`None`: not a stop). */
const decodeStop = (json: string): Option.Option<Stop> =>
  Option.flatMap(decodeTermination(json), (t) => t.kind === "completed" ? Option.none() : Option.some(t))

const fmt = Format.number

/** The bucket keys of a provider key. */
const requestsKey = (rateKey: string) => `requests:${rateKey}`
const tokensKey = (rateKey: string) => `tokens:${rateKey}`

// At least one unit: an attempt takes one request and at least one token, so a bucket under one (a limit under
// one per minute, `--rpm 0.5`) would never hold enough to admit anything. With one, 0.5 a minute admits one
// attempt every two minutes.
const perMinute = (n: number): B.Shape => ({ capacity: Math.max(1, n), perMs: n / 60_000 })

const failWith = (reason: PgRunLimitsError["reason"]) => (e: unknown) =>
  new PgRunLimitsError({ reason, message: E.describe(e) })

/**
 * Makes the shared run limits in the current scope: migrates, creates the run's row and the buckets if they
 * are absent, starts the heartbeat and the listener; closing the scope gives back the unused slices.
 *
 * @example
 * ```ts
 * import { PgClient } from "@effect/sql-pg"
 * import { Effect, Redacted } from "effect"
 * import { PgRunLimits } from "@rein/postgres"
 *
 * const program = Effect.scoped(Effect.gen(function*() {
 *   const limits = yield* PgRunLimits.make({ concurrency: 8, requestsPerMinute: 600, maxTotalTokens: 1e6 }, {
 *     name: "nightly-42"
 *   })
 *   return yield* limits.admit("openai/mini", 1_200)
 * })).pipe(Effect.provide(PgClient.layer({ url: Redacted.make("postgres://localhost/rein") })))
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const make = (
  config: RunLimits.Config,
  options: Options
): Effect.Effect<RunLimits.Service, PgRunLimitsError, SqlClient.SqlClient | Scope.Scope> =>
  Effect.gen(function*() {
    const o = yield* Schema.decodeUnknown(Options)(options).pipe(
      Effect.mapError((e) => new PgRunLimitsError({ reason: "InvalidOptions", message: Input.formatParseError(e) }))
    )
    const sql = yield* SqlClient.SqlClient
    yield* Effect.mapError(Migrations.run, failWith("Unavailable"))
    const caps: R.Caps = { maxTotalTokens: config.maxTotalTokens ?? null, maxTotalCost: config.maxTotalCost ?? null }
    const onRecord = yield* Effect.mapError(
      R.ensureRun(sql, o.name, caps),
      (e) =>
        e instanceof R.RunMissing
          ? new PgRunLimitsError({ reason: "Unavailable", message: e.message })
          : failWith("Unavailable")(e)
    )
    if (onRecord.maxTotalTokens !== caps.maxTotalTokens || onRecord.maxTotalCost !== caps.maxTotalCost) {
      return yield* new PgRunLimitsError({
        reason: "Mismatch",
        message: `run "${o.name}": caps ${JSON.stringify(onRecord)} on record, ${JSON.stringify(caps)} asked`
      })
    }
    const heartbeatMillis = o.heartbeatMillis ?? 1000
    const engine = yield* E.make({
      holder: holderLabel(o.holder),
      slice: o.slice ?? 0.05,
      heartbeatMillis,
      ttlMillis: o.ttlMillis ?? 5000,
      queryTimeoutMillis: o.queryTimeoutMillis ?? 2000,
      clock: o.clock ?? "database"
    })
    const rateKey = o.rateKey ?? o.name
    const bucketOf = (key: string, limit: number | undefined) =>
      limit === undefined ? Effect.succeed(undefined) : engine.bucket(key, perMinute(limit)).pipe(
        Effect.mapError((e) =>
          e instanceof E.ShapeMismatch
            ? new PgRunLimitsError({
              reason: "Mismatch",
              message: `bucket "${e.key}": ${e.onRecord.capacity} per minute on record, ${e.asked.capacity} asked`
            })
            : failWith("Unavailable")(e)
        )
      )
    const rpm = yield* bucketOf(requestsKey(rateKey), config.requestsPerMinute)
    const tpm = yield* bucketOf(tokensKey(rateKey), config.tokensPerMinute)
    const timeoutMillis = o.queryTimeoutMillis ?? 2000
    const shared = makeShared({
      sql,
      name: o.name,
      holder: engine.ctx.holder,
      now: engine.ctx.now,
      clock: engine.ctx.clock,
      timed: (effect) =>
        effect.pipe(
          bounded(timeoutMillis, () => new E.Unavailable("the database did not answer in time")),
          Effect.mapError((e) =>
            e instanceof E.Unavailable ? e : new E.Unavailable(e instanceof R.RunMissing ? e.message : E.describe(e))
          )
        ),
      caps
    })
    yield* watch(shared, o.pollMillis ?? 1000, timeoutMillis)
    const limiter = makeLimiter(config, engine, rpm, tpm, shared, heartbeatMillis)
    return service(config, limiter, shared)
  })

/**
 * The shared run limits as batch's `RunLimits` service, for the lifetime of the layer: a batch run provided
 * with it shares its limits with every process using the same name.
 *
 * @example
 * ```ts
 * import { PgClient } from "@effect/sql-pg"
 * import { Layer, Redacted } from "effect"
 * import { PgRunLimits } from "@rein/postgres"
 *
 * const SharedLimitsLive = PgRunLimits.layer({ concurrency: 8, maxTotalCost: 25 }, { name: "nightly-42" }).pipe(
 *   Layer.provide(PgClient.layer({ url: Redacted.make("postgres://localhost/rein") }))
 * )
 * ```
 * @category layers
 * @since 0.1.0
 */
export const layer = (
  config: RunLimits.Config,
  options: Options
): Layer.Layer<RunLimits.RunLimits, PgRunLimitsError, SqlClient.SqlClient> =>
  Layer.scoped(RunLimits.RunLimits, make(config, options))

// ---- the shared part: totals, stop, cooldowns ------------------------------------------------------------

type Timed = <A, E>(effect: Effect.Effect<A, E>) => Effect.Effect<A, E.Unavailable>

interface SharedCtx {
  readonly sql: SqlClient.SqlClient
  readonly name: string
  readonly holder: string
  readonly now: B.Ctx["now"]
  readonly clock: B.Ctx["clock"]
  readonly timed: Timed
  readonly caps: R.Caps
}

interface Shared extends SharedCtx {
  /** Cooldown ends by endpoint, on the local clock. */
  readonly cooldowns: Map<string, number>
  stopped: Stop | undefined
  /** A stop this process could not record yet. */
  unrecorded: Stop | undefined
  readonly stopSignal: Deferred.Deferred<Stop>
  /** Wakes waiting admissions (a release, an ended or changed cooldown). */
  readonly notify: () => void
  readonly released: Effect.Effect<void>
  lastTotals: RunLimits.Usage
}

const makeShared = (ctx: SharedCtx): Shared => {
  let changed: Deferred.Deferred<void> | undefined = undefined
  return {
    ...ctx,
    cooldowns: new Map(),
    stopped: undefined,
    unrecorded: undefined,
    stopSignal: Deferred.unsafeMake<Stop>(FiberId.none),
    notify: () => {
      const d = changed
      if (d === undefined) return
      changed = undefined
      Deferred.unsafeDone(d, Exit.void)
    },
    released: Effect.suspend(() => Deferred.await(changed ??= Deferred.unsafeMake<void>(FiberId.none))),
    lastTotals: { tokens: 0, cost: 0 }
  }
}

const localNow = (s: SharedCtx) => s.clock.unsafeCurrentTimeMillis()

/** Adopts a stop (the first one this process learns of stays). */
const adopt = (s: Shared, stop: Stop): Stop => {
  if (s.stopped !== undefined) return s.stopped
  s.stopped = stop
  Deferred.unsafeDone(s.stopSignal, Exit.succeed(stop))
  return stop
}

/** Reads what other processes changed: the stop, the cooldowns. */
const refresh = (s: Shared) =>
  Effect.gen(function*() {
    if (s.unrecorded !== undefined) yield* record(s, s.unrecorded)
    const sentAt = localNow(s)
    const read = yield* s.timed(R.read(s.sql, s.name, s.now()))
    if (read.stop !== null) {
      const stop = decodeStop(read.stop)
      if (Option.isSome(stop)) adopt(s, stop.value)
    }
    let lengthened = false
    for (const c of read.cooldowns) {
      const until = sentAt + c.left
      if ((s.cooldowns.get(c.endpoint) ?? Number.NEGATIVE_INFINITY) < until) {
        s.cooldowns.set(c.endpoint, until)
        lengthened = true
      }
    }
    if (lengthened) s.notify()
  })

/** Records a stop; the winner on record (this one, or the one recorded first). */
const record = (s: Shared, stop: Stop) =>
  Effect.gen(function*() {
    const itemId = "itemId" in stop ? stop.itemId.replaceAll("\u0000", "\uFFFD") : null
    const json = JSON.stringify(stop)
    const onRecord = yield* s.timed(R.stop(s.sql, s.name, { json, kind: stop.kind, itemId }, s.holder))
    if (s.unrecorded === stop) s.unrecorded = undefined
    if (onRecord === json) return stop
    const winner = decodeStop(onRecord)
    return Option.getOrElse(winner, () => stop)
  })

/**
 * Listens for notifications (when the client can; a lost subscription is made again) and polls: each one reads
 * the shared state again. Polls also ping this instance on the channel (`hearing.ts`): a ping not heard back
 * within the query timeout means the listening connection went deaf while open, and it is made again.
 */
const watch = (s: Shared, pollMillis: number, timeoutMillis: number) =>
  Effect.gen(function*() {
    const again = refresh(s).pipe(
      Effect.catchAll((e) => Effect.logWarning(`@rein/postgres: run limits not read: ${e.message}`))
    )
    const pg = yield* Effect.serviceOption(PgClient.PgClient)
    // One subscription per client, shared, and subscribed again a poll after it fails (the poll covers meanwhile).
    const hearing = Option.isNone(pg) ? undefined : yield* Hr.make(
      `${s.holder}:${randomUUID().slice(0, 8)}`,
      { name: R.CHANNEL, opened: yield* L.open(LC.of(pg.value), R.CHANNEL, Duration.millis(pollMillis)) },
      "run limits",
      timeoutMillis
    )
    // Only the ping is bounded (a beat that sends none costs no timer).
    const beat = hearing === undefined ? Effect.void : Hr.beat(s.sql, hearing, s.timed).pipe(
      Effect.catchAll((e) => Effect.logWarning(`@rein/postgres: run limits ping not sent: ${e.message}`))
    )
    yield* Effect.forkScoped(
      Effect.forever(Effect.zipRight(Effect.sleep(Duration.millis(pollMillis)), Effect.zipRight(again, beat)))
    )
    if (hearing === undefined) return
    yield* Effect.forkScoped(
      Stream.runForEach(hearing.channel.messages, (payload) =>
        Hr.note(hearing, payload) || payload !== s.name ? Effect.void : again)
    )
  })

// ---- per process: capacity, ramp, cooldown gate, the buckets -----------------------------------------------

interface Limiter {
  readonly waits: boolean
  readonly admit: (endpoint: string, tokens: number) => Effect.Effect<RunLimits.Admission>
  readonly release: (hold: RunLimits.Hold, actualTokens: number | undefined) => void
}

const makeLimiter = (
  config: RunLimits.Config,
  engine: E.Engine,
  rpm: B.Local | undefined,
  tpm: B.Local | undefined,
  s: Shared,
  heartbeatMillis: number
): Limiter => {
  const ctx = engine.ctx
  const origin = localNow(s)
  const capacity = new Map(Object.entries(config.capacity ?? {}))
  const byEndpoint = new Map<string, number>()
  const rampMillis = config.startupRampMillis
  let inFlight = 0

  /** How long the local gates (cooldown, ramp, capacity) hold an admission back; `undefined`: they do not. */
  const gated = (endpoint: string): number | undefined => {
    const t = localNow(s)
    const until = s.cooldowns.get(endpoint)
    if (until !== undefined && t < until) return until - t
    if (rampMillis !== undefined && t < origin + rampMillis) {
      const elapsed = t - origin
      const allowed = Math.max(1, Math.floor((config.concurrency * elapsed) / rampMillis))
      if (inFlight >= allowed) return Math.max(1, ((inFlight + 1) * rampMillis) / config.concurrency - elapsed)
    }
    const cap = capacity.get(endpoint)
    if (cap !== undefined && (byEndpoint.get(endpoint) ?? 0) >= cap) return Number.POSITIVE_INFINITY
    return undefined
  }

  /** Takes everything an admission needs from the slices in one synchronous step, or nothing. */
  const takeLocal = (endpoint: string, reserved: number, need: number): RunLimits.Admission | undefined => {
    const held = gated(endpoint)
    if (held !== undefined) return { _tag: "Wait", millis: held }
    if (rpm !== undefined && !B.canTake(ctx, rpm, 1)) return undefined
    if (tpm !== undefined && !B.canTake(ctx, tpm, need)) return undefined
    if (rpm !== undefined) B.tryTake(ctx, rpm, 1, 1)
    if (tpm !== undefined) B.tryTake(ctx, tpm, reserved, need)
    inFlight++
    if (capacity.has(endpoint)) byEndpoint.set(endpoint, (byEndpoint.get(endpoint) ?? 0) + 1)
    return { _tag: "Hold", endpoint, tokens: reserved }
  }

  // Under the engine's lock: each bucket the slices do not cover is topped up (what the slice still has is
  // given back first, so that the pool alone decides), then the admission is taken in one step, or waits
  // for the longest of the buckets' waits.
  const slow = (endpoint: string, reserved: number, need: number) =>
    engine.db(Effect.gen(function*() {
      const first = takeLocal(endpoint, reserved, need)
      if (first !== undefined) return first
      let wait = 0
      for (const [local, n] of [[rpm, 1], [tpm, need]] as const) {
        if (local === undefined || B.canTake(ctx, local, n)) continue
        const give = Math.max(0, B.available(local))
        const answer = yield* B.exchange(ctx, local, { give, need: n, want: B.want(ctx, local, n), overflow: false })
        if (Option.isNone(answer)) return { _tag: "Wait", millis: heartbeatMillis } as const
        wait = Math.max(wait, answer.value.waitMillis)
      }
      return takeLocal(endpoint, reserved, need) ?? { _tag: "Wait", millis: Math.max(wait, 1e-3) } as const
    })).pipe(
      // Fail closed: no admission without tokens from the pool.
      Effect.catchAll((e) =>
        Effect.as(
          Effect.logWarning(`@rein/postgres: admission waits, database unavailable: ${e.message}`),
          { _tag: "Wait", millis: heartbeatMillis } as const
        )
      )
    )

  return {
    waits: rpm !== undefined || tpm !== undefined || capacity.size > 0 || rampMillis !== undefined ||
      config.cooldownMillis !== undefined,
    admit: (endpoint, tokens) =>
      Effect.suspend(() => {
        const reserved = tpm === undefined ? 0 : Math.min(tokens, tpm.shape.capacity)
        // A debt left by an attempt that used more than it reserved is paid off before anything new starts.
        const need = Math.max(1, reserved)
        const fast = takeLocal(endpoint, reserved, need)
        return fast !== undefined ? Effect.succeed(fast) : slow(endpoint, reserved, need)
      }),
    release: (hold, actualTokens) => {
      inFlight--
      if (capacity.has(hold.endpoint)) byEndpoint.set(hold.endpoint, (byEndpoint.get(hold.endpoint) ?? 1) - 1)
      // Reconciled at the next exchange: a refund returns to the pool, an excess is a debt.
      if (tpm !== undefined && actualTokens !== undefined) B.adjust(tpm, actualTokens - hold.tokens)
      s.notify()
    }
  }
}

// ---- the service -----------------------------------------------------------------------------------------

/** The stop of a charge that could not be recorded (the database is unreachable, the run's row is gone). */
const unreachable = (name: string, message: string): Stop => ({
  _tag: "BudgetExceeded",
  kind: "budget_exceeded",
  resource: "tokens",
  reason: `the shared totals of run ${JSON.stringify(name)} could not be recorded (${message}): stopped, failing closed`
})

/** The stop a charge trips, in the in-memory limits' order: an overflow (cost first), then a cap (tokens first). */
const tripOf = (c: R.Charged, usage: RunLimits.Usage, caps: R.Caps): Stop | undefined => {
  const over = (resource: "tokens" | "cost", total: number, value: number): Stop => ({
    _tag: "BudgetExceeded",
    kind: "budget_exceeded",
    resource,
    reason: `the running ${resource === "tokens" ? "token" : "cost"} total overflowed: ${fmt(total)} + ${
      fmt(value)
    } is not finite`
  })
  if (!c.costOk) return over("cost", c.costBefore, usage.cost)
  if (!c.tokensOk) return over("tokens", c.tokensBefore, usage.tokens)
  if (caps.maxTotalTokens !== null && c.tokens >= caps.maxTotalTokens) {
    return {
      _tag: "BudgetExceeded",
      kind: "budget_exceeded",
      resource: "tokens",
      reason: `token cap reached: ${fmt(c.tokens)} of ${fmt(caps.maxTotalTokens)} tokens`
    }
  }
  if (caps.maxTotalCost !== null && c.cost >= caps.maxTotalCost) {
    return {
      _tag: "BudgetExceeded",
      kind: "budget_exceeded",
      resource: "cost",
      reason: `cost cap reached: ${fmt(c.cost)} of ${fmt(caps.maxTotalCost)}`
    }
  }
  return undefined
}

const service = (config: RunLimits.Config, limiter: Limiter, s: Shared): RunLimits.Service => {
  // Concurrent stops of this process: the first records, the others wait for its answer.
  let recording: Deferred.Deferred<Stop> | undefined
  const stop = (candidate: Stop): Effect.Effect<Stop> =>
    Effect.suspend(() => {
      if (s.stopped !== undefined) return Effect.succeed(s.stopped)
      if (recording !== undefined) return Deferred.await(recording)
      const d = Deferred.unsafeMake<Stop>(FiberId.none)
      recording = d
      return record(s, candidate).pipe(
        Effect.catchAll((e) => {
          // Fail closed: this process stops now; the heartbeat records the stop when the database is back.
          s.unrecorded = candidate
          return Effect.as(
            Effect.logWarning(`@rein/postgres: stop not recorded yet (${e.message}); this process stops now`),
            candidate
          )
        }),
        Effect.map((winner) => adopt(s, winner)),
        Effect.tap((winner) => Deferred.succeed(d, winner))
      )
    })

  const cool = (endpoint: string, retryAfterMillis: number | null) =>
    Effect.gen(function*() {
      const length = Math.max(config.cooldownMillis ?? 0, retryAfterMillis ?? 0)
      const sentAt = localNow(s)
      const current = s.cooldowns.get(endpoint)
      const fresh = current === undefined || current <= sentAt
      // Locally first: this process cools even when the database cannot be told.
      if (current === undefined || current < sentAt + length) s.cooldowns.set(endpoint, sentAt + length)
      const shared = yield* Effect.either(s.timed(R.cool(s.sql, s.name, endpoint, length, s.now())))
      if (shared._tag === "Left") {
        yield* Effect.logWarning(`@rein/postgres: cooldown not shared: ${shared.left.message}`)
        return fresh ? Option.some(length) : Option.none()
      }
      const until = sentAt + shared.right.left
      if ((s.cooldowns.get(endpoint) ?? Number.NEGATIVE_INFINITY) < until) s.cooldowns.set(endpoint, until)
      return fresh && shared.right.fresh ? Option.some(length) : Option.none()
    })

  const cooldownLeft = (endpoint: string): Option.Option<number> => {
    const until = s.cooldowns.get(endpoint)
    if (until === undefined) return Option.none()
    const t = localNow(s)
    if (t < until) return Option.some(until - t)
    s.cooldowns.delete(endpoint)
    s.notify()
    return Option.some(0)
  }

  return {
    waits: limiter.waits,
    admit: limiter.admit,
    release: (hold, actualTokens) => Effect.sync(() => limiter.release(hold, actualTokens)),
    released: s.released,
    charge: (usage) => {
      // Not a count: stop without touching the shared totals (a NaN would make every later cap check false).
      const invalid = RunLimits.invalidCharge(usage)
      if (invalid !== undefined) return Effect.succeed(Option.some(invalid))
      return s.timed(R.charge(s.sql, s.name, usage.tokens, usage.cost)).pipe(
        Effect.map((c) => {
          s.lastTotals = { tokens: c.tokens, cost: c.cost }
          return Option.fromNullable(tripOf(c, usage, s.caps))
        }),
        Effect.catchAll((e) => Effect.succeed(Option.some(unreachable(s.name, e.message))))
      )
    },
    // `RunLimits.Service`'s totals cannot fail: when they cannot be read, the last ones read, with a warning.
    totals: s.timed(R.totals(s.sql, s.name)).pipe(
      Effect.tap((t) => Effect.sync(() => void (s.lastTotals = t))),
      Effect.catchAll((e) =>
        Effect.as(
          Effect.logWarning(
            `@rein/postgres: totals of run ${JSON.stringify(s.name)} not read (${e.message}); the last ones read`
          ),
          s.lastTotals
        )
      )
    ),
    cool,
    cooldownLeft: (endpoint) => Effect.sync(() => cooldownLeft(endpoint)),
    stop,
    stopped: Effect.sync(() => Option.fromNullable(s.stopped)),
    whenStopped: Deferred.await(s.stopSignal),
    unsafeRelease: limiter.release,
    unsafeStopped: () => s.stopped
  }
}
