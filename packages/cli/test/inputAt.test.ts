/**
 * A worker reads its input by submission index in bounded memory (`internal/inputAt`): whatever the file
 * (blank lines, `\r\n`, multi-byte text across read buffers, lines longer than the buffer, no final newline)
 * and whatever the order of the indices asked (ascending, as leases come, or jumping back, as a lease taken
 * over does), index `i` is the `i`-th item `streamPrompts` gives, with the same ids and the same errors.
 */
import { NodeFileSystem } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Either, Stream } from "effect"
import * as fc from "effect/FastCheck"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { open } from "../src/internal/inputAt.js"
import { streamPrompts } from "../src/internal/prompts.js"

const withFile = <A, E>(content: string, use: (file: string) => Effect.Effect<A, E>) =>
  Effect.acquireUseRelease(
    Effect.sync(() => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rein-input-at-"))
      const file = path.join(dir, "prompts.jsonl")
      fs.writeFileSync(file, content)
      return { dir, file }
    }),
    ({ file }) => use(file),
    ({ dir }) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
  )

const text = fc.string({ unit: fc.constantFrom("a", "b", " ", "é", "日本", "\"", "\\", "\t"), maxLength: 40 })
const line = fc.oneof(
  fc.constantFrom("", "  ", "\t", " \r"),
  text.map((t) => JSON.stringify(t)),
  fc.record({ prompt: text, maxOutputTokens: fc.integer({ min: 1, max: 9 }) }).map((o) => JSON.stringify(o))
)
const file = fc.record({
  lines: fc.array(line, { minLength: 1, maxLength: 60 }),
  crlf: fc.boolean(),
  finalNewline: fc.boolean()
}).filter(({ lines }) => lines.some((l) => !/^[ \t\r]*$/.test(l)))

const render = (f: { lines: ReadonlyArray<string>; crlf: boolean; finalNewline: boolean }) =>
  f.lines.join(f.crlf ? "\r\n" : "\n") + (f.finalNewline ? "\n" : "")

describe("a worker's input read by index", () => {
  it.effect.prop(
    "index i is streamPrompts' i-th item, in any order of reads, with small buffers and checkpoints",
    [file, fc.integer({ min: 1, max: 40 }), fc.integer({ min: 1, max: 5 }), fc.array(fc.nat(), { maxLength: 80 })],
    ([f, chunk, every, jumps]) =>
      withFile(render(f), (path) =>
        Effect.gen(function*() {
          const all = Chunk.toReadonlyArray(yield* Stream.runCollect(streamPrompts(path)))
          const itemAt = yield* open(path, { chunk, every })
          // Ascending first (as leases come), then jumping anywhere (a reclaimed lease, a reopened item).
          for (let i = 0; i < all.length; i++) expect(yield* itemAt(i)).toEqual(all[i])
          for (const j of jumps) expect(yield* itemAt(j % all.length)).toEqual(all[j % all.length])
          const past = yield* Effect.flip(itemAt(all.length))
          expect(past.message).toMatch(/no item at index/)
        }).pipe(Effect.scoped, Effect.provide(NodeFileSystem.layer))),
    { fastCheck: { numRuns: 60 } }
  )

  it.effect("a bad line fails when its index is read, naming the file and the line, like streamPrompts", () =>
    withFile("\"one\"\n\n{\"prompt\": 3}\n\"four\"\n", (path) =>
      Effect.gen(function*() {
        const itemAt = yield* open(path, { chunk: 8, every: 2 })
        expect(yield* itemAt(0)).toEqual({ id: "line-1", prompt: "one" })
        expect(yield* itemAt(2)).toEqual({ id: "line-4", prompt: "four" })
        const bad = yield* Effect.flip(itemAt(1))
        expect(bad.message).toMatch(new RegExp(`^${path.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}:3: `))
        const streamed = yield* Effect.either(Stream.runCollect(streamPrompts(path)))
        expect(Either.isLeft(streamed) && streamed.left.message.startsWith(`${path}:3: `)).toBe(true)
      }).pipe(Effect.scoped, Effect.provide(NodeFileSystem.layer))))
})
