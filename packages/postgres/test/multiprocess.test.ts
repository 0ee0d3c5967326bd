import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Deferred, Effect, Fiber, Schedule } from "effect"
import { PgBudget } from "../src/index.js"
import { available, fresh, PgLive, Server } from "./pg.js"
import { bundle, spawnChild } from "./processes.js"
import { topUpWaiting } from "./rowLocks.js"

const NANOS = 1e9
const TTL = 2000
const HEARTBEAT = 250

type Resource = "calls" | "cost" | "tokens"
const resources: ReadonlyArray<Resource> = ["calls", "cost", "tokens"]
type Vec = { -readonly [R in Resource]: number }
const zero = (): Vec => ({ calls: 0, cost: 0, tokens: 0 })
const add = (a: Vec, b: Vec): Vec => ({ calls: a.calls + b.calls, cost: a.cost + b.cost, tokens: a.tokens + b.tokens })
const sum = (vs: ReadonlyArray<Vec>): Vec => vs.reduce(add, zero())

/** Caps in public units (dollars, tokens, calls); absent: unlimited. */
type Caps = { readonly [R in Resource]?: number }
/** A cap in the database's units (nano-dollars for cost). */
const units = (caps: Caps, r: Resource) => (r === "cost" ? caps.cost! * NANOS : caps[r]!)
const limited = (caps: Caps) => resources.filter((r) => caps[r] !== undefined)

interface Usage {
  readonly charged: Vec
  readonly outstanding: Vec
  readonly reservations: number
}

/** What a worker's own output says it charged and still had reserved (cost in nano-dollars; one call each). */
const usageOf = (stdout: string): Usage => {
  const open = new Map<string, Vec>()
  let charged = zero()
  let reservations = 0
  for (const line of stdout.split("\n")) {
    const [kind, id, cost, tokens] = line.split(" ")
    const v = { calls: 1, cost: Number(cost), tokens: Number(tokens) }
    if (kind === "R") {
      open.set(id!, v)
      reservations++
    }
    if (kind === "C") {
      open.delete(id!)
      charged = add(charged, v)
    }
  }
  return { charged, outstanding: sum([...open.values()]), reservations }
}

interface Sample {
  readonly cap: Vec
  readonly spent: Vec
  readonly leased: Vec
  /** The sum over the budget's lease rows, read in the same statement. */
  readonly leases: Vec
}

const perResource = (row: Record<string, number>, suffix: string): Vec => ({
  calls: row[`calls_${suffix}`]!,
  cost: row[`cost_${suffix}`]!,
  tokens: row[`tokens_${suffix}`]!
})

/** The budget row and the sum of its lease rows, in one statement (one snapshot). */
const sample = (sql: SqlClient.SqlClient, name: string) =>
  Effect.map(
    sql<Record<string, number>>`SELECT
      COALESCE(b.calls_cap, -1)::float8 AS calls_cap, COALESCE(b.cost_cap, -1)::float8 AS cost_cap,
      COALESCE(b.tokens_cap, -1)::float8 AS tokens_cap,
      b.calls_spent::float8 AS calls_spent, b.cost_spent::float8 AS cost_spent, b.tokens_spent::float8 AS tokens_spent,
      b.calls_leased::float8 AS calls_leased, b.cost_leased::float8 AS cost_leased,
      b.tokens_leased::float8 AS tokens_leased,
      COALESCE(l.calls, 0)::float8 AS calls_leases, COALESCE(l.cost, 0)::float8 AS cost_leases,
      COALESCE(l.tokens, 0)::float8 AS tokens_leases
      FROM rein_budgets b LEFT JOIN (SELECT budget, SUM(calls_leased) AS calls, SUM(cost_leased) AS cost,
        SUM(tokens_leased) AS tokens FROM rein_budget_leases GROUP BY budget) l ON l.budget = b.name
      WHERE b.name = ${name}`,
    (rows): Sample | undefined =>
      rows[0] && {
        cap: perResource(rows[0], "cap"),
        spent: perResource(rows[0], "spent"),
        leased: perResource(rows[0], "leased"),
        leases: perResource(rows[0], "leases")
      }
  )

interface Reclaim {
  readonly lease: string
  readonly holder: string
  readonly charged: Vec
  readonly returned: Vec
}

