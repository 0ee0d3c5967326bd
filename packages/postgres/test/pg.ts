// The real PostgreSQL every test here runs against: one throwaway server per test file (TestServer), and
// a PgClient on it. Without server binaries the suites skip locally with a message; in CI they fail.
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Redacted } from "effect"
import { TestServer } from "../src/testing.js"
import * as Proxy from "./proxy.js"

export const available = TestServer.binaries() !== undefined

if (!available) {
  if (process.env["CI"] !== undefined) {
    throw new Error("@rein/postgres tests need PostgreSQL server binaries in CI (.ci/run installs `postgresql`)")
  }
  process.stderr.write("@rein/postgres: no PostgreSQL server binaries (apt-get install postgresql): skipping\n")
}

export class Server extends Context.Tag("test/Server")<Server, TestServer.Server>() {}

export const PgLive = Layer.unwrapScoped(
  Effect.map(TestServer.start, (server) =>
    Layer.merge(
      PgClient.layer({ url: Redacted.make(server.url), maxConnections: 20 }),
      Layer.succeed(Server, server)
    ))
)

let counter = 0
/** A budget name no other test of this file uses. */
export const fresh = (label: string) => `${label}-${process.pid}-${++counter}`

/**
 * Waits until `holder`'s lease on the budget `name` has had `count` more heartbeats (its `heartbeat_at` moved
 * `count` times), polling the row: in real time, as the heartbeat runs on the live clock and the row's time is
 * the database's `now()`.
 */
export const heartbeats = (name: string, holder: string, count: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const at = sql<{ readonly at: number }>`SELECT extract(epoch FROM heartbeat_at)::float8 AS at
      FROM rein_budget_leases WHERE budget = ${name} AND holder = ${holder}`.pipe(
      Effect.map((rows) => rows[0]?.at),
      Effect.orDie
    )
    let seen = yield* at
    for (let moved = 0; moved < count;) {
      yield* Effect.sleep("5 millis")
      const now = yield* at
      if (now !== seen) moved++
      seen = now
    }
  })

/**
 * A proxy in front of the test server, and a client of it on which statements go straight to the database while
 * the listening connection (made from `config`) goes through the proxy; `onClient` provides that client.
 */
export const listeningThroughProxy = Effect.gen(function*() {
  const server = yield* Server
  const proxy = yield* Proxy.start(server.port)
  const direct = yield* PgClient.PgClient
  const url = Redacted.make(server.url.replace(`:${server.port}/`, `:${proxy.port}/`))
  const client = new globalThis.Proxy(direct, {
    get: (target, key) => key === "config" ? { ...target.config, url } : Reflect.get(target, key)
  })
  const onClient = Effect.provide(
    Layer.merge(Layer.succeed(PgClient.PgClient, client), Layer.succeed(SqlClient.SqlClient, client))
  )
  return { proxy, client, onClient }
})
