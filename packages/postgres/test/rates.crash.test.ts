// A holder killed with SIGKILL: its slice counts as taken while its lease lives (the fleet never has more than
// a full bucket), and once the lease has expired on the database clock, the next heartbeat of any process
// reclaims it, the bucket may fill to its full capacity again, and the reclaim is logged.
import { RateLimiter } from "@effect/experimental"
import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Duration, Effect } from "effect"
import { PgRateLimiterStore } from "../src/index.js"
import { available, fresh, PgLive, Server } from "./pg.js"
import { bundle, spawnChild } from "./processes.js"

const CAPACITY = 100
const PER_SECOND = 1000
const TTL = 3000
const HEARTBEAT = 250

interface Row {
  /** What the bucket could hand out now: its pool refilled to the database clock (never past capacity − leased). */
  readonly fillable: number
  readonly leased: number
  readonly leases: number
}

const look = (sql: SqlClient.SqlClient, key: string) =>
  Effect.map(
    sql<Row>`SELECT LEAST(capacity - leased,
        level + GREATEST(0, extract(epoch from clock_timestamp()) * 1000 - refilled_at) * per_ms)::float8 AS fillable,
        leased, (SELECT COUNT(*) FROM rein_rate_leases l WHERE l.key = b.key)::int AS leases
      FROM rein_rate_buckets b WHERE key = ${key}`,
    (rows) => rows[0]!
  )

describe.skipIf(!available)("a holder killed with SIGKILL", () => {
  layer(PgLive, { timeout: "120 seconds", excludeTestServices: true })((it) => {
    it.scoped(
      "its leased tokens come back after its lease expires: reclaimed, logged, the bucket full again",
      () =>
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          const server = yield* Server
          const key = fresh("crash")
          const worker = yield* bundle("hold-worker")
          const child = yield* spawnChild(worker, {
            url: server.url,
            key,
            capacity: CAPACITY,
            perSecond: PER_SECOND,
            slice: 0.5,
            heartbeatMillis: HEARTBEAT,
            ttlMillis: TTL
          })
          yield* child.waitFor(/HELD\n/)
          yield* child.kill("SIGKILL")
          yield* child.exited
          // Refilled at 1,000 a second, the pool would be full within 0.1 s: it is not, because the dead slice
          // (half the bucket) is still leased.
          yield* Effect.sleep("200 millis")
          const before = yield* look(sql, key)
          expect(before.leases).toBe(1)
          expect(before.leased).toBeGreaterThanOrEqual(CAPACITY * 0.5 - 1)
          expect(before.fillable).toBeLessThanOrEqual(CAPACITY - before.leased)

          // A live process on the same bucket: its heartbeats reclaim expired leases.
          const store = yield* PgRateLimiterStore.make({ heartbeatMillis: HEARTBEAT, ttlMillis: TTL })
          const limiter = yield* RateLimiter.make.pipe(Effect.provideService(RateLimiter.RateLimiterStore, store))
          const consume = (tokens: number) =>
            limiter.consume({
              key,
              limit: CAPACITY,
              window: Duration.millis((1000 * CAPACITY) / PER_SECOND),
              algorithm: "token-bucket",
              tokens
            })
          // While the dead lease lives, its slice still counts: a whole bucket cannot be had, however long the
          // pool has refilled.
          const refused = yield* Effect.flip(consume(CAPACITY))
          expect(refused.reason).toBe("Exceeded")
          let after = yield* look(sql, key)
          for (let i = 0; i < 100 && after.leases > 1; i++) {
            yield* Effect.sleep("50 millis")
            after = yield* look(sql, key)
          }
          expect(after.leases).toBe(1) // the live one
          const reclaims = yield* sql<{ readonly granted: number; readonly holder: string }>`SELECT granted, holder
          FROM rein_rate_reclaims WHERE key = ${key}`
          expect(reclaims).toHaveLength(1)
          expect(reclaims[0]!.holder).toMatch(new RegExp(`:${child.pid}$`))
          expect(reclaims[0]!.granted).toBeGreaterThanOrEqual(CAPACITY * 0.5 - 1)
          // The dead slice no longer counts: the bucket refills to what the live lease leaves of a full bucket, and
          // the live process can take a whole bucket's worth once its own slice is given back.
          yield* Effect.sleep("200 millis")
          after = yield* look(sql, key)
          expect(after.fillable + after.leased).toBeCloseTo(CAPACITY, 6)
          yield* consume(CAPACITY)
        }),
      60_000
    )
  })
})
