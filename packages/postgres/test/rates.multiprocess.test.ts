// Three real processes share one token bucket of capacity C refilled at R per second: merged over all three,
// the busiest one-second window of admissions holds at most C + R. The same three processes with a limiter
// each of their own (the per-process default) break that bound, which shows the check can fail.
//
// Admissions are stamped by the workers with process.hrtime: the machine's monotonic clock, one clock for every
// process here and for the loopback server, whose clock_timestamp() reads the same machine clock (up to a
// constant offset, which does not change a window's width).
import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { available, fresh, PgLive, Server } from "./pg.js"
import { bundle, spawnChild } from "./processes.js"

const SECOND = 1_000_000_000n

/** The most admissions in any closed window [t, t + 1 s] (two pointers over the sorted stamps). */
export const busiestSecond = (stamps: ReadonlyArray<bigint>): number => {
  const sorted = [...stamps].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
  let best = 0
  let j = 0
  for (let i = 0; i < sorted.length; i++) {
    while (sorted[i]! - sorted[j]! > SECOND) j++
    best = Math.max(best, i - j + 1)
  }
  return best
}

const stampsOf = (stdout: string): Array<bigint> =>
  stdout.split("\n").filter((l) => l.startsWith("A ")).map((l) => BigInt(l.slice(2)))

interface Fleet {
  readonly via: "store" | "runlimits"
  readonly shared: boolean
  readonly capacity: number
  readonly perSecond: number
  readonly durationMillis: number
}

const fleet = (f: Fleet) =>
  Effect.gen(function*() {
    const server = yield* Server
    const worker = yield* bundle("rate-worker")
    const key = fresh(`${f.via}-rates`)
    const children = yield* Effect.forEach([0, 1, 2], () =>
      spawnChild(worker, {
        url: server.url,
        key,
        loops: 3,
        heartbeatMillis: 250,
        ttlMillis: 1000,
        ...f
      }))
    yield* Effect.forEach(children, (c) => c.waitFor(/READY\n/))
    yield* Effect.forEach(children, (c) => c.send("GO"))
    const exits = yield* Effect.forEach(children, (c) => c.exited, { concurrency: "unbounded" })
    expect(exits.map((e) => e.code), children.map((c) => c.stderr()).join("\n")).toEqual([0, 0, 0])
    for (const c of children) expect(c.stdout()).not.toContain("\nE ")
    const perWorker = children.map((c) => stampsOf(c.stdout()))
    return { key, perWorker, all: perWorker.flat() }
  })

describe.skipIf(!available)("three processes sharing a token bucket", () => {
  layer(PgLive, { timeout: "120 seconds", excludeTestServices: true })((it) => {
    // C = 100, R = 100 per second (Effect's RateLimiter: limit 100 per 1 s window, token bucket).
    const store = { via: "store", capacity: 100, perSecond: 100, durationMillis: 3000 } as const

    it.scoped(
      "through Effect's RateLimiter on PgRateLimiterStore: the busiest second holds at most C + R",
      () =>
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          const { all, key, perWorker } = yield* fleet({ ...store, shared: true })
          const busiest = busiestSecond(all)
          expect(busiest).toBeLessThanOrEqual(store.capacity + store.perSecond)
          // The fleet was limited by the bucket, not idle: it took close to C + R·t in all.
          expect(all.length).toBeGreaterThan(store.capacity + store.perSecond * 2)
          // Every process got a share.
          for (const stamps of perWorker) expect(stamps.length).toBeGreaterThan(20)
          // Closed leases: nothing is held any more, and the pool never held more than a full bucket.
          const rows = yield* sql<{ readonly leased: number; readonly level: number; readonly leases: number }>`
          SELECT b.leased, b.level, (SELECT COUNT(*) FROM rein_rate_leases l WHERE l.key = b.key)::int AS leases
          FROM rein_rate_buckets b WHERE b.key = ${key}`
          expect(rows[0]!.leases).toBe(0)
          expect(rows[0]!.leased).toBeCloseTo(0, 6)
          expect(rows[0]!.level).toBeLessThanOrEqual(store.capacity)
          yield* Effect.log(`shared store: ${all.length} admissions, busiest second ${busiest} (bound 200)`)
        }),
      120_000
    )

    it.scoped(
      "the same processes each on a memory store of their own break the bound (the check can fail)",
      () =>
        Effect.gen(function*() {
          const { all } = yield* fleet({ ...store, shared: false })
          const busiest = busiestSecond(all)
          expect(busiest).toBeGreaterThan(store.capacity + store.perSecond)
          yield* Effect.log(`per-process stores: ${all.length} admissions, busiest second ${busiest} (bound 200)`)
        }),
      120_000
    )

    // RunLimits' buckets are per minute: 600 requests per minute is C = 600, R = 10 per second.
    const runlimits = { via: "runlimits", capacity: 600, perSecond: 10, durationMillis: 3000 } as const

    it.scoped(
      "through batch's RunLimits on PgRunLimits: the busiest second holds at most C + R",
      () =>
        Effect.gen(function*() {
          const { all } = yield* fleet({ ...runlimits, shared: true })
          const busiest = busiestSecond(all)
          expect(busiest).toBeLessThanOrEqual(runlimits.capacity + runlimits.perSecond)
          expect(all.length).toBeGreaterThanOrEqual(runlimits.capacity)
          yield* Effect.log(`PgRunLimits: ${all.length} admissions, busiest second ${busiest} (bound 610)`)
        }),
      120_000
    )

    it.scoped(
      "the same processes each on RunLimits.memory break the bound (the check can fail)",
      () =>
        Effect.gen(function*() {
          const { all } = yield* fleet({ ...runlimits, shared: false })
          expect(busiestSecond(all)).toBeGreaterThan(runlimits.capacity + runlimits.perSecond)
        }),
      120_000
    )
  })
})
