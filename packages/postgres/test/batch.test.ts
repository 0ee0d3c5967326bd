// The distributed batch run in one process against a real PostgreSQL: the queue and its fence, the resume
// sessions, the typed refusals. (The crash test with real processes is batch-multiprocess.test.ts.)
import { SqlClient } from "@effect/sql"
import { describe, expect, layer, vi } from "@effect/vitest"
import { Guardrails, Identity, Resume, RunLimits } from "@rein/batch"
import { Contract, Fake, Rein } from "@rein/core"
import { Effect, Fiber, Layer, TestContext } from "effect"
import * as fc from "effect/FastCheck"
import { Migrations, PgBatchRun, PgRunLimits, PgWorker } from "../src/index.js"
import * as Q from "../src/internal/batchStatements.js"
import * as Fence from "../src/internal/fence.js"
import { catalog, identity, itemsOf, request } from "./fixtures/batch-items.js"
import type { Item } from "./fixtures/batch-items.js"
import { available, fresh, PgLive } from "./pg.js"

const contract = Contract.make({ deadline: "1 minute", candidates: ["fake/a"], allowSimulated: true })

const fakeRein = (latencyMillis: number) => {
  const fake = Fake.make({
    "fake/a": [
      Fake.succeed({ text: "ok", latency: `${latencyMillis} millis`, usage: { inputTokens: 100, outputTokens: 50 } })
    ]
  })
  return { fake, layer: Rein.layer({ catalog, providers: { fake: fake.provider }, health: false }) }
}

const startRun = (
  runId: string,
  items: ReadonlyArray<Item>,
  resume: "none" | "reuse-successes" | "reuse-all" = "reuse-successes"
) => PgBatchRun.start({ runId, identity, resume, items, request, itemId: (item) => item.id, contract })

const worker = <E = never>(
  runId: string,
  items: ReadonlyArray<Item>,
  owner: string,
  extra: Partial<PgWorker.Options<Item, E>> = {}
) =>
  PgWorker.run<Item, E>({
    runId,
    item: (index) => Effect.succeed(items[index]!),
    request,
    itemId: (item) => item.id,
    identity,
    contract,
    guardrails: Guardrails.make({ concurrency: 8 }),
    owner,
    leaseMillis: 5_000,
    heartbeatMillis: 200,
    ...extra
  })

const Live = Layer.tap(PgLive, (ctx) => Effect.provide(Migrations.run, ctx))

