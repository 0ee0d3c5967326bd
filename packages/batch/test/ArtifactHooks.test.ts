import { describe, expect, it } from "@effect/vitest"
import { ArtifactStore, Batch, Guardrails } from "@rein/batch"
import type { Result } from "@rein/batch"
import { Chunk, Effect, Fiber, Option, Stream, TestClock } from "effect"
import { contract, ok, scripted } from "./batch-helpers.js"

const manifest: ArtifactStore.Manifest = {
  kind: "manifest",
  schemaVersion: 1,
  identity: {
    provider: "scripted",
    model: "a-1",
    promptVersion: "p1",
    parserVersion: "j1",
    applicationVersion: "a1",
    extra: {}
  },
  identityFingerprint: "id-1",
  createdAt: "1970-01-01T00:00:00.000Z",
  packageVersion: "0.1.0"
}

/** An in-memory artifact: appends go to `lines` (and the shared `log`); the append numbered `failAt` fails. */
const memory = (
  log: Array<string>,
  options: { readonly failAt?: number; readonly existing?: ReadonlyArray<ArtifactStore.ItemRecord> } = {}
) => {
  const lines: Array<ArtifactStore.ItemRecord> = []
  let closed = false
  const existing = options.existing ?? []
  const opened: ArtifactStore.Opened = {
    manifest,
    truncatedBytes: 0,
    append: (record) =>
      Effect.suspend(() => {
        if (closed || lines.length === options.failAt) {
          const reason = closed ? "closed" : "io"
          closed = true
          return Effect.fail(new ArtifactStore.ArtifactError({ reason, message: "disk full" }))
        }
        lines.push(record)
        log.push(`append ${record.itemId}`)
        return Effect.void
      })
  }
  return { opened, lines, existing }
}

const toRecord = (result: Result.Succeeded<string> | Result.Failed<string>) =>
  Effect.succeed<ArtifactStore.ItemRecord>({
    kind: "item",
    itemId: result.itemId,
    index: result.index,
    promptFingerprint: `prompt:${result.item}`,
    inputFingerprint: `input:${result.item}`,
    identityFingerprint: "id-1",
    outcome: result._tag === "Succeeded" ? "success" : "failure",
    category: result._tag === "Succeeded" ? "ok" : result.category,
    reusable: result._tag === "Succeeded",
    usage: result._tag === "Succeeded" ? result.completion.usage : "unknown",
    cost: 0,
    attempts: result._tag === "Succeeded" ? result.completion.attempts.length : 0,
    durationMillis: result.durationMillis,
    ...(result._tag === "Succeeded" ? { result: result.completion.text } : {})
  })

const prompts = (n: number) => Array.from({ length: n }, (_, i) => `p${i}`)

describe("artifact hooks", () => {
  it.effect("each record is appended before its result is published", () =>
    Effect.gen(function*() {
      const fake = scripted((prompt) => ok(100 * Number(prompt.slice(1))))
      const log: Array<string> = []
      const store = memory(log)
      const fiber = yield* Effect.fork(
        Batch.stream(prompts(3), {
          contract: contract(),
          guardrails: Guardrails.make({ concurrency: 3 }),
          artifacts: { opened: store.opened, toRecord }
        }).pipe(
          Stream.tap((r) => Effect.sync(() => void log.push(`publish ${r.itemId}`))),
          Stream.runDrain,
          Effect.provide(fake.layer)
        )
      )
      yield* TestClock.adjust("1 minute")
      yield* Fiber.join(fiber)
      expect(log).toEqual(["append 0", "publish 0", "append 1", "publish 1", "append 2", "publish 2"])
      expect(store.lines.map((r) => r.outcome)).toEqual(["success", "success", "success"])
    }))

  it.effect("a reused record is not executed, not appended again, costs nothing and does not count against caps", () =>
    Effect.gen(function*() {
      const fake = scripted(() => ok(0, { inputTokens: 5, outputTokens: 5 }))
      const log: Array<string> = []
      const earlier: ArtifactStore.ItemRecord = {
        kind: "item",
        itemId: "1",
        index: 1,
        promptFingerprint: "prompt:p1",
        inputFingerprint: "input:p1",
        identityFingerprint: "id-1",
        outcome: "success",
        category: "ok",
        reusable: true,
        usage: { inputTokens: 500, outputTokens: 500 },
        cost: 1,
        attempts: 1,
        durationMillis: 10,
        result: "earlier answer"
      }
      const store = memory(log, { existing: [earlier] })
      const fiber = yield* Effect.fork(
        Batch.run(prompts(3), {
          contract: contract(),
          guardrails: Guardrails.make({ concurrency: 1, maxTotalTokens: 25 }),
          artifacts: {
            opened: store.opened,
            lookup: (item, _, itemId) =>
              Option.fromNullable(
                store.existing.find((r) => r.itemId === itemId && r.inputFingerprint === `input:${item}`)
              ),
            toRecord
          }
        }).pipe(Effect.provide(fake.layer))
      )
      yield* TestClock.adjust("1 minute")
      const summary = yield* Fiber.join(fiber)
      expect(summary.results.map((r) => `${r.itemId}:${r._tag}`)).toEqual(["0:Succeeded", "1:Reused", "2:Succeeded"])
      expect(fake.log.map((c) => c.prompt)).toEqual(["p0", "p2"])
      expect(log).toEqual(["append 0", "append 2"])
      expect(summary.stats).toMatchObject({ reused: 1, succeeded: 2, tokensUsed: 20 })
      expect(summary.stats.costUsed).toBeCloseTo(2 * (5e-6 + 10e-6), 12)
      expect(summary.termination.kind).toBe("completed")
    }))

  it.effect("a failed append ends the run with artifact_error and the item's result says so", () =>
    Effect.gen(function*() {
      const fake = scripted(() => ok(100))
      const log: Array<string> = []
      const store = memory(log, { failAt: 1 })
      const fiber = yield* Effect.fork(
        Stream.runCollect(
          Batch.stream(prompts(6), {
            contract: contract(),
            guardrails: Guardrails.make({ concurrency: 1 }),
            artifacts: { opened: store.opened, toRecord }
          })
        ).pipe(Effect.provide(fake.layer))
      )
      yield* TestClock.adjust("1 minute")
      const results = Chunk.toReadonlyArray(yield* Fiber.join(fiber))
      expect(results.map((r) => `${r.itemId}:${r._tag === "Failed" ? r.category : r._tag}`)).toEqual([
        "0:Succeeded",
        "1:artifact_error",
        "2:batch_aborted",
        "3:batch_aborted",
        "4:batch_aborted",
        "5:batch_aborted"
      ])
      const failed = results[1]
      if (failed?._tag === "Failed" && failed.error._tag === "ArtifactFailed") {
        expect(failed.error.original).toBe("ok")
        expect(failed.error.attempts).toHaveLength(1)
      }
      expect(fake.log).toHaveLength(2)
    }))

  it.effect("with artifact_error, the run's summary names the item", () =>
    Effect.gen(function*() {
      const fake = scripted(() => ok(100))
      const store = memory([], { failAt: 0 })
      const fiber = yield* Effect.fork(
        Batch.run(prompts(3), {
          contract: contract(),
          guardrails: Guardrails.make({ concurrency: 1 }),
          artifacts: { opened: store.opened, toRecord }
        }).pipe(Effect.provide(fake.layer))
      )
      yield* TestClock.adjust("1 minute")
      const summary = yield* Fiber.join(fiber)
      expect(summary.termination).toMatchObject({ kind: "artifact_error", itemId: "0" })
      expect(summary.termination.reason).toContain("disk full")
    }))
})
