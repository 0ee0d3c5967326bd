// What the PostgreSQL artifact store does with a record it cannot keep as written, against a real PostgreSQL:
// the same as the JSONL store (`encode`, the store then refuses appends), never a defect, never an `io` error
// that a retry would meet again, never a row that makes the run unreadable.
import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { ArtifactStore } from "@rein/batch"
import { Contract } from "@rein/core"
import { Effect, Exit, Layer } from "effect"
import { Migrations, PgArtifactStore, PgBatchRun } from "../src/index.js"
import * as Q from "../src/internal/batchStatements.js"
import * as Fence from "../src/internal/fence.js"
import { identity, itemsOf, request } from "./fixtures/batch-items.js"
import { available, fresh, PgLive } from "./pg.js"

const Live = Layer.tap(PgLive, (ctx) => Effect.provide(Migrations.run, ctx))

const record = (itemId: string, overrides: Partial<ArtifactStore.ItemRecord> = {}): ArtifactStore.ItemRecord => ({
  kind: "item",
  itemId,
  index: 0,
  promptFingerprint: "sha256:p",
  inputFingerprint: "sha256:i",
  identityFingerprint: "sha256:id",
  outcome: "success",
  category: "ok",
  reusable: true,
  usage: { inputTokens: 1, outputTokens: 1 },
  cost: 0,
  attempts: 1,
  durationMillis: 1,
  result: "fine",
  ...overrides
})

// Appends `bad` after one good record: how the bad append ended, how the next one ended, and what the run reads.
const afterBad = (bad: ArtifactStore.ItemRecord) =>
  Effect.gen(function*() {
    const store = yield* PgArtifactStore.make({ runId: fresh("hostile") })
    const manifest = yield* ArtifactStore.makeManifest(identity)
    const ended = yield* Effect.scoped(Effect.gen(function*() {
      const opened = yield* store.create(manifest)
      yield* opened.append(record("good"))
      const first = yield* Effect.exit(opened.append(bad))
      const next = yield* Effect.exit(opened.append(record("later")))
      return { first, next }
    }))
    const read = yield* store.read
    return { ...ended, ids: read.records.map((r) => r.itemId) }
  })

/** A value nested `depth` levels of arrays and objects deep. */
const nested = (depth: number): unknown => {
  let value: unknown = "leaf"
  for (let i = 0; i < depth; i++) value = i % 2 === 0 ? [value] : { a: value }
  return value
}

const reasonOf = (exit: Exit.Exit<void, ArtifactStore.ArtifactError>) =>
  Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error.reason : exit

// A distributed run of three items whose fence is handed the second one's record with result `bad`: how each
// submit ended, which writes failed (reason, item) and which were written.
const fenced = (name: string, bad: unknown) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const runId = fresh(name)
    const items = itemsOf(3, [])
    yield* PgBatchRun.start({
      runId,
      identity,
      resume: "none",
      items,
      request,
      itemId: (item) => item.id,
      contract: Contract.make({ deadline: "1 minute", candidates: ["fake/a"], allowSimulated: true })
    })
    const rows = yield* Q.lease(sql, runId, "f", 3, 60_000, true)
    const failed: Array<readonly [string, string]> = []
    const written: Array<string> = []
    const results = ["fine", bad, "fine too"]
    const submitted = yield* Effect.scoped(Effect.gen(function*() {
      const fence = yield* Fence.make(sql, runId, {
        onWritten: (itemId) => Effect.sync(() => void written.push(itemId)),
        onFailed: (error, itemId) => Effect.sync(() => void failed.push([error.reason, itemId]))
      })
      for (const row of rows) fence.tokens.set(row.item_id, row.lease_token)
      const exits = yield* Effect.forEach(
        rows,
        (row, i) => Effect.exit(fence.submit(record(row.item_id, { index: row.idx, result: results[i] })))
      )
      yield* Effect.exit(fence.drain)
      return exits.map((exit) => exit._tag === "Success" ? "queued" : reasonOf(exit))
    }))
    return { failed, submitted, written }
  })

describe.skipIf(!available)("PgArtifactStore: a record it cannot keep as written", () => {
  layer(Live, { timeout: "120 seconds", excludeTestServices: true })((it) => {
    it.effect("a result with no JSON form (a bigint) is an encode error naming the item, not a defect", () =>
      Effect.gen(function*() {
        const { first, ids, next } = yield* afterBad(record("big", { result: { total: 10n } }))
        expect(reasonOf(first)).toBe("encode")
        expect(Exit.isFailure(first) && first.cause._tag === "Fail" && first.cause.error.message).toContain("\"big\"")
        expect(reasonOf(next)).toBe("closed")
        expect(ids).toEqual(["good"])
      }))

    it.effect("a record that is not an item record (a NaN cost) is an encode error; the run stays readable", () =>
      Effect.gen(function*() {
        const { first, ids, next } = yield* afterBad(record("nan", { cost: Number.NaN }))
        expect(reasonOf(first)).toBe("encode")
        expect(Exit.isFailure(first) && first.cause._tag === "Fail" && first.cause.error.message).toContain("cost")
        expect(reasonOf(next)).toBe("closed")
        expect(ids).toEqual(["good"])
      }))

    it.effect("a string holding U+0000 (jsonb cannot) is an encode error saying so, not an io error to retry", () =>
      Effect.gen(function*() {
        const { first, ids, next } = yield* afterBad(record("nul", { result: "an answer\u0000with a NUL" }))
        expect(reasonOf(first)).toBe("encode")
        const message = Exit.isFailure(first) && first.cause._tag === "Fail" ? first.cause.error.message : ""
        expect(message).toContain("U+0000")
        expect(message).not.toContain("an answer")
        expect(reasonOf(next)).toBe("closed")
        expect(ids).toEqual(["good"])
      }))

    it.effect("a result nested deeper than 256 levels is an encode error naming the item, as in the JSONL store", () =>
      Effect.gen(function*() {
        const { first, ids, next } = yield* afterBad(record("deep", { result: nested(300) }))
        expect(reasonOf(first)).toBe("encode")
        const message = Exit.isFailure(first) && first.cause._tag === "Fail" ? first.cause.error.message : ""
        expect(message).toMatch(/^record of item "deep" is nested deeper than 256 levels of arrays and objects/)
        expect(reasonOf(next)).toBe("closed")
        expect(ids).toEqual(["good"])
        // 200 levels are kept, and read back.
        const kept = yield* afterBad(record("shallow", { result: nested(200) }))
        expect(kept.first).toEqual(Exit.void)
        expect(kept.ids).toEqual(["good", "shallow", "later"])
      }))

    it.effect("a distributed run's record a group cannot hold fails alone, named; the records before it are written", () =>
      Effect.gen(function*() {
        const { failed, submitted, written } = yield* fenced("fence-nul", "an answer\u0000with a NUL")
        expect(submitted).toEqual(["queued", "encode", "closed"])
        expect(failed).toEqual([["encode", "item-00001"]])
        expect(written).toEqual(["item-00000"])
      }))

    it.effect("a distributed run's record with a result nested deeper than 256 levels fails alone, as encode", () =>
      Effect.gen(function*() {
        const { failed, submitted, written } = yield* fenced("fence-deep", nested(300))
        expect(submitted).toEqual(["queued", "encode", "closed"])
        expect(failed).toEqual([["encode", "item-00001"]])
        expect(written).toEqual(["item-00000"])
      }))
  })
})
