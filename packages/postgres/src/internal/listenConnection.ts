/**
 * A `PgClient`'s listening connection, of our own: a second client on the same configuration whose sockets we
 * hold, so that a connection that stopped answering can be dropped at once rather than waited for.
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
import type { Duplex } from "node:stream"

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
 * Starts a new listening client in a scope of its own. It is made in a fiber of its own, so that a database that
 * does not answer the connection holds no caller: `discard` destroys its sockets, and making it fails.
 */
const start = (config: PgClient.PgClientConfig) =>
  Effect.gen(function*() {
    const sockets = new Set<Duplex>()
    const own = config.stream
    const stream = () => {
      const socket = own === undefined ? new Socket() : own()
      sockets.add(socket)
      socket.once("close", () => sockets.delete(socket))
      return socket
    }
    const scope = yield* Scope.make()
    const client = yield* Deferred.make<PgClient.PgClient, SqlError>()
    // One connection for statements (sql-pg checks one at start, then it idles out) and the listening one.
    yield* PgClient.make({ ...config, stream, maxConnections: 1, minConnections: 0, idleTimeout: Duration.millis(1) })
      .pipe(
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
      Effect.map(current === undefined ? start(pg.config) : Effect.succeed(current), (g) => {
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
