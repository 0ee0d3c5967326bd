/**
 * Shared token buckets on PostgreSQL, as `@effect/experimental`'s `RateLimiterStore`: Effect's `RateLimiter`
 * (`consume`, `makeWithRateLimiter`, `makeSleep`) then limits every process that uses the same key together.
 *
 * **Token buckets** (`algorithm: "token-bucket"`) are rows of `rein_rate_buckets` refilled from the database
 * clock and leased in small slices: each process takes a slice (a fraction of a full bucket, at least what
 * the call needs) with one statement and serves calls from it in memory; it reports what it used and takes a
 * new slice when the slice runs short, gives an idle slice back at its next heartbeat, and everything unused
 * when its scope closes. A process that dies loses its lease `ttlMillis` after its last heartbeat (database
 * clock); the next heartbeat of any process reclaims it.
 *
 * The bound, for a bucket of capacity C refilled at R tokens per millisecond: **the tokens taken in any
 * interval of t ms, by all processes together, are at most C + R·t**, slices included. What a lease holds
 * counts as still in the bucket (`level + leased ≤ capacity`: a refill never fills past what is leased), so
 * the pool and every unused slice together never hold more than a full bucket. A dead holder's slice is not
 * poured back into the pool (part of it may have been used); once reclaimed it stops counting, and the
 * bucket refills to C. The same holds with `onExceeded: "delay"`: a call takes its tokens into debt and
 * sleeps until the refill has paid it.
 *
 * Where it differs from the in-memory store: `remaining` is this process's view (the pool at its last round
 * trip plus what its slice has left), not a count read at the call; refill is continuous rather than by whole
 * tokens; a key's capacity and refill are fixed when its row is created (a call with another `limit` or
 * window fails with `RateLimitStoreError`).
 *
 * **Fixed windows** (`algorithm: "fixed-window"`, the `RateLimiter`'s default) do not fit slices: the store
 * must answer the key's exact count and the time to its window's end, which only the database knows. They
 * take one round trip per call (`rein_rate_windows`, one conditional update), on the database clock.
 *
 * A database that cannot be reached (or answers later than `queryTimeoutMillis`) is a `RateLimitStoreError`:
 * the call is never admitted on a guess and never waits past the bound. So is a key over 512 bytes in UTF-8
 * (`key: Expected at most 512 bytes, actual 3000`), before any statement: a key is a key of the database's
 * indexes, which cannot hold one much longer.
 *
 * @since 0.1.0
 */
import { RateLimiter } from "@effect/experimental"
import type { SqlClient } from "@effect/sql"
import * as Input from "@rein/core/Input"
import type { Scope } from "effect"
import { Duration, Effect, Layer, Schema } from "effect"
import { holderLabel } from "./internal/bounded.js"
import * as B from "./internal/buckets.js"
import { MAX_NAME_BYTES, nameTooLong } from "./internal/optionSchemas.js"
import * as E from "./internal/rateEngine.js"
import * as Q from "./internal/rateStatements.js"
import * as Migrations from "./Migrations.js"

const Millis = E.Millis

/**
 * How the store leases. Every key is shared by every process that uses it.
 *
 * @example
 * ```ts
 * import { Schema } from "effect"
 * import { PgRateLimiterStore } from "@rein/postgres"
 *
 * const options = Schema.decodeUnknownSync(PgRateLimiterStore.Options)({ slice: 0.1, heartbeatMillis: 500 })
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const Options = Schema.Struct({
  /** Fraction of a full bucket one top-up asks for (default 0.05; never less than the call needs). */
  slice: Schema.optional(Schema.Number.pipe(Schema.greaterThan(0), Schema.lessThanOrEqualTo(1))),
  /** How often a process reports and extends its leases (default 1000 ms). */
  heartbeatMillis: Schema.optional(Millis),
  /** How long a lease lives without a heartbeat (default 5000 ms; at least three heartbeats). */
  ttlMillis: Schema.optional(Millis),
  /** Bound on one database interaction (default 2000 ms): past it the call fails with `RateLimitStoreError`. */
  queryTimeoutMillis: Schema.optional(Millis),
  /** A label for operators in `rein_rate_leases.holder` (default `hostname:pid`). */
  holder: Schema.optional(Schema.String),
  /** The buckets' clock: the database's (default) or Effect's ("effect": tests on a `TestClock`). */
  clock: Schema.optional(Schema.Literal("database", "effect"))
}).pipe(Schema.filter(E.threeHeartbeats))

/**
 * @category models
 * @since 0.1.0
 */
export type Options = typeof Options.Encoded

const storeError = (message: string) => new RateLimiter.RateLimitStoreError({ message })

