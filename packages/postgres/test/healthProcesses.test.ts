// PgHealth across real processes (test/fixtures/health-worker.ts through the workspace's one crash harness), on the
// real database clock: a breaker opened in one process is refused in the others on their next request; exactly K
// probes in flight fleet-wide while half-open, sampled from the database (and the same check run against
// process-local health, which it catches); a probe holder killed with SIGKILL frees its slot at its expiry; and
// the executor in two processes, one of which sees a 503 outage, opening the breaker for both.
import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { available, fresh, PgLive, Server } from "./pg.js"
import type { Child } from "./processes.js"
import { bundle, spawnChild } from "./processes.js"

interface WorkerOptions {
  readonly mode?: "pg" | "naive"
  readonly probes?: number
  readonly cooldownMillis?: number
  readonly heartbeatMillis?: number
  readonly probeTtlMillis?: number
  readonly consecutiveFailures?: number
  readonly outageAfter?: number
}

let seed = 1
const workers = (name: string, n: number, options: WorkerOptions) =>
  Effect.gen(function*() {
    const server = yield* Server
    const script = yield* bundle("health-worker")
    const children = yield* Effect.forEach(Array.from({ length: n }), () =>
      spawnChild(script, {
        url: server.url,
        name,
        mode: "pg",
        seed: seed++,
        probes: 1,
        cooldownMillis: 60_000,
        heartbeatMillis: 5_000,
        probeTtlMillis: 15_000,
        consecutiveFailures: 1,
        outageAfter: 1_000_000,
        ...options
      }))
    yield* Effect.forEach(children, (c) => c.waitFor(/READY\n/), { concurrency: "unbounded" })
    return children
  })

/** Sends a command and waits for the `nth` answer line starting with `prefix` (1-based, counted in all output). */
const ask = (child: Child, command: string, answer: string) =>
  Effect.gen(function*() {
    const before = child.stdout().split("\n").filter((l) => l.startsWith(answer)).length
    yield* child.send(command)
    const pattern = new RegExp(`(?:^${answer}.*\\n[^]*?){${before + 1}}`, "m")
    yield* child.waitFor(pattern)
    return child.stdout().split("\n").filter((l) => l.startsWith(answer))[before]!
  })

/** Samples `query`'s count every few milliseconds until `until` completes; returns every sample and the result. */
const sampling = <A, E, R, R2>(count: Effect.Effect<number, unknown, R2>, until: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const samples: Array<number> = []
    const sampler = yield* Effect.fork(
      Effect.forever(
        Effect.flatMap(Effect.orDie(count), (n) => Effect.sync(() => void samples.push(n))).pipe(
          Effect.zipRight(Effect.sleep("3 millis"))
        )
      )
    )
    const result = yield* until
    yield* Fiber.interrupt(sampler)
    return { samples, result }
  })

const liveProbes = (name: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(
      sql<{ readonly n: number }>`SELECT count(*)::float8 AS n FROM rein_health_probes WHERE health = ${name}
        AND endpoint = 'a' AND expires_at > (extract(epoch FROM clock_timestamp()) * 1000)::float8`,
      (rows) => rows[0]!.n
    ))

const PROBES = 2

/** Four processes probe a half-open endpoint for 3 s; the database is sampled meanwhile. */
const probeStorm = <R>(name: string, mode: "pg" | "naive", count: Effect.Effect<number, unknown, R>) =>
  Effect.gen(function*() {
    const fleet = yield* workers(name, 4, {
      mode,
      probes: PROBES,
      cooldownMillis: 500,
      heartbeatMillis: 250,
      probeTtlMillis: 2_000
    })
    // Process-local breakers must each be opened by their own process; a shared one by any.
    for (const c of mode === "pg" ? [fleet[0]!] : fleet) expect(yield* ask(c, "OPEN a", "OPENED")).toBe("OPENED a open")
    const { result, samples } = yield* sampling(
      count,
      Effect.forEach(fleet, (c) => ask(c, "PROBE a 3000", "PROBED"), { concurrency: "unbounded" })
    )
    const taken = result.map((line) => Number(line.split(" ")[2]))
    return { taken, samples }
  })

