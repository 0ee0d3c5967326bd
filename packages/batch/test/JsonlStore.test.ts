import { SystemError } from "@effect/platform/Error"
import { describe, expect, it } from "@effect/vitest"
import type { Layer, Scope } from "effect"
import { Effect, Exit, FastCheck as fc } from "effect"
import { existsSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import * as nodePath from "node:path"
import { ArtifactStore } from "../src/index.js"
import type { OpenedAs } from "./artifact-helpers.js"
import { bytes, lines, nodeStore, record, tempDir, tempFile, text, wrappedStore } from "./artifact-helpers.js"
import { identity } from "./fixtures/artifact-identity.js"

// The JSONL store's own decisions (issue #23): which error, naming what, when the file system refuses; when it
// fsyncs; what `open` does with a file it did not write. Real faults wherever one can be provoked (a symlink
// loop, a dangling symlink, a missing directory, a device); an injected one only where the disk must fail.

const store = ArtifactStore.ArtifactStore
const manifest = ArtifactStore.makeManifest(identity)

type Op = Effect.Effect<unknown, ArtifactStore.ArtifactError, ArtifactStore.ArtifactStore | Scope.Scope>
const read: Op = Effect.flatMap(store, (s) => s.read)
const resume: Op = Effect.flatMap(store, (s) => s.resume())
const open: Op = Effect.flatMap(Effect.zip(store, manifest), ([s, m]) => s.open(m))
const resumeReading = (onRecord: ArtifactStore.OnRecord): Op => Effect.flatMap(store, (s) => s.resume(onRecord))
const openReading = (onRecord: ArtifactStore.OnRecord): Op =>
  Effect.flatMap(Effect.zip(store, manifest), ([s, m]) => s.open(m, onRecord))
const create: Op = Effect.flatMap(Effect.zip(store, manifest), ([s, m]) => s.create(m))

const run = <A, E>(
  effect: Effect.Effect<A, E, ArtifactStore.ArtifactStore | Scope.Scope>,
  layer: Layer.Layer<ArtifactStore.ArtifactStore>
) => Effect.scoped(effect).pipe(Effect.provide(layer))

/** The ArtifactError an operation fails with. */
const errorOf = (op: Op, layer: Layer.Layer<ArtifactStore.ArtifactStore>) =>
  Effect.map(Effect.exit(run(op, layer)), (exit) => {
    if (Exit.isSuccess(exit)) throw new Error("expected a failure")
    if (exit.cause._tag !== "Fail") throw new Error(`expected an ArtifactError, got ${String(exit.cause)}`)
    return exit.cause.error
  })

/** An artifact holding these records (and nothing torn). */
const seed = (path: string, ids: ReadonlyArray<string>) =>
  run(
    Effect.gen(function*() {
      const opened = yield* (yield* store).create(yield* manifest)
      for (const id of ids) yield* opened.append(record(id))
    }),
    nodeStore({ path })
  )

const injected = (method: string) =>
  new SystemError({ reason: "Unknown", module: "FileSystem", method, description: "EIO (injected)" })

describe("JsonlStore: a file system error names the operation and the file", () => {
  it.scoped("a path that cannot be read (a symlink loop) fails read, resume and open with io, and create names the stat", () =>
    Effect.gen(function*() {
      const path = yield* tempFile
      symlinkSync(path, path) // ELOOP: it exists, but is neither a file nor missing
      const layer = nodeStore({ path })
      for (const op of [read, resume, open]) {
        const error = yield* errorOf(op, layer)
        expect(error.reason).toBe("io")
        expect(error.message.startsWith(`cannot read ${path}: BadResource: FileSystem.open (${path}): `)).toBe(true)
        expect(error.message).toContain("ELOOP")
      }
      const error = yield* errorOf(create, layer)
      expect(error.reason).toBe("io")
      expect(error.message.startsWith(`cannot stat ${path}: BadResource: FileSystem.stat (${path}): `)).toBe(true)
      expect(error.message).toContain("ELOOP")
    }))

  it.scoped("a file in a directory that does not exist: create and open fail with io naming the creation, not exists", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const path = nodePath.join(dir, "no-such-directory", "run.jsonl")
      for (const op of [create, open]) {
        const error = yield* errorOf(op, nodeStore({ path }))
        expect(error.reason).toBe("io")
        expect(error.message.startsWith(`cannot create ${path}: NotFound: FileSystem.open (${path}): `)).toBe(true)
        expect(error.message).toContain("ENOENT")
      }
    }))

  it.scoped("a dangling symlink is never followed: create and open fail with exists naming the file, and its target is not made", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const path = nodePath.join(dir, "run.jsonl")
      const target = nodePath.join(dir, "elsewhere.jsonl")
      symlinkSync(target, path)
      for (const op of [create, open]) {
        const error = yield* errorOf(op, nodeStore({ path, fsync: true }))
        expect(error.reason).toBe("exists")
        expect(error.message).toBe(`${path} already exists`)
        expect(existsSync(target)).toBe(false)
      }
    }))

  it.scoped("an empty file that cannot be truncated (a device): create fails with io naming the truncation", () =>
    Effect.gen(function*() {
      // /dev/null stats as an empty file, opens for append, and refuses ftruncate (EINVAL).
      const error = yield* errorOf(create, nodeStore({ path: "/dev/null" }))
      expect(error.reason).toBe("io")
      expect(error.message).toMatch(/^cannot truncate \/dev\/null: Unknown: FileSystem\.truncate.*EINVAL/)
    }))

  // Faults only a failing disk gives (EIO, ENOSPC): injected under the platform's `File`, one operation at a time.
  type Failing = "open" | "truncate" | "writeAll" | "sync"
  const faults: ReadonlyArray<{
    readonly name: string
    readonly words: string
    readonly file: "none" | "intact" | "torn"
    readonly options: { readonly fsync?: boolean; readonly overwrite?: boolean }
    readonly op: Op
    /** The operation that fails, on a file opened with this flag. */
    readonly failing: Failing
    readonly flag: string
  }> = [
    {
      name: "opening an artifact to append",
      words: "cannot open",
      file: "intact",
      options: {},
      op: resume,
      failing: "open",
      flag: "a"
    },
    {
      name: "truncating a torn tail",
      words: "cannot truncate",
      file: "torn",
      options: {},
      op: resume,
      failing: "truncate",
      flag: "a"
    },
    {
      name: "fsyncing a truncated tail",
      words: "cannot fsync",
      file: "torn",
      options: { fsync: true },
      op: open,
      failing: "sync",
      flag: "a"
    },
    {
      name: "writing a new manifest",
      words: "cannot write the manifest to",
      file: "none",
      options: {},
      op: create,
      failing: "writeAll",
      flag: "ax"
    },
    {
      name: "fsyncing a new manifest",
      words: "cannot fsync",
      file: "none",
      options: { fsync: true },
      op: create,
      failing: "sync",
      flag: "ax"
    },
    {
      name: "emptying a file to overwrite it",
      words: "cannot truncate",
      file: "intact",
      options: { overwrite: true },
      op: create,
      failing: "truncate",
      flag: "a"
    }
  ]

  for (const fault of faults) {
    it.scoped(`${fault.name} fails with io: "${fault.words} <file>: <the platform's error>"`, () =>
      Effect.gen(function*() {
        const path = yield* tempFile
        if (fault.file !== "none") yield* seed(path, ["a"])
        if (fault.file === "torn") writeFileSync(path, `${text(path)}{"kind":"item","itemId":"b"`)
        const before = fault.file === "none" ? undefined : bytes(path)
        const fails = (opened: OpenedAs, operation: Failing) =>
          opened.flag === fault.flag && fault.failing === operation
        const layer = wrappedStore(
          { path, ...fault.options },
          (_, opened) => ({
            ...(fails(opened, "writeAll") ? { writeAll: () => Effect.fail(injected("writeAll")) } : {}),
            ...(fails(opened, "sync") ? { sync: Effect.fail(injected("sync")) } : {}),
            ...(fails(opened, "truncate") ? { truncate: () => Effect.fail(injected("truncate")) } : {})
          }),
          (opened) => fails(opened, "open") ? injected("open") : undefined
        )
        const error = yield* errorOf(fault.op, layer)
        expect(error.reason).toBe("io")
        expect(error.message).toBe(`${fault.words} ${path}: Unknown: FileSystem.${fault.failing}: EIO (injected)`)
        if (before !== undefined && fault.op === resume) expect(bytes(path)).toEqual(before)
      }))
  }
})

