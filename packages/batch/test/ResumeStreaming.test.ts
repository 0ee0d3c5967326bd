import { NodeFileSystem } from "@effect/platform-node"
import * as FileSystem from "@effect/platform/FileSystem"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, FastCheck as fc, Layer, Logger, Option, Stream } from "effect"
import { appendFileSync, truncateSync, writeFileSync } from "node:fs"
import { ArtifactStore, JsonlStore, Resume } from "../src/index.js"
import * as Jsonl from "../src/internal/jsonl.js"
import * as JsonlRead from "../src/internal/jsonlRead.js"
import { bytes, inputOf, record, tempFile } from "./artifact-helpers.js"
import { identity } from "./fixtures/artifact-identity.js"

// Resuming holds only what the policy reuses: the artifact is read a chunk at a time (never the whole file at
// once) and indexed as it is read, so a run of millions of records does not hold them all.

/** Node's file system where reading a whole file dies, and the largest single read is counted. */
const chunkedOnly = () => {
  const reads = { largest: 0, count: 0 }
  const layer = Layer.effect(
    FileSystem.FileSystem,
    Effect.map(FileSystem.FileSystem, (fs): FileSystem.FileSystem => ({
      ...fs,
      readFile: (p) => Effect.dieMessage(`the whole of ${p} was read at once`),
      readFileString: (p) => Effect.dieMessage(`the whole of ${p} was read at once`),
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
          read: (buffer) =>
            Effect.tap(file.read(buffer), (size) =>
              Effect.sync(() => {
                reads.count += 1
                reads.largest = Math.max(reads.largest, Number(size))
              })),
          readAlloc: (size) => Effect.dieMessage(`a read of ${size} bytes into a new buffer`),
          truncate: (length) => file.truncate(length),
          write: (buffer) => file.write(buffer),
          writeAll: (buffer) => file.writeAll(buffer)
        }))
    }))
  ).pipe(Layer.provide(NodeFileSystem.layer))
  return { reads, layer }
}

/** 3,000 items: each has a success, a newer failure for every third, a record under another input for every fifth. */
const ids = Array.from({ length: 3_000 }, (_, i) => `item-${i}`)
const seeded = (path: string) =>
  Effect.scoped(Effect.gen(function*() {
    const store = yield* ArtifactStore.ArtifactStore
    const opened = yield* store.create(yield* ArtifactStore.makeManifest(identity))
    for (const [i, id] of ids.entries()) {
      yield* opened.append(record(id, { index: i }))
      if (i % 3 === 0) {
        yield* opened.append(record(id, { index: i, outcome: "failure", category: "overloaded", result: undefined }))
      }
      if (i % 5 === 0) yield* opened.append(record(id, { index: i, input: { changed: id }, result: "other" }))
    }
  })).pipe(Effect.provide(JsonlStore.layer({ path }).pipe(Layer.provide(NodeFileSystem.layer))))

describe("Resume over a large artifact", () => {
  it.scoped("resume reads the file a chunk at a time and indexes it as it goes; the torn tail is truncated", () =>
    Effect.gen(function*() {
      const path = yield* tempFile
      yield* seeded(path)
      const clean = bytes(path)
      appendFileSync(path, "{\"kind\":\"item\",\"itemId\":\"torn")
      const { layer, reads } = chunkedOnly()
      const session = yield* Resume.open({ identity, policy: "reuse-successes" }).pipe(
        Effect.provide(JsonlStore.layer({ path }).pipe(Layer.provide(layer)))
      )
      expect(clean.length).toBeGreaterThan(JsonlRead.CHUNK)
      expect(reads.largest).toBeLessThanOrEqual(JsonlRead.CHUNK)
      expect(reads.count).toBeGreaterThanOrEqual(Math.ceil(clean.length / JsonlRead.CHUNK))
      expect(session.opened.truncatedBytes).toBe(29)
      expect(Buffer.compare(bytes(path), clean)).toBe(0) // (toEqual compares 2 MB byte by byte: seconds)
      // The newest success per item and input: a newer failure does not hide it, another input is another key.
      expect(session.index.size).toBe(ids.length + ids.length / 5)
      expect(Option.map(yield* session.lookup("item-3", inputOf("item-3")), (r) => r.result)).toEqual(
        Option.some("answer to item-3")
      )
      expect(Option.map(yield* session.lookup("item-5", inputOf("item-5", { changed: "item-5" })), (r) => r.result))
        .toEqual(Option.some("other"))
      expect(Option.isNone(yield* session.lookup("item-1", inputOf("item-2")))).toBe(true)
    }))

  it.scoped("stream gives what read gives, and inspect counts what Resume.index over them keeps, under every policy", () =>
    Effect.gen(function*() {
      const path = yield* tempFile
      yield* seeded(path)
      const { layer } = chunkedOnly()
      const withStore = Effect.provide(JsonlStore.layer({ path }).pipe(Layer.provide(layer)))
      const all = yield* Effect.provide(
        Effect.flatMap(ArtifactStore.ArtifactStore, (s) => s.read),
        JsonlStore.layer({ path }).pipe(Layer.provide(NodeFileSystem.layer))
      )
      const streamed = yield* withStore(
        Effect.scoped(
          Effect.flatMap(
            ArtifactStore.ArtifactStore,
            (s) =>
              Effect.flatMap(
                s.stream,
                ({ manifest, records }) =>
                  Effect.map(Stream.runCollect(records), (chunk) => ({ manifest, records: [...chunk] }))
              )
          )
        )
      )
      expect(streamed).toEqual(all)
      for (const policy of ["none", "reuse-successes", "reuse-all"] as const) {
        const inspected = yield* withStore(Resume.inspect({ identity, policy }))
        const indexed = Resume.index(all.records, { policy, identityFingerprint: all.manifest.identityFingerprint })
        expect(inspected).toEqual({ policy, identityFingerprint: indexed.identityFingerprint, size: indexed.size })
      }
    }))
})

