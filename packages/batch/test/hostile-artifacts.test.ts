import { NodeFileSystem } from "@effect/platform-node"
import * as FileSystem from "@effect/platform/FileSystem"
import { describe, expect, it } from "@effect/vitest"
import { Journal } from "@rein/core"
import { Chunk, Effect, Either, Layer, Stream } from "effect"
import { appendFileSync, statSync } from "node:fs"
import { ArtifactStore, JsonlStore, Resume } from "../src/index.js"
import * as Jsonl from "../src/internal/jsonl.js"
import * as JsonlRead from "../src/internal/jsonlRead.js"
import { record, tempFile } from "./artifact-helpers.js"
import { identity } from "./fixtures/artifact-identity.js"

// Hostile artifacts: each gets a typed error or the documented tolerance (a final line without its newline is
// left out), and is read a chunk at a time.

const line = (id: string) => Either.getOrThrow(Jsonl.recordLine(record(id)))

/** Node's file system where `grow` is called after each read, with the number of reads so far (any file). */
const growing = (grow: (reads: number) => void) =>
  Layer.effect(
    FileSystem.FileSystem,
    Effect.map(FileSystem.FileSystem, (fs): FileSystem.FileSystem => {
      let reads = 0
      return {
        ...fs,
        open: (p, o) =>
          Effect.map(fs.open(p, o), (file): FileSystem.File => {
            return {
              ...file,
              [FileSystem.FileTypeId]: FileSystem.FileTypeId,
              fd: file.fd,
              stat: file.stat,
              sync: file.sync,
              seek: (offset, from) => file.seek(offset, from),
              read: (buffer) => Effect.tap(file.read(buffer), () => Effect.sync(() => grow(++reads))),
              readAlloc: (size) => file.readAlloc(size),
              truncate: (length) => file.truncate(length),
              write: (buffer) => file.write(buffer),
              writeAll: (buffer) => file.writeAll(buffer)
            }
          })
      }
    })
  ).pipe(Layer.provide(NodeFileSystem.layer))

/**
 * Node's file system where each open file's first read is the file's, and every later one fills the buffer
 * with `x`: a line without end after the file's lines. `reads.count` counts those endless reads; after `cap`
 * of them a read gives the end of the file (a safety net: a reader that never stops would hold them all).
 */
const endless = (reads: { count: number }, cap = 200) =>
  Layer.effect(
    FileSystem.FileSystem,
    Effect.map(FileSystem.FileSystem, (fs): FileSystem.FileSystem => ({
      ...fs,
      open: (p, o) =>
        Effect.map(fs.open(p, o), (file): FileSystem.File => {
          let first = true
          return {
            [FileSystem.FileTypeId]: FileSystem.FileTypeId,
            fd: file.fd,
            stat: file.stat,
            sync: file.sync,
            seek: (offset, from) => file.seek(offset, from),
            read: (buffer) =>
              Effect.suspend(() => {
                if (first) {
                  first = false
                  return file.read(buffer)
                }
                reads.count += 1
                return Effect.succeed(FileSystem.Size(reads.count > cap ? 0 : buffer.fill(0x78).length))
              }),
            readAlloc: (size) => file.readAlloc(size),
            truncate: (length) => file.truncate(length),
            write: (buffer) => file.write(buffer),
            writeAll: (buffer) => file.writeAll(buffer)
          }
        })
    }))
  ).pipe(Layer.provide(NodeFileSystem.layer))

const streamed = (path: string, layer: Layer.Layer<FileSystem.FileSystem> = NodeFileSystem.layer) =>
  Effect.scoped(
    Effect.flatMap(ArtifactStore.ArtifactStore, (s) =>
      Effect.flatMap(s.stream, ({ records }) => Effect.map(Stream.runCollect(records), Chunk.toReadonlyArray)))
  ).pipe(
    Effect.provide(JsonlStore.layer({ path }).pipe(Layer.provide(layer)))
  )

const seed = (path: string, n: number) =>
  Effect.scoped(
    Effect.flatMap(ArtifactStore.ArtifactStore, (s) =>
      Effect.flatMap(Effect.flatMap(ArtifactStore.makeManifest(identity), s.create), (opened) =>
        Effect.forEach(
          Array.from({ length: n }, (_, i) =>
            `item-${i}`),
          (id) => opened.append(record(id))
        )))
  ).pipe(
    Effect.provide(JsonlStore.layer({ path }).pipe(Layer.provide(NodeFileSystem.layer)))
  )

