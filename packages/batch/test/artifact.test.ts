import { SystemError } from "@effect/platform/Error"
import { describe, expect, it } from "@effect/vitest"
import type { Scope } from "effect"
import { Effect, Exit, Fiber } from "effect"
import { appendFileSync, chmodSync, statSync, writeFileSync } from "node:fs"
import { ArtifactStore, Fingerprint } from "../src/index.js"
import {
  bytes,
  identityFingerprint,
  lines,
  nodeStore,
  record,
  tempFile,
  text,
  wrappedStore
} from "./artifact-helpers.js"
import { identity } from "./fixtures/artifact-identity.js"

const withStore = <A, E>(
  effect: Effect.Effect<A, E, ArtifactStore.ArtifactStore | Scope.Scope>,
  options: { readonly path: string; readonly fsync?: boolean; readonly overwrite?: boolean; readonly mode?: number }
) => Effect.scoped(effect).pipe(Effect.provide(nodeStore(options)))

const store = ArtifactStore.ArtifactStore
const manifest = ArtifactStore.makeManifest(identity)

/** Creates an artifact holding these records, and closes it. */
const seed = (path: string, records: ReadonlyArray<ArtifactStore.ItemRecord>) =>
  withStore(
    Effect.gen(function*() {
      const opened = yield* (yield* store).create(yield* manifest)
      for (const r of records) yield* opened.append(r)
    }),
    { path }
  )

const failure = <A>(exit: Exit.Exit<A, ArtifactStore.ArtifactError>) => {
  if (Exit.isSuccess(exit)) throw new Error("expected a failure")
  const error = exit.cause._tag === "Fail" ? exit.cause.error : undefined
  if (error === undefined) throw new Error(`expected an ArtifactError, got ${String(exit.cause)}`)
  return error
}

