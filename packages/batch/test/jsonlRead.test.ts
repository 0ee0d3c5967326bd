import { NodeFileSystem } from "@effect/platform-node"
import * as FileSystem from "@effect/platform/FileSystem"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Layer } from "effect"
import { truncateSync, writeFileSync } from "node:fs"
import { ArtifactError } from "../src/ArtifactStore.js"
import type { ItemRecord, Position } from "../src/ArtifactStore.js"
import { ArtifactStore, JsonlStore } from "../src/index.js"
import * as Jsonl from "../src/internal/jsonl.js"
import * as JsonlRead from "../src/internal/jsonlRead.js"
import { bytes, identityFingerprint, record, tempFile } from "./artifact-helpers.js"
import { identity } from "./fixtures/artifact-identity.js"

// The read-back under `JsonlStore`'s `recordAt`, called directly: a record in the window is answered at once,
// without the lock (most lookups of a resumed run), and a lookup that waited on the lock for a window being read
// is served from it, not read again.

const io = (what: string) => (e: { readonly message: string }) =>
  new ArtifactError({ reason: "io", message: `${what}: ${e.message}` })

/** "a" and "b" at the file's start, fillers past two chunks, then "far" (more than a chunk past the first window). */
const written = (path: string) =>
  Effect.scoped(Effect.gen(function*() {
    const store = yield* ArtifactStore.ArtifactStore
    const artifact = yield* store.create(yield* ArtifactStore.makeManifest(identity))
    yield* artifact.append(record("a"))
    yield* artifact.append(record("b", { index: 1 }))
    const filler = "x".repeat(100_000)
    for (let i = 0; bytes(path).length < 2 * JsonlRead.CHUNK + filler.length; i++) {
      yield* artifact.append(record(`filler-${i}`, { index: i + 2, result: filler }))
    }
    yield* artifact.append(record("far", { index: 99 }))
  })).pipe(Effect.provide(JsonlStore.layer({ path }).pipe(Layer.provide(NodeFileSystem.layer))))

/** The file system with its `read`s counted. */
const counted = (fs: FileSystem.FileSystem, reads: { count: number }): FileSystem.FileSystem => ({
  ...fs,
  open: (p, o) =>
    Effect.map(fs.open(p, o), (file): FileSystem.File => ({
      [FileSystem.FileTypeId]: FileSystem.FileTypeId,
      fd: file.fd,
      get stat() {
        return file.stat
      },
      get sync() {
        return file.sync
      },
      seek: (offset, from) => file.seek(offset, from),
      read: (buffer) => Effect.tap(file.read(buffer), () => Effect.sync(() => void (reads.count += 1))),
      readAlloc: (size) => file.readAlloc(size),
      truncate: (length) => file.truncate(length),
      write: (buffer) => file.write(buffer),
      writeAll: (buffer) => file.writeAll(buffer)
    }))
})

/** An artifact written by `write`, its records' positions as the scan gives them (copied while handed over), a reader. */
const openedWith = (write: (path: string) => Effect.Effect<void, unknown>) =>
  Effect.gen(function*() {
    const path = yield* tempFile
    yield* write(path)
    const fs = yield* FileSystem.FileSystem
    const reads = { count: 0 }
    const { reader, scan } = JsonlRead.make(counted(fs, reads), path, io)
    const at = new Map<string, Position>()
    yield* scan((r, p) => {
      if (p !== undefined) at.set(r.itemId, { offset: p.offset, length: p.length, digest: p.digest, exact: p.exact })
    })
    const position = (id: string) => at.get(id)!
    reads.count = 0
    return { path, lookup: yield* reader(identityFingerprint), another: reader(identityFingerprint), position, reads }
  }).pipe(Effect.provide(NodeFileSystem.layer))

const opened = openedWith(written)

/** Records in turn, each line written by the store. */
const writtenAll = (...records: ReadonlyArray<ItemRecord>) => (path: string) =>
  Effect.scoped(Effect.gen(function*() {
    const store = yield* ArtifactStore.ArtifactStore
    const artifact = yield* store.create(yield* ArtifactStore.makeManifest(identity))
    for (const r of records) yield* artifact.append(r)
  })).pipe(Effect.provide(JsonlStore.layer({ path }).pipe(Layer.provide(NodeFileSystem.layer))))

const three = writtenAll(record("a"), record("b", { index: 1 }), record("c", { index: 2 }))

/** The error a lookup fails with, as the operator reads it. */
const failure = (effect: Effect.Effect<ItemRecord, ArtifactError>) =>
  Effect.map(Effect.flip(effect), (e) => [e.reason, e.message])

const changed = (
  path: string,
  offset: number,
  why: string
) => ["format", `${path}: the record at byte ${offset} ${why} (the file changed while it was open)`]