describe("hostile artifacts", () => {
  it.scoped("a file that grows while it is streamed: lines complete when read are given, one half-written is left out", () =>
    Effect.gen(function*() {
      const path = yield* tempFile
      yield* seed(path, 3_000)
      expect(statSync(path).size).toBeGreaterThan(JsonlRead.CHUNK)
      const half = line("late-2").subarray(0, 30)
      const layer = growing((reads) => {
        // The manifest's read, then the records' first: the file grows between their first and second chunks.
        if (reads === 2) appendFileSync(path, Buffer.concat([line("late-1"), half]))
      })
      const records = yield* streamed(path, layer)
      expect(records.map((r) => r.itemId).slice(-2)).toEqual(["item-2999", "late-1"])
      expect(records).toHaveLength(3_001)
    }))

  it.scoped("a line longer than many chunks: a format error naming it, reading or resuming; a torn one is truncated", () =>
    Effect.gen(function*() {
      const path = yield* tempFile
      yield* seed(path, 2)
      appendFileSync(path, `${"x".repeat(JsonlRead.CHUNK * 3)}\n`)
      const error = yield* Effect.flip(streamed(path))
      expect(error).toMatchObject({
        reason: "format",
        line: 4,
        message: "line 4: not valid JSON; nothing was truncated"
      })
      const resumed = yield* Effect.flip(
        Resume.open({ identity, policy: "reuse-successes" }).pipe(
          Effect.provide(JsonlStore.layer({ path }).pipe(Layer.provide(NodeFileSystem.layer)))
        )
      )
      expect(resumed.message).toBe(error.message)
      const torn = yield* tempFile
      yield* seed(torn, 2)
      appendFileSync(torn, "x".repeat(JsonlRead.CHUNK * 3))
      const session = yield* Resume.open({ identity, policy: "reuse-successes" }).pipe(
        Effect.provide(JsonlStore.layer({ path: torn }).pipe(Layer.provide(NodeFileSystem.layer)))
      )
      expect(session.opened.truncatedBytes).toBe(JsonlRead.CHUNK * 3)
      expect(session.index.size).toBe(2)
    }))

  it.scoped("a manifest line only: no records, nothing to reuse; an invalid UTF-8 line: a format error naming it", () =>
    Effect.gen(function*() {
      const path = yield* tempFile
      yield* seed(path, 0)
      expect(yield* streamed(path)).toEqual([])
      appendFileSync(path, Buffer.from([0x7b, 0xff, 0xfe, 0x7d, 0x0a]))
      expect(yield* Effect.flip(streamed(path))).toMatchObject({
        reason: "format",
        message: "line 2: not valid UTF-8; nothing was truncated"
      })
    }))

  it.effect("a line without end after a valid manifest: refused after a bounded number of chunks, records before it kept", () =>
    Effect.gen(function*() {
      const manifest = Either.getOrThrow(Jsonl.manifestLine(yield* ArtifactStore.makeManifest(identity)))
      const got: Array<string> = []
      const scanner = Jsonl.scanner((r) => void got.push(r.itemId))
      expect(Either.isRight(scanner.push(Buffer.concat([manifest, line("a"), line("b")])))).toBe(true)
      const chunk = new Uint8Array(JsonlRead.CHUNK).fill(0x78)
      let pushes = 0
      let result: Either.Either<void, ArtifactStore.ArtifactError> = Either.void
      while (Either.isRight(result) && pushes < 100) {
        pushes += 1
        result = scanner.push(chunk)
      }
      // An artifact line is bounded as a journal line is.
      expect(Jsonl.MAX_LINE_BYTES).toBe(Journal.MAX_LINE_BYTES)
      // 16 chunks of 1 MiB are 16 MiB, the bound itself: the 17th passes it.
      expect(pushes).toBe(Jsonl.MAX_LINE_BYTES / JsonlRead.CHUNK + 1)
      expect(Either.flip(result)).toEqual(Either.right(
        new ArtifactStore.ArtifactError({
          reason: "format",
          line: 4,
          message:
            "line 4: longer than 16777216 bytes (no record is that long: not a Rein artifact, or a damaged one); " +
            "nothing was truncated"
        })
      ))
      expect(got).toEqual(["a", "b"])
      // A complete line over the bound, in one chunk, is refused the same way; one at the bound is read.
      const small = Jsonl.scanner(() => {}, { maxLineBytes: manifest.length })
      expect(Either.isRight(small.push(Buffer.concat([manifest, Buffer.alloc(manifest.length, 0x78)])))).toBe(true)
      expect(Either.flip(small.push(Buffer.from("9\n")))).toMatchObject(Either.right({ reason: "format", line: 2 }))
      const exact = Jsonl.scanner(() => {}, { maxLineBytes: manifest.length - 1 })
      expect(Either.isRight(exact.push(manifest))).toBe(true)
      expect(exact.manifest()).toBeDefined()
    }))

  it.scoped("a file that goes on without a newline after its records: streaming and resuming stop after 17 chunks", () =>
    Effect.gen(function*() {
      const path = yield* tempFile
      yield* seed(path, 2)
      const size = statSync(path).size
      const reads = { count: 0 }
      const result = yield* streamed(path, endless(reads)).pipe(Effect.either)
      const streamedRecords = yield* Effect.scoped(
        Effect.flatMap(
          ArtifactStore.ArtifactStore,
          (s) =>
            Effect.flatMap(
              s.stream,
              ({ records }) => Effect.map(Stream.runCollect(Stream.either(records)), Chunk.toReadonlyArray)
            )
        )
      ).pipe(Effect.provide(JsonlStore.layer({ path }).pipe(Layer.provide(endless({ count: 0 })))))
      expect(Either.flip(result)).toMatchObject(Either.right({ reason: "format", line: 4 }))
      expect(reads.count).toBeLessThanOrEqual(17)
      // The records read before the endless line are given, then the error.
      expect(streamedRecords.map(Either.match({ onLeft: (e) => e.line, onRight: (r) => r.itemId }))).toEqual([
        "item-0",
        "item-1",
        4
      ])
      const resumeReads = { count: 0 }
      const resumed = yield* Effect.flip(
        Resume.open({ identity, policy: "reuse-successes" }).pipe(
          Effect.provide(JsonlStore.layer({ path }).pipe(Layer.provide(endless(resumeReads))))
        )
      )
      expect(resumed).toMatchObject({ reason: "format", line: 4 })
      expect(resumeReads.count).toBeLessThanOrEqual(17)
      expect(statSync(path).size).toBe(size)
    }))

  it.scoped("a line over 16 MiB: a format error in the middle, and at the end too (no crash leaves one): nothing truncated", () =>
    Effect.gen(function*() {
      const path = yield* tempFile
      yield* seed(path, 2)
      const long = "x".repeat(Jsonl.MAX_LINE_BYTES + 1)
      appendFileSync(path, `${long}\n`)
      appendFileSync(path, line("after"))
      const error = yield* Effect.flip(streamed(path))
      expect(error).toMatchObject({ reason: "format", line: 4 })
      expect(error.message).toMatch(/^line 4: longer than 16777216 bytes/)
      const torn = yield* tempFile
      yield* seed(torn, 2)
      appendFileSync(torn, long)
      const size = statSync(torn).size
      const resumed = yield* Effect.flip(
        Resume.open({ identity, policy: "reuse-successes" }).pipe(
          Effect.provide(JsonlStore.layer({ path: torn }).pipe(Layer.provide(NodeFileSystem.layer)))
        )
      )
      expect(resumed).toMatchObject({ reason: "format", line: 4 })
      expect(statSync(torn).size).toBe(size)
    }))

  it.scoped("a line nested deeper than 256 levels (a 10 MB `[[[[…]]]]`): a format error naming it, refused unparsed", () =>
    Effect.gen(function*() {
      const path = yield* tempFile
      yield* seed(path, 2)
      // V8 parses this line at ~550 MB: it is refused before JSON.parse (bench/ab/json-depth.mjs measures it).
      const deep = 5 * 1024 * 1024
      appendFileSync(path, `${"[".repeat(deep)}${"]".repeat(deep)}\n`)
      appendFileSync(path, line("after"))
      const error = yield* Effect.flip(streamed(path))
      expect(error).toMatchObject({ reason: "format", line: 4 })
      expect(error.message).toMatch(/^line 4: nested deeper than 256 levels of arrays and objects/)
      const resumed = yield* Effect.flip(
        Resume.open({ identity, policy: "reuse-successes" }).pipe(
          Effect.provide(JsonlStore.layer({ path }).pipe(Layer.provide(NodeFileSystem.layer)))
        )
      )
      expect(resumed.message).toBe(error.message)
      // At the limit, and brackets inside strings (which do not nest), it is read as before: a record line whose
      // other fields are not a record's is "not an item record", not refused for its depth.
      const at = yield* tempFile
      yield* seed(at, 0)
      appendFileSync(at, `${"[".repeat(256)}${"]".repeat(256)}\n`)
      expect((yield* Effect.flip(streamed(at))).message).not.toMatch(/nested deeper/)
      const strings = yield* tempFile
      yield* seed(strings, 0)
      appendFileSync(strings, Either.getOrThrow(Jsonl.recordLine(record("brackets", { result: "[\"{".repeat(1000) }))))
      expect((yield* streamed(strings)).map((r) => r.itemId)).toEqual(["brackets"])
    }))

  it("the store never writes a line a reader refuses: a result nested deeper than 256 levels is an encode error", () => {
    let deep: unknown = "leaf"
    for (let i = 0; i < 300; i++) deep = [deep]
    const refused = Jsonl.recordLine(record("deep", { result: deep }))
    expect(Either.flip(refused)).toMatchObject(Either.right({ reason: "encode" }))
    expect(Either.isLeft(refused) && refused.left.message).toMatch(
      /^record of item "deep" is nested deeper than 256 levels of arrays and objects/
    )
    let shallow: unknown = "leaf"
    for (let i = 0; i < 200; i++) shallow = { a: shallow }
    expect(Either.isRight(Jsonl.recordLine(record("shallow", { result: shallow })))).toBe(true)
  })

  it("the store never writes a line a reader refuses: a record over 16 MiB is an encode error", () => {
    // Compared as messages: a line of 16 MiB would not be shown by a failed expectation.
    const message = (r: Either.Either<Uint8Array, ArtifactStore.ArtifactError>) =>
      Either.match(r, { onLeft: (e) => `${e.reason}: ${e.message}`, onRight: (l) => `a line of ${l.length} bytes` })
    const huge = record("huge", { result: "x".repeat(Jsonl.MAX_LINE_BYTES) })
    expect(message(Jsonl.recordLine(huge))).toMatch(
      /^encode: record of item "huge" is \d+ bytes as a line, more than an artifact line holds \(16777216\)$/
    )
    const id = message(Jsonl.recordLine(record("i".repeat(Jsonl.MAX_LINE_BYTES))))
    expect(id).toMatch(/^encode: record of item "i+"… \(16777216 characters\) is \d+ bytes/)
    expect(id.length).toBeLessThan(300)
    expect(message(Jsonl.recordLine(record("small", { result: "x".repeat(1000) })))).toMatch(/^a line of \d+ bytes$/)
  })

  it.scoped("a bad line in the chunk of good ones: the stream gives the good ones first, then the error", () =>
    Effect.gen(function*() {
      const path = yield* tempFile
      yield* seed(path, 2)
      appendFileSync(path, "not json\n")
      const given = yield* Effect.scoped(
        Effect.flatMap(
          ArtifactStore.ArtifactStore,
          (s) =>
            Effect.flatMap(
              s.stream,
              ({ records }) => Effect.map(Stream.runCollect(Stream.either(records)), Chunk.toReadonlyArray)
            )
        )
      ).pipe(Effect.provide(JsonlStore.layer({ path }).pipe(Layer.provide(NodeFileSystem.layer))))
      expect(given.map(Either.match({ onLeft: (e) => e.message, onRight: (r) => r.itemId }))).toEqual([
        "item-0",
        "item-1",
        "line 4: not valid JSON; nothing was truncated"
      ])
    }))
})