const reclaims = (sql: SqlClient.SqlClient, name: string) =>
  Effect.map(
    sql<Record<string, number> & { readonly lease_id: string; readonly holder: string }>`SELECT lease_id, holder,
      calls_charged::float8 AS calls_charged, cost_charged::float8 AS cost_charged,
      tokens_charged::float8 AS tokens_charged, calls_returned::float8 AS calls_returned,
      cost_returned::float8 AS cost_returned, tokens_returned::float8 AS tokens_returned
      FROM rein_budget_reclaims WHERE budget = ${name} ORDER BY reclaimed_at`,
    (rows): ReadonlyArray<Reclaim> =>
      rows.map((r) => ({
        lease: r.lease_id,
        holder: r.holder,
        charged: perResource(r, "charged"),
        returned: perResource(r, "returned")
      }))
  )

interface Lease {
  readonly id: string
  readonly leased: Vec
  readonly exposed: Vec
}

const leasesOf = (sql: SqlClient.SqlClient, name: string) =>
  Effect.map(
    sql<Record<string, number> & { readonly id: string }>`SELECT id,
      calls_leased::float8 AS calls_leased, cost_leased::float8 AS cost_leased,
      tokens_leased::float8 AS tokens_leased, calls_exposed::float8 AS calls_exposed,
      cost_exposed::float8 AS cost_exposed, tokens_exposed::float8 AS tokens_exposed
      FROM rein_budget_leases WHERE budget = ${name}`,
    (rows): ReadonlyArray<Lease> =>
      rows.map((r) => ({ id: r.id, leased: perResource(r, "leased"), exposed: perResource(r, "exposed") }))
  )

/** One worker process on the budget `name`, reserving at once, patient for a minute (it is to be killed). */
const doomedWorker = (
  name: string,
  caps: Caps,
  worker: { readonly seed: number; readonly loops: number; readonly slice: number }
) =>
  Effect.gen(function*() {
    const server = yield* Server
    return yield* spawnChild(yield* bundle("budget-worker"), {
      ...caps,
      ...worker,
      gated: false,
      url: server.url,
      name,
      patienceMillis: 60_000,
      heartbeatMillis: HEARTBEAT,
      ttlMillis: TTL
    })
  })

const holdsPid = (holder: string, pid: number) => holder.endsWith(`:${pid}`)

/**
 * 4 real processes on one budget with `caps`; the two that start first are killed with SIGKILL part-way and
 * restarted. Checks, per limited resource: spent + leased ≤ cap at every sampled moment (and the budget row
 * agrees with its lease rows), each dead lease charged at least what its holder had charged and had in
 * flight, nothing leased at the end, spent exactly the survivors' charges plus the dead leases' ceilings.
 */