describe.skipIf(!available)("a distributed batch run on PostgreSQL", () => {
  layer(Live, { timeout: "60 seconds", excludeTestServices: true })((it) => {
    it.effect("two workers: every item gets exactly one record; a finished run started again makes no call", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const runId = fresh("two")
        const items = itemsOf(200, [])
        const started = yield* startRun(runId, items)
        expect(started).toEqual({ runId, session: "created", items: 200, reopened: 0 })
        const { fake, layer } = fakeRein(2)
        const summaries = yield* Effect.all([worker(runId, items, "w1"), worker(runId, items, "w2")], {
          concurrency: "unbounded"
        }).pipe(Effect.provide(layer))
        expect(summaries.map((s) => s.runStatus).includes("finished")).toBe(true)
        expect(summaries.reduce((n, s) => n + s.stats.succeeded, 0)).toBe(200)
        expect(summaries.every((s) => s.leased > 0)).toBe(true)
        expect((yield* fake.calls).length).toBe(200)
        const perItem = yield* sql<{ readonly n: number }>`SELECT count(*)::int AS n FROM rein_batch_records
          WHERE run_id = ${runId} GROUP BY item_id`
        expect(perItem.length).toBe(200)
        expect(perItem.every((r) => r.n === 1)).toBe(true)
        const status = yield* PgBatchRun.status(runId)
        expect(status.status).toBe("finished")
        expect(status.items).toEqual({ total: 200, pending: 0, leased: 0, done: 200 })
        expect(status.byCategory).toEqual({ ok: 200 })
        expect(status.cost).toBeCloseTo(200 * 2e-4, 10)

        // Again: a new session whose policy reuses every success: nothing to lease, no call.
        const again = yield* startRun(runId, items)
        expect(again).toEqual({ runId, session: "restarted", items: 200, reopened: 0 })
        const second = fakeRein(2)
        const s = yield* worker(runId, items, "w3").pipe(Effect.provide(second.layer))
        expect(s.leased).toBe(0)
        expect((yield* second.fake.calls).length).toBe(0)
        // Under `none` every item runs again, with one more record each.
        const fresh_ = yield* startRun(runId, items, "none")
        expect(fresh_.reopened).toBe(200)
      }))

    it.effect("an item whose input has no fingerprint is refused alone, recorded with none; the others run", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const runId = fresh("nofp-run")
        const items = itemsOf(5, [])
        // Item 2's input has no fingerprint (as Infinity, a bigint or a cycle would not).
        const input = (item: Item) => item.id === "item-00002" ? { n: Number.POSITIVE_INFINITY } : item.text
        const started = yield* PgBatchRun.start({
          runId,
          identity,
          resume: "reuse-successes",
          items,
          request,
          itemId: (item) => item.id,
          input,
          contract
        })
        expect(started.items).toBe(5)
        const { fake, layer } = fakeRein(1)
        const summary = yield* worker(runId, items, "w", { input }).pipe(Effect.provide(layer))
        expect(summary.stats.succeeded).toBe(4)
        expect((yield* fake.calls).length).toBe(4)
        const status = yield* PgBatchRun.status(runId)
        expect(status.status).toBe("finished")
        expect(status.byCategory).toEqual({ ok: 4, refused: 1 })
        const [row] = yield* sql<{ readonly record: string }>`SELECT record::text AS record FROM rein_batch_records
          WHERE run_id = ${runId} AND item_id = 'item-00002'`
        const record = JSON.parse(row!.record)
        expect(record).toMatchObject({
          itemId: "item-00002",
          index: 2,
          inputFingerprint: "none",
          outcome: "failure",
          category: "refused",
          attempts: 0,
          error: { _tag: "Refused", refusal: "invalid_request" }
        })
        expect(record.error.reason).toMatch(/^the input of item "item-00002" has no fingerprint: \$\.n: /)
      }))

    it.effect("an item whose prompt has no fingerprint (a bigint) is staged with none, refused alone; the others run", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const runId = fresh("nofp-prompt")
        const items = itemsOf(5, [])
        // A JavaScript caller's request whose prompt is a bigint: `Fingerprint.prompt` threw, a defect of the start.
        const hostile = (item: Item) =>
          item.id === "item-00002" ? { ...request(item), prompt: 10n as unknown as string } : request(item)
        const started = yield* PgBatchRun.start({
          runId,
          identity,
          resume: "reuse-successes",
          items,
          request: hostile,
          itemId: (item) => item.id,
          contract
        })
        expect(started.items).toBe(5)
        const { fake, layer } = fakeRein(1)
        const summary = yield* worker(runId, items, "w", { request: hostile }).pipe(Effect.provide(layer))
        expect(summary.stats.succeeded).toBe(4)
        expect((yield* fake.calls).length).toBe(4)
        expect((yield* PgBatchRun.status(runId)).byCategory).toEqual({ ok: 4, refused: 1 })
        const [row] = yield* sql<{ readonly record: string }>`SELECT record::text AS record FROM rein_batch_records
          WHERE run_id = ${runId} AND item_id = 'item-00002'`
        const record = JSON.parse(row!.record)
        expect(record).toMatchObject({ itemId: "item-00002", attempts: 0, error: { _tag: "Refused" } })
        expect(record.error.reason).toMatch(/^the input of item "item-00002" has no fingerprint: prompt \$\.prompt: /)
      }))

    it.effect("a worker that joins a second late gets items: the first does not lease a second group ahead", () =>
      Effect.gen(function*() {
        const runId = fresh("stagger")
        const items = itemsOf(8, [])
        yield* startRun(runId, items)
        // Slow items (2 s each), concurrency 4: A fills its 4 slots; on the old code it also leased the other
        // 4 ahead at once and held them, renewed, for a whole item's duration, so B (joining 0.5 s later)
        // found nothing.
        const { layer } = fakeRein(2_000)
        const g = Guardrails.make({ concurrency: 4 })
        const [a, b] = yield* Effect.all([
          worker(runId, items, "A", { guardrails: g }),
          Effect.zipRight(Effect.sleep("500 millis"), worker(runId, items, "B", { guardrails: g }))
        ], { concurrency: "unbounded" }).pipe(Effect.provide(layer))
        expect(b.leased).toBeGreaterThan(0)
        expect(a.leased + b.leased).toBe(8)
        expect((yield* PgBatchRun.status(runId)).status).toBe("finished")
      }))

    it.effect("a fast worker leases ahead in whole batches, not a quarter of one at a time", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const runId = fresh("pace")
        const items = itemsOf(400, [])
        yield* startRun(runId, items)
        // 8 slots of 10 ms items: the engine takes ~800 items a second, ~200 in the 250 ms a lease looks ahead,
        // so every lease after the first two takes the whole batch (8). On the old code every lease after the
        // first took ⌈8/4⌉ = 2: ~200 statements for 400 items. One lease statement reads the clock once, so
        // each distinct `leased_at` is one statement.
        const { layer } = fakeRein(10)
        const s = yield* worker(runId, items, "fast").pipe(Effect.provide(layer))
        expect(s.stats.succeeded).toBe(400)
        const [row] = yield* sql<{ readonly n: number }>`SELECT count(DISTINCT leased_at)::int AS n
          FROM rein_batch_items WHERE run_id = ${runId}`
        expect(row!.n).toBeLessThan(100)
      }))

    it.effect("a worker waiting for items held by another does not rewrite its own leases between heartbeats", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const runId = fresh("idle")
        const items = itemsOf(3, [])
        yield* startRun(runId, items)
        // Another holder has the last item for 1.5 s; the worker runs the other two (2 s each) and, meanwhile,
        // asks for more. Its heartbeat is a minute apart: its leases' expiry must not move in between.
        yield* sql`UPDATE rein_batch_items SET state = 'leased', lease_owner = 'ghost', lease_token = '0',
          lease_expires = clock_timestamp() + interval '1500 milliseconds' WHERE run_id = ${runId} AND idx = 2`
        const { layer } = fakeRein(2_000)
        const expiries = sql<{ readonly e: string }>`SELECT lease_expires::text AS e FROM rein_batch_items
          WHERE run_id = ${runId} AND lease_owner = 'w' AND state = 'leased' ORDER BY idx`
        const [s, seen] = yield* Effect.all([
          worker(runId, items, "w", {
            guardrails: Guardrails.make({ concurrency: 2 }),
            leaseMillis: 120_000,
            heartbeatMillis: 60_000
          }),
          Effect.gen(function*() {
            yield* Effect.sleep("600 millis")
            const first = yield* expiries
            yield* Effect.sleep("600 millis")
            return [first, yield* expiries] as const
          })
        ], { concurrency: "unbounded" }).pipe(Effect.provide(layer))
        expect(seen[0].length).toBe(2)
        expect(seen[1]).toEqual(seen[0])
        expect(s.leased).toBe(3)
      }))

    it.effect("the fence writes full groups already queued without lingering", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const runId = fresh("backlog")
        const items = itemsOf(1_024, [])
        yield* startRun(runId, items)
        const rows = yield* Q.lease(sql, runId, "f", 1_024, 60_000, true)
        expect(rows.length).toBe(1_024)
        let written = 0
        // Under a test clock that never moves: a writer that lingers before every group never writes. Two full
        // groups (2 × 512 records) are queued at once, so neither may wait.
        yield* Effect.scoped(Effect.gen(function*() {
          const fence = yield* Fence.make(sql, runId, {
            onWritten: () => Effect.sync(() => written++),
            onFailed: () => Effect.void
          })
          for (const row of rows) fence.tokens.set(row.item_id, row.lease_token)
          yield* Effect.forEach(rows, (row) =>
            fence.submit(Resume.makeRecord({
              itemId: row.item_id,
              index: row.idx,
              promptFingerprint: row.prompt_fingerprint,
              inputFingerprint: row.input_fingerprint,
              identityFingerprint: "x",
              outcome: "failure",
              category: "cancelled",
              usage: { inputTokens: 0, outputTokens: 0 },
              cost: 0,
              attempts: 0,
              durationMillis: 0
            })), { discard: true })
          yield* fence.drain
        })).pipe(Effect.provide(TestContext.TestContext), Effect.timeout("20 seconds"))
        expect(written).toBe(1_024)
      }))

    it.effect("a worker's last drain writes the records its writer holds at once, without lingering", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const runId = fresh("drain")
        const items = itemsOf(3, [])
        yield* startRun(runId, items)
        const rows = yield* Q.lease(sql, runId, "f", 3, 60_000, true)
        let written = 0
        // Under a test clock that never moves, three records (far from a full group): the writer takes the first
        // and lingers. On the old code it lingered through the drain too: the run's last records committed up to
        // a linger (100 ms) late, and every other worker waited for them; here it never wrote at all.
        yield* Effect.scoped(Effect.gen(function*() {
          const fence = yield* Fence.make(sql, runId, {
            onWritten: () => Effect.sync(() => written++),
            onFailed: () => Effect.void
          })
          for (const row of rows) fence.tokens.set(row.item_id, row.lease_token)
          yield* Effect.forEach(rows, (row) =>
            fence.submit(Resume.makeRecord({
              itemId: row.item_id,
              index: row.idx,
              promptFingerprint: row.prompt_fingerprint,
              inputFingerprint: row.input_fingerprint,
              identityFingerprint: "x",
              outcome: "failure",
              category: "cancelled",
              usage: { inputTokens: 0, outputTokens: 0 },
              cost: 0,
              attempts: 0,
              durationMillis: 0
            })), { discard: true })
          const drained = yield* Effect.fork(fence.drain)
          // Round trips of our own, so that the writer's statement (if it is made) gets its answer in between.
          for (let i = 0; i < 200 && written < 3; i++) yield* sql`SELECT 1`
          expect(written).toBe(3)
          yield* Fiber.join(drained)
        })).pipe(Effect.provide(TestContext.TestContext))
        expect((yield* PgBatchRun.status(runId)).items.done).toBe(3)
      }))

    it.effect("workers with PgRunLimits in their context share one soft token cap: the run stops once, for all", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const runId = fresh("caps")
        const items = itemsOf(200, [])
        yield* startRun(runId, items)
        const { fake, layer } = fakeRein(2)
        // Each worker builds its own PgRunLimits (its own leases, its own listener) on the one run: 150 tokens a
        // call, a cap of 3,000 tokens is reached after 20 calls across both. Without the shared limits each
        // worker counts nothing (its guardrails have no cap) and all 200 items run.
        const config = RunLimits.configOf(Guardrails.make({ concurrency: 8, maxTotalTokens: 3_000 }))
        const shared = (owner: string) =>
          worker(runId, items, owner).pipe(Effect.provide(PgRunLimits.layer(config, { name: runId })))
        const summaries = yield* Effect.all([shared("w1"), shared("w2")], { concurrency: "unbounded" }).pipe(
          Effect.provide(layer)
        )
        const calls = (yield* fake.calls).length
        // The cap bound the whole run: 20 calls reach it, and at most the 16 in flight then (8 a worker) finish.
        expect(calls).toBeGreaterThanOrEqual(20)
        expect(calls).toBeLessThanOrEqual(20 + 16)
        for (const s of summaries) expect(s.termination).toMatchObject({ kind: "budget_exceeded" })
        const status = yield* PgBatchRun.status(runId)
        expect(status.stop).toMatchObject({ kind: "budget_exceeded" })
        expect(status.items.done).toBe(200)
        const perItem = yield* sql<{ readonly n: number }>`SELECT count(*)::int AS n FROM rein_batch_records
          WHERE run_id = ${runId} GROUP BY item_id`
        expect(perItem.length).toBe(200)
        expect(perItem.every((r) => r.n === 1)).toBe(true)
        const totals = yield* sql<{ readonly tokens: number }>`SELECT tokens::float8 AS tokens FROM rein_run_limits
          WHERE name = ${runId}`
        expect(totals[0]!.tokens).toBe(calls * 150)
      }))

    it.effect("a changed input runs again; a worker whose source differs fails naming the item", () =>
      Effect.gen(function*() {
        const runId = fresh("input")
        const items = itemsOf(20, [])
        yield* startRun(runId, items)
        const { layer } = fakeRein(0)
        yield* worker(runId, items, "w1").pipe(Effect.provide(layer))
        const changed = items.map((item, i) => i === 7 ? { ...item, text: "another text" } : item)
        const again = yield* startRun(runId, changed)
        expect(again.session).toBe("restarted")
        const status = yield* PgBatchRun.status(runId)
        expect(status.items.pending).toBe(1)
        // (w2's leases last 1 ms: once it failed, w3 takes item 7 over at once.)
        const error = yield* Effect.flip(worker(runId, items, "w2", { leaseMillis: 1 }).pipe(Effect.provide(layer)))
        expect(error._tag).toBe("PgBatchError")
        expect(error).toMatchObject({ reason: "InputMismatch", itemId: "item-00007" })
        const ok = yield* worker(runId, changed, "w3").pipe(Effect.provide(layer))
        expect(ok.stats.succeeded).toBe(1)
      }))

    it.effect("each terminal record is serialised once: the group's statement holds the text its check made", () =>
      Effect.gen(function*() {
        const runId = fresh("once")
        const items = itemsOf(30, [])
        yield* startRun(runId, items)
        const { layer } = fakeRein(0)
        // Every JSON.stringify of a record, directly or inside the group's rows (as `record` of each row).
        const isRecord = (u: unknown) =>
          typeof u === "object" && u !== null && "kind" in u && u.kind === "item" && "itemId" in u
        const serialised = new Map<string, number>()
        const count = (u: unknown) => {
          if (isRecord(u)) {
            serialised.set(
              String((u as { itemId: unknown }).itemId),
              (serialised.get(String((u as { itemId: unknown }).itemId)) ?? 0) + 1
            )
          }
        }
        const stringify = JSON.stringify
        const spy = vi.spyOn(JSON, "stringify").mockImplementation((...args: Parameters<typeof JSON.stringify>) => {
          const [value] = args
          count(value)
          if (Array.isArray(value)) {
            for (const row of value) {
              if (typeof row === "object" && row !== null) count((row as { record?: unknown }).record)
            }
          }
          return stringify(...args)
        })
        const summary = yield* worker(runId, items, "w1").pipe(
          Effect.provide(layer),
          Effect.ensuring(Effect.sync(() => spy.mockRestore()))
        )
        expect(summary.stats.succeeded).toBe(30)
        expect(serialised.size).toBe(30)
        expect([...serialised.values()].every((n) => n === 1)).toBe(true)
        const status = yield* PgBatchRun.status(runId)
        expect(status.items.done).toBe(30)
      }))

    it.effect("a lease or heartbeat longer than the longest timer (2^31 - 1 ms) is refused, naming the field", () =>
      Effect.gen(function*() {
        const runId = fresh("timings")
        const items = itemsOf(2, [])
        yield* startRun(runId, items)
        const { fake, layer } = fakeRein(0)
        // A heartbeat of 2^31 ms would never fire (Effect treats a longer timer as infinite): the leases would
        // lapse under a live worker. A lease of 1e300 ms is no interval PostgreSQL holds.
        for (
          const [extra, field] of [
            [{ heartbeatMillis: 2 ** 31 }, "heartbeatMillis"],
            [{ leaseMillis: 1e300, heartbeatMillis: undefined }, "leaseMillis"],
            [{ leaseMillis: -1 }, "leaseMillis"],
            [{ heartbeatMillis: Number.NaN }, "heartbeatMillis"]
          ] as const
        ) {
          const error = yield* Effect.flip(worker(runId, items, "w1", extra).pipe(Effect.provide(layer)))
          expect(error).toMatchObject({ _tag: "PgBatchError", reason: "InvalidInput" })
          expect(error.message).toMatch(new RegExp(`^${field}: `))
        }
        expect((yield* fake.calls).length).toBe(0)
        const ok = yield* worker(runId, items, "w2", { leaseMillis: 2 ** 31 - 1 }).pipe(Effect.provide(layer))
        expect(ok.stats.succeeded).toBe(2)
      }))

    it.effect("a worker that fails gives its leases back as it leaves: another takes the items at once", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const runId = fresh("failed")
        const items = itemsOf(20, [])
        yield* startRun(runId, items)
        const { layer } = fakeRein(0)
        // A shorter copy of the input (as `rein worker --input` with a truncated file): item 5 is not there.
        const short = (index: number) =>
          index < 5 ? Effect.succeed(items[index]!) : Effect.fail(new Error(`no item at index ${index}`))
        const error = yield* Effect.flip(worker(runId, items, "w1", { item: short }).pipe(Effect.provide(layer)))
        expect(error).toEqual(new Error("no item at index 5"))
        const held = yield* sql<{ readonly n: number }>`SELECT count(*)::int AS n FROM rein_batch_items
          WHERE run_id = ${runId} AND state = 'leased'`
        expect(held[0]!.n).toBe(0)
        yield* worker(runId, items, "w2").pipe(Effect.provide(layer))
        expect((yield* PgBatchRun.status(runId)).items.done).toBe(20)
      }))

    it.effect("a worker that fails on its source: no item it called is called again by the next (no double spend)", () =>
      Effect.gen(function*() {
        // The source fails in the first group leased (index 5 of 0-7) or in a later one (index 10), while
        // the first group's calls are in flight.
        for (const missing of [5, 10]) {
          const runId = fresh("source")
          const items = itemsOf(20, [])
          yield* startRun(runId, items)
          const short = (index: number) =>
            index < missing ? Effect.succeed(items[index]!) : Effect.fail(new Error(`no item at index ${index}`))
          const first = fakeRein(200)
          const error = yield* Effect.flip(
            worker(runId, items, "w1", { item: short }).pipe(Effect.provide(first.layer))
          )
          expect(error).toEqual(new Error(`no item at index ${missing}`))
          const second = fakeRein(0)
          const w2 = yield* worker(runId, items, "w2").pipe(Effect.provide(second.layer))
          expect((yield* PgBatchRun.status(runId)).items.done).toBe(20)
          const called = [(yield* first.fake.calls).length, (yield* second.fake.calls).length]
          // Every call the first made ended in a record the second reused: 20 calls in all.
          expect({ missing, called: called[0]! + called[1]!, second: w2.stats.succeeded }).toEqual({
            missing,
            called: 20,
            second: 20 - called[0]!
          })
        }
      }))

    it.effect("a worker interrupted (Ctrl-C) gives back the leases it holds once its calls ended", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const runId = fresh("interrupted")
        const items = itemsOf(20, [])
        yield* startRun(runId, items)
        const leased = sql<{ readonly n: number }>`SELECT count(*)::int AS n FROM rein_batch_items
          WHERE run_id = ${runId} AND state = 'leased'`.pipe(Effect.map((rows) => rows[0]!.n), Effect.orDie)
        // Calls that never answer: the worker holds its leases until it is interrupted.
        const fiber = yield* Effect.fork(worker(runId, items, "w1").pipe(Effect.provide(fakeRein(3_600_000).layer)))
        while ((yield* leased) === 0) yield* Effect.sleep("5 millis")
        yield* Fiber.interrupt(fiber)
        expect(yield* leased).toBe(0)
        expect((yield* PgBatchRun.status(runId)).items).toEqual({ total: 20, pending: 20, leased: 0, done: 0 })
      }))

    it.effect("an id longer than the database's keys hold fails the start as InvalidInput, naming it; nothing submitted", () =>
      Effect.gen(function*() {
        // Ids no compression shortens (from a seeded generator): the database's index rows hold ~2.7 KB.
        let seed = 42
        const noise = (n: number) =>
          Array.from({ length: n }, () => {
            seed = (seed * 1103515245 + 12345) % 2147483648
            return String.fromCharCode(97 + (seed % 26))
          }).join("")
        const runId = fresh("long-id")
        // (3000 bytes: the database refused it, "index row size … exceeds btree maximum", as Unavailable)
        for (const bytes of [3000, PgBatchRun.MAX_ITEM_ID_BYTES + 1]) {
          const items = [...itemsOf(3, []), { id: noise(bytes), text: "x" }]
          const error = yield* Effect.flip(startRun(runId, items))
          expect(error).toMatchObject({ _tag: "PgBatchError", reason: "InvalidInput", index: 3 })
          expect(error.message).toBe(
            `the id of item 3 (item 3) is ${bytes} bytes: an item id in a shared run holds at most ${PgBatchRun.MAX_ITEM_ID_BYTES}`
          )
          expect(yield* Effect.flip(PgBatchRun.status(runId))).toMatchObject({ reason: "NotFound" })
        }
        // At the bound, it is taken.
        const fits = [...itemsOf(3, []), { id: noise(PgBatchRun.MAX_ITEM_ID_BYTES), text: "x" }]
        expect((yield* startRun(runId, fits)).items).toBe(4)
        for (const bytes of [3000, PgBatchRun.MAX_RUN_ID_BYTES + 1]) {
          expect(yield* Effect.flip(startRun(noise(bytes), itemsOf(1, [])))).toMatchObject({
            reason: "InvalidInput",
            message: `the run id is ${bytes} bytes: a run id holds at most ${PgBatchRun.MAX_RUN_ID_BYTES}`
          })
        }
        // A blank run id (`rein batch --run ""`) started a run nobody could name.
        for (const blank of ["", "  "]) {
          expect(yield* Effect.flip(startRun(blank, itemsOf(1, [])))).toMatchObject({
            reason: "InvalidInput",
            message: "the run id is blank: a run id names the run its workers join"
          })
        }
        // The longest run id, with a hard budget: its session's shared names hold it, and its worker runs.
        const longest = noise(PgBatchRun.MAX_RUN_ID_BYTES)
        const one = itemsOf(1, [])
        yield* PgBatchRun.start({
          runId: longest,
          identity,
          resume: "reuse-successes",
          items: one,
          request,
          itemId: (item) => item.id,
          contract,
          budget: { cost: 1 }
        })
        const summary = yield* worker(longest, one, "w1").pipe(
          Effect.provide(PgBatchRun.sharedLimits(longest)),
          Effect.provide(fakeRein(0).layer)
        )
        expect(summary.stats.succeeded).toBe(1)
      }))

    it.effect("a worker of another identity is refused", () =>
      Effect.gen(function*() {
        const runId = fresh("identity")
        const items = itemsOf(3, [])
        yield* startRun(runId, items)
        const other = Identity.make({ ...identity, promptVersion: "p2" })
        const error = yield* Effect.flip(
          worker(runId, items, "w1", { identity: other }).pipe(Effect.provide(fakeRein(0).layer))
        )
        expect(error).toMatchObject({ _tag: "PgBatchError", reason: "IdentityMismatch" })
      }))

    it.effect("the fence: a writer whose lease was taken over never writes; each item has at most one record", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        // Operations on one item by three holders: lease (expired at once, or live), and a finish with the
        // holder's last token. The model: a finish is written iff it carries the item's current token and the
        // item is not done; a lease is granted iff the item is pending or its lease expired.
        const op = fc.oneof(
          fc.record({
            kind: fc.constant("lease" as const),
            who: fc.integer({ min: 0, max: 2 }),
            expired: fc.boolean()
          }),
          fc.record({ kind: fc.constant("finish" as const), who: fc.integer({ min: 0, max: 2 }) })
        )
        yield* Effect.promise(() =>
          fc.assert(
            fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 12 }), (ops) =>
              Effect.runPromise(
                Effect.gen(function*() {
                  const runId = fresh("fence")
                  yield* startRun(runId, itemsOf(1, []))
                  const tokens: Array<string | undefined> = [undefined, undefined, undefined]
                  let current: string | undefined
                  let expired = false
                  let done = false
                  let written = 0
                  for (const o of ops) {
                    const owner = `h${o.who}`
                    if (o.kind === "lease") {
                      const rows = yield* Q.lease(sql, runId, owner, 1, o.expired ? -1_000 : 60_000, true)
                      const granted = !done && (current === undefined || expired)
                      expect(rows.length).toBe(granted ? 1 : 0)
                      if (rows.length === 1) {
                        tokens[o.who] = current = rows[0]!.lease_token
                        expired = o.expired
                      }
                    } else {
                      const token = tokens[o.who]
                      if (token === undefined) continue
                      const record = JSON.stringify({ kind: "item", itemId: "item-00000" })
                      const rows = yield* Q.finish(sql, runId, [{ itemId: "item-00000", token, record }])
                      const accepted = !done && token === current
                      expect(rows.length).toBe(accepted ? 1 : 0)
                      if (accepted) {
                        done = true
                        written++
                      }
                    }
                  }
                  const records = yield* sql<{ readonly n: number }>`SELECT count(*)::int AS n FROM rein_batch_records
                  WHERE run_id = ${runId}`
                  expect(records[0]!.n).toBe(written)
                  expect(written).toBeLessThanOrEqual(1)
                }).pipe(Effect.provideService(SqlClient.SqlClient, sql))
              )),
            { numRuns: 60, seed: 19 }
          )
        )
      }))

    it.effect("the caps recorded when the run starts are shared by its workers (PgBatchRun.sharedLimits)", () =>
      Effect.gen(function*() {
        const runId = fresh("run-caps")
        const items = itemsOf(200, [])
        // 150 tokens a call: the soft cap of 3,000 tokens is reached after 20 calls across both workers, and
        // the hard budget of 60 calls is never reached.
        yield* PgBatchRun.start({
          runId,
          identity,
          resume: "reuse-successes",
          items,
          request,
          itemId: (item) => item.id,
          contract,
          guardrails: Guardrails.make({ maxTotalTokens: 3_000, requestsPerMinute: 6_000 }),
          budget: { calls: 60 }
        })
        expect(yield* PgBatchRun.caps(runId)).toEqual({
          maxTotalTokens: 3_000,
          maxTotalCost: undefined,
          requestsPerMinute: 6_000,
          tokensPerMinute: undefined,
          budget: { calls: 60 }
        })
        const { fake, layer } = fakeRein(2)
        // Each worker has its own layer (its own leases and listener), and no cap in its own guardrails.
        const shared = (owner: string) =>
          worker(runId, items, owner).pipe(Effect.provide(PgBatchRun.sharedLimits(runId)))
        const summaries = yield* Effect.all([shared("w1"), shared("w2")], { concurrency: "unbounded" }).pipe(
          Effect.provide(layer)
        )
        const calls = (yield* fake.calls).length
        expect(calls).toBeGreaterThanOrEqual(20)
        expect(calls).toBeLessThanOrEqual(20 + 16)
        for (const s of summaries) expect(s.termination).toMatchObject({ kind: "budget_exceeded" })
        const sql = yield* SqlClient.SqlClient
        const limits = yield* sql<{ readonly tokens: number }>`SELECT tokens::float8 AS tokens FROM rein_run_limits
          WHERE name LIKE ${`rein-batch/${runId}/%`}`
        expect(limits.map((r) => r.tokens)).toEqual([calls * 150])
        const budgets = yield* sql<{ readonly calls: number }>`SELECT calls_cap::float8 AS calls FROM rein_budgets
          WHERE name LIKE ${`rein-batch/${runId}/%`}`
        expect(budgets.map((r) => r.calls)).toEqual([60])
      }))

    it.effect("a hard budget recorded with the run holds across workers: at most that many calls in all", () =>
      Effect.gen(function*() {
        const runId = fresh("run-budget")
        const items = itemsOf(100, [])
        yield* PgBatchRun.start({
          runId,
          identity,
          resume: "reuse-successes",
          items,
          request,
          itemId: (item) => item.id,
          contract,
          budget: { calls: 25 }
        })
        const { fake, layer } = fakeRein(2)
        const shared = (owner: string) =>
          worker(runId, items, owner).pipe(Effect.provide(PgBatchRun.sharedLimits(runId)))
        const summaries = yield* Effect.all([shared("w1"), shared("w2")], { concurrency: "unbounded" }).pipe(
          Effect.provide(layer)
        )
        // Each worker alone could have made all 25; together they made at most 25 (the rest refused without a
        // call; a reservation the loaded database did not answer in time is refused too, so not always 25).
        const calls = (yield* fake.calls).length
        expect(calls).toBeGreaterThan(0)
        expect(calls).toBeLessThanOrEqual(25)
        expect(summaries.reduce((n, s) => n + s.stats.succeeded, 0)).toBe(calls)
        const status = yield* PgBatchRun.status(runId)
        expect(status.items.done).toBe(100)
        expect(status.byCategory["ok"]).toBe(calls)
        // No soft cap and no rate: nothing shared but the budget, and no totals kept.
        const sql = yield* SqlClient.SqlClient
        const limits = yield* sql`SELECT name FROM rein_run_limits WHERE name LIKE ${`rein-batch/${runId}/%`}`
        expect(limits).toEqual([])
      }))

    it.effect("sharedLimits of an unknown run fails with NotFound", () =>
      Effect.gen(function*() {
        const error = yield* Effect.flip(Layer.build(PgBatchRun.sharedLimits("no-such-run")).pipe(Effect.scoped))
        expect(error).toMatchObject({ _tag: "PgBatchError", reason: "NotFound" })
      }))

    it.effect("a deadline that passed with no worker alive: status records the batch timeout, at the deadline", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const runId = fresh("late")
        const items = itemsOf(20, [])
        yield* PgBatchRun.start({
          runId,
          identity,
          resume: "reuse-successes",
          items,
          request,
          itemId: (item) => item.id,
          contract,
          guardrails: Guardrails.make({ batchDeadline: "1 hour" })
        })
        const before = yield* PgBatchRun.status(runId)
        expect(before.status).toBe("running")
        expect(before.stoppedAt).toBeNull()
        // Two hours ago on the database clock (no waiting): the deadline passed an hour ago, nobody saw it.
        yield* sql`UPDATE rein_batch_runs SET started_at = started_at - interval '2 hours' WHERE run_id = ${runId}`
        const [row] = yield* sql<{ readonly stop: unknown; readonly deadline_at: string }>`SELECT stop,
          to_char((started_at + interval '1 hour') AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS deadline_at
          FROM rein_batch_runs WHERE run_id = ${runId}`
        expect(row!.stop).toBeNull()
        const status = yield* PgBatchRun.status(runId)
        expect(status.status).toBe("stopped")
        expect(status.stop).toEqual({
          _tag: "BatchTimeout",
          kind: "batch_timeout",
          reason: "the batch deadline of 3600000 ms expired"
        })
        expect(status.stoppedAt).toBe(row!.deadline_at)
        // Read again: the same stop, the same time.
        const again = yield* PgBatchRun.status(runId)
        expect([again.stop, again.stoppedAt]).toEqual([status.stop, status.stoppedAt])
        // A worker that comes later gives every item the stop's record, without a call.
        const { fake, layer } = fakeRein(2)
        const s = yield* worker(runId, items, "late").pipe(Effect.provide(layer))
        expect(s.swept).toBe(20)
        expect((yield* fake.calls).length).toBe(0)
        expect((yield* PgBatchRun.status(runId)).byCategory).toEqual({ batch_deadline_exceeded: 20 })
      }))

    it.effect("a run whose items were all done before the deadline is not recorded as timed out by status", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const runId = fresh("done-late")
        const items = itemsOf(5, [])
        yield* PgBatchRun.start({
          runId,
          identity,
          resume: "reuse-successes",
          items,
          request,
          itemId: (item) => item.id,
          contract,
          guardrails: Guardrails.make({ batchDeadline: "1 hour" })
        })
        const { layer } = fakeRein(2)
        yield* worker(runId, items, "w").pipe(Effect.provide(layer))
        // As if the last worker was killed after its last record, before it marked the run finished; then the
        // deadline passes with nobody alive.
        yield* sql`UPDATE rein_batch_runs SET status = 'running', started_at = started_at - interval '2 hours'
          WHERE run_id = ${runId}`
        const status = yield* PgBatchRun.status(runId)
        expect(status.stop).toBeNull()
        expect(status.status).toBe("finished")
        expect(status.items.done).toBe(5)
        expect(status.byCategory).toEqual({ ok: 5 })
      }))

    it.effect("status reads with a role that may not write", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const runId = fresh("ro")
        const items = itemsOf(3, [])
        yield* PgBatchRun.start({
          runId,
          identity,
          resume: "reuse-successes",
          items,
          request,
          itemId: (item) => item.id,
          contract,
          guardrails: Guardrails.make({ batchDeadline: "1 hour" })
        })
        yield* sql`UPDATE rein_batch_runs SET started_at = started_at - interval '2 hours' WHERE run_id = ${runId}`
        const status = yield* sql.withTransaction(
          Effect.zipRight(sql`SET TRANSACTION READ ONLY`, PgBatchRun.status(runId))
        )
        expect(status.status).toBe("running")
        expect(status.items.pending).toBe(3)
      }))

    it.effect("a worker that finds the deadline passed records the stop at the deadline, not when it looked", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const runId = fresh("late-worker")
        const items = itemsOf(10, [])
        yield* PgBatchRun.start({
          runId,
          identity,
          resume: "reuse-successes",
          items,
          request,
          itemId: (item) => item.id,
          contract,
          guardrails: Guardrails.make({ batchDeadline: "1 hour" })
        })
        yield* sql`UPDATE rein_batch_runs SET started_at = started_at - interval '2 hours' WHERE run_id = ${runId}`
        const { layer } = fakeRein(2)
        const s = yield* worker(runId, items, "w").pipe(Effect.provide(layer))
        expect(s.termination).toMatchObject({ kind: "batch_timeout" })
        const [row] = yield* sql<
          { readonly exact: boolean }
        >`SELECT stopped_at = started_at + interval '1 hour' AS exact
          FROM rein_batch_runs WHERE run_id = ${runId}`
        expect(row!.exact).toBe(true)
      }))
  })
})
