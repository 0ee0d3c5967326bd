// How `PgBatchRun.start` submits a run's items: a chunk at a time (the process never holds them all), two
// items with one id found by the database (named with both places, nothing submitted), and a run joined or
// started again as before.
import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Layer, Stream } from "effect"
import * as fc from "effect/FastCheck"
import { Migrations, PgBatchRun } from "../src/index.js"
import { identity, itemsOf, request } from "./fixtures/batch-items.js"
import type { Item } from "./fixtures/batch-items.js"
import { available, fresh, PgLive } from "./pg.js"

const Live = Layer.tap(PgLive, (ctx) => Effect.provide(Migrations.run, ctx))

const options = <E = never>(runId: string, items: Iterable<Item> | Stream.Stream<Item, E>, submitChunk?: number) => ({
  runId,
  identity,
  resume: "reuse-successes" as const,
  items,
  request,
  itemId: (item: Item) => item.id,
  submitChunk
})

// The run's item rows, as a joining start must leave them when it is refused.
const rowsOf = (sql: SqlClient.SqlClient, runId: string) =>
  sql`SELECT item_id, idx, input_fingerprint, prompt_fingerprint, state FROM rein_batch_items
    WHERE run_id = ${runId} ORDER BY item_id`

// The first repeated id in submission order (the earliest second occurrence): what `start` must name.
const firstDuplicate = (ids: ReadonlyArray<string>) => {
  const seen = new Map<string, number>()
  for (let j = 0; j < ids.length; j++) {
    const i = seen.get(ids[j]!)
    if (i !== undefined) return { id: ids[j]!, firstIndex: i, index: j }
    seen.set(ids[j]!, j)
  }
  return undefined
}

