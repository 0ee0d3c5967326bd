// A database that stops answering (every server process frozen with SIGSTOP: the worst case, a connection
// that hangs rather than one that is refused) is never waited on past `queryTimeoutMillis`: an admission the
// slice does not cover waits (fail closed: nothing is admitted on a guess), a charge stops the run, a stop
// stops this process, Effect's RateLimiter fails with a RateLimitStoreError. All of them answer in time.
import { RateLimiter } from "@effect/experimental"
import { PgClient } from "@effect/sql-pg"
import { describe, expect, it } from "@effect/vitest"
import type { Termination } from "@rein/batch"
import { Clock, Effect, Layer, Option, Redacted } from "effect"
import { readdirSync, readFileSync } from "node:fs"
import * as path from "node:path"
import { PgHealth, PgRateLimiterStore, PgRunLimits } from "../src/index.js"
import { TestServer } from "../src/testing.js"
import { available } from "./pg.js"

const TIMEOUT = 300

/** The test server's own processes: its postmaster (from postmaster.pid) and the postmaster's children. */
const serverPids = (dataDir: string): Array<number> => {
  const postmaster = Number(readFileSync(path.join(dataDir, "postmaster.pid"), "utf8").split("\n")[0])
  const children = readdirSync("/proc").filter((d) => /^\d+$/.test(d)).filter((d) => {
    try {
      const stat = readFileSync(`/proc/${d}/stat`, "utf8")
      return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) === postmaster
    } catch {
      return false
    }
  }).map(Number)
  return [postmaster, ...children]
}

const signal = (pids: ReadonlyArray<number>, sig: NodeJS.Signals) =>
  Effect.sync(() => pids.forEach((pid) => process.kill(pid, sig)))

const timed = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const start = yield* Clock.currentTimeMillis
    const exit = yield* Effect.exit(effect)
    return { exit, millis: (yield* Clock.currentTimeMillis) - start }
  })

describe.skipIf(!available)("a database that stops answering", () => {
  it.live("every member answers within the query bound, failing closed", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* TestServer.start
      const context = yield* Layer.build(PgClient.layer({ url: Redacted.make(server.url), maxConnections: 4 }))
      const limits = yield* PgRunLimits.make({ concurrency: 4, requestsPerMinute: 20, maxTotalTokens: 1_000 }, {
        name: "frozen",
        queryTimeoutMillis: TIMEOUT,
        heartbeatMillis: 100,
        ttlMillis: 1000
      }).pipe(Effect.provide(context))
      const store = yield* PgRateLimiterStore.make({ queryTimeoutMillis: TIMEOUT }).pipe(Effect.provide(context))
      const limiter = yield* RateLimiter.make.pipe(Effect.provideService(RateLimiter.RateLimiterStore, store))
      const consume = limiter.consume({ key: "frozen", limit: 20, window: "1 minute", algorithm: "token-bucket" })
      // Before: the slice (1 request: 5% of 20) is taken, so the next admission needs the database.
      const first = yield* limits.admit("e", 0)
      expect(first._tag).toBe("Hold")
      yield* consume

      const pids = serverPids(server.dataDir)
      yield* signal(pids, "SIGSTOP")
      yield* Effect.addFinalizer(() => signal(pids, "SIGCONT"))

      const admitted = yield* timed(limits.admit("e", 0))
      expect(admitted.exit).toMatchObject({ _tag: "Success", value: { _tag: "Wait" } })

      const charged = yield* timed(limits.charge({ tokens: 10, cost: 0 }))
      expect(charged.exit._tag).toBe("Success")
      const trip = charged.exit._tag === "Success" ? charged.exit.value : Option.none()
      expect(Option.isSome(trip) && trip.value.reason).toMatch(/could not be recorded/)

      const stop: Termination.Stop = { _tag: "BatchTimeout", kind: "batch_timeout", reason: "deadline" }
      const stopped = yield* timed(limits.stop(stop))
      expect(stopped.exit).toMatchObject({ _tag: "Success", value: stop })
      expect(yield* limits.stopped).toEqual(Option.some(stop))

      const refused = yield* timed(Effect.flip(Effect.zipRight(consume, consume)))
      expect(refused.exit).toMatchObject({ _tag: "Success", value: { reason: "StoreError" } })

      // Each answered within the bound (plus scheduling slack on a loaded machine), not after a hang.
      for (const t of [admitted, charged, stopped, refused]) expect(t.millis).toBeLessThan(TIMEOUT * 2 + 1000)
      yield* signal(pids, "SIGCONT")
      // Back: the stop this process could not record is recorded at the next poll.
    })), 60_000)

  it.live(
    "PgHealth refuses a probe at the query bound, not when the driver's cancel gives up",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const server = yield* TestServer.start
        const context = yield* Layer.build(PgClient.layer({ url: Redacted.make(server.url), maxConnections: 20 }))
        const health = yield* Effect.provide(
          PgHealth.make({
            name: "frozen",
            consecutiveFailures: 1,
            cooldownMillis: 100,
            queryTimeoutMillis: TIMEOUT,
            heartbeatMillis: 1_000
          }),
          context
        )
        const opener = yield* Effect.orDie(health.acquire("a", "first"))
        yield* health.complete(opener, { _tag: "failure", kind: "server_error", retryAfterMillis: null })
        yield* Effect.sleep("300 millis")
        const pids = serverPids(server.dataDir)
        yield* signal(pids, "SIGSTOP")
        yield* Effect.addFinalizer(() => signal(pids, "SIGCONT"))
        // The cooldown is over: the probe needs the database, which does not answer.
        const probe = yield* timed(health.acquire("a", "first"))
        expect(probe.exit).toMatchObject({ _tag: "Failure" })
        expect(probe.millis).toBeLessThan(TIMEOUT * 2 + 1000)
        yield* signal(pids, "SIGCONT")
      })),
    60_000
  )
})
