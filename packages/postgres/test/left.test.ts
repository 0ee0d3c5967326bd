// What the fast path reports as left (`unsafeLeft`: the pool's free units as last read, plus this lease's,
// minus what is used) against what is really left. With one process on a budget, the database changes only
// by this process's own statements, so the fast path knows it exactly: it must equal the caps minus what was
// charged and reserved, and never report more. Time is the TestClock: the heartbeat runs when the test
// advances it (or when the fast path wakes it), the database answers in real time.
import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Chunk, Effect, Either, FastCheck as fc, TestClock, TestContext } from "effect"
import { PgBudget } from "../src/index.js"
import { available, fresh, PgLive } from "./pg.js"

const HEARTBEAT = 1000
// Far beyond the virtual time a test advances: a query in flight while the clock moves never times out.
const timing = { heartbeatMillis: HEARTBEAT, queryTimeoutMillis: 600_000 }

/**
 * Advances the clock by a heartbeat and waits until the heartbeats of the `budgets` sleep again: a sleep
 * ending a heartbeat after the new time was registered at it, once the tick in progress (if any) had finished
 * (the adjustment ran every earlier one; a query's timeout ends elsewhere). Each poll is a round trip, so the
 * heartbeats' own queries get their answers in between.
 */
const heartbeats = (budgets: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* TestClock.adjust(HEARTBEAT)
    const now = yield* TestClock.currentTimeMillis
    for (let poll = 0; poll < 2000; poll++) {
      if (Chunk.size(Chunk.filter(yield* TestClock.sleeps(), (end) => end === now + HEARTBEAT)) >= budgets) return
      yield* sql`SELECT 1`
    }
    return yield* Effect.dieMessage("the heartbeat did not come back to sleep")
  })

const heartbeat = heartbeats(1)

const leased = (name: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(
      sql<{ readonly tokens: number }>`SELECT tokens_leased::float8 AS tokens FROM rein_budgets WHERE name = ${name}`,
      (rows) => rows[0]!.tokens
    ))

describe.skipIf(!available)("what the fast path reports as left, against a real PostgreSQL", () => {
  layer(PgLive, { timeout: "60 seconds", excludeTestServices: true })((it) => {
    it.scoped("counts what the heartbeat gave back to the pool: the caps minus what was used, as the effect says", () =>
      Effect.gen(function*() {
        const name = fresh("left")
        const budget = yield* PgBudget.make({ name, tokens: 10_000, calls: 10, ...timing })
        yield* heartbeat
        // A large worst case leases a large slice (3000 tokens), settled at nothing: the next heartbeat lowers
        // the ceiling to the headroom and gives back what the lease holds beyond twice a slice.
        const hold = yield* budget.reserve({ cost: null, tokens: 3000 })
        yield* budget.settle(hold, { cost: 0, tokens: 0 })
        yield* heartbeat
        const held = yield* leased(name)
        yield* heartbeat
        expect(yield* leased(name)).toBeLessThan(held)
        // 10 000 tokens left: before the fix, 10 000 less what was given back (free as read before it).
        expect(budget.unsafeLeft!()).toEqual({ cost: null, tokens: 10_000, calls: 9 })
        expect(yield* budget.left).toEqual({ cost: null, tokens: 10_000, calls: 9 })
      }).pipe(Effect.provide(TestContext.TestContext)))

    it.scoped("across processes, at most a heartbeat behind: after one, no more than what the pool and the lease hold", () =>
      Effect.gen(function*() {
        const name = fresh("two")
        const a = yield* PgBudget.make({ name, tokens: 1000, ...timing })
        const b = yield* PgBudget.make({ name, tokens: 1000, ...timing })
        yield* heartbeats(2)
        yield* a.reserve({ cost: null, tokens: 10 })
        yield* b.reserve({ cost: null, tokens: 850 })
        // Until its next contact with the database, `a` cannot know what `b` took from the pool (the effect
        // can: it reads the pool). Its heartbeat reads it too. The two heartbeats of a round run in either order,
        // so `a` can be one of `b`'s heartbeats behind while `b`'s lease still moves: rounds go on until the pool's
        // lease stops moving (at most ten), then one more, after which `a` has read what `b` left there.
        yield* heartbeats(2)
        let before = yield* leased(name)
        for (let round = 0; round < 10; round++) {
          yield* heartbeats(2)
          const now = yield* leased(name)
          if (now === before) break
          before = now
        }
        yield* heartbeats(2)
        expect(yield* leased(name), "the leases still moved after ten heartbeats").toBe(before)
        const fast = a.unsafeLeft!()
        const left = yield* a.left
        expect(fast).toEqual(left)
        // 1000 − 10 − 850 is what is left at most (less what b leased and does not use): before, 890.
        expect(fast.tokens).toBeLessThanOrEqual(140)
      }).pipe(Effect.provide(TestContext.TestContext)))

    const Op = fc.oneof(
      fc.record({ _tag: fc.constant("reserve" as const), tokens: fc.integer({ min: 0, max: 8000 }) }),
      fc.record({ _tag: fc.constant("settle" as const), pick: fc.nat(), fraction: fc.double({ min: 0, max: 1 }) }),
      fc.record({ _tag: fc.constant("release" as const), pick: fc.nat() }),
      fc.record({ _tag: fc.constant("heartbeat" as const) })
    )

    it.effect.prop(
      "never reports more than is left: one process, at every step, exactly the caps minus charged and reserved",
      { ops: fc.array(Op, { minLength: 1, maxLength: 24 }) },
      ({ ops }) =>
        Effect.gen(function*() {
          const cap = { tokens: 20_000, calls: 25 }
          const budget = yield* PgBudget.make({ name: fresh("prop"), ...cap, ...timing })
          const open: Array<{ readonly hold: PgBudget.Hold; readonly tokens: number }> = []
          let charged = 0
          let calls = 0
          const check = (step: string) => {
            const truth = {
              cost: null,
              tokens: cap.tokens - charged - open.reduce((sum, h) => sum + h.tokens, 0),
              calls: cap.calls - calls - open.length
            }
            const fast = budget.unsafeLeft!()
            expect(fast.tokens!, `tokens after ${step}`).toBeLessThanOrEqual(truth.tokens)
            expect(fast.calls!, `calls after ${step}`).toBeLessThanOrEqual(truth.calls)
            expect(fast, `after ${step}`).toEqual(truth)
          }
          for (const op of ops) {
            if (op._tag === "reserve") {
              const r = { cost: null, tokens: op.tokens }
              const held = budget.unsafeReserve!(r) ?? (yield* Effect.either(budget.reserve(r)))
              if (Either.isRight(held)) open.push({ hold: held.right, tokens: op.tokens })
            } else if (op._tag === "heartbeat") {
              yield* heartbeat
            } else if (open.length > 0) {
              const [h] = open.splice(op.pick % open.length, 1)
              if (op._tag === "settle") {
                // fc.double draws NaN too: a charge that is not a count costs the hold's whole reservation.
                const actual = Math.floor(h!.tokens * op.fraction)
                budget.unsafeSettle!(h!.hold, { cost: 0, tokens: actual })
                charged += Number.isNaN(actual) ? h!.tokens : actual
                calls++
              } else {
                yield* budget.release(h!.hold)
              }
            }
            // Also while a heartbeat the fast path woke may be in flight.
            check(op._tag)
          }
        }).pipe(Effect.scoped, Effect.provide(TestContext.TestContext)),
      { fastCheck: { numRuns: 15, seed: 20261202 } }
    )
  })
})
