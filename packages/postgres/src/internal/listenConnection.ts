/**
 * A `PgClient`'s listening connection, of our own: a second client made the way the first connects (its
 * `config`, or the options of the pool it was made from, through `PgFromPool`: the user's stream factory makes
 * its sockets too) whose sockets we hold, so that a connection that stopped answering can be dropped at once
 * rather than waited for.
 *
 * Why not the client's own `listen` (checked against sql-pg 0.53, `PgClient.ts`): it runs every subscription on
 * one connection held in an `RcRef`, and ending a subscription sends `UNLISTEN` through an `Effect.promise` with
 * no bound. On a connection that stopped answering (not closed: a partition, a stalled server) that promise
 * never settles, so the subscription never ends, keeps the `RcRef` held, and every new subscription is made on
 * the same deaf connection. Here, `discard` destroys the sockets of the current connection: its pending
 * statements fail at once (so every subscription on it ends), and the next subscription makes a new one.
 *
 * @internal
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import { PgClient } from "@effect/sql-pg"
import type { SqlError } from "@effect/sql/SqlError"
import { Deferred, Duration, Effect, Exit, Scope, Stream } from "effect"
import { Socket } from "node:net"
import { Duplex } from "node:stream"

/** One listening client (its pool of one connection and its listening connection) and the sockets it opened. */
interface Generation {
  readonly sockets: Set<Duplex>
  readonly scope: Scope.CloseableScope
  readonly client: Deferred.Deferred<PgClient.PgClient, SqlError>
  users: number
}

/** Where subscriptions of one client are made, and how its current connection is dropped. */
export interface Connection {
  readonly subscribe: (channel: string) => Stream.Stream<string, SqlError>
  /**
   * Drops the current connection now (its sockets destroyed, nothing awaited): every subscription on it ends,
   * and the next one is made on a new connection.
   */
  readonly discard: () => void
}

const made = new WeakMap<PgClient.PgClient, Connection>()

/**
 * The options of the `pg` pool a client was made from (`PgFromPool`), and a way to make another pool like it.
 * `PgClient.fromPool` keeps only the pool's host, port, user, database, a string password and `ssl` in the
 * client's `config`: a listening client made from that would go around the pool's stream, its password
 * function, its keep-alive and timeouts.
 */
interface Origin {
  readonly options: object
  readonly make: (options: object) => unknown
}

const origins = new WeakMap<PgClient.PgClient, Origin>()

/**
 * Notes that `pg` was made from `pool` (a `pg` pool): its listening connection is then made from the pool's
 * own options. Anything that is not a pool with options is ignored (the client's `config` is used).
 */
export const register = (pg: PgClient.PgClient, pool: unknown): void => {
  if (typeof pool !== "object" || pool === null || !("options" in pool)) return
  const options = pool.options
  const Pool: unknown = pool.constructor
  if (typeof options !== "object" || options === null || typeof Pool !== "function") return
  origins.set(pg, { options, make: (o) => Reflect.construct(Pool, [o]) })
}

type StreamFactory = (...args: ReadonlyArray<unknown>) => unknown

const factoryOf = (options: object): StreamFactory | undefined => {
  const f: unknown = "stream" in options ? options.stream : undefined
  return typeof f === "function" ? (...args) => Reflect.apply(f, undefined, args) : undefined
}

/** Calls `method` of `target` if it has one (a pool's `end`, `on`). */
const call = (target: unknown, method: string, ...args: ReadonlyArray<unknown>): unknown => {
  if (typeof target !== "object" || target === null) return undefined
  const f: unknown = Reflect.get(target, method)
  return typeof f === "function" ? Reflect.apply(f, target, args) : undefined
}

/** A pool of one connection like the user's (`origin`), its sockets made by `stream`; ended with the scope. */
const poolLike = (origin: Origin, stream: StreamFactory) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const pool = origin.make({ ...origin.options, stream, max: 1, min: 0, idleTimeoutMillis: 1 })
      call(pool, "on", "error", () => {})
      return pool
    }),
    (pool) =>
      Effect.promise(async () => {
        await call(pool, "end")
      }).pipe(Effect.interruptible, Effect.timeoutOption(1000))
  )

/**
 * A client of one connection made the way `pg` connects (from its pool's options when it was made from a pool,
 * else from its `config`), with `stream` making its sockets.
 */
const clientLike = (from: Origin | PgClient.PgClientConfig, stream: (...args: ReadonlyArray<unknown>) => Duplex) =>
  "make" in from
    ? PgClient.fromPool({ acquire: poolLike(from, stream) })
    // One connection for statements (sql-pg checks one at start, then it idles out) and the listening one.
    : PgClient.make({ ...from, stream, maxConnections: 1, minConnections: 0, idleTimeout: Duration.millis(1) })

/**
 * Starts a new listening client in a scope of its own. It is made in a fiber of its own, so that a database that
 * does not answer the connection holds no caller: `discard` destroys its sockets, and making it fails. Its
 * sockets are made by the user's stream factory when there is one (given what `pg` gives it), else plain ones.
 */
const start = (pg: PgClient.PgClient) =>
  Effect.gen(function*() {
    const sockets = new Set<Duplex>()
    // Read once: what a new listening connection is made from.
    const from = origins.get(pg) ?? pg.config
    const own = factoryOf("make" in from ? from.options : from)
    const stream = (...args: ReadonlyArray<unknown>): Duplex => {
      const made: unknown = own === undefined ? new Socket() : own(...args)
      if (!(made instanceof Duplex)) throw new TypeError("@rein/postgres: the stream factory made no stream")
      sockets.add(made)
      made.once("close", () => sockets.delete(made))
      return made
    }
    const scope = yield* Scope.make()
    const client = yield* Deferred.make<PgClient.PgClient, SqlError>()
    yield* clientLike(from, stream).pipe(
      Effect.provide(Reactivity.layer),
      Scope.extend(scope),
      Effect.intoDeferred(client),
      Effect.forkDaemon
    )
    return { sockets, scope, client, users: 0 } satisfies Generation
  })

/** The listening connection of `pg` (one per client: every service of a process on it shares it). */
export const of = (pg: PgClient.PgClient): Connection => {
  const known = made.get(pg)
  if (known !== undefined) return known
  let current: Generation | undefined
  // One at a time: subscriptions of two channels starting together share one new connection.
  const acquire = Effect.unsafeMakeSemaphore(1).withPermits(1)(
    Effect.suspend(() =>
      Effect.map(current === undefined ? start(pg) : Effect.succeed(current), (g) => {
        current = g
        g.users++
        return g
      })
    )
  )
  // The last user of a connection closes it; sql-pg bounds each step of closing, and nobody waits for it.
  const release = (g: Generation) =>
    Effect.suspend(() => {
      if (--g.users > 0) return Effect.void
      if (current === g) current = undefined
      return Effect.asVoid(Effect.forkDaemon(Scope.close(g.scope, Exit.void)))
    })
  const connection: Connection = {
    subscribe: (channel) =>
      Stream.unwrapScoped(
        Effect.flatMap(Effect.acquireRelease(acquire, release), (g) =>
          Effect.map(Deferred.await(g.client), (client) => client.listen(channel)))
      ),
    discard: () => {
      const g = current
      current = undefined
      if (g !== undefined) { for (const socket of g.sockets) socket.destroy() }
    }
  }
  made.set(pg, connection)
  return connection
}
