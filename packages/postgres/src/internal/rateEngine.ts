/**
 * The shared token buckets of one process, for the lifetime of a scope: its leases (one per bucket used),
 * the lock and time bound every database interaction runs under, the heartbeat fiber, and the close that
 * gives back what was not used. `PgRateLimiterStore` and `PgRunLimits` are built on it.
 *
 * @internal
 */
import { SqlClient } from "@effect/sql"
import type { Scope } from "effect"
import { Duration, Effect, Option } from "effect"
import { bounded } from "./bounded.js"
import * as B from "./buckets.js"
import * as OptionSchemas from "./optionSchemas.js"
import * as Q from "./rateStatements.js"
import { describe as describeError } from "./sqlError.js"

/** The options the engine needs (decoded by the public module). */
export interface Options {
  readonly holder: string
  readonly slice: number
  readonly heartbeatMillis: number
  readonly ttlMillis: number
  readonly queryTimeoutMillis: number
  /** "database": `clock_timestamp()`; "effect": Effect's `Clock` (tests on a `TestClock`). */
  readonly clock: "database" | "effect"
}

/** The database could not be reached, or did not answer in time. */
export class Unavailable {
  readonly _tag = "Unavailable"
  constructor(readonly message: string) {}
}

/** What a take answered. */
export type Took =
  | { readonly _tag: "Taken"; readonly level: number }
  | { readonly _tag: "Wait"; readonly millis: number; readonly level: number }
  | { readonly _tag: "Unavailable"; readonly message: string }

export interface Engine {
  readonly ctx: B.Ctx
  /** Runs `effect` under the lock and the time bound; a failure is `Unavailable`. */
  readonly db: <A, E>(effect: Effect.Effect<A, E>) => Effect.Effect<A, Unavailable>
  /** The bucket `key` (created full if absent, its lease opened at the first take); fails on another shape. */
  readonly bucket: (key: string, shape: B.Shape) => Effect.Effect<B.Local, Unavailable | ShapeMismatch>
  /** Takes `amount` (`need` must be left): from the slice, else by an exchange (under the lock). */
  readonly take: (local: B.Local, amount: number, need: number, overflow: boolean) => Effect.Effect<Took>
}

/** The bucket exists with another shape. */
export class ShapeMismatch {
  readonly _tag = "ShapeMismatch"
  constructor(readonly key: string, readonly onRecord: B.Shape, readonly asked: B.Shape) {}
}

/** A positive, finite number of milliseconds (the lease options of both users of the engine). @internal */
export const Millis = OptionSchemas.Millis

/**
 * The lease options' rule: a lease lives at least three heartbeats (defaults 5000 and 1000 ms), so one late
 * heartbeat never loses it. @internal
 */
export const threeHeartbeats = (
  o: { readonly ttlMillis?: number | undefined; readonly heartbeatMillis?: number | undefined }
) =>
  (o.ttlMillis ?? 5000) >= 3 * (o.heartbeatMillis ?? 1000) ||
  { path: ["ttlMillis"], message: "Expected at least three heartbeats (3 × heartbeatMillis)" }

/** A failure's message: an `SqlError`'s with its cause's and its SQLSTATE (as `sqlError.describe` says it). */
export const describe = (e: unknown): string =>
  e instanceof Error || e instanceof Unavailable ? describeError(e) : String(e)

/** Makes the engine in the current scope: its heartbeat runs until the scope closes, which closes the leases. */
export const make = (o: Options): Effect.Effect<Engine, never, SqlClient.SqlClient | Scope.Scope> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const clock = yield* Effect.clock
    const ctx: B.Ctx = {
      sql,
      holder: o.holder,
      fraction: o.slice,
      ttlMillis: o.ttlMillis,
      heartbeatMillis: o.heartbeatMillis,
      clock,
      now: o.clock === "database" ? () => Q.databaseNow : () => Q.givenNow(clock.unsafeCurrentTimeMillis())
    }
    const lock = yield* Effect.makeSemaphore(1)
    const timeout = Duration.millis(o.queryTimeoutMillis)
    const db = <A, E>(effect: Effect.Effect<A, E>): Effect.Effect<A, Unavailable> =>
      lock.withPermits(1)(effect).pipe(
        bounded(timeout, () => new Unavailable("the database did not answer in time")),
        Effect.mapError((e) => e instanceof Unavailable ? e : new Unavailable(describe(e)))
      )
    const locals = new Map<string, B.Local>()

    const bucket = (key: string, shape: B.Shape) =>
      Effect.suspend(() => {
        const known = locals.get(key)
        if (known !== undefined) return checkShape(known.shape, shape, key, known)
        return Effect.flatMap(db(B.open(ctx, key, shape)), ({ local, onRecord }) => {
          const raced = locals.get(key)
          if (raced !== undefined) return checkShape(raced.shape, shape, key, raced)
          locals.set(key, local)
          return checkShape(onRecord, shape, key, local)
        })
      })

    const take = (local: B.Local, amount: number, need: number, overflow: boolean): Effect.Effect<Took> =>
      Effect.suspend(() => {
        if (B.tryTake(ctx, local, amount, need)) return Effect.succeed<Took>({ _tag: "Taken", level: local.level })
        return db(Effect.gen(function*() {
          // Another fiber may have topped the slice up while this one waited for the lock.
          if (B.tryTake(ctx, local, amount, need)) return { _tag: "Taken", level: local.level } as const
          // What the slice still has goes back first, so that the pool alone decides (a slice that can never
          // grow to `need` would otherwise keep it from the pool for good).
          const give = Math.max(0, B.available(local))
          const answer = yield* B.exchange(ctx, local, { give, need, want: B.want(ctx, local, need), overflow })
          if (Option.isNone(answer)) return { _tag: "Unavailable", message: "the lease was lost twice" } as const
          if (B.tryTake(ctx, local, amount, need)) return { _tag: "Taken", level: answer.value.level } as const
          return {
            _tag: "Wait",
            millis: Math.max(answer.value.waitMillis, 1e-3),
            level: answer.value.level - need
          } as const
        })).pipe(Effect.catchAll((e) => Effect.succeed<Took>({ _tag: "Unavailable", message: e.message })))
      })

    yield* Effect.forkScoped(
      db(B.heartbeat(ctx, locals.values())).pipe(
        Effect.catchAll((e) => Effect.logWarning(`@rein/postgres: rate heartbeat failed: ${e.message}`)),
        Effect.zipRight(Effect.sleep(Duration.millis(o.heartbeatMillis))),
        Effect.forever
      )
    )
    yield* Effect.addFinalizer(() =>
      db(B.close(ctx, locals.values())).pipe(
        Effect.catchAll((e) => Effect.logWarning(`@rein/postgres: rate leases not closed: ${e.message}`))
      )
    )
    return { ctx, db, bucket, take }
  })

const checkShape = (onRecord: B.Shape, asked: B.Shape, key: string, local: B.Local) =>
  onRecord.capacity === asked.capacity && Math.abs(onRecord.perMs - asked.perMs) <= 1e-12 * asked.perMs
    ? Effect.succeed(local)
    : Effect.fail(new ShapeMismatch(key, onRecord, asked))
