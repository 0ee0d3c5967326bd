// One distributed batch run, real worker processes, a real PostgreSQL: two workers killed with SIGKILL mid-call
// and restarted; run-wide fail-fast and the batch deadline across workers.
import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Guardrails } from "@rein/batch"
import { Contract } from "@rein/core"
import { Effect, Layer } from "effect"
import { Migrations, PgBatchRun } from "../src/index.js"
import { identity, itemsOf, request } from "./fixtures/batch-items.js"
import { available, fresh, PgLive, Server } from "./pg.js"
import type { Child } from "./processes.js"
import { bundle, spawnChild } from "./processes.js"

const Live = Layer.tap(PgLive, (ctx) => Effect.provide(Migrations.run, ctx))

const contract = Contract.make({ deadline: "2 minutes", candidates: ["fake/a"], allowSimulated: true })

/** Item ids a worker started a call for (with the call's start time), and those whose record it committed. */
const logOf = (stdout: string) => {
  const calls: Array<{ readonly id: string; readonly at: number }> = []
  const done = new Set<string>()
  for (const line of stdout.split("\n")) {
    const [kind, id, at] = line.split(" ")
    if (kind === "C") calls.push({ id: id!, at: Number(at) })
    if (kind === "D") done.add(id!)
  }
  return { calls, done }
}

const summaryOf = (child: Child) => {
  const line = child.stdout().split("\n").find((l) => l.startsWith("SUMMARY "))
  return line === undefined ? undefined : JSON.parse(line.slice("SUMMARY ".length))
}

const finished = (children: ReadonlyArray<Child>, seconds: number) =>
  Effect.forEach(children, (c) => c.exited, { concurrency: "unbounded" }).pipe(
    Effect.timeoutFail({
      duration: `${seconds} seconds`,
      onTimeout: () =>
        new Error(
          `workers did not finish: ${
            children.map((c) => `${c.pid}: ${c.stdout().slice(-300)} ${c.stderr()}`).join("\n")
          }`
        )
    })
  )

const start = (runId: string, n: number, poison: ReadonlyArray<number>, guardrails?: Guardrails.Guardrails) =>
  PgBatchRun.start({
    runId,
    identity,
    resume: "reuse-all",
    items: itemsOf(n, poison),
    request,
    itemId: (item) => item.id,
    contract,
    guardrails
  })

const N = 2_000
const CALL_COST = 100 * 1e-6 + 50 * 2e-6 // 2e-4 dollars a call
const CAP = 1_500 * CALL_COST
const LEASE = 4_000
const HEARTBEAT = 400