describe("JsonlStore: writing", () => {
  it.scoped("a new artifact starts with a manifest: schema version, identity and fingerprint, creation time, package version", () =>
    Effect.gen(function*() {
      const path = yield* tempFile
      yield* seed(path, [record("a"), record("b")])
      const [first, second, third, end] = lines(path)
      expect(JSON.parse(first!)).toEqual({
        kind: "manifest",
        schemaVersion: 1,
        identity: { ...identity },
        identityFingerprint: Fingerprint.identity(identity),
        createdAt: "1970-01-01T00:00:00.000Z", // the TestClock's wall clock, not Date.now()
        packageVersion: ArtifactStore.PACKAGE_VERSION
      })
      expect(JSON.parse(second!).itemId).toBe("a")
      expect(JSON.parse(third!).itemId).toBe("b")
      expect(end).toBe("")
      const read = yield* withStore(Effect.flatMap(store, (s) => s.read), { path })
      expect(read.manifest.identityFingerprint).toBe(identityFingerprint)
      expect(read.records).toEqual([record("a"), record("b")])
    }))

  it.scoped("a new artifact is created 0600 (records hold model answers), or with the mode asked for", () =>
    Effect.gen(function*() {
      const path = yield* tempFile
      yield* seed(path, [record("a")])
      expect(statSync(path).mode & 0o777).toBe(0o600)
      const other = `${path}.other`
      yield* withStore(Effect.flatMap(store, (s) => Effect.flatMap(manifest, s.create)), { path: other, mode: 0o640 })
      expect(statSync(other).mode & 0o777).toBe(0o640 & ~process.umask())
    }))

  it.scoped("an existing artifact keeps its mode: resumed or overwritten, it is never loosened", () =>
    Effect.gen(function*() {
      const path = yield* tempFile
      yield* seed(path, [record("a")])
      chmodSync(path, 0o600)
      yield* withStore(Effect.flatMap(store, (s) => s.resume()), { path, mode: 0o666 })
      expect(statSync(path).mode & 0o777).toBe(0o600)
      yield* withStore(Effect.flatMap(store, (s) => Effect.flatMap(manifest, s.create)), {
        path,
        overwrite: true,
        mode: 0o666
      })
      expect(statSync(path).mode & 0o777).toBe(0o600)
    }))

  it.scoped("create refuses a file that already holds something, unless the store overwrites", () =>
    Effect.gen(function*() {
      const path = yield* tempFile
      yield* seed(path, [record("a")])
      const before = bytes(path)
      const refused = failure(
        yield* Effect.exit(withStore(Effect.flatMap(Effect.zip(store, manifest), ([s, m]) => s.create(m)), { path }))
      )
      expect(refused.reason).toBe("exists")
      expect(bytes(path)).toEqual(before)
      yield* withStore(Effect.flatMap(Effect.zip(store, manifest), ([s, m]) => s.create(m)), { path, overwrite: true })
      expect(lines(path)).toHaveLength(2) // the manifest and the final newline's empty remainder
    }))

  it.scoped("concurrent appends never interleave: every line is one whole record", () =>
    Effect.gen(function*() {
      const path = yield* tempFile
      const ids = Array.from({ length: 500 }, (_, i) => `item-${i}`)
      yield* withStore(
        Effect.gen(function*() {
          const opened = yield* (yield* store).create(yield* manifest)
          // Long results make partial writes and interleaving visible if they could happen.
          yield* Effect.forEach(ids, (id) => opened.append(record(id, { result: id.repeat(200) })), {
            concurrency: "unbounded"
          })
        }),
        { path }
      )
      const read = yield* withStore(Effect.flatMap(store, (s) => s.read), { path })
      expect(read.records.map((r) => r.itemId).sort()).toEqual([...ids].sort())
      for (const r of read.records) expect(r.result).toBe(r.itemId.repeat(200))
    }))

  it.scoped("interrupting appenders part-way never tears a line: the artifact stays readable and writable", () =>
    Effect.gen(function*() {
      const path = yield* tempFile
      const ids = Array.from({ length: 300 }, (_, i) => `item-${i}`)
      yield* withStore(
        Effect.gen(function*() {
          const opened = yield* (yield* store).create(yield* manifest)
          const fiber = yield* Effect.fork(
            Effect.forEach(ids, (id) => opened.append(record(id, { result: id.repeat(100) })), {
              concurrency: "unbounded",
              discard: true
            })
          )
          for (let i = 0; i < 5; i++) yield* Effect.yieldNow()
          yield* Fiber.interrupt(fiber)
          yield* opened.append(record("after"))
        }),
        { path }
      )
      const read = yield* withStore(Effect.flatMap(store, (s) => s.read), { path })
      expect(read.records.at(-1)?.itemId).toBe("after")
      for (const r of read.records.slice(0, -1)) expect(r.result).toBe(r.itemId.repeat(100))
    }))

  it.scoped("with fsync, an append returns only after an fsync, and concurrent appends share them", () =>
    Effect.gen(function*() {
      const path = yield* tempFile
      let syncs = 0
      let writes = 0
      const counted = (fsync: boolean) =>
        wrappedStore({ path, fsync, overwrite: true }, (file) => ({
          sync: Effect.zipRight(Effect.sync(() => syncs++), file.sync),
          writeAll: (buffer) => Effect.zipRight(Effect.sync(() => writes++), file.writeAll(buffer))
        }))
      const run = (fsync: boolean, concurrency: number | "unbounded") =>
        Effect.scoped(Effect.gen(function*() {
          const opened = yield* (yield* store).create(yield* manifest)
          syncs = 0
          writes = 0
          yield* Effect.forEach(Array.from({ length: 100 }, (_, i) => record(`i${i}`)), opened.append, {
            concurrency
          })
        })).pipe(Effect.provide(counted(fsync)))

      yield* run(true, 1)
      expect(syncs).toBe(100) // one by one: each append waited for its own fsync
      yield* run(true, "unbounded")
      expect(syncs).toBeGreaterThanOrEqual(1)
      expect(syncs).toBeLessThan(100) // grouped
      expect(syncs).toBe(writes)
      yield* run(false, 1)
      expect(syncs).toBe(0)
    }))
})