describe("Resume over the JSONL store keeps positions, not records", () => {
  /** Rewrites item-4's success line in place, `from` replaced by `to` (of the same length). */
  const rewriteItem4 = (path: string, from: string, to: string) => {
    const text = bytes(path).toString("utf8")
    const success = new TextDecoder().decode(Either.getOrThrow(Jsonl.recordLine(record("item-4", { index: 4 }))))
      .slice(0, -1)
    const at = text.indexOf(success)
    expect(at).toBeGreaterThan(0)
    writeFileSync(path, text.slice(0, at) + success.replace(from, to) + text.slice(at + success.length))
  }

  const opened = (path: string, layer: Layer.Layer<FileSystem.FileSystem>) =>
    Resume.open({ identity, policy: "reuse-successes" }).pipe(
      Effect.provide(JsonlStore.layer({ path }).pipe(Layer.provide(layer)))
    )

  /** Item 4's line, rewritten in place after open (`from` → `to`, same length), is not reused; item 7's is. */
  const rewrittenNotReused = (from: string, to: string) =>
    Effect.gen(function*() {
      const path = yield* tempFile
      yield* seeded(path)
      const session = yield* opened(path, NodeFileSystem.layer)
      rewriteItem4(path, from, to)
      expect(Option.isNone(yield* session.lookup("item-4", inputOf("item-4")))).toBe(true)
      expect(Option.isSome(yield* session.lookup("item-7", inputOf("item-7")))).toBe(true)
    })

  it.scoped("each reused record is read back when its item comes up, in any order: the record written, to the byte", () =>
    Effect.gen(function*() {
      const path = yield* tempFile
      yield* seeded(path)
      // A line longer than a chunk: read alone, whatever the window holds.
      const big = record("big", { index: 9, result: "x".repeat(JsonlRead.CHUNK * 1.5) })
      appendFileSync(path, Either.getOrThrow(Jsonl.recordLine(big)))
      const all = yield* Effect.provide(
        Effect.flatMap(ArtifactStore.ArtifactStore, (s) => s.read),
        JsonlStore.layer({ path }).pipe(Layer.provide(NodeFileSystem.layer))
      )
      const indexed = Resume.index(all.records, {
        policy: "reuse-successes",
        identityFingerprint: all.manifest.identityFingerprint
      })
      const { layer, reads } = chunkedOnly()
      const session = yield* opened(path, layer)
      const afterOpen = reads.count
      const lines = new Map(bytes(path).toString("utf8").split("\n").slice(1).map((l) => [l, true]))
      // Backwards, then every seventh: reads far from the window, and near it.
      const order = [...ids].reverse().concat(ids.filter((_, i) => i % 7 === 0), ["big", "item-0"])
      for (const id of order) {
        const found = yield* session.lookup(id, inputOf(id))
        expect(found).toEqual(indexed.lookup(id, inputOf(id)))
        const line = new TextDecoder().decode(Either.getOrThrow(Jsonl.recordLine(Option.getOrThrow(found))))
        expect(lines.has(line.slice(0, -1))).toBe(true)
      }
      expect(reads.count).toBeGreaterThan(afterOpen)
      // At most a chunk, or the longest line and a sixteenth of a chunk before it.
      expect(reads.largest).toBeLessThanOrEqual(JsonlRead.CHUNK / 16 + Either.getOrThrow(Jsonl.recordLine(big)).length)
    }))

  it.scoped("a record that changed in the file after it was indexed is not reused: its item runs again", () =>
    // Rewritten in place, same length: now a failure (not reusable under reuse-successes).
    rewrittenNotReused("\"success\"", "\"failure\""))

  it.scoped("lookups running at once while windows are read give each its own record", () =>
    Effect.gen(function*() {
      const path = yield* tempFile
      yield* seeded(path)
      const session = yield* opened(path, NodeFileSystem.layer)
      // Far apart and near each other, eight at a time: a lookup in the window meets reads in flight.
      const order = ids.filter((_, i) => i % 2 === 0).flatMap((id, i) => [id, ids[ids.length - 1 - i]!])
      const found = yield* Effect.forEach(order, (id) => session.lookup(id, inputOf(id)), { concurrency: 8 })
      expect(found.map((r) => Option.map(r, (x) => x.itemId))).toEqual(order.map(Option.some))
    }))

  it.scoped("a record rewritten in place into one that no longer decodes, its ids and outcome kept, is not reused", () =>
    // Same length, same item, input, identity and outcome: only its kind is wrong (a read back that trusted
    // the line without checking its bytes would reuse it).
    rewrittenNotReused("\"kind\":\"item\"", "\"kind\":\"itex\""))

  it.scoped("a record rewritten in place into another valid record of the same item, input and outcome is not reused", () =>
    // Same length, still a reusable success of item 4 under its input: only its answer changed after open.
    rewrittenNotReused("answer to item-4", "answer to item-X"))

  it.scoped("lookups in file order, eight at a time, read each window of the file about once", () =>
    Effect.gen(function*() {
      // A resumed run's items come up about as they were written, several at once: the lookups that wait for a
      // window being read are served from it, they do not read it again each.
      const path = yield* tempFile
      yield* seeded(path)
      const { layer, reads } = chunkedOnly()
      const session = yield* opened(path, layer)
      const afterOpen = reads.count
      const found = yield* Effect.forEach(ids, (id) => session.lookup(id, inputOf(id)), { concurrency: 8 })
      expect(found.every(Option.isSome)).toBe(true)
      // Each window starts a sixteenth of a chunk before the record that loads it; one read more at the end.
      const windows = Math.ceil(bytes(path).length / (JsonlRead.CHUNK * 15 / 16))
      expect(reads.count - afterOpen).toBeLessThanOrEqual(2 * windows + 2)
    }))

  /** Where item-4's success line starts and ends (the byte of its newline) in the seeded file. */
  const item4Line = (path: string) => {
    const text = bytes(path)
    const line = Either.getOrThrow(Jsonl.recordLine(record("item-4", { index: 4 })))
    const at = text.indexOf(line)
    expect(at).toBeGreaterThan(0)
    return { at, newline: at + line.length - 1 }
  }

  /** Looks up items in turn, the warnings logged meanwhile collected. */
  const lookups = (session: Resume.Session, items: ReadonlyArray<string>) =>
    Effect.gen(function*() {
      const warnings: Array<string> = []
      const logger = Logger.make(({ message }) => {
        warnings.push(Array.isArray(message) ? message.join(" ") : String(message))
      })
      const found = yield* Effect.forEach(items, (id) => session.lookup(id, inputOf(id))).pipe(
        Effect.provide(Logger.replace(Logger.defaultLogger, logger))
      )
      return { found: found.map(Option.isSome), warnings }
    })

  it.scoped("a record whose line was cut short after open is not reused, and the warning says the line is no longer complete", () =>
    Effect.gen(function*() {
      const path = yield* tempFile
      yield* seeded(path)
      const session = yield* opened(path, NodeFileSystem.layer)
      const { at } = item4Line(path)
      truncateSync(path, at + 40) // the file now ends inside item-4's line
      const { found, warnings } = yield* lookups(session, ["item-2", "item-4"])
      expect(found).toEqual([true, false])
      expect(warnings).toEqual([
        `item "item-4" not reused: ${path}: the record at byte ${at} is no longer a complete line (the file changed while it was open)`
      ])
    }))

  it.scoped("a record whose newline was overwritten after open (its bytes unchanged, the line now runs on) is not reused", () =>
    Effect.gen(function*() {
      const path = yield* tempFile
      yield* seeded(path)
      const session = yield* opened(path, NodeFileSystem.layer)
      const { at, newline } = item4Line(path)
      const text = bytes(path)
      expect(text[newline]).toBe(0x0a)
      text[newline] = 0x20
      writeFileSync(path, text)
      const { found, warnings } = yield* lookups(session, ["item-4", "item-7"])
      expect(found).toEqual([false, true])
      expect(warnings).toEqual([
        `item "item-4" not reused: ${path}: the record at byte ${at} is no longer a complete line (the file changed while it was open)`
      ])
    }))

  it.scoped("a record whose newline is the first byte after the window read for an earlier one is read back and reused", () =>
    Effect.gen(function*() {
      // "first" loads a window of CHUNK bytes from the file's start; "edge" ends exactly there: its record bytes
      // are all in the window, its newline is not (the window cannot tell that the line is complete).
      const path = yield* tempFile
      const filler = "x".repeat(100_000)
      const lineOf = (r: ArtifactStore.ItemRecord) => Either.getOrThrow(Jsonl.recordLine(r))
      yield* Effect.scoped(Effect.gen(function*() {
        const store = yield* ArtifactStore.ArtifactStore
        const artifact = yield* store.create(yield* ArtifactStore.makeManifest(identity))
        yield* artifact.append(record("first"))
        for (let i = 0; bytes(path).length < JsonlRead.CHUNK - 2 * filler.length; i++) {
          yield* artifact.append(record(`filler-${i}`, { index: i + 1, result: filler }))
        }
        const offset = bytes(path).length
        const bare = lineOf(record("edge", { result: "" })).length
        // The line's newline at byte CHUNK: offset + (line length - 1) = CHUNK.
        yield* artifact.append(record("edge", { result: "y".repeat(JsonlRead.CHUNK + 1 - offset - bare) }))
        yield* artifact.append(record("after"))
      })).pipe(Effect.provide(JsonlStore.layer({ path }).pipe(Layer.provide(NodeFileSystem.layer))))
      const file = bytes(path)
      expect(file[JsonlRead.CHUNK]).toBe(0x0a)
      expect(file[JsonlRead.CHUNK - 1]).toBe(0x7d) // the edge record's closing brace
      expect(file.indexOf(lineOf(record("first")))).toBeLessThan(JsonlRead.CHUNK / 16)
      const session = yield* opened(path, NodeFileSystem.layer)
      const { found, warnings } = yield* lookups(session, ["first", "edge", "after"])
      expect(warnings).toEqual([])
      expect(found).toEqual([true, true, true])
    }))

  /** The seeded artifact and a line for item "extra" with a field no record has, opened. */
  const openedWithExtraLine = Effect.gen(function*() {
    const path = yield* tempFile
    yield* seeded(path)
    const line = JSON.stringify({ ...record("extra", { index: 9_999 }), secret: "not a record field" })
    appendFileSync(path, `${line}\n`)
    return { path, session: yield* opened(path, NodeFileSystem.layer) }
  })

  it.scoped("a line not exactly its record's encoding, rewritten in place after open, is not reused either", () =>
    Effect.gen(function*() {
      const { path, session } = yield* openedWithExtraLine
      const text = bytes(path).toString("utf8")
      writeFileSync(path, text.replace("answer to extra", "answer to EXTRA"))
      expect(Option.isNone(yield* session.lookup("extra", inputOf("extra")))).toBe(true)
      expect(Option.isSome(yield* session.lookup("item-7", inputOf("item-7")))).toBe(true)
    }))

  it.scoped("a line that is not exactly its record's encoding is read back decoded: its extra field is dropped", () =>
    Effect.gen(function*() {
      const { session } = yield* openedWithExtraLine
      const found = Option.getOrThrow(yield* session.lookup("extra", inputOf("extra")))
      expect(found).toEqual(record("extra", { index: 9_999 }))
      expect(Object.keys(found)).not.toContain("secret")
    }))
})

