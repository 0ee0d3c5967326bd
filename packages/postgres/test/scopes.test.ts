// Every Pg* service gives back what it opened when its scope closes: the backends of the database are the
// client's own (its pool of one connection) again, whatever the service listened on. Counted in
// `pg_stat_activity` by the client's application name, waited for in real time (bounded): closing the listening
// connection is not awaited by the close (a connection that stopped answering must not hold the scope).
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { describe, expect, layer } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Redacted, Scope } from "effect"
import { PgBudget, PgHealth, PgRateLimiterStore, PgRunLimits } from "../src/index.js"
import { available, fresh, PgLive, Server } from "./pg.js"

const APP = "rein-scopes"

/** The backends of this file's own client (its application name). */
const backends = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  Effect.map(
    sql<{ readonly n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = ${APP}`,
    (rows) => rows[0]!.n
  ))

/**
 * Waits in real time (bounded) until the count is at most `n` (the pool may drop its connection: a statement
 * given up at its timeout); the count last seen.
 */
const settlesAt = (n: number) =>
  Effect.gen(function*() {
    let seen = yield* backends
    for (let i = 0; i < 300 && seen > n; i++) {
      yield* Effect.sleep("10 millis")
      seen = yield* backends
    }
    return seen
  })

/** A client with a pool of one connection, kept open (so that the pool's own count stays one). */
const clientOf = Effect.flatMap(Server, (server) =>
  Effect.map(
    Layer.build(PgClient.layer({
      url: Redacted.make(server.url),
      applicationName: APP,
      maxConnections: 1,
      idleTimeout: "10 minutes"
    })),
    Context.get(PgClient.PgClient)
  ))

const services: Record<
  string,
  Effect.Effect<unknown, unknown, SqlClient.SqlClient | PgClient.PgClient | Scope.Scope>
> = {
  PgHealth: PgHealth.make({ name: fresh("scopes"), heartbeatMillis: 200 }),
  PgRunLimits: PgRunLimits.make({ concurrency: 1, requestsPerMinute: 60 }, { name: fresh("scopes"), pollMillis: 200 }),
  PgBudget: PgBudget.make({ name: fresh("scopes"), cost: 10, heartbeatMillis: 200 }),
  PgRateLimiterStore: PgRateLimiterStore.make({ heartbeatMillis: 200 })
}

describe.skipIf(!available)("Pg* services after their scope closes", () => {
  layer(PgLive, { timeout: "60 seconds", excludeTestServices: true })((it) => {
    it.scoped("hold no connection and no listener: the client's own backends only", () =>
      Effect.gen(function*() {
        const client = yield* clientOf
        const onClient = Effect.provide(
          Layer.merge(Layer.succeed(PgClient.PgClient, client), Layer.succeed(SqlClient.SqlClient, client))
        )
        expect(yield* settlesAt(1)).toBe(1)
        for (const [name, make] of Object.entries(services)) {
          const scope = yield* Scope.make()
          yield* Scope.extend(make, scope).pipe(onClient, Effect.orDie)
          // Three beats of each, so that whatever it does in the background has run.
          yield* Effect.sleep("600 millis")
          // The listeners' connection is seen while they live (so that one left open would be seen too).
          if (name === "PgHealth" || name === "PgRunLimits") expect(yield* backends).toBeGreaterThan(1)
          yield* Scope.close(scope, Exit.void)
          expect(yield* settlesAt(1), `${name} left backends open`).toBeLessThanOrEqual(1)
        }
        // All at once, on one client (they share its listening connection), closed together.
        const scope = yield* Scope.make()
        yield* Scope.extend(Effect.all(Object.values(services)), scope).pipe(onClient, Effect.orDie)
        yield* Effect.sleep("600 millis")
        yield* Scope.close(scope, Exit.void)
        expect(yield* settlesAt(1), "the services together left backends open").toBeLessThanOrEqual(1)
      }))
  })
})