const fleet = (caps: Caps) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const server = yield* Server
    const name = fresh("fleet")
    const worker = yield* bundle("budget-worker")
    let seed = 1
    const start = (gated: boolean) =>
      spawnChild(worker, {
        ...caps,
        gated,
        url: server.url,
        name,
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
    expect(exits.map((e) => e.code), live.map((c) => c.stderr()).join("\n")).toEqual([0, 0, 0, 0])
    for (const c of live) expect(c.stdout()).toContain("CLOSED")

    const all = yield* reclaims(sql, name)
    // Each dead process's leases, reclaimed once each (an earlier one may have been lost to a stall past the TTL
    // on this loaded machine and replaced; its holds were charged at its ceiling).
    const deadLeases = doomed.map((c) => all.filter((r) => holdsPid(r.holder, c.pid)))
    // A live process that stalled past the TTL lost its lease too: reclaimed like a dead one, and it went on
    // with a new lease.
    const lostByLive = all.filter((r) => !doomed.some((c) => holdsPid(r.holder, c.pid)))
    const end = (yield* sample(sql, name))!
    const leases = yield* leasesOf(sql, name)
    expect(leases).toEqual([])
    const liveCharged = sum(live.map((c) => usageOf(c.stdout()).charged))
    const deadCharged = sum(deadLeases.flatMap((rows) => rows.map((r) => r.charged)))

    expect(samples.length).toBeGreaterThan(20)
    for (const r of limited(caps)) {
      const cap = units(caps, r)
      // At every sampled moment: what is spent plus what is leased (which bounds what every process has charged
      // and reserved) stays within the cap, and the budget row agrees with the lease rows.
      for (const s of samples) {
        expect(s.spent[r] + s.leased[r], r).toBeLessThanOrEqual(cap)
        expect(s.leased[r], r).toBe(s.leases[r])
      }
      deadLeases.forEach((rows, i) => {
        expect(rows.length).toBeGreaterThanOrEqual(1)
        const ceiling = sum(rows.map((row) => row.charged))
        expect(ceiling[r], r).toBeGreaterThanOrEqual(deadUsage[i]!.charged[r] + deadUsage[i]!.outstanding[r])
        for (const row of rows) expect(row.returned[r], r).toBeGreaterThanOrEqual(0)
      })
      // At the end: nothing leased, and spent is exactly the survivors' charges plus the dead leases' ceilings:
      // the rest of the dead leases went back to the pool, nothing is charged twice.
      expect(end.leased[r], r).toBe(0)
      if (lostByLive.length === 0) {
        expect(end.spent[r], r).toBe(liveCharged[r] + deadCharged[r])
      } else {
        // What a live process settled against a lease it had lost was charged at that lease's ceiling.
        expect(end.spent[r], r).toBeGreaterThanOrEqual(liveCharged[r] + deadCharged[r])
        expect(end.spent[r], r).toBeLessThanOrEqual(
          liveCharged[r] + deadCharged[r] + sum(lostByLive.map((l) => l.charged))[r]
        )
      }
      expect(end.spent[r], r).toBeLessThanOrEqual(cap)
    }
    // The fleet ran the budget down: the survivors stopped because some cap was reached, not before.
    expect(limited(caps).some((r) => units(caps, r) - end.spent[r] < 0.05 * units(caps, r))).toBe(true)
    return { deadLeases, lostByLive }
  })

