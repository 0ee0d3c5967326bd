// PgRunLimits whose listening connection goes deaf (open, silent: a proxy that stops passing anything), under a
// TestClock moved a poll at a time: its ping goes unheard for the query timeout, the next poll subscribes again
// on a new connection, and a stop made by another process afterwards reaches it by notification while the clock
// stays put (so its poll cannot). Before: nothing noticed the deaf connection, and the stop reached it at a poll.
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { describe, expect, layer } from "@effect/vitest"
import type { Termination } from "@rein/batch"
import { Context, Effect, Exit, Scope, TestClock, TestContext, TestServices } from "effect"
import { PgRunLimits } from "../src/index.js"
import { available, fresh, listeningThroughProxy, PgLive } from "./pg.js"

/** Waits in real time (bounded) until `p` holds; the database answers in real time. */
const eventually = (p: () => boolean) =>
  TestServices.provideLive(Effect.gen(function*() {
    for (let i = 0; i < 500 && !p(); i++) yield* Effect.sleep("10 millis")
    return p()
  }))

/** Backends listening now (waited for in real time, bounded, until there are `n`). */
const listeners = (n: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const count = sql<{ readonly n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity
      WHERE query LIKE 'LISTEN%' AND pid <> pg_backend_pid()`
    let seen = 0
    for (let i = 0; i < 500 && seen < n; i++) {
      seen = (yield* count)[0]!.n
      if (seen < n) yield* TestServices.provideLive(Effect.sleep("10 millis"))
    }
    return seen
  })

/** `n` polls of a second, with real time in between for the database to answer. */
const polls = (n: number) =>
  Effect.gen(function*() {
    for (let i = 0; i < n; i++) {
      yield* TestClock.adjust(1_000)
      yield* TestServices.provideLive(Effect.sleep("200 millis"))
    }
  })

const STOP: Termination.Stop = { _tag: "BatchTimeout", kind: "batch_timeout", reason: "deadline" }

describe.skipIf(!available)("PgRunLimits with a deaf listening connection", () => {
  layer(PgLive, { timeout: "60 seconds", excludeTestServices: true })((it) => {
    it.scoped("notices it at its next poll and hears again on a new connection", () =>
      Effect.gen(function*() {
        // Statements go straight to the database; the listening connection (made from `config`) through the proxy.
        const { onClient, proxy } = yield* listeningThroughProxy
        const options = {
          name: fresh("deaf"),
          clock: "effect" as const,
          pollMillis: 1_000,
          heartbeatMillis: 60_000,
          ttlMillis: 180_000
        }
        const scope = yield* Scope.make()
        const a = yield* PgRunLimits.make({ concurrency: 1 }, options).pipe(
          Scope.extend(scope),
          onClient
        )
        // The other process: no `PgClient`, so it does not listen (the only listener is `a`'s).
        const b = yield* PgRunLimits.make({ concurrency: 1 }, options).pipe(
          Effect.mapInputContext((ctx: Context.Context<SqlClient.SqlClient | PgClient.PgClient | Scope.Scope>) =>
            Context.omit(PgClient.PgClient)(ctx)
          )
        )
        expect(yield* listeners(1)).toBe(1)
        // Two polls while it hears: its pings are heard (a channel never heard is not dropped).
        yield* polls(2)
        const before = proxy.accepted()
        yield* proxy.deafen
        // Polls: a ping goes unheard for the query timeout (two polls), the next poll subscribes again on a new
        // connection.
        yield* polls(5)
        expect(yield* eventually(() => proxy.accepted() > before)).toBe(true)
        yield* listeners(1)
        // The clock stays put from here: only a notification can tell `a` of `b`'s stop.
        yield* b.stop(STOP)
        expect(yield* eventually(() => a.unsafeStopped?.() !== undefined)).toBe(true)
        // Closing moves the clock too (a deaf connection's `UNLISTEN` is given up after a second).
        const closing = yield* Effect.fork(Scope.close(scope, Exit.void))
        for (let i = 0; i < 30 && closing.unsafePoll() === null; i++) {
          yield* TestServices.provideLive(Effect.sleep("100 millis"))
          yield* TestClock.adjust(1_000)
        }
        expect(closing.unsafePoll(), "the run limits did not close").not.toBe(null)
      }).pipe(Effect.provide(TestContext.TestContext)))
  })
})
