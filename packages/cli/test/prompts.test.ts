/**
 * `rein batch`'s input is streamed: a line is read and decoded when the run pulls its item, so a huge file
 * starts at once and only what was pulled is held. Counted by the lines decoded, not by timing.
 */
import { NodeFileSystem } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Batch, Guardrails } from "@rein/batch"
import { Catalog, Contract, Fake, Rein } from "@rein/core"
import { Deferred, Effect, Either, Exit, Fiber, Stream, TestClock } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { countPrompts, streamPrompts } from "../src/internal/prompts.js"

const catalog = Catalog.make({
  endpoints: [{
    id: "a",
    provider: "fake",
    model: "model-a",
    capabilities: { contextWindow: 100_000, maxOutputTokens: 1_000 },
    prices: { inputTokens: 1e-6, outputTokens: 2e-6, request: 0 }
  }]
})
const contract = Contract.make({ deadline: "10 minutes", candidates: ["a"], allowSimulated: true })

const tempInput = (name: string, content: string) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rein-prompts-"))
      const file = path.join(dir, name)
      fs.writeFileSync(file, content)
      return file
    }),
    (file) => Effect.sync(() => fs.rmSync(path.dirname(file), { recursive: true, force: true }))
  )

const LINES = 200_000
const big = Array.from({ length: LINES }, (_, i) => JSON.stringify({ id: `q${i}`, prompt: `Summarise ${i}` }))
  .join("\n") + "\n"

describe("rein batch input", () => {
  it.scoped("a huge input with a short batch deadline starts at once: only the lines pulled are decoded", () =>
    Effect.gen(function*() {
      const file = yield* tempInput("big.jsonl", big)
      expect(yield* countPrompts(file)).toBe(LINES)
      let decoded = 0
      const items = streamPrompts(file).pipe(Stream.tap(() => Effect.sync(() => void decoded++)))
      const started = yield* Deferred.make<void>()
      let running = 0
      const fake = Fake.make({ a: [Fake.hang] })
      const fiber = yield* Effect.fork(
        Batch.run(items, {
          contract,
          guardrails: Guardrails.make({ concurrency: 4, batchDeadline: "2 seconds", abortMode: "cancel-active" }),
          request: (item) => ({ id: item.id, prompt: item.prompt, inputTokens: 10 }),
          itemId: (item) => item.id,
          onEvent: (e) => e._tag === "ItemStarted" && ++running === 4 ? Deferred.succeed(started, void 0) : Effect.void
        }).pipe(Effect.provide(Rein.layer({ catalog, providers: { fake: fake.provider } })))
      )
      // The run is under way (four calls in flight) after reading one buffer of the file, not all of it.
      yield* Deferred.await(started)
      expect(decoded).toBe(4)
      yield* TestClock.adjust("3 seconds")
      const summary = yield* Fiber.join(fiber)
      expect(summary.termination.kind).toBe("batch_timeout")
      expect(summary.stats.accepted).toBe(4)
      expect(decoded).toBeLessThanOrEqual(5)
    }).pipe(Effect.provide(NodeFileSystem.layer)))

  it.scoped("a bad line is an error naming the file and line, raised when the run reaches it", () =>
    Effect.gen(function*() {
      const file = yield* tempInput(
        "bad.jsonl",
        "\"one\"\n\n{\"id\":\"b\",\"prompt\":\"two\"}\n{\"id\":\"c\"}\n\"four\"\n"
      )
      expect(yield* countPrompts(file)).toBe(4)
      const exit = yield* Stream.runCollect(streamPrompts(file)).pipe(Effect.provide(NodeFileSystem.layer), Effect.exit)
      expect(Exit.isFailure(exit)).toBe(true)
      if (Exit.isFailure(exit)) expect(String(exit.cause)).toMatch(/bad\.jsonl:4: prompt: is missing/)
      const firstTwo = yield* Stream.runCollect(Stream.take(streamPrompts(file), 2)).pipe(
        Effect.provide(NodeFileSystem.layer)
      )
      expect([...firstTwo].map((i) => i.id)).toEqual(["line-1", "b"])
    }).pipe(Effect.provide(NodeFileSystem.layer)))

  it.scoped("a duplicate id, an empty file and a missing file are input errors", () =>
    Effect.gen(function*() {
      const dup = yield* tempInput(
        "dup.jsonl",
        "{\"id\":\"a\",\"prompt\":\"x\"}\r\n{\"id\":\"a\",\"prompt\":\"y\"}\r\n"
      )
      const collected = yield* Effect.either(Stream.runCollect(streamPrompts(dup)))
      expect(Either.isLeft(collected) && collected.left.message).toMatch(/dup\.jsonl:2: id "a" already used on line 1/)
      const empty = yield* tempInput("empty.jsonl", "\n  \n")
      expect(
        Either.getLeft(yield* Effect.either(countPrompts(empty))).pipe((o) => o._tag === "Some" && o.value.message)
      )
        .toMatch(/empty\.jsonl: no items/)
      const missing = yield* Effect.either(countPrompts(path.join(os.tmpdir(), "rein-absent", "none.jsonl")))
      expect(Either.isLeft(missing) && missing.left.message).toMatch(
        /cannot read the input .*none\.jsonl: no such file/
      )
    }).pipe(Effect.provide(NodeFileSystem.layer)))
})