describe("JsonlStore: crash rules", () => {
  it.scoped("readers ignore a final line without a newline, and reading truncates nothing", () =>
    Effect.gen(function*() {
      const path = yield* tempFile
      yield* seed(path, [record("a"), record("b")])
      appendFileSync(path, JSON.stringify(record("c")).slice(0, 40))
      const before = bytes(path)
      const read = yield* withStore(Effect.flatMap(store, (s) => s.read), { path })
      expect(read.records.map((r) => r.itemId)).toEqual(["a", "b"])
      expect(bytes(path)).toEqual(before)
    }))

  it.scoped("a writable resume truncates the unterminated final line and appends after it", () =>
    Effect.gen(function*() {
      const path = yield* tempFile
      yield* seed(path, [record("a")])
      const clean = bytes(path)
      appendFileSync(path, "{\"kind\":\"item\",\"itemId\":\"b\",\"ind")
      const existing: Array<string> = []
      const opened = yield* withStore(
        Effect.gen(function*() {
          const o = yield* (yield* store).resume((r) => void existing.push(r.itemId))
          expect(bytes(path)).toEqual(clean) // truncated before anything is appended
          yield* o.append(record("b"))
          return o
        }),
        { path }
      )
      expect(opened.truncatedBytes).toBe(32)
      expect(existing).toEqual(["a"])
      const read = yield* withStore(Effect.flatMap(store, (s) => s.read), { path })
      expect(read.records.map((r) => r.itemId)).toEqual(["a", "b"])
    }))

  const refusals: ReadonlyArray<{
    readonly name: string
    readonly content: (manifestLine: string, recordLine: (id: string) => string) => string
    readonly reason: ArtifactStore.ArtifactErrorReason
    readonly line: number | undefined
  }> = [
    {
      name: "a malformed line that is not the last",
      content: (m, r) => `${m}\n${r("a")}\n{"kind":"item","itemId":\n${r("b")}\n`,
      reason: "format",
      line: 3
    },
    {
      name: "a complete last line that is malformed (it was fully written, so it is not a torn write)",
      content: (m, r) => `${m}\n${r("a")}\nnot json at all\n`,
      reason: "format",
      line: 3
    },
    {
      name: "a line that is JSON but not a record",
      content: (m, r) => `${m}\n${r("a")}\n{"kind":"item","itemId":"b"}\n${r("c")}\n`,
      reason: "format",
      line: 3
    },
    {
      name: "an empty line",
      content: (m, r) => `${m}\n\n${r("a")}\n`,
      reason: "format",
      line: 2
    },
    {
      name: "a second manifest",
      content: (m, r) => `${m}\n${r("a")}\n${m}\n`,
      reason: "format",
      line: 3
    },
    {
      name: "a future schema version (even with a torn tail)",
      content: (m, r) => `${m.replace("\"schemaVersion\":1", "\"schemaVersion\":2")}\n${r("a")}\n{"kind":"it`,
      reason: "version",
      line: 1
    },
    {
      name: "an unknown file (no manifest first line)",
      content: () => "id,answer\n1,yes\n2,n",
      reason: "format",
      line: 1
    },
    {
      name: "a manifest missing a field",
      content: (m) => `${m.replace(/"identityFingerprint":"[^"]*",/, "")}\n`,
      reason: "format",
      line: 1
    }
  ]

  for (const refusal of refusals) {
    it.scoped(`${refusal.name}: a clear ${refusal.reason} error naming line ${refusal.line}, and nothing truncated`, () =>
      Effect.gen(function*() {
        const path = yield* tempFile
        yield* seed(path, [])
        const m = lines(path)[0]!
        writeFileSync(path, refusal.content(m, (id) => JSON.stringify(record(id))))
        const before = bytes(path)
        for (
          const op of [
            Effect.flatMap(store, (s) => s.read),
            Effect.flatMap(store, (s) => s.resume()),
            Effect.flatMap(Effect.zip(store, manifest), ([s, mf]) => s.open(mf))
          ] as const
        ) {
          const error = failure(
            yield* Effect.exit(
              withStore(
                op as Effect.Effect<unknown, ArtifactStore.ArtifactError, ArtifactStore.ArtifactStore | Scope.Scope>,
                { path }
              )
            )
          )
          expect(error.reason).toBe(refusal.reason)
          expect(error.line).toBe(refusal.line)
          expect(error.message).toContain(`line ${refusal.line}`)
          expect(error.message).toContain("nothing was truncated")
          expect(bytes(path)).toEqual(before)
        }
      }))
  }

  it.scoped("a bad field in a record is named in the error", () =>
    Effect.gen(function*() {
      const path = yield* tempFile
      yield* seed(path, [record("a")])
      appendFileSync(path, `${JSON.stringify({ ...record("b"), attempts: -1 })}\n`)
      const error = failure(yield* Effect.exit(withStore(Effect.flatMap(store, (s) => s.read), { path })))
      expect(error.message).toContain("line 3")
      expect(error.message).toContain("attempts: Expected a non-negative integer, actual -1")
    }))

  it.scoped("a missing file where one is required: read and resume fail with missing; open creates it", () =>
    Effect.gen(function*() {
      const path = yield* tempFile
      expect(failure(yield* Effect.exit(withStore(Effect.flatMap(store, (s) => s.read), { path }))).reason).toBe(
        "missing"
      )
      expect(failure(yield* Effect.exit(withStore(Effect.flatMap(store, (s) => s.resume()), { path }))).reason).toBe(
        "missing"
      )
      const existing: Array<string> = []
      yield* withStore(
        Effect.flatMap(Effect.zip(store, manifest), ([s, m]) => s.open(m, (r) => void existing.push(r.itemId))),
        { path }
      )
      expect(existing).toEqual([])
      expect(JSON.parse(lines(path)[0]!).kind).toBe("manifest")
    }))

  it.scoped("an empty file where one is required: read and resume fail with missing and leave it; open and create start it", () =>
    Effect.gen(function*() {
      const path = yield* tempFile
      writeFileSync(path, "")
      expect(failure(yield* Effect.exit(withStore(Effect.flatMap(store, (s) => s.read), { path }))).reason).toBe(
        "missing"
      )
      expect(failure(yield* Effect.exit(withStore(Effect.flatMap(store, (s) => s.resume()), { path }))).reason).toBe(
        "missing"
      )
      expect(text(path)).toBe("")
      yield* withStore(Effect.flatMap(Effect.zip(store, manifest), ([s, m]) => s.create(m)), { path })
      expect(JSON.parse(lines(path)[0]!).kind).toBe("manifest")
    }))

  it.scoped("a manifest cut short by a crash: resume refuses and keeps it; open starts the artifact again", () =>
    Effect.gen(function*() {
      const path = yield* tempFile
      yield* seed(path, [])
      const m = lines(path)[0]!
      writeFileSync(path, m.slice(0, 30))
      const error = failure(yield* Effect.exit(withStore(Effect.flatMap(store, (s) => s.resume()), { path })))
      expect(error.reason).toBe("missing")
      expect(text(path)).toBe(m.slice(0, 30))
      const opened = yield* withStore(Effect.flatMap(Effect.zip(store, manifest), ([s, mf]) => s.open(mf)), { path })
      expect(opened.truncatedBytes).toBe(30)
      expect(text(path)).toBe(`${m}\n`)
    }))
})

