// PgHealth in one process against a real PostgreSQL: set-up errors are typed, and a database that stops answering
// mid-request refuses the attempt (fail closed) at the query timeout, never later. Time is the TestClock (the
// query timeout runs on it, and the database's clock is substituted by it, as in the laws); the database answers
// in real time.
import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Chunk, Deferred, Effect, Either, Fiber, TestClock, TestContext, TestServices } from "effect"
import type { PgHealth } from "../src/index.js"
import { makeWith } from "../src/internal/healthMake.js"
import { available, fresh, PgLive } from "./pg.js"

const virtual = (options: PgHealth.Options) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const clock = yield* Effect.clock
    return yield* makeWith(
      options,
      { sql, listen: undefined },
      (sql) => sql`${clock.unsafeCurrentTimeMillis()}::float8`
    )
  })

const FAILURE = { _tag: "failure", kind: "server_error", retryAfterMillis: null } as const

/** Waits (in real time, each poll a round trip) until `count` sleeps end `millis` after the TestClock's now. */
const asleep = (count: number, millis: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const now = yield* TestClock.currentTimeMillis
    for (let poll = 0; poll < 2000; poll++) {
      if (Chunk.size(Chunk.filter(yield* TestClock.sleeps(), (end) => end === now + millis)) >= count) return
      yield* sql`SELECT 1`
    }
    return yield* Effect.dieMessage(`${count} heartbeats did not go to sleep`)
  })

describe.skipIf(!available)("PgHealth in one process, against a real PostgreSQL", () => {
  layer(PgLive, { timeout: "60 seconds", excludeTestServices: true })((it) => {
    it.scoped("a database that stops answering refuses the probe at the query timeout, fail closed, not later", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const health = yield* virtual({
          name: fresh("stall"),
          consecutiveFailures: 1,
          cooldownMillis: 1_000,
          queryTimeoutMillis: 300,
          heartbeatMillis: 60_000,
          probeTtlMillis: 180_000
        })
        const opener = yield* Effect.orDie(health.acquire("a", "first"))
        yield* health.complete(opener, FAILURE)
        yield* TestClock.adjust(1_000)
        // Another connection takes every breaker row away: each statement of the health now waits on its lock.
        const locked = yield* Deferred.make<void>()
        const holder = yield* Effect.fork(sql.withTransaction(Effect.gen(function*() {
          yield* sql`LOCK TABLE rein_health_breakers IN ACCESS EXCLUSIVE MODE`
          yield* Deferred.succeed(locked, undefined)
          yield* Effect.never
        })))
        yield* Deferred.await(locked)
        const probe = yield* Effect.fork(Effect.either(health.acquire("a", "first")))
        // A real moment for the statement to reach the lock; then the bound passes on the clock.
        yield* TestServices.provideLive(Effect.sleep("200 millis"))
        expect(probe.unsafePoll()).toBeNull()
        yield* TestClock.adjust(300)
        const refused = yield* Fiber.join(probe)
        expect(refused).toEqual(Either.left("breaker_open"))
        // The planner sees it open for a heartbeat, so the executor does not spin on refusals.
        const now = (yield* Effect.clock).unsafeCurrentTimeNanos()
        expect(health.unsafeView!(now, ["a"]).health["a"]!.state).toBe("open")
        yield* Fiber.interrupt(holder)
      }).pipe(Effect.provide(TestContext.TestContext)))

    it.scoped("without notifications, a breaker opened elsewhere is seen open after one heartbeat (the poll)", () =>
      Effect.gen(function*() {
        // The query timeout is not the heartbeat: a tick still running holds a timeout timer, which at 1,000 ms
        // would be counted as a heartbeat asleep and fired by the adjustment (the poll then fails, not seen open).
        const options = {
          name: fresh("poll"),
          consecutiveFailures: 1,
          cooldownMillis: 60_000,
          heartbeatMillis: 1_000,
          queryTimeoutMillis: 30_000
        }
        const a = yield* virtual(options)
        const b = yield* virtual(options)
        const opener = yield* Effect.orDie(a.acquire("x", "first"))
        yield* a.complete(opener, FAILURE)
        const clock = yield* Effect.clock
        const seen = () => b.unsafeView!(clock.unsafeCurrentTimeNanos(), ["x"]).health["x"]?.state
        expect(seen()).not.toBe("open")
        // Both heartbeats' first ticks are real round trips: only once both sleep (a heartbeat from now) does
        // advancing the clock by one heartbeat wake them. Advanced earlier, a tick still running would go to
        // sleep after the adjustment, until a time the clock never reaches.
        yield* asleep(2, 1_000)
        yield* TestClock.adjust(1_000)
        // The heartbeat's poll is a real round trip: wait for it (in real time, bounded).
        for (let i = 0; i < 500 && seen() !== "open"; i++) yield* TestServices.provideLive(Effect.sleep("10 millis"))
        expect(seen()).toBe("open")
        expect(b.unsafeAcquire!(clock.unsafeCurrentTimeNanos(), "x", "first")).toEqual(Either.left("breaker_open"))
      }).pipe(Effect.provide(TestContext.TestContext)))

    it.scoped("a name on record with other settings fails with ConfigMismatch, naming them", () =>
      Effect.gen(function*() {
        const name = fresh("config")
        yield* virtual({ name, probes: 1 })
        const other = yield* Effect.flip(virtual({ name, probes: 2, consecutiveFailures: 7 }))
        expect(other.reason).toBe("ConfigMismatch")
        expect(other.message).toContain("probes: 1 on record, 2 asked")
        expect(other.message).toContain("consecutiveFailures: 5 on record, 7 asked")
      }).pipe(Effect.provide(TestContext.TestContext)))

    it.scoped("invalid options are refused with a message naming the field", () =>
      Effect.gen(function*() {
        const bad = yield* Effect.flip(virtual({ name: fresh("bad"), heartbeatMillis: 1000, probeTtlMillis: 2000 }))
        expect(bad.reason).toBe("InvalidOptions")
        expect(bad.message).toContain("probeTtlMillis")
        const nan = yield* Effect.flip(virtual({ name: fresh("bad"), failureRatio: Number.NaN }))
        expect(nan.message).toContain("failureRatio")
        const huge = yield* Effect.flip(virtual({ name: fresh("bad"), probeTtlMillis: 1e300 }))
        expect(huge.reason).toBe("InvalidOptions")
        expect(huge.message).toContain("probeTtlMillis")
      }).pipe(Effect.provide(TestContext.TestContext)))
  })
})
