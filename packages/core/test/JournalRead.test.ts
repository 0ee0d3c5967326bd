/**
 * Reading a journal as a stream of bounded lines: memory holds one line, never the file, and a line over the
 * bound (a file that is not a journal: no newline at all, a binary) fails with its line number as soon as its
 * bytes pass the bound.
 */
import { NodeFileSystem } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Journal } from "@rein/core"
import { Chunk, Effect, FastCheck as fc, Stream } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

const encoder = new TextEncoder()
const KIB = 1024

describe("Journal: reading lines with a bound", () => {
  it.effect("an endless line fails with its number after reading just past the bound", () =>
    Effect.gen(function*() {
      let pulled = 0
      const endless = Stream.concat(
        Stream.make(encoder.encode("{}\n\n")),
        Stream.repeatValue(new Uint8Array(64 * KIB).fill(0x78)).pipe(Stream.tap(() => Effect.sync(() => pulled++)))
      )
      const e = yield* Stream.runDrain(Journal.splitLines(endless, { path: "in.jsonl", maxLineBytes: 1024 * KIB }))
        .pipe(Effect.flip)
      expect(e).toMatchObject({ _tag: "JournalError", reason: "length", line: 3 })
      expect(e.message).toBe("in.jsonl:3: line longer than 1048576 bytes (not a journal record)")
      // 16 chunks reach the bound, the 17th passes it: nothing more is read.
      expect(pulled).toBe(17)
    }))

  it.effect.prop(
    "any chunking yields the complete lines of the text, the torn last one left out",
    [fc.array(fc.string({ unit: "binary", maxLength: 40 }), { maxLength: 8 }), fc.array(fc.nat(400))],
    ([lines, cuts]) =>
      Effect.gen(function*() {
        const text = lines.join("\n")
        const bytes = encoder.encode(text)
        const at = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b)
        const chunks = [0, ...at].map((from, i) => bytes.slice(from, [...at, bytes.length][i]))
        const got = yield* Stream.runCollect(Journal.splitLines(Stream.fromIterable(chunks), { path: "p" }))
        const want = text.split("\n").slice(0, -1).map((t, i) => ({ text: t, number: i + 1 }))
        expect(Chunk.toReadonlyArray(got)).toEqual(want)
      })
  )
})

describe("Journal.readJsonl: a file that is not a journal", () => {
  const big = (name: string, content: (huge: Uint8Array) => ReadonlyArray<Uint8Array>) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rein-jread-"))
    const file = path.join(dir, name)
    const huge = new Uint8Array(Journal.MAX_LINE_BYTES + 1).fill(0x78)
    fs.writeFileSync(file, Buffer.concat(content(huge)))
    return { file, done: () => fs.rmSync(dir, { recursive: true, force: true }) }
  }

  it.live("no newline at all, past the bound: refused with the line number (not read as a torn line)", () =>
    Effect.gen(function*() {
      const { done, file } = big("zero.jsonl", (huge) => [encoder.encode("\n\n"), huge])
      const e = yield* Journal.readJsonl(file).pipe(Effect.provide(NodeFileSystem.layer), Effect.flip)
      done()
      expect(e).toMatchObject({ reason: "length", line: 3 })
      expect(e.message).toContain(`${file}:3: line longer than ${Journal.MAX_LINE_BYTES} bytes`)
    }))

  it.live("a complete line over the bound: refused as too long, not parsed", () =>
    Effect.gen(function*() {
      const { done, file } = big("long.jsonl", (huge) => [encoder.encode("\n"), huge, encoder.encode("\n")])
      const e = yield* Journal.readJsonl(file).pipe(Effect.provide(NodeFileSystem.layer), Effect.flip)
      done()
      expect(e).toMatchObject({ reason: "length", line: 2 })
    }))
})
