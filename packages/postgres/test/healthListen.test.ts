// PgHealth.make on a live PgClient, in one process, under a TestClock that nobody moves: setting up never waits
// on the clock when the database answers, over and over, concurrently, and after the listening connection was
// lost; and an instance whose listening connection was lost hears notifications again after its heartbeats.
import { SqlClient } from "@effect/sql"
import type { PgClient } from "@effect/sql-pg"
import { describe, expect, layer } from "@effect/vitest"
import type * as H from "@rein/core/Health"
import type { Scope } from "effect"
import { Cause, Effect, Exit, Fiber, Option, Schedule, TestClock, TestContext, TestServices } from "effect"
import { PgHealth } from "../src/index.js"
import { available, fresh, PgLive } from "./pg.js"

const FAILURE = { _tag: "failure", kind: "server_error", retryAfterMillis: null } as const

/** Runs `make` under the test's clock; waits for it in real time (bounded: a hang fails the test, not the file). */
const madeInTime = <A, E>(make: Effect.Effect<A, E, Scope.Scope | PgClient.PgClient>) =>
  Effect.gen(function*() {
    const fiber = yield* Effect.fork(make)
    const done = yield* TestServices.provideLive(Effect.timeout(Fiber.await(fiber), "20 seconds").pipe(Effect.option))
    expect(done._tag, "PgHealth.make did not return").toBe("Some")
    if (done._tag === "None") return yield* Effect.dieMessage("PgHealth.make did not return")
    const exit = done.value
    if (Exit.isSuccess(exit)) return exit.value
    return yield* Effect.dieMessage(`PgHealth.make failed: ${Cause.pretty(exit.cause)}`)
  })

/** Waits in real time (bounded) until `p` holds; the database answers in real time. */
const eventually = (p: () => boolean) =>
  TestServices.provideLive(Effect.gen(function*() {
    for (let i = 0; i < 500 && !p(); i++) yield* Effect.sleep("10 millis")
    return p()
  }))

const dropListeners = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const listening = sql<{ readonly n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity
    WHERE query LIKE 'LISTEN%' AND pid <> pg_backend_pid()`
  expect((yield* listening)[0]!.n).toBeGreaterThan(0)
  yield* sql`SELECT pg_terminate_backend(pid) FROM pg_stat_activity
    WHERE query LIKE 'LISTEN%' AND pid <> pg_backend_pid()`
  yield* TestServices.provideLive(Effect.repeat(listening, {
    until: (rows) => rows[0]!.n === 0,
    schedule: Schedule.spaced("10 millis")
  }))
})

describe.skipIf(!available)("PgHealth.make on a live PgClient, one process", () => {
  layer(PgLive, { timeout: "120 seconds", excludeTestServices: true })((it) => {
    it.scoped("returns without the clock moving, one after another and eight at once", () =>
      Effect.gen(function*() {
        for (let i = 0; i < 5; i++) yield* madeInTime(Effect.scoped(PgHealth.make({ name: fresh("seq") })))
        yield* madeInTime(Effect.all(
          Array.from({ length: 8 }, (_, i) => Effect.scoped(PgHealth.make({ name: fresh(`many${i}`) }))),
          { concurrency: "unbounded" }
        ))
      }).pipe(Effect.provide(TestContext.TestContext)))

    it.scoped("after its listening connection is lost, an instance hears notifications again", () =>
      Effect.gen(function*() {
        const options = { name: fresh("lost"), consecutiveFailures: 1, cooldownMillis: 600_000, heartbeatMillis: 1_000 }
        const a: H.Service = yield* madeInTime(PgHealth.make(options))
        yield* dropListeners
        // Heartbeats: one ping goes unheard, the next heartbeat subscribes again, the one after hears.
        for (let i = 0; i < 4; i++) {
          yield* TestClock.adjust(1_000)
          yield* TestServices.provideLive(Effect.sleep("200 millis"))
        }
        // Another instance (set up after the loss too) opens a breaker; the clock stays put, so `a`'s poll cannot
        // run: only the notification can tell `a`.
        const b = yield* madeInTime(PgHealth.make(options))
        const opener = yield* Effect.orDie(b.acquire("x", "first"))
        yield* b.complete(opener, FAILURE)
        const clock = yield* Effect.clock
        const seen = () => a.unsafeView!(clock.unsafeCurrentTimeNanos(), ["x"]).health["x"]?.state === "open"
        expect(yield* eventually(seen)).toBe(true)
      }).pipe(Effect.provide(TestContext.TestContext)))

    it.scoped("an instance keeps hearing when another one on the same client closes", () =>
      Effect.gen(function*() {
        const options = { name: fresh("neighbour"), consecutiveFailures: 1, cooldownMillis: 600_000 }
        const stays: H.Service = yield* madeInTime(PgHealth.make(options))
        // A neighbour on the same client comes and goes (before: its `UNLISTEN` deafened this process).
        yield* madeInTime(Effect.scoped(PgHealth.make(options)))
        yield* madeInTime(Effect.scoped(Effect.gen(function*() {
          const other = yield* PgHealth.make(options)
          const permit = yield* Effect.orDie(other.acquire("y", "first"))
          yield* other.complete(permit, FAILURE)
        })))
        // The clock stays put: only a notification can tell `stays`.
        const clock = yield* Effect.clock
        const seen = () => stays.unsafeView!(clock.unsafeCurrentTimeNanos(), ["y"]).health["y"]?.state === "open"
        expect(yield* eventually(seen)).toBe(true)
      }).pipe(Effect.provide(TestContext.TestContext)))

    it.scoped("a database that does not answer fails the layer with a typed error, never a hang", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        // Another connection holds the migrations' advisory lock... and every health row: setting up must wait.
        const fiber = yield* Effect.fork(sql.withTransaction(Effect.gen(function*() {
          yield* sql`LOCK TABLE rein_health IN ACCESS EXCLUSIVE MODE`
          yield* Effect.never
        })))
        yield* TestServices.provideLive(Effect.sleep("200 millis"))
        const made = yield* Effect.fork(Effect.scoped(PgHealth.make({ name: fresh("dead"), queryTimeoutMillis: 100 })))
        yield* TestServices.provideLive(Effect.sleep("200 millis"))
        yield* TestClock.adjust(1_000)
        const exit = yield* TestServices.provideLive(Effect.timeout(Fiber.await(made), "20 seconds"))
        expect(Exit.isFailure(exit)).toBe(true)
        const error = Exit.isFailure(exit) ? Cause.failureOption(exit.cause) : Option.none()
        expect(Option.map(error, (e) => e.reason)).toEqual(Option.some("Unavailable"))
        yield* Fiber.interrupt(fiber)
      }).pipe(Effect.provide(TestContext.TestContext)))
  })
})
