import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { available, fresh, PgLive, Server } from "./pg.js"
import { bundle, spawnChild } from "./processes.js"

const CAP = 3 // dollars
const NANOS = 1e9
const TTL = 2000
const HEARTBEAT = 250

interface Usage {
  readonly charged: number
  readonly outstanding: number
  readonly reservations: number
}

/** What a worker's own output says it charged and still had reserved (nano-dollars). */
const usageOf = (stdout: string): Usage => {
  const open = new Map<string, number>()
  let charged = 0
  let reservations = 0
  for (const line of stdout.split("\n")) {
    const [kind, id, amount] = line.split(" ")
    if (kind === "R") {
      open.set(id!, Number(amount))
      reservations++
    }
    if (kind === "C") {
      open.delete(id!)
      charged += Number(amount)
    }
  }
  return { charged, outstanding: [...open.values()].reduce((a, b) => a + b, 0), reservations }
}

interface Sample {
  readonly cap: number
  readonly spent: number
  readonly leased: number
  readonly leases: number
}

const sample = (sql: SqlClient.SqlClient, name: string) =>
  Effect.map(
    sql<Sample>`SELECT b.cost_cap::float8 AS cap, b.cost_spent::float8 AS spent, b.cost_leased::float8 AS leased,
      COALESCE((SELECT SUM(l.cost_leased) FROM rein_budget_leases l WHERE l.budget = b.name), 0)::float8 AS leases
      FROM rein_budgets b WHERE b.name = ${name}`,
    (rows) => rows[0]
  )

