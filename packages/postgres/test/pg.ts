// The real PostgreSQL every test here runs against: one throwaway server per test file (TestServer), and
// a PgClient on it. Without server binaries the suites skip locally with a message; in CI they fail.
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Redacted } from "effect"
import { TestServer } from "../src/testing.js"

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
