// What the PostgreSQL artifact store does with a record it cannot keep as written, against a real PostgreSQL:
// the same as the JSONL store (`encode`, the store then refuses appends), never a defect, never an `io` error
// that a retry would meet again, never a row that makes the run unreadable.
import { describe, expect, layer } from "@effect/vitest"
import { ArtifactStore } from "@rein/batch"
import { Effect, Exit, Layer } from "effect"
import { Migrations, PgArtifactStore } from "../src/index.js"
import { identity } from "./fixtures/batch-items.js"
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

const reasonOf = (exit: Exit.Exit<void, ArtifactStore.ArtifactError>) =>
  Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error.reason : exit

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
  })
})