describe("the read-back of a JSONL artifact", () => {
  it.scoped("a record in the window is answered at once, the parsed record itself: no lock, no read", () =>
    Effect.gen(function*() {
      const { lookup, position, reads } = yield* opened
      expect(position("far").offset).toBeGreaterThanOrEqual(2 * JsonlRead.CHUNK)
      // The window is empty: "a" is read (the window from the file's start).
      const first = lookup(position("a"))
      expect(Either.isEither(first)).toBe(false)
      expect(yield* first).toEqual(record("a"))
      expect(reads.count).toBe(1)
      // "b" is in that window, and no read is in flight: its answer is the parse's `Either`, not an effect.
      const second = lookup(position("b"))
      expect(Either.isEither(second)).toBe(true)
      expect(yield* second).toEqual(record("b", { index: 1 }))
      // "far" is more than a chunk past the window: read alone, the window then starts at its first byte.
      expect(yield* lookup(position("far"))).toEqual(record("far", { index: 99 }))
      expect(reads.count).toBe(2)
      const again = lookup(position("far"))
      expect(Either.isEither(again)).toBe(true)
      expect(yield* again).toEqual(record("far", { index: 99 }))
      expect(reads.count).toBe(2)
    }))

  it.scoped("a lookup that waited on the lock while its record's window was read is served from it: one read", () =>
    Effect.gen(function*() {
      const { lookup, position, reads } = yield* opened
      // Both start before the first's read ends: the second waits on the lock, then finds "far" in the window
      // just read (from its first byte: the window's start is the record's offset).
      const both = yield* Effect.all([lookup(position("far")), lookup(position("far"))], { concurrency: 2 })
      expect(both).toEqual([record("far", { index: 99 }), record("far", { index: 99 })])
      expect(reads.count).toBe(1)
      // The same for "a", far behind that window: read alone, from its first byte.
      const near = yield* Effect.all([lookup(position("a")), lookup(position("a"))], { concurrency: 2 })
      expect(near).toEqual([record("a"), record("a")])
      expect(reads.count).toBe(2)
    }))

  it.scoped("a record whose line was cut short after open fails as no longer a complete line; one before it is read", () =>
    Effect.gen(function*() {
      const { lookup, path, position } = yield* openedWith(three)
      truncateSync(path, position("b").offset + 20) // the file now ends inside b's line
      expect(yield* lookup(position("a"))).toEqual(record("a"))
      expect(yield* failure(lookup(position("b")))).toEqual(
        changed(path, position("b").offset, "is no longer a complete line")
      )
    }))

  it.scoped("a record whose newline was overwritten after open (its bytes unchanged) fails as no longer a complete line", () =>
    Effect.gen(function*() {
      const { lookup, path, position } = yield* openedWith(three)
      const text = bytes(path)
      const newline = position("b").offset + position("b").length
      expect(text[newline]).toBe(0x0a)
      text[newline] = 0x20
      writeFileSync(path, text)
      expect(yield* failure(lookup(position("b")))).toEqual(
        changed(path, position("b").offset, "is no longer a complete line")
      )
      expect(yield* lookup(position("c"))).toEqual(record("c", { index: 2 }))
    }))

  it.scoped("a record rewritten in place after open, same length, fails as not the line read at open", () =>
    Effect.gen(function*() {
      const { lookup, path, position } = yield* openedWith(three)
      writeFileSync(path, bytes(path).toString("utf8").replace("answer to b", "answer to X"))
      expect(yield* failure(lookup(position("b")))).toEqual(
        changed(path, position("b").offset, "is not the line read at open")
      )
      expect(yield* lookup(position("c"))).toEqual(record("c", { index: 2 }))
    }))

  it.scoped("a record whose newline is the first byte after the window read for an earlier one is read back", () =>
    Effect.gen(function*() {
      // "first" loads a window of CHUNK bytes from the file's start; "edge" ends exactly there: its record bytes
      // are all in the window, its newline is not (the window cannot tell that the line is complete).
      const filler = "x".repeat(100_000)
      const lineOf = (r: ItemRecord) => Either.getOrThrow(Jsonl.recordLine(r))
      const { another, lookup, path, position } = yield* openedWith((path) =>
        Effect.scoped(Effect.gen(function*() {
          const store = yield* ArtifactStore.ArtifactStore
          const artifact = yield* store.create(yield* ArtifactStore.makeManifest(identity))
          yield* artifact.append(record("first"))
          for (let i = 0; bytes(path).length < JsonlRead.CHUNK - 2 * filler.length; i++) {
            yield* artifact.append(record(`filler-${i}`, { index: i + 1, result: filler }))
          }
          const bare = lineOf(record("edge", { result: "" })).length
          const result = "y".repeat(JsonlRead.CHUNK + 1 - bytes(path).length - bare)
          yield* artifact.append(record("edge", { result }))
        })).pipe(Effect.provide(JsonlStore.layer({ path }).pipe(Layer.provide(NodeFileSystem.layer))))
      )
      const edge = position("edge")
      expect(edge.offset + edge.length).toBe(JsonlRead.CHUNK)
      expect(bytes(path)[JsonlRead.CHUNK]).toBe(0x0a)
      expect(yield* lookup(position("first"))).toEqual(record("first"))
      expect((yield* lookup(edge)).itemId).toBe("edge")
      // Both at once, on a fresh reader: "edge" waits on the lock for the window "first" reads, then finds it
      // not wholly in that window, and reads it.
      const fresh = yield* another
      const both = yield* Effect.all([fresh(position("first")), fresh(edge)], { concurrency: 2 })
      expect(both.map((r) => r.itemId)).toEqual(["first", "edge"])
    }))
})
