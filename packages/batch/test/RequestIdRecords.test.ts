import { describe, expect, it } from "@effect/vitest"
import { Journal } from "@rein/core"
import { Effect, Either, FastCheck as fc, Layer, Schema } from "effect"
import { ArtifactStore, Checkpoint, Guardrails } from "../src/index.js"
import * as Jsonl from "../src/internal/jsonl.js"
import { bytes, nodeStore, record as artifactRecord, tempFile } from "./artifact-helpers.js"
import { identity } from "./fixtures/artifact-identity.js"
import { contract, scriptedProvider } from "./fixtures/artifact-run.js"

// Items 0, 3, 6 … are refused by the scripted provider (a reusable failure); the rest succeed.
const prompts = (n: number) => Array.from({ length: n }, (_, i) => `prompt ${i}${i % 3 === 0 ? " FAIL" : ""}`)

const read = (path: string) =>
  Effect.flatMap(ArtifactStore.ArtifactStore, (s) => s.read).pipe(Effect.provide(nodeStore({ path })))

/** One checkpointed run over `path` (journaled or not): the ids the journal recorded, and the calls made. */
const runOver = (path: string, journaled: boolean, resume: "reuse-successes" | "reuse-all" = "reuse-successes") =>
  Effect.gen(function*() {
    const journal: Array<string> = []
    const calls: Array<string> = []
    const layer = Layer.merge(nodeStore({ path }), scriptedProvider({ calls }))
    const recording = Layer.succeed(
      Journal.Journal,
      Journal.make((r) => Effect.sync(() => void journal.push(r.requestId)))
    )
    const summary = yield* Checkpoint.run(prompts(9), {
      contract,
      guardrails: Guardrails.make({ concurrency: 3 }),
      checkpoint: { identity, resume }
    }).pipe(Effect.provide(journaled ? Layer.merge(layer, recording) : layer))
    return { summary, journal, calls }
  })

describe("Artifact records carry the outcome's request id", () => {
  it.scoped("journaled: each record's id is its journal record's (a failure's error holds the same); resume reuses them", () =>
    Effect.gen(function*() {
      const path = yield* tempFile
      const first = yield* runOver(path, true)
      expect(first.summary.stats.succeeded).toBe(6)
      expect(first.summary.stats.failed).toBe(3)
      const records = (yield* read(path)).records
      expect(records).toHaveLength(9)
      expect(records.map((r) => r.requestId).sort()).toEqual([...first.journal].sort())
      expect(new Set(first.journal).size).toBe(9)
      for (const r of records) {
        if (r.outcome === "failure") expect((r.error as { readonly requestId?: string }).requestId).toBe(r.requestId)
      }
      // Resume: every record is reused, nothing is called or appended (the id is no part of a fingerprint).
      const before = bytes(path)
      const second = yield* runOver(path, true, "reuse-all")
      expect(second.calls).toEqual([])
      expect(second.summary.stats.reused).toBe(9)
      expect(bytes(path)).toEqual(before)
      // A reused failure gives its error back with its id.
      for (const result of second.summary.results) {
        if (result._tag === "Reused" && result.record.outcome === "failure") {
          expect(result.record.requestId).toMatch(/^req-/)
        }
      }
    }))

  it.scoped("not journaled and unnamed: no record has an id (the field is absent)", () =>
    Effect.gen(function*() {
      const path = yield* tempFile
      yield* runOver(path, false)
      const records = (yield* read(path)).records
      expect(records).toHaveLength(9)
      expect(records.some((r) => "requestId" in r)).toBe(false)
    }))
})

describe("An item record's requestId on disk", () => {
  // As the store writes it (the schema's order), without an id: a record of an artifact written before it.
  const record = Schema.encodeSync(ArtifactStore.ItemRecord)(artifactRecord("i-1"))
  const decode = Schema.decodeUnknownEither(ArtifactStore.ItemRecord)

  it("a record written before the id existed is taken as it is and decodes without one", () => {
    expect(Jsonl.isExactRecord(record)).toBe(true)
    const decoded = Either.getOrThrow(decode(record))
    expect("requestId" in decoded).toBe(false)
  })

  it("a line is taken without the schema only when its id is a string; else the schema decides", () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.integer(), fc.constant(null), fc.boolean()), (requestId) => {
        const json = JSON.parse(JSON.stringify({ ...record, requestId })) as unknown
        expect(Jsonl.isExactRecord(json)).toBe(typeof requestId === "string")
        const decoded = decode(json)
        expect(Either.isRight(decoded)).toBe(typeof requestId === "string")
        if (Either.isRight(decoded)) expect(decoded.right).toEqual(json)
      }),
      { numRuns: 300, seed: 7 }
    )
  })
})