describe("JsonlStore: fsync", () => {
  /** The store on Node's file system, recording the path of every fsync. */
  const syncing = (options: { readonly path: string; readonly fsync: boolean; readonly overwrite?: boolean }) => {
    const synced: Array<string> = []
    const layer = wrappedStore(options, (file, opened) => ({
      sync: Effect.zipRight(Effect.sync(() => synced.push(opened.path)), file.sync)
    }))
    return { synced, layer }
  }

  // A file a crashed run left (empty, or a torn manifest) was created by that run, whose directory fsync came
  // after the manifest's: its directory entry may never have reached the disk. So a start always fsyncs it.
  it.scoped("starting an artifact fsyncs its manifest, then its directory: a new file, one a crash left empty or torn, an overwritten one", () =>
    Effect.gen(function*() {
      const path = yield* tempFile
      const dir = nodePath.dirname(path)
      const full = yield* Effect.map(seed(path, []), () => text(path))
      const files: ReadonlyArray<readonly [string, string | undefined, ReadonlyArray<Op>]> = [
        ["no file", undefined, [create, open]],
        ["an empty file", "", [create, open]],
        ["a torn manifest", full.slice(0, 25), [open]],
        ["an artifact overwritten", `${full}${JSON.stringify(record("a"))}\n`, [create, open]]
      ]
      for (const [name, content, ops] of files) {
        for (const op of ops) {
          rmSync(path, { force: true })
          if (content !== undefined) writeFileSync(path, content)
          const { layer, synced } = syncing({ path, fsync: true, overwrite: name === "an artifact overwritten" })
          yield* run(op, layer)
          expect([name, synced]).toEqual([name, [path, dir]])
          expect(text(path)).toBe(full)
        }
      }
    }))

  it.scoped("without fsync nothing is fsynced: not a new manifest, its directory, a truncation, nor an append", () =>
    Effect.gen(function*() {
      const path = yield* tempFile
      const { layer, synced } = syncing({ path, fsync: false })
      yield* run(Effect.flatMap(Effect.zip(store, manifest), ([s, m]) => s.create(m)), layer)
      writeFileSync(path, `${text(path)}{"kind":"item","itemId":"b"`)
      const opened = yield* run(Effect.flatMap(store, (s) => s.resume()), layer)
      expect(opened.truncatedBytes).toBe(27)
      yield* run(Effect.flatMap(Effect.flatMap(store, (s) => s.resume()), (o) => o.append(record("c"))), layer)
      expect(synced).toEqual([])
    }))

  it.scoped("resuming with fsync: a torn tail's truncation is fsynced, then the directory; an intact artifact's directory only, until its first append", () =>
    Effect.gen(function*() {
      const path = yield* tempFile
      yield* seed(path, ["a"])
      const clean = bytes(path)
      for (
        const op of [
          Effect.flatMap(store, (s) => s.resume()),
          Effect.flatMap(Effect.zip(store, manifest), ([s, m]) => s.open(m))
        ]
      ) {
        writeFileSync(path, `${clean}{"kind":"item","itemId":"b"`)
        const torn = syncing({ path, fsync: true })
        const opened = yield* run(op, torn.layer)
        expect(opened.truncatedBytes).toBe(27)
        expect(bytes(path)).toEqual(clean)
        expect(torn.synced).toEqual([path, nodePath.dirname(path)])

        const intact = syncing({ path, fsync: true })
        yield* run(
          Effect.gen(function*() {
            const o = yield* op
            expect(o.truncatedBytes).toBe(0)
            // It may have been written without fsync: its directory entry is made durable before any record.
            expect(intact.synced).toEqual([nodePath.dirname(path)])
            yield* o.append(record("b"))
            expect(intact.synced).toEqual([nodePath.dirname(path), path]) // a resumed artifact's appends too
          }),
          intact.layer
        )
        writeFileSync(path, clean)
      }
    }))

  it.effect.prop(
    "a torn tail of any length is exactly what resume and open truncate, and the file is then the intact artifact",
    [fc.integer({ min: 1, max: 300 })],
    ([cut]) =>
      Effect.scoped(Effect.gen(function*() {
        const path = yield* tempFile
        yield* seed(path, ["a"])
        const clean = bytes(path)
        const tail = JSON.stringify(record("b")).slice(0, cut)
        for (const reading of [resumeReading, openReading]) {
          writeFileSync(path, Buffer.concat([clean, Buffer.from(tail)]))
          const existing: Array<string> = []
          const opened = yield* run(
            reading((r) => void existing.push(r.itemId)) as Effect.Effect<
              ArtifactStore.Opened,
              ArtifactStore.ArtifactError,
              ArtifactStore.ArtifactStore | Scope.Scope
            >,
            nodeStore({ path })
          )
          expect(opened.truncatedBytes).toBe(Buffer.byteLength(tail))
          expect(existing).toEqual(["a"])
          expect(bytes(path)).toEqual(clean)
        }
      })),
    { fastCheck: { numRuns: 30, seed: 23 } }
  )
})