describe.skipIf(!available)("one budget, four real processes, two of them killed with SIGKILL", () => {
  layer(PgLive, { timeout: "120 seconds", excludeTestServices: true })((it) => {
    it.scoped(
      "charged + reserved ≤ cap at every sampled moment; the dead leases' ceilings are charged, the rest returned",
      () =>
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          const server = yield* Server
          const name = fresh("fleet")
          const worker = yield* bundle("budget-worker")
          let seed = 1
          const start = (gated: boolean) =>
            spawnChild(worker, {
              gated,
              url: server.url,
              name,
              cost: CAP,
              seed: seed++,
              loops: 4,
              patienceMillis: 4000,
              slice: 0.1,
              heartbeatMillis: HEARTBEAT,
              ttlMillis: TTL
            })
          // The two to be killed start first, so that they hold large slices when they die.
          const first = yield* Effect.forEach([false, false, true, true], start)
          yield* Effect.forEach(first, (c) => c.waitFor(/READY\n/))

          const samples: Array<Sample> = []
          const sampler = yield* Effect.fork(
            Effect.forever(
              Effect.flatMap(sample(sql, name), (s) => Effect.sync(() => void (s && samples.push(s)))).pipe(
                Effect.zipRight(Effect.sleep("15 millis"))
              )
            )
          )

          // Kill two of them early, once each has made a few reservations (most likely with calls in flight), while
          // most of their slices is unused: that part must come back to the pool.
          const doomed = [first[0]!, first[1]!]
          yield* Effect.forEach(doomed, (c) => c.waitFor(/(?:^R .*\n[^]*?){4}/m))
          yield* Effect.forEach([first[2]!, first[3]!], (c) => c.send("GO"))
          yield* Effect.forEach(
            doomed,
            (c) => c.waitFor(/(?:^R .*\n[^]*?){8}/m).pipe(Effect.zipRight(c.kill("SIGKILL")))
          )
          yield* Effect.forEach(doomed, (c) => c.exited)
          const deadUsage = doomed.map((c) => usageOf(c.stdout()))
          // Restart them: the restarted ones spend what the dead leases give back.
          const restarted = yield* Effect.forEach([false, false], start)
          const live = [first[2]!, first[3]!, ...restarted]
          const exits = yield* Effect.forEach(live, (c) => c.exited, { concurrency: "unbounded" }).pipe(
            Effect.timeoutFail({
              duration: "90 seconds",
              onTimeout: () =>
                new Error(
                  `workers did not finish: ${
                    live.map((c) => `${c.pid}: ${c.stdout().slice(-300)} ${c.stderr().slice(-1000)}`).join("\n")
                  } last sample ${JSON.stringify(samples.at(-1))}`
                )
            })
          )
          yield* Fiber.interrupt(sampler)
          expect(
            exits.map((e) => e.code),
            live.map((c) => c.stderr()).join("\n")
          ).toEqual([0, 0, 0, 0])
          for (const c of live) expect(c.stdout()).toContain("CLOSED")

          // At every sampled moment: what is spent plus what is leased (which bounds what every process has
          // charged and reserved) stays within the cap, and the budget row agrees with the lease rows.
          expect(samples.length).toBeGreaterThan(20)
          for (const s of samples) {
            expect(s.spent + s.leased).toBeLessThanOrEqual(CAP * NANOS)
            expect(s.leased).toBe(s.leases)
          }

          // Each dead lease was reclaimed once: charged at least what its holder had charged and still had in
          // flight (its ceiling), the rest of its slice returned.
          const deadLeases = yield* Effect.forEach(doomed, (c) =>
            sql<{ readonly charged: number; readonly returned: number }>`SELECT cost_charged::float8 AS charged,
              cost_returned::float8 AS returned FROM rein_budget_reclaims
              WHERE budget = ${name} AND holder LIKE ${`%:${c.pid}`} ORDER BY reclaimed_at`)
          // A live process that stalled past the TTL (the machine is loaded) lost its lease too: it was reclaimed
          // like a dead one and the process went on with a new lease.
          const reclaims = yield* sql<{ readonly holder: string; readonly charged: number }>`SELECT holder,
            cost_charged::float8 AS charged FROM rein_budget_reclaims WHERE budget = ${name}`
          const lostByLive = reclaims.filter((r) =>
            !doomed.some((c) =>
              r.holder.endsWith(`:${c.pid}`)
            )
          )
          deadLeases.forEach((rows, i) => {
            // The last one is the lease it died with (an earlier one, lost to a stall, was reclaimed before).
            expect(rows.length).toBeGreaterThanOrEqual(1)
            expect(rows.at(-1)!.charged).toBeGreaterThanOrEqual(deadUsage[i]!.charged + deadUsage[i]!.outstanding)
            expect(rows.at(-1)!.returned).toBeGreaterThanOrEqual(0)
          })

          // At the end: no lease left, nothing leased, and spent is exactly the survivors' charges plus the dead
          // leases' ceilings: the rest of the dead leases went back to the pool, nothing is charged twice.
          const end = (yield* sample(sql, name))!
          const leases = yield* sql<{ readonly n: number }>`SELECT COUNT(*)::float8 AS n FROM rein_budget_leases
            WHERE budget = ${name}`
          expect(leases[0]!.n).toBe(0)
          expect(end.leased).toBe(0)
          const liveCharged = live.reduce((sum, c) => sum + usageOf(c.stdout()).charged, 0)
          const deadCharged = deadLeases.reduce((sum, rows) => sum + rows.at(-1)!.charged, 0)
          if (lostByLive.length === 0) {
            expect(end.spent).toBe(liveCharged + deadCharged)
          } else {
            // What a live process settled against a lease it had lost was charged at that lease's ceiling.
            expect(end.spent).toBeGreaterThanOrEqual(liveCharged + deadCharged)
            expect(end.spent).toBeLessThanOrEqual(
              liveCharged + deadCharged + lostByLive.reduce((sum, r) => sum + r.charged, 0)
            )
          }
          expect(end.spent).toBeLessThanOrEqual(CAP * NANOS)
          // The fleet ran the budget down: the survivors stopped because it was spent, not before.
          expect(CAP * NANOS - end.spent).toBeLessThan(0.05 * CAP * NANOS)
        }),
      120_000
    )
  })
})