/**
 * Makes the store in the current scope: migrates, starts the heartbeat; closing the scope gives back every
 * slice's unused tokens.
 *
 * @example
 * ```ts
 * import { RateLimiter } from "@effect/experimental"
 * import { PgClient } from "@effect/sql-pg"
 * import { Effect, Layer, Redacted } from "effect"
 * import { PgRateLimiterStore } from "@rein/postgres"
 *
 * const program = Effect.scoped(Effect.gen(function*() {
 *   const store = yield* PgRateLimiterStore.make()
 *   const limiter = yield* RateLimiter.make.pipe(Effect.provideService(RateLimiter.RateLimiterStore, store))
 *   return yield* limiter.consume({ key: "openai:org-1", limit: 600, window: "1 minute", algorithm: "token-bucket" })
 * })).pipe(Effect.provide(PgClient.layer({ url: Redacted.make("postgres://localhost/rein") })))
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const make = (
  options: Options = {}
): Effect.Effect<
  RateLimiter.RateLimiterStore["Type"],
  RateLimiter.RateLimitStoreError,
  SqlClient.SqlClient | Scope.Scope
> =>
  Effect.gen(function*() {
    const o = yield* Schema.decodeUnknown(Options)(options).pipe(
      Effect.mapError((e) => storeError(`invalid options: ${Input.formatParseError(e)}`))
    )
    yield* Effect.mapError(Migrations.run, (e) => storeError(E.describe(e)))
    const engine = yield* E.make({
      holder: holderLabel(o.holder),
      slice: o.slice ?? 0.05,
      heartbeatMillis: o.heartbeatMillis ?? 1000,
      ttlMillis: o.ttlMillis ?? 5000,
      queryTimeoutMillis: o.queryTimeoutMillis ?? 2000,
      clock: o.clock ?? "database"
    })
    return RateLimiter.RateLimiterStore.of({
      fixedWindow: (w) =>
        keyTooLong(w.key) ?? engine.db(
          Q.fixedWindow(engine.ctx.sql, w.key, w.tokens, Duration.toMillis(w.refillRate), w.limit, engine.ctx.now())
        ).pipe(Effect.mapError((e) => storeError(e.message))),
      tokenBucket: (t) => keyTooLong(t.key) ?? tokenBucket(engine, t)
    })
  })

/** The error of a key longer than `MAX_NAME_BYTES` in UTF-8 (a key of the database's indexes); none otherwise. */
const keyTooLong = (key: string): Effect.Effect<never, RateLimiter.RateLimitStoreError> | undefined => {
  // At most 3 bytes a UTF-16 unit: a key of up to MAX_NAME_BYTES / 3 units is not measured.
  if (key.length <= MAX_NAME_BYTES / 3) return undefined
  const tooLong = nameTooLong(key)
  return tooLong === undefined ? undefined : storeError(`key: ${tooLong}`)
}

const tokenBucket = (
  engine: E.Engine,
  t: Parameters<RateLimiter.RateLimiterStore["Type"]["tokenBucket"]>[0]
): Effect.Effect<number, RateLimiter.RateLimitStoreError> =>
  Effect.gen(function*() {
    const refillMillis = Duration.toMillis(t.refillRate)
    if (!(t.limit > 0) || !(refillMillis > 0) || !Number.isFinite(refillMillis) || !(t.tokens >= 0)) {
      return yield* storeError(
        `key "${t.key}": expected a positive limit and refill and non-negative tokens, got limit ${t.limit}, ` +
          `refill ${refillMillis} ms, tokens ${t.tokens}`
      )
    }
    const local = yield* engine.bucket(t.key, { capacity: t.limit, perMs: 1 / refillMillis }).pipe(
      Effect.mapError((e) =>
        e instanceof E.ShapeMismatch
          ? storeError(
            `key "${t.key}": a bucket of ${e.onRecord.capacity} refilled every ${1 / e.onRecord.perMs} ms is on ` +
              `record; ${e.asked.capacity} every ${1 / e.asked.perMs} ms asked`
          )
          : storeError(e.message)
      )
    )
    const took = yield* engine.take(local, t.tokens, t.tokens, t.allowOverflow)
    switch (took._tag) {
      case "Taken":
        return took.level + B.available(local)
      case "Wait":
        return took.level
      case "Unavailable":
        return yield* storeError(took.message)
    }
  })

/**
 * The store as a layer, for the lifetime of the layer; with `RateLimiter.layer` on top, Effect's
 * `RateLimiter` limits every process that uses the same keys together.
 *
 * @example
 * ```ts
 * import { RateLimiter } from "@effect/experimental"
 * import { PgClient } from "@effect/sql-pg"
 * import { Layer, Redacted } from "effect"
 * import { PgRateLimiterStore } from "@rein/postgres"
 *
 * const SharedRateLimiter = RateLimiter.layer.pipe(
 *   Layer.provide(PgRateLimiterStore.layer()),
 *   Layer.provide(PgClient.layer({ url: Redacted.make("postgres://localhost/rein") }))
 * )
 * ```
 * @category layers
 * @since 0.1.0
 */
export const layer = (
  options: Options = {}
): Layer.Layer<RateLimiter.RateLimiterStore, RateLimiter.RateLimitStoreError, SqlClient.SqlClient> =>
  Layer.scoped(RateLimiter.RateLimiterStore, make(options))