describe.skipIf(!available)("PgHealth across real processes", () => {
  layer(PgLive, { timeout: "120 seconds", excludeTestServices: true })((it) => {
    it.scoped("a breaker opened in one process is pushed to the others: their next request once it arrives is refused", () =>
      Effect.gen(function*() {
        // A heartbeat of 5 s: the poll cannot be what tells the others; the notification does. The push is
        // asynchronous (a request racing the notification may still be admitted: the README says so), so each
        // process first waits until its own view shows the breaker open, and that must take less than a
        // heartbeat; its next request is then refused.
        const [a, b, c] = yield* workers(fresh("seen"), 3, {})
        for (const w of [b!, c!]) expect(yield* ask(w, "TRY a", "TRY")).toBe("TRY a ok")
        expect(yield* ask(a!, "OPEN a", "OPENED")).toBe("OPENED a open")
        for (const w of [b!, c!]) {
          const seen = yield* ask(w, "SEEN a", "SEEN")
          expect(seen).toMatch(/^SEEN a open after \d+ ms$/)
          expect(Number(/after (\d+) ms/.exec(seen)![1])).toBeLessThan(5_000)
          expect(yield* ask(w, "TRY a", "TRY")).toBe("TRY a refused breaker_open")
        }
      }))

    it.scoped("exactly K probes in flight fleet-wide while half-open, sampled from the database", () =>
      Effect.gen(function*() {
        const name = fresh("probes")
        const { samples, taken } = yield* probeStorm(name, "pg", liveProbes(name))
        expect(samples.length).toBeGreaterThan(30)
        expect(Math.max(...samples)).toBe(PROBES)
        // Fleet-wide: more than one process took probes, and all K slots were taken at once more than once.
        expect(taken.filter((n) => n > 0).length).toBeGreaterThan(1)
        expect(samples.filter((n) => n === PROBES).length).toBeGreaterThan(1)
      }))

    it.scoped("the same check catches probe slots counted per process (core's in-memory Health in each)", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* sql`CREATE TABLE IF NOT EXISTS naive_probes (pid integer NOT NULL)`
        const count = Effect.map(
          sql<{ readonly n: number }>`SELECT count(*)::float8 AS n FROM naive_probes`,
          (rows) => rows[0]!.n
        )
        const { samples } = yield* probeStorm(fresh("naive"), "naive", count)
        // Four processes, K each: up to 4K in flight, which the fleet-wide check refuses.
        expect(Math.max(...samples)).toBeGreaterThan(PROBES)
      }))

    it.scoped("a probe holder killed with SIGKILL: its slot is refused to others until its expiry, then freed", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const name = fresh("kill")
        const TTL = 1_500
        const [holder, other] = yield* workers(name, 2, {
          cooldownMillis: 300,
          heartbeatMillis: 200,
          probeTtlMillis: TTL
        })
        expect(yield* ask(holder!, "OPEN a", "OPENED")).toBe("OPENED a open")
        let held = ""
        while (held !== "HELD a probe") {
          held = yield* ask(holder!, "HOLD a", "HELD")
          if (held !== "HELD a probe") yield* Effect.sleep("50 millis")
        }
        // Alive, its heartbeat keeps the slot: another process is refused for longer than a lifetime.
        yield* Effect.sleep(`${TTL + 500} millis`)
        expect(yield* ask(other!, "HOLD a", "HELD")).toBe("HELD a refused no_probe_slot")
        yield* holder!.kill("SIGKILL")
        yield* holder!.exited
        const [dead] = yield* sql<{ readonly expires: number }>`SELECT expires_at AS expires FROM rein_health_probes
          WHERE health = ${name}`
        let refusals = 0
        for (;;) {
          const answer = yield* ask(other!, "HOLD a", "HELD")
          if (answer === "HELD a probe") break
          expect(answer).toBe("HELD a refused no_probe_slot")
          refusals++
          yield* Effect.sleep("25 millis")
        }
        const [taken] = yield* sql<{ readonly at: number }>`SELECT (extract(epoch FROM taken_at) * 1000)::float8 AS at
          FROM rein_health_probes WHERE health = ${name} AND expires_at > ${dead!.expires} ORDER BY taken_at DESC`
        expect(refusals).toBeGreaterThan(0)
        // Freed at its expiry on the database clock, not before, and promptly after.
        expect(taken!.at).toBeGreaterThanOrEqual(dead!.expires)
        expect(taken!.at - dead!.expires).toBeLessThan(TTL)
      }))

    it.scoped("Rein.execute in two processes: a 503 outage seen by one opens the breaker for both", () =>
      Effect.gen(function*() {
        const name = fresh("exec")
        const [a] = yield* workers(name, 1, { consecutiveFailures: 3, outageAfter: 0 })
        const [b] = yield* workers(name, 1, { consecutiveFailures: 3 })
        // a's fake/a answers 503 every time: three failures (each request falls back to fake/b), then open.
        expect(yield* ask(a!, "EXEC 6", "EXEC")).toBe("EXEC 3 6 0")
        // b's fake/a would answer: b never calls it, the shared breaker is open.
        expect(yield* ask(b!, "EXEC 6", "EXEC")).toBe("EXEC 0 6 0")
      }))

    it.scoped("(the same with process-local health: the other process keeps calling the failing endpoint)", () =>
      Effect.gen(function*() {
        const name = fresh("exec-naive")
        const [a] = yield* workers(name, 1, { mode: "naive", consecutiveFailures: 3, outageAfter: 0 })
        const [b] = yield* workers(name, 1, { mode: "naive", consecutiveFailures: 3 })
        expect(yield* ask(a!, "EXEC 6", "EXEC")).toBe("EXEC 3 6 0")
        expect(yield* ask(b!, "EXEC 6", "EXEC")).toBe("EXEC 6 0 0")
      }))
  })
})