describe("JsonlStore: what the store says about a file it cannot use", () => {
  it.scoped("read and resume of a missing or empty file fail with missing: the file, and what is not there", () =>
    Effect.gen(function*() {
      const path = yield* tempFile
      const layer = nodeStore({ path })
      expect(yield* errorOf(read, layer)).toMatchObject({ reason: "missing", message: `${path}: no artifact` })
      expect(yield* errorOf(resume, layer)).toMatchObject({
        reason: "missing",
        message: `${path}: no artifact to resume`
      })
      writeFileSync(path, "")
      expect(yield* errorOf(read, layer)).toMatchObject({
        reason: "missing",
        message: `${path}: no manifest line (an empty or unfinished file)`
      })
      expect(yield* errorOf(resume, layer)).toMatchObject({
        reason: "missing",
        message: `${path}: no manifest line (an empty or unfinished file); nothing was truncated`
      })
    }))

  it.scoped("create refuses a file that holds something with exists: the file, its size, and the two ways out", () =>
    Effect.gen(function*() {
      const path = yield* tempFile
      yield* seed(path, ["a"])
      const size = bytes(path).length
      expect(yield* errorOf(create, nodeStore({ path }))).toMatchObject({
        reason: "exists",
        message: `${path} already exists (${size} bytes); resume it, or set overwrite`
      })
    }))

  it.scoped("open leaves a file with no complete line that is not a manifest's beginning: format on line 1, nothing truncated", () =>
    Effect.gen(function*() {
      const path = yield* tempFile
      writeFileSync(path, "my notes, no newline")
      const error = yield* errorOf(open, nodeStore({ path }))
      expect(error).toMatchObject({
        reason: "format",
        line: 1,
        message: "line 1: not a Rein artifact: the first line is not a manifest; nothing was truncated"
      })
      expect(text(path)).toBe("my notes, no newline")
    }))

  it.scoped("open with overwrite starts the artifact afresh: the records already there are dropped", () =>
    Effect.gen(function*() {
      const path = yield* tempFile
      yield* seed(path, ["a", "b"])
      const existing: Array<string> = []
      yield* run(openReading((r) => void existing.push(r.itemId)), nodeStore({ path, overwrite: true }))
      expect(existing).toEqual([])
      expect(lines(path)).toHaveLength(2)
      expect(JSON.parse(lines(path)[0]!).kind).toBe("manifest")
    }))
})
