// What the shared budget can still grant (`grantable`, a distributed run's question before it stops on a
// refusal), against a real PostgreSQL, while another holder's top-up for a reservation is on record but not yet
// reported as taken: the row holds that reservation as `pending` (0005), not in `reserved`, until the holder's
// next report. Counted as free, it made a refusal elsewhere read "held" (the run goes on, the worker waits for
// units that are taken) instead of "spent" (the run's stop), for up to a heartbeat of the holder.
import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Resume } from "@rein/batch"
import { Contract, Outcome } from "@rein/core"
import { Effect, Layer } from "effect"
import { Migrations, PgBudget } from "../src/index.js"
import * as BudgetStop from "../src/internal/budgetStop.js"
import * as Grantable from "../src/internal/grantable.js"
import { available, fresh, PgLive } from "./pg.js"
import { firstHeartbeat } from "./rowLocks.js"

const Live = Layer.tap(PgLive, (ctx) => Effect.provide(Migrations.run, ctx))

const NANOS = 1e9

/** A budget whose heartbeat runs only when its fast path wakes it (a minute apart otherwise). */
const quiet = { heartbeatMillis: 60_000, ttlMillis: 180_000, queryTimeoutMillis: 30_000 }

/** The cost row of `holder`'s lease: leased, used (charged + reserved) and pending, in nano-dollars. */
const leaseRow = (name: string, holder: string) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) =>
      sql<{ readonly leased: number; readonly used: number; readonly pending: number }>`SELECT
        cost_leased::float8 AS leased, (cost_charged + cost_reserved)::float8 AS used,
        cost_pending::float8 AS pending FROM rein_budget_leases WHERE budget = ${name} AND holder = ${holder}`
  ).pipe(Effect.map((rows) => rows[0]), Effect.orDie)

const contract = Contract.make({ deadline: "1 minute", candidates: ["fake/a"], allowSimulated: true })

const record = Resume.makeRecord({
  itemId: "x-1",
  index: 0,
  promptFingerprint: "p",
  inputFingerprint: "f",
  identityFingerprint: "x",
  outcome: "failure",
  category: "budget_exhausted",
  usage: { inputTokens: 0, outputTokens: 0 },
  cost: 0,
  attempts: 0,
  durationMillis: 0
})

/** The refusal of a $0.60 reservation. */
const refused = new Outcome.BudgetExhausted({
  resource: "cost",
  reason: "no room",
  lastFailure: null,
  attempts: [],
  needed: 0.6
})

describe.skipIf(!available)("grantable: another holder's reservation in flight on its top-up (pending)", () => {
  layer(Live, { timeout: "90 seconds", excludeTestServices: true })((it) => {
    it.scoped("is taken, not free: the refusal it leaves no room for is the run's stop", () =>
      Effect.gen(function*() {
        const name = fresh("pending")
        // Y leases the whole $1 at its first reservation (`slice: 1`), for a $0.60 worst case.
        const y = yield* PgBudget.make({ ...quiet, name, cost: 1, slice: 1, holder: "Y" })
        const x = yield* PgBudget.make({ ...quiet, name, cost: 1, slice: 1, holder: "X" })
        // Y's first heartbeat (the one it runs when made) is behind it: its next is a minute away.
        yield* firstHeartbeat(name, "Y")
        const hold = yield* y.reserve({ cost: 0.6, tokens: null })
        // On record: the grant, and the reservation it was for as pending (not yet reported as reserved).
        expect(yield* leaseRow(name, "Y")).toEqual({ leased: NANOS, used: 0, pending: 0.6 * NANOS })
        // X is refused $0.60 (the pool is empty) …
        expect((yield* Effect.either(x.reserve({ cost: 0.6, tokens: null })))._tag).toBe("Left")
        // … and the whole budget can grant $0.40 at most: Y's $1 less its $0.60 in flight.
        const grantable = yield* Grantable.readerOf(x)!
        expect(grantable.cost).toBeCloseTo(0.4, 9)
        expect(BudgetStop.grantableElsewhere(contract, record, refused, grantable)).toBe(false)
        expect(BudgetStop.stopFor(contract, record, refused, grantable)).toMatchObject({
          kind: "budget_exceeded",
          resource: "cost"
        })
        // Y's own view (from memory) agrees, and so does the row once Y has reported (pending 0, reserved 0.6).
        expect((yield* Grantable.readerOf(y)!).cost).toBeCloseTo(0.4, 9)
        yield* y.settle(hold, { cost: 0.1, tokens: 0 })
        // Settled for less: $0.90 unused in Y's slice, as the next read of the row shows once reported; memory
        // (Y's own read) shows it now.
        expect((yield* Grantable.readerOf(y)!).cost).toBeCloseTo(0.9, 9)
      }))
  })
})
