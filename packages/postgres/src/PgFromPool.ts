/**
 * A `PgClient` made from your own `pg` pool, exactly as `PgClient.layerFromPool` makes it, whose listening
 * connection connects the way the pool does. `PgHealth` and `PgRunLimits` listen for notifications on a
 * connection of their own, made like the client's; `PgClient.fromPool` keeps only the pool's host, port, user,
 * database, string password and `ssl` in the client's `config`, so a listening connection made from it goes
 * around the pool's stream factory (a TLS socket factory, a tunnel, a proxy), its password function, its
 * keep-alive and its timeouts, and either fails (the services then poll) or reaches another server. A client
 * made here is made from the pool's own options: the pool's stream factory makes the listening socket too.
 *
 * A client made with `PgClient.layer` needs nothing of this: its `config` is all it was made from (its
 * `stream` included).
 *
 * @since 0.1.0
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import type { SqlError } from "@effect/sql/SqlError"
import type { Scope } from "effect"
import { Context, Effect, Layer } from "effect"
import * as LC from "./internal/listenConnection.js"

/**
 * A `PgClient` from your pool (`PgClient.fromPool`'s options: `acquire` gives the pool, and you control its
 * lifecycle), whose listening connection is made from the pool's options.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import type { PgClient } from "@effect/sql-pg"
 * import { PgFromPool } from "@rein/postgres"
 *
 * declare const acquire: PgClient.PgClientFromPoolOptions["acquire"]
 * const program = Effect.scoped(Effect.flatMap(PgFromPool.make({ acquire }), (pg) => pg`SELECT 1`))
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const make = (
  options: PgClient.PgClientFromPoolOptions
): Effect.Effect<PgClient.PgClient, SqlError, Scope.Scope | Reactivity.Reactivity> =>
  Effect.gen(function*() {
    let pool: unknown = undefined
    const client = yield* PgClient.fromPool({
      ...options,
      acquire: Effect.tap(options.acquire, (p) => Effect.sync(() => void (pool = p)))
    })
    LC.register(client, pool)
    return client
  })

/**
 * `make` as a layer of `PgClient` and `SqlClient`: in place of `PgClient.layerFromPool`.
 *
 * @example
 * ```ts
 * import { Layer } from "effect"
 * import type { PgClient } from "@effect/sql-pg"
 * import { PgFromPool, PgHealth } from "@rein/postgres"
 *
 * declare const acquire: PgClient.PgClientFromPoolOptions["acquire"]
 * const HealthLive = PgHealth.layer({ name: "api" }).pipe(Layer.provide(PgFromPool.layer({ acquire })))
 * ```
 * @category layers
 * @since 0.1.0
 */
export const layer = (
  options: PgClient.PgClientFromPoolOptions
): Layer.Layer<PgClient.PgClient | SqlClient.SqlClient, SqlError> =>
  Layer.scopedContext(
    Effect.map(make(options), (client) =>
      Context.make(PgClient.PgClient, client).pipe(Context.add(SqlClient.SqlClient, client)))
  ).pipe(Layer.provide(Reactivity.layer))