describe.skipIf(!available)("submitting a run's items (PgBatchRun.start)", () => {
  layer(Live, { timeout: "120 seconds", excludeTestServices: true })((it) => {
    it.effect.prop(
      "two items with one id: refused naming the id and both indexes, whatever the chunks; nothing submitted",
      {
        ids: fc.array(fc.integer({ min: 0, max: 30 }), { minLength: 1, maxLength: 40 }),
        chunk: fc.integer({ min: 1, max: 7 })
      },
      ({ chunk, ids }) =>
        Effect.gen(function*() {
          const runId = fresh("dup")
          const items = ids.map((n, i) => ({ id: `id-${n}`, text: `text ${i}` }))
          const expected = firstDuplicate(items.map((item) => item.id))
          const exit = yield* Effect.either(
            PgBatchRun.start({ ...options(runId, items, chunk), where: (_, i) => `line ${i + 1}` })
          )
          if (expected === undefined) {
            expect(exit._tag).toBe("Right")
            expect((yield* PgBatchRun.status(runId)).items.total).toBe(items.length)
            return
          }
          expect(exit._tag).toBe("Left")
          if (exit._tag === "Right") return
          expect(exit.left).toMatchObject({
            _tag: "PgBatchError",
            reason: "InvalidInput",
            itemId: expected.id,
            index: expected.index,
            firstIndex: expected.firstIndex
          })
          expect(exit.left.message).toBe(
            `two items have the id ${JSON.stringify(expected.id)}: line ${expected.firstIndex + 1} and line ${
              expected.index + 1
            }`
          )
          // The transaction rolled back: no run, no item.
          const error = yield* Effect.flip(PgBatchRun.status(runId))
          expect(error.reason).toBe("NotFound")
        }),
      { fastCheck: { numRuns: 40, seed: 19 } }
    )

    it.effect("a duplicate against a run already submitted is no duplicate: joining adds only what is new", () =>
      Effect.gen(function*() {
        const runId = fresh("join")
        const items = itemsOf(50, [])
        expect(yield* PgBatchRun.start(options(runId, items.slice(0, 30), 7))).toMatchObject({
          session: "created",
          items: 30
        })
        expect(yield* PgBatchRun.start(options(runId, items, 7))).toMatchObject({ session: "joined", items: 50 })
        expect((yield* PgBatchRun.status(runId)).items).toEqual({ total: 50, pending: 50, leased: 0, done: 0 })
        // A repeated id in the joining submission is still refused, and the run keeps what it had.
        const error = yield* Effect.flip(PgBatchRun.start(options(runId, [...items, items[40]!], 7)))
        expect(error).toMatchObject({ reason: "InvalidInput", itemId: "item-00040", index: 50, firstIndex: 40 })
        expect((yield* PgBatchRun.status(runId)).items.total).toBe(50)
      }))

    it.effect("start holds one chunk of the items at a time: each chunk is in the database before the next is read", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const runId = fresh("bounded")
        const n = 20_000
        const chunk = 2_000
        // Each item, when it is read, looks how many are in the database already, in the submission `start`
        // reads them into (the same transaction: the source is read inside `start`'s). What was read and is not
        // yet there is what `start` holds.
        let held = 0
        const items = Stream.range(0, n - 1, 1).pipe(
          Stream.mapEffect((i) =>
            Effect.map(
              i % 100 === 0
                ? sql<{ readonly n: number }>`SELECT count(*)::int AS n FROM pg_temp.rein_submission`
                : Effect.succeed([{ n: i }]),
              (rows) => {
                held = Math.max(held, i - rows[0]!.n)
                return { id: `item-${i}`, text: `text ${i}` }
              }
            )
          )
        )
        const started = yield* PgBatchRun.start(options(runId, items, chunk))
        expect(started).toEqual({ runId, session: "created", items: n, reopened: 0 })
        expect(held).toBeLessThan(chunk)
        expect(held).toBeGreaterThan(0)
        expect((yield* PgBatchRun.status(runId)).items.total).toBe(n)
      }))

    it.effect("a new run's session starts once its items are submitted: the deadline does not count the submission", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const runId = fresh("started")
        // The last item is read after a pause: the database clock then, read in `start`'s own transaction.
        let lastRead = ""
        const items = Stream.range(0, 4_999, 1).pipe(
          Stream.mapEffect((i) =>
            i < 4_999 ? Effect.succeed({ id: `item-${i}`, text: `text ${i}` }) : Effect.map(
              Effect.zipRight(
                sql`SELECT pg_sleep(0.2)`,
                sql<{ readonly at: string }>`SELECT to_char(clock_timestamp() AT TIME ZONE 'UTC',
                  'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS at`
              ),
              (rows) => {
                lastRead = rows[0]!.at
                return { id: `item-${i}`, text: `text ${i}` }
              }
            )
          )
        )
        yield* PgBatchRun.start(options(runId, items, 1_000))
        const status = yield* PgBatchRun.status(runId)
        expect(status.startedAt >= lastRead).toBe(true)
        expect(status.createdAt < lastRead).toBe(true)
      }))

    it.effect("an item with no fingerprint is submitted with the input fingerprint none; the others with theirs", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const runId = fresh("nofp")
        const items = [{ id: "a", text: "x" }, { id: "b", text: "y" }, { id: "c", text: "z" }]
        const started = yield* PgBatchRun.start({
          ...options(runId, items, 1),
          input: (item: Item) => item.id === "c" ? Number.NaN : item.text
        })
        expect(started.items).toBe(3)
        const rows = yield* rowsOf(sql, runId)
        expect(rows.map((r) => [r.item_id, r.input_fingerprint === "none"])).toEqual([
          ["a", false],
          ["b", false],
          ["c", true]
        ])
      }))

    it.effect("hostile items (an id not a string, a getter or a proxy that throws, null): a typed refusal naming the item, nothing staged", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const good = [{ id: "a", text: "x" }, { id: "b", text: "y" }]
        const throwing = Object.defineProperty({ id: "t" }, "text", {
          enumerable: true,
          get: () => {
            throw new Error("a getter that throws")
          }
        }) as Item
        const proxy = new Proxy({ id: "p", text: "z" }, {
          ownKeys: () => {
            throw new Error("a proxy that throws")
          }
        })
        const hostile: ReadonlyArray<readonly [Item, RegExp]> = [
          [{ id: 5, text: "n" } as unknown as Item, /^the id of item 2 \(item 2\) is a number, not a string$/],
          [
            { id: Symbol("s"), text: "s" } as unknown as Item,
            /^the id of item 2 \(item 2\) is a symbol, not a string$/
          ],
          [throwing, /^item 2: its id, request or fingerprints cannot be computed: a getter that throws$/],
          [proxy, /^item 2: its id, request or fingerprints cannot be computed: a proxy that throws$/],
          [null as unknown as Item, /^item 2: its id, request or fingerprints cannot be computed: /]
        ]
        for (const [item, message] of hostile) {
          const runId = fresh("hostile")
          const exit = yield* Effect.either(PgBatchRun.start(options(runId, [...good, item], 10)))
          expect(exit).toMatchObject({ _tag: "Left", left: { _tag: "PgBatchError", reason: "InvalidInput", index: 2 } })
          if (exit._tag === "Left") expect(exit.left.message).toMatch(message)
          expect(yield* rowsOf(sql, runId)).toEqual([])
        }
      }))

    // A run's items keep the order of their first submission: a joining start that reorders them is refused,
    // naming the first item out of order with its index now and on record, and the run is left as it was.
    it.effect.prop(
      "a join that reorders the items: refused naming the first item out of order, both indexes; nothing changed",
      {
        order: fc.shuffledSubarray(Array.from({ length: 12 }, (_, i) => i), { minLength: 12, maxLength: 12 }),
        chunk: fc.integer({ min: 1, max: 5 }),
        changed: fc.integer({ min: 0, max: 11 })
      },
      ({ changed, chunk, order }) =>
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          const runId = fresh("reorder")
          const items = itemsOf(12, [])
          yield* PgBatchRun.start(options(runId, items, chunk))
          const before = yield* rowsOf(sql, runId)
          // The same ids in another order, one of them with a changed input (an update the rollback must undo).
          const joining = order.map((i) => i === changed ? { ...items[i]!, text: "changed" } : items[i]!)
          const moved = order.findIndex((i, at) => i !== at)
          const exit = yield* Effect.either(PgBatchRun.start({ ...options(runId, joining, chunk) }))
          if (moved === -1) {
            expect(exit).toMatchObject({ _tag: "Right", right: { session: "joined", items: 12 } })
            return
          }
          expect(exit._tag).toBe("Left")
          if (exit._tag === "Right") return
          const id = items[order[moved]!]!.id
          expect(exit.left).toMatchObject({
            _tag: "PgBatchError",
            reason: "InvalidInput",
            itemId: id,
            index: moved,
            recordedIndex: order[moved]
          })
          expect(exit.left.message).toBe(
            `item ${JSON.stringify(id)} is at index ${moved} of this submission but at index ${order[moved]} of run ${
              JSON.stringify(runId)
            }: a run's items keep the order of their first submission (each worker finds an item in its source by ` +
              `its index); submit them in that order, new items after them`
          )
          expect(yield* rowsOf(sql, runId)).toEqual(before)
        }),
      { fastCheck: { numRuns: 30, seed: 19 } }
    )

    it.effect("a join with a new item where the run has another is refused naming both; nothing changed", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const runId = fresh("taken")
        const items = itemsOf(6, [])
        yield* PgBatchRun.start(options(runId, items, 2))
        const before = yield* rowsOf(sql, runId)
        const joining = [...items.slice(0, 3), { id: "new", text: "new" }, ...items.slice(3)]
        const error = yield* Effect.flip(
          PgBatchRun.start({ ...options(runId, joining, 2), where: (_, i) => `line ${i + 1}` })
        )
        expect(error).toMatchObject({ reason: "InvalidInput", itemId: "new", index: 3 })
        expect(error.message).toContain(
          `item "new" (line 4) is new at index 3 of this submission, but run ${JSON.stringify(runId)} has item ` +
            `"item-00003" there`
        )
        expect(yield* rowsOf(sql, runId)).toEqual(before)
        // In the run's order, new items after: joined.
        expect(yield* PgBatchRun.start(options(runId, [...items, { id: "new", text: "new" }], 2))).toMatchObject({
          session: "joined",
          items: 7
        })
      }))
  })
})
