import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Either, Exit, FastCheck as fc, Scope } from "effect"
import { Migrations, PgBudget } from "../src/index.js"
import { available, fresh, heartbeats, PgLive } from "./pg.js"

interface Row {
  readonly cost_spent: number
  readonly cost_leased: number
  readonly calls_spent: number
  readonly calls_leased: number
  readonly tokens_spent: number
  readonly tokens_leased: number
}

const row = (name: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(
      sql<Row>`SELECT cost_spent::float8 AS cost_spent, cost_leased::float8 AS cost_leased,
        calls_spent::float8 AS calls_spent, calls_leased::float8 AS calls_leased,
        tokens_spent::float8 AS tokens_spent, tokens_leased::float8 AS tokens_leased
        FROM rein_budgets WHERE name = ${name}`,
      (rows) => rows[0]!
    ))

const NANOS = 1e9

describe.skipIf(!available)("PgBudget against a real PostgreSQL", () => {
  layer(PgLive, { timeout: "60 seconds", excludeTestServices: true })((it) => {
    it.effect("migrations run concurrently from many clients and a second run finds nothing to do", () =>
      Effect.gen(function*() {
        yield* Effect.all(Array.from({ length: 6 }, () => Migrations.run), { concurrency: "unbounded" })
        yield* Migrations.run
        const sql = yield* SqlClient.SqlClient
        const versions = yield* sql<{ readonly version: number }>`SELECT version FROM rein_migrations ORDER BY version`
        // Each migration once, in order: 0001_budgets → 1, 0002_health → 2, …
        expect(versions.map((v) => v.version)).toEqual(
          Object.keys(Migrations.migrations).map((k) => Number(k.slice(0, 4)))
        )
      }))

    it.scoped("reserves from its slice in memory: the fast path answers synchronously, settle charges the actual", () =>
      Effect.gen(function*() {
        const name = fresh("fast")
        const budget = yield* PgBudget.make({ name, cost: 10, calls: 1000, tokens: 1_000_000 })
        const first = yield* budget.reserve({ cost: 0.5, tokens: 1000 })
        const fast = budget.unsafeReserve!({ cost: 0.25, tokens: 10 })
        expect(fast !== undefined && Either.isRight(fast)).toBe(true)
        yield* budget.settle(first, { cost: 0.125, tokens: 400 })
        if (fast !== undefined && Either.isRight(fast)) yield* budget.release(fast.right)
        const left = yield* budget.left
        expect(left.cost).toBeCloseTo(10 - 0.125, 9)
        expect(left.calls).toBe(999)
        expect(left.tokens).toBe(1_000_000 - 400)
        const before = yield* row(name)
        expect(before.cost_spent + before.cost_leased).toBeLessThanOrEqual(10 * NANOS)
      }))

    it.scoped("a charge that is not a number is charged as the whole reservation, never as NaN", () =>
      Effect.gen(function*() {
        const budget = yield* PgBudget.make({ name: fresh("nan"), cost: 2, tokens: 1000, calls: 10 })
        const first = yield* budget.reserve({ cost: 0.5, tokens: 100 })
        yield* budget.settle(first, { cost: Number.NaN, tokens: Number.POSITIVE_INFINITY })
        const left = budget.unsafeLeft!()
        expect(left.cost).toBeCloseTo(1.5, 9)
        expect(left.tokens).toBe(900)
        // The budget still refuses what does not fit (a NaN counter would compare false and admit it).
        const over = yield* Effect.either(budget.reserve({ cost: 1.75, tokens: 0 }))
        expect(Either.isLeft(over)).toBe(true)
      }))

    it.scoped("a reservation that is not a number (NaN, Infinity) is refused, and the counters stay numbers", () =>
      Effect.gen(function*() {
        const name = fresh("nan-reserve")
        const budget = yield* PgBudget.make({ name, cost: 2, tokens: 1000, calls: 10, heartbeatMillis: 50 })
        for (
          const bad of [{ cost: Number.NaN, tokens: 1 }, { cost: 0.1, tokens: Number.NaN }, {
            cost: Number.POSITIVE_INFINITY,
            tokens: 1
          }]
        ) {
          const refused = yield* Effect.either(budget.reserve(bad))
          expect(Either.isLeft(refused), JSON.stringify(bad)).toBe(true)
          if (Either.isLeft(refused)) expect(refused.left.reason).toBeUndefined()
        }
        // A NaN in the slice would make every comparison false (admitting anything) and every report fail.
        const fits = yield* budget.reserve({ cost: 1.5, tokens: 100 })
        const over = yield* Effect.either(budget.reserve({ cost: 0.75, tokens: 0 }))
        expect(Either.isLeft(over)).toBe(true)
        yield* budget.settle(fits, { cost: 1.25, tokens: 50 })
        expect(budget.unsafeLeft!().calls).toBe(9)
        yield* Effect.sleep("200 millis")
        const after = yield* row(name)
        expect(Number.isFinite(after.cost_spent + after.cost_leased)).toBe(true)
        expect(after.cost_spent + after.cost_leased).toBeLessThanOrEqual(2 * NANOS)
      }))

    it.effect("closing the scope gives back what was not used: spent is exactly what was charged", () =>
      Effect.gen(function*() {
        const name = fresh("close")
        yield* Effect.scoped(Effect.gen(function*() {
          const budget = yield* PgBudget.make({ name, cost: 5, calls: 100 })
          for (let i = 0; i < 7; i++) {
            const hold = yield* budget.reserve({ cost: 0.3, tokens: null })
            yield* budget.settle(hold, { cost: 0.1, tokens: 0 })
          }
          const leased = yield* row(name)
          expect(leased.cost_leased).toBeGreaterThan(0)
        }))
        const after = yield* row(name)
        expect(after).toMatchObject({ cost_leased: 0, calls_leased: 0, calls_spent: 7 })
        expect(after.cost_spent).toBe(Math.round(0.7 * NANOS))
      }))

    it.scoped("slices shrink with the remainder: the last reservations are exact, then a cost shortfall", () =>
      Effect.gen(function*() {
        const name = fresh("exact")
        const a = yield* PgBudget.make({ name, cost: 1, slice: 0.5 })
        const b = yield* PgBudget.make({ name, cost: 1, slice: 0.5 })
        let admitted = 0
        for (let i = 0; i < 20; i++) {
          const budget = i % 2 === 0 ? a : b
          const exit = yield* Effect.exit(budget.reserve({ cost: 0.1, tokens: null }))
          if (Exit.isSuccess(exit)) admitted++
        }
        // Both leases together can never exceed the cap; slack held by one is returned by its trim.
        expect(admitted).toBeGreaterThanOrEqual(9)
        expect(admitted).toBeLessThanOrEqual(10)
        const refused = yield* Effect.flip(a.reserve({ cost: 0.1, tokens: null }))
        expect(refused.resource).toBe("cost")
        expect(refused.needed).toBeCloseTo(0.1, 12)
        const r = yield* row(name)
        expect(r.cost_spent + r.cost_leased).toBeLessThanOrEqual(NANOS)
      }))

    it.scoped("a process that never reserves holds no slice: another can use the whole budget at once", () =>
      Effect.gen(function*() {
        const name = fresh("idle")
        // An idle holder that would take the whole pool with its first top-up (`slice: 1`), beating fast.
        yield* PgBudget.make({ name, calls: 10, cost: 1, slice: 1, heartbeatMillis: 20, holder: "idle" })
        // Three of its heartbeats later (its lease row says so; the first one ran when it was made) …
        yield* heartbeats(name, "idle", 3)
        // … it still holds nothing of the pool, …
        const held = yield* row(name)
        expect({ calls: held.calls_leased, cost: held.cost_leased }).toEqual({ calls: 0, cost: 0 })
        // … so a second process sees the whole budget, and reserves all of it without a refusal or a wait.
        const other = yield* PgBudget.make({ name, calls: 10, cost: 1, heartbeatMillis: 20 })
        expect(yield* other.left).toEqual({ calls: 10, cost: 1, tokens: null })
        for (let i = 0; i < 10; i++) {
          yield* other.settle(yield* other.reserve({ cost: 0.1, tokens: null }), { cost: 0.1, tokens: 0 })
        }
        expect(Either.isLeft(yield* Effect.either(other.reserve({ cost: null, tokens: null })))).toBe(true)
      }))

    it.scoped("a process at rest (nothing reserved for a heartbeat, nothing in flight) gives back all it has unused", () =>
      Effect.gen(function*() {
        const name = fresh("rest")
        // It leases the whole pool with its first reservation (`slice: 1`), uses one call and $0.25 of it, …
        const first = yield* PgBudget.make({ name, calls: 10, cost: 1, slice: 1, heartbeatMillis: 20, holder: "rest" })
        const hold = yield* first.reserve({ cost: 0.5, tokens: null })
        expect((yield* row(name)).calls_leased).toBe(10)
        yield* first.settle(hold, { cost: 0.25, tokens: 0 })
        // … and reserves nothing for three of its heartbeats: it keeps what it used and gives back the rest …
        yield* heartbeats(name, "rest", 3)
        const rested = yield* row(name)
        expect({ calls: rested.calls_leased, cost: rested.cost_leased }).toEqual({ calls: 1, cost: 0.25 * NANOS })
        // … so another process can use all the rest at once; and the first one, reserving again, leases again.
        const other = yield* PgBudget.make({ name, calls: 10, cost: 1, heartbeatMillis: 20 })
        expect(yield* other.left).toEqual({ calls: 9, cost: 0.75, tokens: null })
        const all = yield* other.reserve({ cost: 0.75, tokens: null })
        expect(Either.isLeft(yield* Effect.either(first.reserve({ cost: 0.01, tokens: null })))).toBe(true)
        yield* other.release(all)
        yield* first.settle(yield* first.reserve({ cost: null, tokens: null }), { cost: 0, tokens: 0 })
        expect((yield* row(name)).calls_spent + (yield* row(name)).calls_leased).toBeLessThanOrEqual(10)
      }))

    // A process that spent much and goes on reserving: its ceiling on record (what a crash charges, and below
    // which it gives nothing back) is what it uses plus a quarter of what it holds unused, not a quarter of all
    // it ever leased; and it tops up when its unused part runs under half the slice it would get now, not at
    // every heartbeat because it spent more than it holds.
    it.scoped("a busy process that spent much keeps a ceiling of a quarter of what it holds unused, and tops up only when low", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const name = fresh("busy")
        const budget = yield* PgBudget.make({ name, cost: 10, slice: 0.1, heartbeatMillis: 20, holder: "busy" })
        // $6 spent, $0.5 at a time: many top-ups, each a tenth of what is free.
        for (let i = 0; i < 12; i++) {
          yield* budget.settle(yield* budget.reserve({ cost: 0.5, tokens: null }), { cost: 0.5, tokens: 0 })
        }
        // Then it goes on reserving a little, with one reservation always in flight (never at rest).
        const lease = sql<
          { readonly l: number; readonly k: number; readonly u: number }
        >`SELECT cost_leased::float8 AS l,
          cost_exposed::float8 AS k, (cost_charged + cost_reserved)::float8 AS u
          FROM rein_budget_leases WHERE budget = ${name} AND holder = 'busy'`.pipe(Effect.map((rows) => rows[0]!))
        let held = yield* budget.reserve({ cost: 0.01, tokens: null })
        const leased: Array<number> = []
        for (let i = 0; i < 6; i++) {
          const next = yield* budget.reserve({ cost: 0.01, tokens: null })
          yield* budget.settle(held, { cost: 0.01, tokens: 0 })
          held = next
          // One move of the lease's heartbeat: whichever write moved it (a report, or a top-up's claim of the row)
          // recorded its ceiling with the usage it was computed from.
          yield* heartbeats(name, "busy", 1)
          const row = yield* lease
          leased.push(row.l)
          // Its ceiling: what it uses, plus a quarter of what it holds unused (rounded up to a nano-dollar).
          expect(row.k - row.u).toBeLessThanOrEqual(Math.ceil(0.25 * (row.l - row.u)))
        }
        // It held enough after its first heartbeat here: no top-up since.
        expect(new Set(leased.slice(1)).size).toBe(1)
      }))

    it.scoped("the call cap: a call stays taken when settled and comes back when released", () =>
      Effect.gen(function*() {
        const budget = yield* PgBudget.make({ name: fresh("calls"), calls: 3 })
        const h1 = yield* budget.reserve({ cost: null, tokens: null })
        const h2 = yield* budget.reserve({ cost: null, tokens: null })
        const h3 = yield* budget.reserve({ cost: null, tokens: null })
        const refused = yield* Effect.flip(budget.reserve({ cost: null, tokens: null }))
        expect(refused).toEqual({ resource: "calls", needed: 1, left: 0 })
        yield* budget.settle(h1, { cost: 0, tokens: 0 })
        yield* budget.release(h2)
        yield* budget.reserve({ cost: null, tokens: null })
        yield* budget.settle(h3, { cost: 0, tokens: 0 })
        expect(Either.isLeft(yield* Effect.either(budget.reserve({ cost: null, tokens: null })))).toBe(true)
      }))

    it.scoped("a process asking other caps under the same name fails with CapsMismatch naming the field", () =>
      Effect.gen(function*() {
        const name = fresh("caps")
        yield* PgBudget.make({ name, cost: 10 })
        const error = yield* Effect.flip(PgBudget.make({ name, cost: 20 }))
        expect(error.reason).toBe("CapsMismatch")
        expect(error.message).toContain("cost: 10 on record, 20 asked")
        const invalid = yield* Effect.flip(PgBudget.make({ name, cost: 10, heartbeatMillis: 1000, ttlMillis: 2000 }))
        expect(invalid.reason).toBe("InvalidOptions")
        expect(invalid.message).toContain("ttlMillis")
        // Cost is kept in nano-dollars, read back as float8: exact only below 2^53 nano-dollars (~$9M).
        const huge = yield* Effect.flip(PgBudget.make({ name: fresh("huge"), cost: 1e7 }))
        expect(huge.reason).toBe("InvalidOptions")
        expect(huge.message).toContain("cost")
      }))

    it.scoped("a duration or a name the database cannot hold is an invalid option naming the field, not Unavailable", () =>
      Effect.gen(function*() {
        // A name no compression shortens (a seeded generator): the database's index rows hold ~2.7 KB.
        let seed = 3
        const noise = Array.from({ length: 3000 }, () => {
          seed = (seed * 1103515245 + 12345) % 2147483648
          return String.fromCharCode(97 + (seed % 26))
        }).join("")
        const cases = [
          { field: "name", options: { name: noise, cost: 1 } },
          // (1e300 ms: every lease failed with "interval out of range")
          { field: "ttlMillis", options: { name: fresh("ttl"), cost: 1, ttlMillis: 1e300 } },
          {
            field: "heartbeatMillis",
            options: { name: fresh("beat"), cost: 1, heartbeatMillis: 2 ** 31, ttlMillis: 2 ** 33 }
          }
        ]
        for (const { field, options } of cases) {
          const error = yield* Effect.flip(PgBudget.make(options))
          expect(error.reason).toBe("InvalidOptions")
          expect(error.message).toContain(field)
        }
        // At the bounds, they are taken.
        yield* PgBudget.make({ name: noise.slice(0, 512), cost: 1, heartbeatMillis: 1000, ttlMillis: 2 ** 31 - 1 })
      }))

    const Op = fc.oneof(
      fc.record({
        _tag: fc.constant("reserve" as const),
        who: fc.nat(2),
        cost: fc.integer({ min: 1, max: 400 }),
        tokens: fc.integer({ min: 0, max: 300 })
      }),
      fc.record({ _tag: fc.constant("settle" as const), pick: fc.nat(), fraction: fc.double({ min: 0, max: 1 }) }),
      fc.record({ _tag: fc.constant("release" as const), pick: fc.nat() })
    )

    it.effect.prop(
      "committed ≤ cap at every moment: three leases, concurrent reservations, settles and releases",
      { ops: fc.array(fc.array(Op, { minLength: 1, maxLength: 6 }), { minLength: 1, maxLength: 12 }) },
      ({ ops }) =>
        Effect.gen(function*() {
          const name = fresh("law")
          const capCost = 2000
          const capTokens = 3000
          const scope = yield* Scope.make()
          const budgets = yield* Effect.forEach([0, 1, 2], () =>
            Scope.extend(
              PgBudget.make({ name, cost: capCost / 1000, tokens: capTokens, calls: 40, slice: 0.3 }),
              scope
            ))
          const open: Array<{ readonly who: number; readonly hold: PgBudget.Hold; readonly cost: number }> = []
          let charged = 0
          let calls = 0
          const committed = () => open.reduce((sum, h) => sum + h.cost, 0) + charged
          for (const round of ops) {
            // Each round runs its operations concurrently (reservations race for the same slices).
            yield* Effect.forEach(round, (op) =>
              Effect.gen(function*() {
                if (op._tag === "reserve") {
                  const exit = yield* Effect.exit(
                    budgets[op.who]!.reserve({ cost: op.cost / 1000, tokens: op.tokens })
                  )
                  if (Exit.isSuccess(exit)) open.push({ who: op.who, hold: exit.value, cost: op.cost })
                  return
                }
                if (open.length === 0) return
                const [h] = open.splice(op.pick % open.length, 1)
                if (op._tag === "settle") {
                  // fc.double draws NaN too: a charge that is not a count costs the hold's whole reservation.
                  const actual = Math.floor(h!.cost * op.fraction)
                  yield* budgets[h!.who]!.settle(h!.hold, { cost: actual / 1000, tokens: 0 })
                  charged += Number.isNaN(actual) ? h!.cost : actual
                  calls++
                } else {
                  yield* budgets[h!.who]!.release(h!.hold)
                }
              }), { concurrency: "unbounded", discard: true })
            expect(committed()).toBeLessThanOrEqual(capCost)
            const r = yield* row(name)
            expect(r.cost_spent + r.cost_leased).toBeLessThanOrEqual(capCost * 1e6)
            expect(r.tokens_spent + r.tokens_leased).toBeLessThanOrEqual(capTokens)
            expect(r.calls_spent + r.calls_leased).toBeLessThanOrEqual(40)
          }
          for (const h of open.splice(0)) yield* budgets[h.who]!.release(h.hold)
          yield* Scope.close(scope, Exit.void)
          const end = yield* row(name)
          expect(end).toMatchObject({ cost_leased: 0, tokens_leased: 0, calls_leased: 0, calls_spent: calls })
          expect(end.cost_spent).toBe(charged * 1e6)
        }),
      { fastCheck: { numRuns: 25 } }
    )
  })
})