describe("JsonlStore: after a failed append", () => {
  it.scoped("the failing append fails with io, every later append with closed, and the file stays readable", () =>
    Effect.gen(function*() {
      const path = yield* tempFile
      let writes = 0
      const failing = wrappedStore({ path }, (file) => ({
        writeAll: (buffer) =>
          Effect.suspend(() =>
            ++writes === 4
              // A torn write: half the line lands, then the disk fails.
              ? Effect.zipRight(
                file.writeAll(buffer.subarray(0, buffer.length >> 1)),
                Effect.fail(
                  new SystemError({ reason: "Unknown", module: "FileSystem", method: "writeAll", description: "EIO" })
                )
              )
              : file.writeAll(buffer)
          )
      }))
      const results = yield* Effect.scoped(Effect.gen(function*() {
        const opened = yield* (yield* store).create(yield* manifest)
        const out: Array<string> = []
        for (const id of ["a", "b", "c", "d", "e"]) {
          const exit = yield* Effect.exit(opened.append(record(id)))
          out.push(Exit.isSuccess(exit) ? "ok" : failure(exit).reason)
        }
        return out
      })).pipe(Effect.provide(failing))
      // Write 1 is the manifest; a and b succeed; c is the failing write; d and e are refused.
      expect(results).toEqual(["ok", "ok", "io", "closed", "closed"])
      const read = yield* withStore(Effect.flatMap(store, (s) => s.read), { path })
      expect(read.records.map((r) => r.itemId)).toEqual(["a", "b"])
      // A resumed run truncates the torn half-record, and c runs again.
      const opened = yield* withStore(Effect.flatMap(store, (s) => s.resume()), { path })
      expect(opened.truncatedBytes).toBeGreaterThan(0)
    }))

  it.scoped("a record with no JSON form fails with encode, writes nothing, and closes the store", () =>
    Effect.gen(function*() {
      const path = yield* tempFile
      const reasons = yield* withStore(
        Effect.gen(function*() {
          const opened = yield* (yield* store).create(yield* manifest)
          yield* opened.append(record("a"))
          const bad = failure(yield* Effect.exit(opened.append(record("b", { result: { n: 1n } }))))
          const next = failure(yield* Effect.exit(opened.append(record("c"))))
          return [bad.reason, next.reason]
        }),
        { path }
      )
      expect(reasons).toEqual(["encode", "closed"])
      expect(lines(path)).toHaveLength(3)
    }))

  it.scoped("an artifact whose scope has closed refuses appends", () =>
    Effect.gen(function*() {
      const path = yield* tempFile
      const opened = yield* withStore(Effect.flatMap(Effect.zip(store, manifest), ([s, m]) => s.create(m)), { path })
      const error = failure(yield* Effect.exit(opened.append(record("late"))))
      expect(error.reason).toBe("closed")
    }))
})

