// Reading PgArtifactStore's artifact in bounded memory, against a real PostgreSQL: every statement of a read
// returns at most one page of rows, the stream gives the records `read` gives (the order written, the same
// decoded records) for any page size, and its errors are the store's typed ones.
import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { ArtifactStore, Identity } from "@rein/batch"
import { Chunk, Effect, FastCheck as fc, Layer, Stream } from "effect"
import { Migrations, PgArtifactStore } from "../src/index.js"
import * as R from "../src/internal/artifactRead.js"
import { available, fresh, PgLive } from "./pg.js"

const Live = Layer.tap(PgLive, (ctx) => Effect.provide(Migrations.run, ctx))

const identity = Identity.make({
  provider: "fake",
  model: "m",
  promptVersion: "p1",
  parserVersion: "j1",
  applicationVersion: "a1"
})

const record = (i: number): ArtifactStore.ItemRecord => ({
  kind: "item",
  itemId: `item-${i}`,
  index: i,
  promptFingerprint: "sha256:p",
  inputFingerprint: `sha256:${i}`,
  identityFingerprint: "sha256:id",
  outcome: i % 3 === 0 ? "failure" : "success",
  category: i % 3 === 0 ? "server_error" : "ok",
  reusable: true,
  usage: { inputTokens: i, outputTokens: 1 },
  cost: i / 100,
  attempts: 1,
  durationMillis: 5,
  result: { i }
})

/** A run of `n` records written in one statement (appending them one by one takes a round trip each). */
const runOf = (n: number, raw: (i: number) => unknown = record) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const runId = fresh("read")
    const store = yield* PgArtifactStore.make({ runId })
    yield* Effect.scoped(store.create(yield* ArtifactStore.makeManifest(identity)))
    const records = Array.from({ length: n }, (_, i) => raw(i))
    yield* sql`INSERT INTO rein_batch_records (run_id, item_id, record)
      SELECT ${runId}, 'item-' || (t.n - 1), t.r FROM jsonb_array_elements(${JSON.stringify(records)}::jsonb)
      WITH ORDINALITY AS t(r, n) ORDER BY t.n`
    return { runId, records }
  })

/**
 * The client, whose reserved connections note the rows each statement returns: a read holds at most the
 * largest of them at a time.
 */
const counting = (sql: SqlClient.SqlClient) => {
  const rows: Array<number> = []
  const counted = new Proxy(sql, {
    get: (target, key) =>
      key === "reserve"
        ? Effect.map(target.reserve, (conn) =>
          new Proxy(conn, {
            get: (c, k) =>
              k === "execute"
                ? (...args: Parameters<typeof c.execute>) =>
                  Effect.tap(c.execute(...args), (result) =>
                    Effect.sync(() => {
                      // Not the transaction's own statements (they return nothing).
                      if (!/^(BEGIN|COMMIT)/.test(args[0])) rows.push(result.length)
                    }))
                : Reflect.get(c, k)
          }))
        : Reflect.get(target, key)
  })
  return { counted, rows }
}

