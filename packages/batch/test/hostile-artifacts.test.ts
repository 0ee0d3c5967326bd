import { NodeFileSystem } from "@effect/platform-node"
import * as FileSystem from "@effect/platform/FileSystem"
import { describe, expect, it } from "@effect/vitest"
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
})
