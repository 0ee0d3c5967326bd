// How long a worker with nothing to lease waits between looks while another holds the run's last items
// (internal/idleWait): from 50 ms, doubling, up to a quarter of its own items' mean duration (the heartbeat before
// it ran any). Against a real PostgreSQL, on the TestClock: the worker leaves within a quarter of an item of the
// last item's end, where the wait doubled up to the heartbeat made it sleep across the end for seconds.
import { SqlClient } from "@effect/sql"
import { describe, expect, it, layer } from "@effect/vitest"
import { Guardrails } from "@rein/batch"
import { Contract, Fake, Rein } from "@rein/core"
import { Effect, FastCheck as fc, Fiber, Layer, TestClock, TestContext } from "effect"
import { Migrations, PgBatchRun, PgWorker } from "../src/index.js"
import * as IdleWait from "../src/internal/idleWait.js"
import { catalog, identity, itemsOf, request } from "./fixtures/batch-items.js"
import { available, fresh, PgLive } from "./pg.js"

const Ran = fc.record({ items: fc.integer({ min: 0, max: 1_000 }), millis: fc.integer({ min: 0, max: 10_000_000 }) })
  .map(({ items, millis }) => ({ items, millis: items === 0 ? 0 : millis }))

describe("the wait between a waiting worker's looks", () => {
  it.effect.prop(
    "starts at 50 ms, doubles, and never exceeds the heartbeat nor (once an item ran) a quarter of the mean item",
    { ran: Ran, heartbeat: fc.integer({ min: 1, max: 2 ** 31 - 1 }), n: fc.integer({ min: 0, max: 64 }) },
    ({ heartbeat, n, ran }) =>
      Effect.sync(() => {
        const wait = IdleWait.nth(n, ran, heartbeat)
        expect(wait).toBeLessThanOrEqual(heartbeat)
        expect(wait).toBeGreaterThanOrEqual(Math.min(IdleWait.FIRST_MILLIS, heartbeat))
        expect(wait).toBeLessThanOrEqual(IdleWait.FIRST_MILLIS * 2 ** n)
        if (ran.items > 0) {
          expect(wait).toBeLessThanOrEqual(Math.max(IdleWait.FIRST_MILLIS, ran.millis / ran.items / 4))
        }
        expect(IdleWait.nth(n + 1, ran, heartbeat)).toBeGreaterThanOrEqual(wait)
        expect(IdleWait.nth(0, ran, heartbeat)).toBe(Math.min(IdleWait.FIRST_MILLIS, heartbeat))
      }),
    { fastCheck: { numRuns: 300, seed: 20261205 } }
  )

  it("counts only items that made an attempt; bench 12's items (200 ms) cap it at 50 ms, minute-long ones at the heartbeat", () => {
    const ran = IdleWait.empty()
    expect(IdleWait.nth(10, ran, 3_333)).toBe(3_333)
    IdleWait.count(ran, 0, 0)
    expect(ran).toEqual({ items: 0, millis: 0 })
    IdleWait.count(ran, 1, 200)
    expect(IdleWait.nth(10, ran, 3_333)).toBe(50)
    const long = IdleWait.empty()
    IdleWait.count(long, 1, 60_000)
    expect(IdleWait.nth(10, long, 10_000)).toBe(10_000)
  })
})

const contract = Contract.make({ deadline: "1 minute", candidates: ["fake/a"], allowSimulated: true })
const ITEM_MILLIS = 1_000
const STEP = 10

const Live = Layer.tap(PgLive, (ctx) => Effect.provide(Migrations.run, ctx))

describe.skipIf(!available)("a worker waiting for another holder's last item, on PostgreSQL", () => {
  layer(Live, { timeout: "60 seconds", excludeTestServices: true })((it) => {
    it.effect("leaves within a quarter of an item after that item is done, not a doubled wait later", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const runId = fresh("idle-wait")
        const items = itemsOf(3, [])
        yield* PgBatchRun.start({ runId, identity, resume: "none", items, request, itemId: (i) => i.id, contract })
        // Another (live) holder has the last item, for longer than the test lasts.
        yield* sql`UPDATE rein_batch_items SET state = 'leased', lease_owner = 'ghost', lease_token = '0',
          lease_expires = clock_timestamp() + interval '10 minutes' WHERE run_id = ${runId} AND idx = 2`
        const fake = Fake.make({
          "fake/a": [
            Fake.succeed({
              text: "ok",
              latency: `${ITEM_MILLIS} millis`,
              usage: { inputTokens: 100, outputTokens: 50 }
            })
          ]
        })
        const worker = yield* PgWorker.run({
          runId,
          item: (index) => Effect.succeed(items[index]!),
          request,
          itemId: (item) => item.id,
          identity,
          contract,
          guardrails: Guardrails.make({ concurrency: 2 }),
          owner: "w",
          leaseMillis: 600_000,
          heartbeatMillis: 60_000
        }).pipe(Effect.provide(Rein.layer({ catalog, providers: { fake: fake.provider }, health: false })), Effect.fork)
        // The clock moves in steps of 10 ms; after each, three round trips let the worker's statements answer.
        const step = Effect.gen(function*() {
          yield* TestClock.adjust(STEP)
          for (let i = 0; i < 3; i++) yield* sql`SELECT 1`
          return yield* TestClock.currentTimeMillis
        })
        // The worker runs its two items (1 s), then waits for the ghost's. Its waits doubled from 50 ms: on the
        // old code they went on doubling towards the heartbeat (…, 1.6 s, 3.2 s: asleep from 3.15 s to 6.35 s).
        const END = 3_300
        let now = 0
        while (now < END) now = yield* step
        yield* sql`UPDATE rein_batch_items SET state = 'done' WHERE run_id = ${runId} AND idx = 2`
        const ended = now
        while (worker.unsafePoll() === null && now < ended + 10_000) now = yield* step
        const summary = yield* Fiber.join(worker)
        expect(summary.stats.succeeded).toBe(2)
        expect(summary.leased).toBe(2)
        // A quarter of an item (250 ms), and the steps its last look's statements took.
        expect(now - ended, "from the last item's end to the worker's, in virtual ms").toBeLessThanOrEqual(
          ITEM_MILLIS / 4 + 250
        )
      }).pipe(Effect.provide(TestContext.TestContext)))
  })
})