describe.skipIf(!available)("reading PgArtifactStore's artifact a page at a time", () => {
  layer(Live, { timeout: "120 seconds", excludeTestServices: true })((it) => {
    it.effect("read of 2,500 records: the records in the order written, no statement returning more than a page", () =>
      Effect.gen(function*() {
        const { records, runId } = yield* runOf(2_500)
        const { counted, rows } = counting(yield* SqlClient.SqlClient)
        const store = yield* PgArtifactStore.make({ runId }).pipe(Effect.provideService(SqlClient.SqlClient, counted))
        const contents = yield* store.read
        expect(contents.records).toEqual(records)
        // The run row, then three pages (1,000, 1,000, 500).
        expect(rows).toEqual([1, R.PAGE_SIZE, R.PAGE_SIZE, 500])
        // Opening for appends reads the same way, and gives the same records.
        const existing: Array<ArtifactStore.ItemRecord> = []
        yield* Effect.scoped(store.resume((record) => void existing.push(record)))
        expect(existing).toEqual(records)
        expect(Math.max(...rows)).toBe(R.PAGE_SIZE)
      }))

    it.effect("stream of 2,500 records: taking 10 reads one page", () =>
      Effect.gen(function*() {
        const { records, runId } = yield* runOf(2_500)
        const { counted, rows } = counting(yield* SqlClient.SqlClient)
        const store = yield* PgArtifactStore.make({ runId }).pipe(Effect.provideService(SqlClient.SqlClient, counted))
        const first = yield* Effect.scoped(
          Effect.flatMap(store.stream, (s) => Stream.runCollect(Stream.take(s.records, 10)))
        )
        expect(Chunk.toReadonlyArray(first)).toEqual(records.slice(0, 10))
        expect(rows).toEqual([1, R.PAGE_SIZE])
      }))

    it.effect.prop(
      "for any page size the stream gives read's records, in pages of at most that size",
      { pageSize: fc.integer({ min: 1, max: 60 }), n: fc.integer({ min: 0, max: 130 }) },
      ({ n, pageSize }) =>
        Effect.gen(function*() {
          const { records, runId } = yield* runOf(n)
          const sql = yield* SqlClient.SqlClient
          const whole = yield* Effect.flatMap(PgArtifactStore.make({ runId }), (store) => store.read)
          const { counted, rows } = counting(sql)
          const pages = yield* Effect.scoped(Effect.gen(function*() {
            const snapshot = yield* R.open(counted, runId, pageSize)
            return yield* Stream.runCollect(Stream.chunks(snapshot!.records))
          }))
          const streamed = Chunk.toReadonlyArray(pages).flatMap((page) => Chunk.toReadonlyArray(page))
          expect(streamed).toEqual(whole.records)
          expect(streamed).toEqual(records)
          // The run row, then full pages and one short one (empty when n is a multiple of the size).
          expect(rows.slice(1)).toEqual([
            ...Array.from({ length: Math.floor(n / pageSize) }, () => pageSize),
            n % pageSize
          ])
        }),
      { fastCheck: { numRuns: 25 } }
    )

    it.effect("a record that does not decode, on a later page, is a format error naming its line", () =>
      Effect.gen(function*() {
        const { runId } = yield* runOf(7, (i) => i === 4 ? { kind: "item", itemId: "broken" } : record(i))
        const sql = yield* SqlClient.SqlClient
        const error = yield* Effect.flip(Effect.scoped(Effect.gen(function*() {
          const snapshot = yield* R.open(sql, runId, 2)
          return yield* Stream.runDrain(snapshot!.records)
        })))
        // Record 5 (index 4) is line 6: the manifest is line 1.
        expect(error).toMatchObject({ _tag: "ArtifactError", reason: "format", line: 6 })
        expect(error.message).toBe(`record 5 of run ${JSON.stringify(runId)} is not an item record`)
        const read = yield* Effect.flip(Effect.flatMap(PgArtifactStore.make({ runId }), (store) => store.read))
        expect(read).toMatchObject({ reason: "format", line: 6 })
      }))

    it.effect("the stream reads one snapshot: records written while it is read are not in it", () =>
      Effect.gen(function*() {
        const { records, runId } = yield* runOf(5)
        const sql = yield* SqlClient.SqlClient
        const streamed = yield* Effect.scoped(Effect.gen(function*() {
          const snapshot = yield* R.open(sql, runId, 2)
          const late = Effect.asVoid(sql`INSERT INTO rein_batch_records (run_id, item_id, record)
            VALUES (${runId}, 'late', ${JSON.stringify(record(99))}::jsonb)`)
          return yield* Stream.runCollect(Stream.tap(snapshot!.records, (r) => r.index === 0 ? late : Effect.void))
        }))
        expect(Chunk.toReadonlyArray(streamed)).toEqual(records)
        const after = yield* Effect.flatMap(PgArtifactStore.make({ runId }), (store) => store.read)
        expect(after.records).toEqual([...records, record(99)])
      }))

    it.effect("stream of no run fails with missing; records read after the scope closed fail with closed", () =>
      Effect.gen(function*() {
        const missing = yield* Effect.flip(
          Effect.scoped(Effect.flatMap(PgArtifactStore.make({ runId: fresh("none") }), (store) => store.stream))
        )
        expect(missing).toMatchObject({ _tag: "ArtifactError", reason: "missing" })
        const { runId } = yield* runOf(3)
        const store = yield* PgArtifactStore.make({ runId })
        const streamed = yield* Effect.scoped(store.stream)
        const closed = yield* Effect.flip(Stream.runDrain(streamed.records))
        expect(closed).toMatchObject({ _tag: "ArtifactError", reason: "closed" })
      }))
  })
})
