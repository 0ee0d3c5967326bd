import { SystemError } from "@effect/platform/Error"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { ArtifactStore, Batch, Checkpoint, Guardrails, Resume } from "../src/index.js"
import { bytes, nodeStore, tempFile, wrappedStore } from "./artifact-helpers.js"
import { identity, otherPrompt } from "./fixtures/artifact-identity.js"
import { contract, scriptedProvider } from "./fixtures/artifact-run.js"

const prompts = (n: number, fail: (i: number) => boolean = () => false) =>
  Array.from({ length: n }, (_, i) => `prompt ${i}${fail(i) ? " FAIL" : ""}`)

const read = (path: string) =>
  Effect.flatMap(ArtifactStore.ArtifactStore, (s) => s.read).pipe(Effect.provide(nodeStore({ path })))

describe("Checkpoint: a batch run over an artifact", () => {
  it.scoped("fingerprints the caller already has are the records' own, not computed again", () =>
    Effect.gen(function*() {
      const path = yield* tempFile
      const items = prompts(4)
      const summary = yield* Effect.gen(function*() {
        const session = yield* Resume.open({ identity, policy: "reuse-all" })
        const artifacts = Checkpoint.artifacts<string>(session, {
          fingerprints: (item) => ({ input: `input of ${item}`, prompt: `prompt of ${item}` })
        })
        return yield* Batch.run(items, { contract, artifacts })
      }).pipe(Effect.scoped, Effect.provide(Layer.merge(nodeStore({ path }), scriptedProvider({}))))
      expect(summary.stats.succeeded).toBe(4)
      const records = (yield* read(path)).records
      expect(records.map((r) => [r.inputFingerprint, r.promptFingerprint]).sort()).toEqual(
        items.map((item) => [`input of ${item}`, `prompt of ${item}`])
      )
    }))

  it.scoped("an item whose input has no fingerprint fails alone, before any call, naming the item: its refusal is its record", () =>
    Effect.gen(function*() {
      const path = yield* tempFile
      interface Doc {
        readonly id: string
        readonly text: string
        readonly meta: unknown
      }
      const cyclic: { self?: unknown } = {}
      cyclic.self = cyclic
      const docs: ReadonlyArray<Doc> = [
        { id: "ok-1", text: "prompt 1", meta: 1 },
        { id: "inf", text: "prompt 2", meta: Number.POSITIVE_INFINITY },
        { id: "nan", text: "prompt 3", meta: [Number.NaN] },
        { id: "big", text: "prompt 4", meta: { n: 10n } },
        { id: "cycle", text: "prompt 5", meta: cyclic },
        { id: "ok-2", text: "prompt 6", meta: "x" }
      ]
      const runOnce = Effect.gen(function*() {
        const calls: Array<string> = []
        const summary = yield* Checkpoint.run(docs, {
          contract,
          request: (doc) => ({ prompt: doc.text, id: doc.id }),
          itemId: (doc) => doc.id,
          guardrails: Guardrails.make({ concurrency: 2 }),
          checkpoint: { identity, resume: "reuse-successes" }
        }).pipe(Effect.provide(Layer.merge(nodeStore({ path }), scriptedProvider({ calls }))))
        return { summary, calls }
      })
      const first = yield* runOnce
      // The run goes on: only the two good items are called, and the run completes.
      expect(first.calls.sort()).toEqual(["ok-1", "ok-2"])
      expect(first.summary.termination.kind).toBe("completed")
      expect(first.summary.stats).toMatchObject({ succeeded: 2, failed: 4 })
      const failed = new Map(first.summary.results.flatMap((r) => r._tag === "Failed" ? [[r.itemId, r]] : []))
      for (
        const [id, where] of [["inf", "$.meta"], ["nan", "$.meta[0]"], ["big", "$.meta.n"], ["cycle", "$.meta.self"]]
      ) {
        const result = failed.get(id!)
        expect(result?.category).toBe("refused")
        expect(result?.error).toMatchObject({ _tag: "Refused", refusal: "invalid_request", attempts: [] })
        expect(result?.error.message).toContain(`the input of item "${id}" has no fingerprint: ${where}`)
      }
      // Each is recorded as that item's outcome, with no input fingerprint any input could match.
      const records = (yield* read(path)).records
      expect(records).toHaveLength(6)
      const refused = records.filter((r) => r.outcome === "failure")
      expect(refused.map((r) => r.itemId).sort()).toEqual(["big", "cycle", "inf", "nan"])
      expect(refused.every((r) => r.category === "refused" && r.inputFingerprint === "none")).toBe(true)
      // On resume the good items are reused and the others refused again: still no call.
      const second = yield* runOnce
      expect(second.calls).toEqual([])
      expect(second.summary.stats).toMatchObject({ reused: 2, failed: 4 })
    }))

  it.scoped("records every item; run again, it reuses them all: no call, nothing appended, nothing counted", () =>
    Effect.gen(function*() {
      const path = yield* tempFile
      const items = prompts(12)
      const runOnce = (resume: "reuse-successes" | "reuse-all") =>
        Effect.gen(function*() {
          const calls: Array<string> = []
          const summary = yield* Checkpoint.run(items, {
            contract,
            guardrails: Guardrails.make({ concurrency: 4 }),
            checkpoint: { identity, resume }
          }).pipe(Effect.provide(Layer.merge(nodeStore({ path }), scriptedProvider({ calls }))))
          return { summary, calls }
        })
      const first = yield* runOnce("reuse-successes")
      expect(first.calls).toHaveLength(12)
      expect(first.summary.termination.kind).toBe("completed")
      const records = (yield* read(path)).records
      expect(records).toHaveLength(12)
      expect(records.every((r) => r.reusable && r.outcome === "success")).toBe(true)
      const before = bytes(path)
      const second = yield* runOnce("reuse-all")
      expect(second.calls).toEqual([])
      expect(second.summary.results.every((r) => r._tag === "Reused")).toBe(true)
      expect(second.summary.stats.reused).toBe(12)
      expect(second.summary.stats.tokensUsed ?? 0).toBe(0)
      expect(bytes(path)).toEqual(before)
    }))

  it.scoped("a changed identity runs everything again", () =>
    Effect.gen(function*() {
      const path = yield* tempFile
      const run = (id: typeof identity) =>
        Effect.gen(function*() {
          const calls: Array<string> = []
          yield* Checkpoint.run(prompts(5), { contract, checkpoint: { identity: id, resume: "reuse-successes" } }).pipe(
            Effect.provide(Layer.merge(nodeStore({ path }), scriptedProvider({ calls })))
          )
          return calls.length
        })
      expect(yield* run(identity)).toBe(5)
      expect(yield* run(otherPrompt)).toBe(5)
      expect(yield* run(identity)).toBe(0)
    }))

  it.scoped("fail-fast's collateral records are audit records: never reused, those items run on resume", () =>
    Effect.gen(function*() {
      const path = yield* tempFile
      // Item 2 is refused at once (content_filtered), which trips fail-fast while items 0 and 1 are still
      // waiting for their answers (virtual time does not move): they are cancelled as batch_aborted.
      const items = prompts(6, (i) => i === 2)
      const guardrails = Guardrails.make({ concurrency: 3, abortOn: ["content_filtered"], abortMode: "cancel-active" })
      const first = yield* Checkpoint.run(items, {
        contract,
        guardrails,
        checkpoint: { identity, resume: "reuse-all" }
      })
        .pipe(Effect.provide(Layer.merge(nodeStore({ path }), scriptedProvider({ latencyMillis: 1_000 }))))
      expect(first.termination.kind).toBe("fail_fast")
      const records = (yield* read(path)).records
      const aborted = records.filter((r) => r.category === "batch_aborted")
      // The array's items not started (3, 4, 5) get audit records too.
      expect(aborted.map((r) => r.index).sort()).toEqual([0, 1, 3, 4, 5])
      expect(aborted.every((r) => !r.reusable)).toBe(true)
      const refused = records.filter((r) => r.category === "content_filtered")
      expect(refused.map((r) => [r.index, r.reusable])).toEqual([[2, true]])

      const calls: Array<string> = []
      const resumed = yield* Checkpoint.run(items, {
        contract,
        guardrails: Guardrails.make({ concurrency: 1 }),
        checkpoint: { identity, resume: "reuse-all" }
      }).pipe(Effect.provide(Layer.merge(nodeStore({ path }), scriptedProvider({ calls }))))
      // The refused item's record is a reusable failure: given back. The aborted ones run.
      expect(calls.sort()).toEqual(["prompt 0", "prompt 1", "prompt 3", "prompt 4", "prompt 5"])
      expect(resumed.stats.reused).toBe(1)
      expect(resumed.termination.kind).toBe("completed")
    }))

  it.scoped("after a failed append the store refuses the rest and the run ends with artifact_error", () =>
    Effect.gen(function*() {
      const path = yield* tempFile
      let writes = 0
      const failing = wrappedStore({ path }, (file) => ({
        writeAll: (buffer) =>
          ++writes === 4
            ? Effect.fail(new SystemError({ reason: "Unknown", module: "FileSystem", method: "writeAll" }))
            : file.writeAll(buffer)
      }))
      const summary = yield* Checkpoint.run(prompts(10), {
        contract,
        guardrails: Guardrails.make({ concurrency: 1 }),
        checkpoint: { identity, resume: "reuse-successes" }
      }).pipe(Effect.provide(Layer.merge(failing, scriptedProvider())))
      expect(summary.termination.kind).toBe("artifact_error")
      const failed = summary.results.filter((r) => r._tag === "Failed" && r.category === "artifact_error")
      expect(failed).toHaveLength(1)
      // Two records made it (writes 2 and 3; write 1 was the manifest); nothing after the failure.
      expect((yield* read(path)).records).toHaveLength(2)
    }))
})