describe.skipIf(!available)("one batch run, four worker processes", () => {
  layer(Live, { timeout: "240 seconds", excludeTestServices: true })((it) => {
    it.scoped(
      "two workers killed mid-call and restarted: one terminal record per item, calls twice only for items in flight at a kill, spent ≤ cap, a re-run makes no call",
      () =>
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          const server = yield* Server
          const runId = fresh("crash")
          const budget = fresh("crash-budget")
          expect((yield* start(runId, N, [])).session).toBe("created")
          const script = yield* bundle("batch-worker")
          const spawn = () =>
            spawnChild(script, {
              url: server.url,
              runId,
              items: N,
              concurrency: 8,
              latencyMillis: 20,
              leaseMillis: LEASE,
              heartbeatMillis: HEARTBEAT,
              budget: { name: budget, cost: CAP }
            })
          const first = yield* Effect.forEach([0, 1, 2, 3], spawn)
          // Kill two of them the moment each has committed 150 records and has calls in flight (a call started
          // whose record has not committed).
          const doomed = [first[0]!, first[1]!]
          const inFlight = (stdout: string) => {
            const log = logOf(stdout)
            return log.done.size >= 150 && log.calls.some((c) => !log.done.has(c.id))
          }
          const kills = yield* Effect.forEach(doomed, (c) => c.killWhen(inFlight, "SIGKILL"), {
            concurrency: "unbounded"
          })
          expect(kills.map((k) => k.signal)).toEqual(["SIGKILL", "SIGKILL"])
          const restarted = yield* Effect.forEach([0, 1], spawn)
          const live = [first[2]!, first[3]!, ...restarted]
          const exits = yield* finished(live, 180)
          expect(exits.map((e) => e.code), live.map((c) => c.stderr()).join("\n")).toEqual([0, 0, 0, 0])

          // Exactly one terminal record per item, every item done.
          const perItem = yield* sql<{ readonly item_id: string; readonly n: number }>`SELECT item_id,
            count(*)::int AS n FROM rein_batch_records WHERE run_id = ${runId} GROUP BY item_id`
          expect(perItem.length).toBe(N)
          expect(perItem.filter((r) => r.n !== 1)).toEqual([])
          const status = yield* PgBatchRun.status(runId)
          expect(status.items).toEqual({ total: N, pending: 0, leased: 0, done: N })
          expect(status.status).toBe("finished")

          // A call made twice only for an item in flight in a killed worker (called there, its record never
          // committed there).
          const calls = new Map<string, number>()
          for (const c of [...first, ...restarted]) {
            for (const call of logOf(c.stdout()).calls) calls.set(call.id, (calls.get(call.id) ?? 0) + 1)
          }
          const inFlightAtKill = new Set<string>()
          for (const c of doomed) {
            const log = logOf(c.stdout())
            for (const call of log.calls) if (!log.done.has(call.id)) inFlightAtKill.add(call.id)
          }
          const twice = [...calls].filter(([, n]) => n > 1).map(([id]) => id)
          expect([...calls.values()].every((n) => n <= 2)).toBe(true)
          expect(twice.filter((id) => !inFlightAtKill.has(id))).toEqual([])
          expect(twice.length).toBeLessThanOrEqual(inFlightAtKill.size)
          expect(inFlightAtKill.size).toBeGreaterThan(0)

          // Spent within the cap: the budget's row, and what the records say the successes cost.
          const b = yield* sql<{ readonly spent: number; readonly leased: number; readonly cap: number }>`SELECT
            cost_spent::float8 AS spent, cost_leased::float8 AS leased, cost_cap::float8 AS cap
            FROM rein_budgets WHERE name = ${budget}`
          expect(b[0]!.spent + b[0]!.leased).toBeLessThanOrEqual(b[0]!.cap)
          expect(status.cost).toBeLessThanOrEqual(CAP + 1e-9)
          // The cap bound the run: not every item could be paid for.
          expect(status.byCategory["ok"] ?? 0).toBeLessThan(N)
          expect(status.byCategory["ok"] ?? 0).toBeGreaterThan(N / 2)
          const summaries = live.map(summaryOf)
          process.stdout.write(
            `crash test: ${twice.length} items called twice, ${inFlightAtKill.size} in flight at the kills, ` +
              `fenced out ${status.fencedOut}, categories ${JSON.stringify(status.byCategory)}, ` +
              `spent ${b[0]!.spent / 1e9} of ${b[0]!.cap / 1e9}, survivors leased ${
                summaries.map((s) => s?.leased).join("/")
              }\n`
          )

          // The finished run started again (reusing every record): no lease, no call.
          const again = yield* start(runId, N, [])
          expect(again).toMatchObject({ session: "restarted", reopened: 0 })
          const rerun = yield* spawn()
          const rerunExit = yield* finished([rerun], 60)
          expect(rerunExit[0]!.code, rerun.stderr()).toBe(0)
          expect(logOf(rerun.stdout()).calls).toEqual([])
          expect(summaryOf(rerun)).toMatchObject({ leased: 0 })
        }),
      240_000
    )

    it.scoped(
      "fail-fast tripped in one worker stops every worker within one lease period",
      () =>
        Effect.gen(function*() {
          const server = yield* Server
          const sql = yield* SqlClient.SqlClient
          const runId = fresh("failfast")
          const poison = [400]
          yield* start(runId, N, poison)
          const script = yield* bundle("batch-worker")
          const workers = yield* Effect.forEach([0, 1, 2, 3], () =>
            spawnChild(script, {
              url: server.url,
              runId,
              items: N,
              poison,
              concurrency: 4,
              latencyMillis: 20,
              leaseMillis: LEASE,
              heartbeatMillis: HEARTBEAT,
              abortOn: ["authentication"]
            }))
          const exits = yield* finished(workers, 120)
          expect(exits.map((e) => e.code), workers.map((c) => c.stderr()).join("\n")).toEqual([0, 0, 0, 0])
          const run = yield* sql<{ readonly stopped: number; readonly item: string | null }>`SELECT
          (extract(epoch FROM stopped_at) * 1000)::float8 AS stopped, stop_item_id AS item
          FROM rein_batch_runs WHERE run_id = ${runId}`
          const status = yield* PgBatchRun.status(runId)
          // Recorded once, with the item that tripped it.
          expect(status.stop).toMatchObject({ kind: "fail_fast", itemId: "item-00400", category: "authentication" })
          expect(run[0]!.item).toBe("item-00400")
          expect(status.status).toBe("stopped")
          // Every worker stopped admitting within one lease period of the stop (calls started later: none).
          const late = workers.flatMap((c) => logOf(c.stdout()).calls).filter((c) => c.at > run[0]!.stopped + LEASE)
          expect(late).toEqual([])
          // Every worker saw the run's stop (its summary's termination), and every item has its one record.
          for (const w of workers) {
            expect(summaryOf(w)).toMatchObject({ termination: { kind: "fail_fast", itemId: "item-00400" } })
          }
          expect(status.items).toEqual({ total: N, pending: 0, leased: 0, done: N })
          expect(status.byCategory["authentication"]).toBe(1)
          expect((status.byCategory["batch_aborted"] ?? 0) + (status.byCategory["ok"] ?? 0)).toBe(N - 1)
          expect(status.byCategory["batch_aborted"]).toBeGreaterThan(0)
          const lastCall = Math.max(...workers.flatMap((c) => logOf(c.stdout()).calls.map((x) => x.at)))
          process.stdout.write(
            `fail-fast: last call started ${lastCall - run[0]!.stopped} ms after the stop (lease ${LEASE} ms), ` +
              `categories ${JSON.stringify(status.byCategory)}\n`
          )
        }),
      180_000
    )

    it.scoped(
      "the run's hard budget exhausted: the run stops once (budget_exceeded), every worker within one lease period",
      () =>
        Effect.gen(function*() {
          const server = yield* Server
          const sql = yield* SqlClient.SqlClient
          const runId = fresh("exhausted")
          // A cost budget recorded with the run (as `rein batch --budget-cost` records it), shared by the
          // workers through `PgBatchRun.sharedLimits`: about 1,000 of the 2,000 calls fit.
          yield* PgBatchRun.start({
            runId,
            identity,
            resume: "reuse-all",
            items: itemsOf(N, []),
            request,
            itemId: (item) => item.id,
            contract,
            budget: { cost: 1_000 * CALL_COST }
          })
          const script = yield* bundle("batch-worker")
          const workers = yield* Effect.forEach([0, 1, 2, 3], () =>
            spawnChild(script, {
              url: server.url,
              runId,
              items: N,
              concurrency: 8,
              latencyMillis: 20,
              leaseMillis: LEASE,
              heartbeatMillis: HEARTBEAT,
              runBudget: true
            }))
          const exits = yield* finished(workers, 120)
          expect(exits.map((e) => e.code), workers.map((c) => c.stderr()).join("\n")).toEqual([0, 0, 0, 0])
          const run = yield* sql<{ readonly stopped: number }>`SELECT
            (extract(epoch FROM stopped_at) * 1000)::float8 AS stopped FROM rein_batch_runs WHERE run_id = ${runId}`
          const status = yield* PgBatchRun.status(runId)
          // Recorded once for the run, as a soft cap's stop is: the run's items past it get the stop's record.
          expect(status.status).toBe("stopped")
          expect(status.stop).toMatchObject({ kind: "budget_exceeded", resource: "cost" })
          expect(status.items).toEqual({ total: N, pending: 0, leased: 0, done: N })
          for (const w of workers) expect(summaryOf(w)).toMatchObject({ termination: { kind: "budget_exceeded" } })
          const ok = status.byCategory["ok"] ?? 0
          const swept = status.byCategory["batch_budget_exceeded"] ?? 0
          const refused = status.byCategory["budget_exhausted"] ?? 0
          expect(ok + swept + refused).toBe(N)
          expect(ok).toBeGreaterThan(N / 4)
          // Most items never reached the budget: they got the run's stop, not a refusal each.
          expect(swept).toBeGreaterThan(N / 4)
          expect(refused).toBeLessThan(swept)
          // Every worker stopped admitting within one lease period of the stop.
          const calls = workers.flatMap((c) => logOf(c.stdout()).calls)
          expect(calls.filter((c) => c.at > run[0]!.stopped + LEASE)).toEqual([])
          expect(calls.length).toBe(ok)
          // Spent within the cap.
          expect(status.cost).toBeLessThanOrEqual(1_000 * CALL_COST + 1e-9)
          const lastCall = Math.max(...calls.map((x) => x.at))
          process.stdout.write(
            `budget: last call started ${lastCall - run[0]!.stopped} ms after the stop (lease ${LEASE} ms), ` +
              `categories ${JSON.stringify(status.byCategory)}\n`
          )
        }),
      180_000
    )

    it.scoped(
      "the batch deadline, counted from the run's start in the database, ends every worker on time",
      () =>
        Effect.gen(function*() {
          const server = yield* Server
          const sql = yield* SqlClient.SqlClient
          const runId = fresh("deadline")
          const DEADLINE = 3_000
          // 2,000 items × 100 ms over 4 × 4 in flight take 12.5 s: the deadline ends the run first. The run
          // starts once the workers are up (a process takes seconds to start on a loaded machine).
          const script = yield* bundle("batch-worker")
          const workers = yield* Effect.forEach([0, 1, 2, 3], () =>
            spawnChild(script, {
              url: server.url,
              runId,
              items: N,
              concurrency: 4,
              latencyMillis: 100,
              leaseMillis: LEASE,
              heartbeatMillis: HEARTBEAT,
              gated: true
            }))
          yield* Effect.forEach(workers, (c) => c.waitFor(/READY\n/))
          yield* start(runId, N, [], Guardrails.make({ batchDeadline: `${DEADLINE} millis` }))
          yield* Effect.forEach(workers, (c) => c.send("GO"))
          const exits = yield* finished(workers, 120)
          expect(exits.map((e) => e.code), workers.map((c) => c.stderr()).join("\n")).toEqual([0, 0, 0, 0])
          const run = yield* sql<
            { readonly started: number; readonly stopped: number; readonly last: number; readonly leased: number }
          >`SELECT (extract(epoch FROM started_at) * 1000)::float8 AS started,
          (extract(epoch FROM stopped_at) * 1000)::float8 AS stopped,
          (SELECT (extract(epoch FROM max(finished_at)) * 1000)::float8 FROM rein_batch_items
            WHERE run_id = ${runId}) AS last,
          (SELECT (extract(epoch FROM max(leased_at)) * 1000)::float8 FROM rein_batch_items
            WHERE run_id = ${runId} AND category = 'ok') AS leased
          FROM rein_batch_runs WHERE run_id = ${runId}`
          const { last, leased, started, stopped } = run[0]!
          const status = yield* PgBatchRun.status(runId)
          expect(status.stop).toMatchObject({ kind: "batch_timeout" })
          expect(status.items).toEqual({ total: N, pending: 0, leased: 0, done: N })
          expect(status.byCategory["batch_deadline_exceeded"]).toBeGreaterThan(0)
          expect(status.byCategory["ok"]).toBeGreaterThan(0)
          // Nothing is leased to run after the deadline (database clock); the stop is recorded at it (a heartbeat
          // at most after it). Call starts are each worker's own clock: a worker admits nothing after its own
          // deadline timer, which a loaded machine may fire late.
          expect(leased).toBeLessThan(started + DEADLINE)
          expect(stopped - started).toBeGreaterThanOrEqual(DEADLINE)
          expect(stopped - started).toBeLessThan(DEADLINE + HEARTBEAT + 1_000)
          const calls = workers.flatMap((c) => logOf(c.stdout()).calls)
          const lateness = Math.max(0, ...calls.map((c) => c.at - started - DEADLINE))
          expect(lateness).toBeLessThan(HEARTBEAT)
          // After the stop, the calls in flight drain and every other item gets the stop's record without a call,
          // in the workers' sweeps: counted, not timed (how soon the last record is written is how much CPU a
          // loaded machine gives four processes: 1.3 s after the deadline at a load of 17, 3.7 s at 20).
          const ok = yield* sql<{ readonly item_id: string }>`SELECT item_id FROM rein_batch_items
            WHERE run_id = ${runId} AND category = 'ok'`
          const called = new Set(calls.map((c) => c.id))
          expect(called.size).toBe(calls.length)
          expect(new Set(ok.map((r) => r.item_id))).toEqual(called)
          expect(status.byCategory).toEqual({ ok: called.size, batch_deadline_exceeded: N - called.size })
          const swept = workers.map((c) => summaryOf(c)?.swept ?? 0).reduce((a, b) => a + b, 0)
          expect(swept).toBeGreaterThan(0)
          expect(swept).toBeLessThanOrEqual(N - called.size)
          process.stdout.write(
            `deadline: stop recorded ${
              stopped - started - DEADLINE
            } ms after the deadline, latest call start ${lateness} ms after it, last record ${
              last - started - DEADLINE
            } ms after it; categories ${JSON.stringify(status.byCategory)}\n`
          )
        }),
      180_000
    )
  })
})