describe("the JSONL scanner", () => {
  it.prop(
    "fed in chunks cut anywhere, it reads what parsing the whole file reads",
    [fc.array(fc.integer({ min: 1, max: 400 }), { minLength: 1, maxLength: 40 }), fc.nat({ max: 60 })],
    ([cuts, torn]) => {
      const manifest = Either.getOrThrow(Jsonl.manifestLine(Effect.runSync(ArtifactStore.makeManifest(identity))))
      const lines = ids.slice(0, 8).map((id) => Either.getOrThrow(Jsonl.recordLine(record(id))))
      const tail = new TextEncoder().encode(JSON.stringify(record("tail")).slice(0, torn))
      const file = Jsonl.concat([manifest, ...lines, tail])
      const whole = Either.getOrThrow(Jsonl.parse(file))
      const records: Array<ArtifactStore.ItemRecord> = []
      const scanner = Jsonl.scanner((r) => void records.push(r))
      let at = 0
      for (const cut of [...cuts, file.length]) {
        Either.getOrThrow(scanner.push(file.subarray(at, Math.min(file.length, at + cut))))
        at = Math.min(file.length, at + cut)
      }
      const scanned = scanner.end()
      expect(whole._tag).toBe("Artifact")
      expect({ ...scanned, records }).toEqual(whole)
    }
  )
})