describe.skipIf(!available)("one budget, four real processes, two of them killed with SIGKILL", () => {
  layer(PgLive, { timeout: "120 seconds", excludeTestServices: true })((it) => {
    it.scoped(
      "cost: charged + reserved ≤ cap at every sampled moment; the dead leases' ceilings are charged, the rest returned",
      () => fleet({ cost: 3 }),
      120_000
    )

    it.scoped(
      "tokens and calls: charged + reserved ≤ each cap at every sampled moment; the dead leases' ceilings are charged",
      () => fleet({ tokens: 600_000, calls: 300 }),
      120_000
    )

    it.scoped(
      "a dead holder's lease: exactly its ceiling is charged and exactly the rest of its slice returns to the pool",
      () =>
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          const name = fresh("reclaim")
          const caps = { cost: 3, tokens: 1_000_000, calls: 1000 }
          // One process, alone on the budget: nothing else can take, give back or reclaim until the test does.
          // It leases half the pool and is killed after a few reservations, most of its slice unused.
          const doomed = yield* doomedWorker(name, caps, { seed: 7, loops: 2, slice: 0.5 })
          yield* doomed.killWhen((out) => (out.match(/^R /gm)?.length ?? 0) >= 6, "SIGKILL")
          const usage = usageOf(doomed.stdout())
          // Its lease rows are frozen now (their holder is dead): what it held and the ceiling on record.
          const dead = yield* leasesOf(sql, name)
          const before = (yield* sample(sql, name))!
          expect(dead.length).toBeGreaterThanOrEqual(1)
          const held = sum(dead.map((l) => l.leased))
          const ceiling = sum(dead.map((l) => l.exposed))
          expect(before.leased).toEqual(held)

          // A live process on the same budget reclaims the expired lease at one of its heartbeats (it also leases
          // a slice of its own: counted from its lease row, read in the same statement as the budget row).
          yield* PgBudget.make({ ...caps, name, heartbeatMillis: HEARTBEAT, ttlMillis: TTL })
          const deadIds = dead.map((l) => l.id).sort()
          const reclaimed = yield* reclaims(sql, name).pipe(
            Effect.map((rows) => rows.filter((r) => deadIds.includes(r.lease))),
            Effect.filterOrFail((rows) => rows.length === dead.length, () => new Error("not reclaimed yet")),
            Effect.retry(Schedule.spaced("50 millis")),
            Effect.timeoutFail({
              duration: "30 seconds",
              onTimeout: () => new Error("the dead lease was not reclaimed")
            })
          )
          const after = (yield* sample(sql, name))!
          const own = yield* leasesOf(sql, name)
          expect(own.map((l) => l.id).some((id) => dead.some((d) => d.id === id))).toBe(false)

          expect(reclaimed.map((r) => r.lease).sort()).toEqual(deadIds)
          for (const r of resources) {
            // The ceiling covers what the dead process had charged and had in flight (calls possibly billed) …
            expect(ceiling[r], r).toBeGreaterThanOrEqual(usage.charged[r] + usage.outstanding[r])
            // … most of its slice was unused …
            expect(held[r] - ceiling[r], r).toBeGreaterThan(held[r] / 4)
            // … exactly the ceiling is charged as spent, exactly the rest is returned, and the pool has it:
            expect(sum(reclaimed.map((x) => x.charged))[r], r).toBe(ceiling[r])
            expect(sum(reclaimed.map((x) => x.returned))[r], r).toBe(held[r] - ceiling[r])
            expect(after.spent[r], r).toBe(before.spent[r] + ceiling[r])
            expect(after.leased[r], r).toBe(after.leases[r])
            expect(after.leases[r], r).toBe(sum(own.map((l) => l.leased))[r])
            // The pool (what is free, plus what the live process has leased from it since) gained held − ceiling.
            expect(after.cap[r] - after.spent[r] - after.leased[r] + after.leases[r], r)
              .toBe(before.cap[r] - before.spent[r] - before.leased[r] + held[r] - ceiling[r])
          }
        }),
      60_000
    )

    it.scoped(
      "a holder killed with SIGKILL while its top-up waits for the pool: the grant never lands, its ceiling covers its use",
      () =>
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          const name = fresh("killed-topup")
          const caps = { cost: 3 }
          const doomed = yield* doomedWorker(name, caps, { seed: 11, loops: 4, slice: 0.1 })
          yield* doomed.waitFor(/(?:^R .*\n[^]*?){4}/m)
          // The budget row locked by the test: the holder's next top-up (a heartbeat's or a reservation's) locks
          // its lease row, extends it, and waits in its conditional update of the pool; meanwhile its loops go on
          // reserving on the fast path, under the ceiling on record, until it binds.
          const { pool, topUp } = yield* topUpWaiting(name)
          yield* doomed.kill("SIGKILL")
          yield* doomed.exited
          const usage = usageOf(doomed.stdout())
          // Its lease as committed before the top-up, and the budget as it stands.
          const [lease] = yield* leasesOf(sql, name)
          const before = (yield* sample(sql, name))!
          yield* Deferred.succeed(pool.release, undefined)
          yield* Fiber.join(pool.fiber)
          // The top-up's backend finds its client gone: its transaction is rolled back, the grant with it.
          yield* sql<{ readonly n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = ${topUp}`
            .pipe(
              Effect.filterOrFail((rows) => rows[0]!.n === 0, () => new Error("the top-up's backend is still there")),
              Effect.retry(Schedule.spaced("20 millis")),
              Effect.timeout("20 seconds")
            )
          expect(yield* leasesOf(sql, name)).toEqual([lease])
          expect((yield* sample(sql, name))!).toEqual(before)
          // Its ceiling on record covers what it had charged and had in flight …
          expect(lease!.exposed.cost).toBeGreaterThanOrEqual(usage.charged.cost + usage.outstanding.cost)
          // … and is exactly what the reclaim charges once the lease expires; the rest of its slice returns.
          yield* PgBudget.make({ ...caps, name, heartbeatMillis: HEARTBEAT, ttlMillis: TTL })
          const [reclaimed] = yield* reclaims(sql, name).pipe(
            Effect.filterOrFail((rows) => rows.length === 1, () => new Error("not reclaimed yet")),
            Effect.retry(Schedule.spaced("50 millis")),
            Effect.timeout("30 seconds")
          )
          expect(reclaimed!.lease).toBe(lease!.id)
          expect(reclaimed!.charged.cost).toBe(lease!.exposed.cost)
          expect(reclaimed!.returned.cost).toBe(lease!.leased.cost - lease!.exposed.cost)
          const after = (yield* sample(sql, name))!
          expect(after.spent.cost).toBe(before.spent.cost + lease!.exposed.cost)
          expect(after.spent.cost + after.leased.cost).toBeLessThanOrEqual(3 * NANOS)
          expect(after.leased).toEqual(after.leases)
        }),
      60_000
    )
  })
})