describe("JsonlStore: what a line holds", () => {
  it.scoped("exactly the record's fields, in schema order: excess fields are not written", () =>
    Effect.gen(function*() {
      const path = yield* tempFile
      const extra = {
        ...record("a"),
        prompt: "a prompt must never be written",
        usage: { inputTokens: 1, outputTokens: 2, raw: "x" }
      }
      yield* seed(path, [extra])
      const line = lines(path)[1]!
      expect(line).not.toContain("prompt must never")
      expect(line).not.toContain("raw")
      expect(Object.keys(JSON.parse(line))).toEqual([
        "kind",
        "itemId",
        "index",
        "promptFingerprint",
        "inputFingerprint",
        "identityFingerprint",
        "outcome",
        "category",
        "reusable",
        "usage",
        "cost",
        "attempts",
        "durationMillis",
        "result"
      ])
    }))

  it.scoped("an invalid record (a NaN cost) is refused at write, so the file never holds a line it cannot read", () =>
    Effect.gen(function*() {
      const path = yield* tempFile
      const error = failure(yield* Effect.exit(seed(path, [record("a", { cost: Number.NaN })])))
      expect(error.reason).toBe("encode")
      expect(error.message).toContain("cost")
      expect(lines(path)).toHaveLength(2)
    }))
})
