// Real files in a temporary directory, the JSONL store over Node's file system, and record builders.
import { FileSystem } from "@effect/platform"
import { NodeFileSystem } from "@effect/platform-node"
import type { PlatformError } from "@effect/platform/Error"
import { Effect, Layer } from "effect"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import type { ItemRecord } from "../src/ArtifactStore.js"
import * as Fingerprint from "../src/Fingerprint.js"
import * as JsonlStore from "../src/JsonlStore.js"
import * as Resume from "../src/Resume.js"
import { identity } from "./fixtures/artifact-identity.js"

/** A fresh temporary directory, removed with everything in it when the scope closes. */
export const tempDir = Effect.acquireRelease(
  Effect.sync(() => mkdtempSync(path.join(tmpdir(), "rein-artifacts-"))),
  (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
)

/** A path for an artifact in a fresh temporary directory. */
export const tempFile = Effect.map(tempDir, (dir) => path.join(dir, "run.jsonl"))

/** The JSONL store on Node's file system. */
export const nodeStore = (options: JsonlStore.Options) =>
  JsonlStore.layer(options).pipe(Layer.provide(NodeFileSystem.layer))

/** Where a wrapped `File` was opened: its path and flag. */
export interface OpenedAs {
  readonly path: string
  readonly flag: string | undefined
}

/**
 * The JSONL store on Node's file system with `File` operations wrapped, to count or fail them; `refuseOpen`
 * makes an `open` fail (a fault of the disk, which a test cannot provoke for real).
 */
export const wrappedStore = (
  options: JsonlStore.Options,
  wrap: (file: FileSystem.File, opened: OpenedAs) => Partial<Pick<FileSystem.File, "writeAll" | "sync" | "truncate">>,
  refuseOpen: (opened: OpenedAs) => PlatformError | undefined = () => undefined
) =>
  JsonlStore.layer(options).pipe(
    Layer.provide(Layer.effect(
      FileSystem.FileSystem,
      Effect.map(FileSystem.FileSystem, (fs) => ({
        ...fs,
        open: (p: string, o?: FileSystem.OpenFileOptions) => {
          const opened: OpenedAs = { path: p, flag: o?.flag }
          const refused = refuseOpen(opened)
          if (refused !== undefined) return Effect.fail(refused)
          return Effect.map(fs.open(p, o), (file): FileSystem.File => {
            const overrides = wrap(file, opened)
            return {
              [FileSystem.FileTypeId]: FileSystem.FileTypeId,
              fd: file.fd,
              get stat() {
                return file.stat
              },
              seek: (offset, from) => file.seek(offset, from),
              get sync() {
                return overrides.sync ?? file.sync
              },
              read: (buffer) => file.read(buffer),
              readAlloc: (size) => file.readAlloc(size),
              truncate: overrides.truncate ?? ((length) => file.truncate(length)),
              write: (buffer) => file.write(buffer),
              writeAll: overrides.writeAll ?? ((buffer) => file.writeAll(buffer))
            }
          })
        }
      }))
    )),
    Layer.provide(NodeFileSystem.layer)
  )

export const bytes = (file: string): Buffer => readFileSync(file)
export const text = (file: string): string => readFileSync(file, "utf8")
export const lines = (file: string): Array<string> => text(file).split("\n")

export const identityFingerprint = Fingerprint.identity(identity)

/** A record of an item (a success unless told otherwise) under the test identity. */
export const record = (
  itemId: string,
  fields: Partial<Omit<ItemRecord, "kind">> & { readonly input?: unknown } = {}
): ItemRecord => {
  const { input, ...rest } = fields
  return Resume.makeRecord({
    itemId,
    index: 0,
    promptFingerprint: Fingerprint.prompt(`prompt of ${itemId}`),
    inputFingerprint: inputOf(itemId, input),
    identityFingerprint,
    outcome: "success",
    category: "ok",
    usage: { inputTokens: 10, outputTokens: 5 },
    cost: 0.00002,
    attempts: 1,
    durationMillis: 12,
    result: `answer to ${itemId}`,
    ...rest
  })
}

/** The input fingerprint `record` uses for an item. */
export const inputOf = (itemId: string, input?: unknown): string => {
  const fp = Fingerprint.input(input ?? { id: itemId })
  return fp._tag === "Right" ? fp.right : ""
}
