/**
 * The embedded artifact store: one JSONL file. Line 1 is the manifest; every further line is one terminal
 * item. It is built on `@effect/platform`'s `FileSystem`, so it runs wherever a `FileSystem` layer exists
 * (`NodeFileSystem.layer`, Bun's) and a test can put a failing file system under it.
 *
 * Durability. An append returns after the `write` system call has completed: the line is in the operating
 * system's page cache and survives the death of the process (SIGKILL included). With `fsync: true` it also
 * returns only after `fsync`, so it survives a power loss too; concurrent appends then share one fsync
 * (group commit). With `fsync`, the file's directory is fsynced too, each time the artifact is opened for
 * writing: a file a crashed run left (empty, or a torn manifest), or one written without `fsync`, may not
 * have its directory entry on disk yet, and the records fsynced into it would go with it.
 *
 * Reading. The file is read a 1 MiB chunk at a time, never whole: opening it hands each record to the
 * `OnRecord` as its line completes, and `stream` gives them as a stream, so an artifact of millions of
 * records is read in the memory of one chunk and one line (`read` alone holds every record). A line is at
 * most 16 MiB (`Journal.MAX_LINE_BYTES`): a longer one, even an unterminated last one, is a `format` error
 * naming its line, given once its bytes pass the bound (a file that goes on without a newline after its
 * manifest is not read whole), and the store never writes one (`encode`).
 *
 * A new file is created with mode `0600` by default (`mode` sets another); an existing file keeps its own.
 *
 * One process writes one artifact at a time: the store itself does not lock the file (`rein batch` does: a
 * second run on the same `--out` fails at once, naming the file and the run that holds it).
 *
 * @since 0.1.0
 */
import type { PlatformError } from "@effect/platform/Error"
import * as FileSystem from "@effect/platform/FileSystem"
import type { Scope } from "effect"
import { Effect, Layer, Option } from "effect"
import * as path from "node:path"
import type { Contents, ItemRecord, Manifest, OnRecord, Opened, Service, Streamed } from "./ArtifactStore.js"
import { ArtifactError, ArtifactStore } from "./ArtifactStore.js"
import type { Scanned } from "./internal/jsonl.js"
import * as Jsonl from "./internal/jsonl.js"
import * as JsonlRead from "./internal/jsonlRead.js"
import { makeWriter } from "./internal/writer.js"

/**
 * Where the artifact lives and how hard it is kept.
 *
 * @example
 * ```ts
 * import type { JsonlStore } from "@rein/batch"
 *
 * const options: JsonlStore.Options = { path: "run.jsonl", fsync: true }
 * ```
 * @category models
 * @since 0.1.0
 */
export interface Options {
  /** The JSONL file. */
  readonly path: string
  /** fsync every append (and a new file's directory) before it returns. Default false: flushed to the OS. */
  readonly fsync?: boolean | undefined
  /** `create` and `open` start a fresh file even when one exists (its records are lost). Default false. */
  readonly overwrite?: boolean | undefined
  /**
   * The permissions of a file the store creates (before the umask). Default `0o600`: records hold model
   * answers. An existing file keeps its own mode (it is never loosened, nor tightened).
   */
  readonly mode?: number | undefined
}

/**
 * The mode of a new artifact by default: readable and writable by its owner only.
 *
 * @example
 * ```ts
 * import { JsonlStore } from "@rein/batch"
 *
 * JsonlStore.defaultMode.toString(8) // "600"
 * ```
 * @category constants
 * @since 0.1.0
 */
export const defaultMode = 0o600

const ignore: OnRecord = () => {}

const isNotFound = (e: PlatformError) => e._tag === "SystemError" && e.reason === "NotFound"
const isAlreadyExists = (e: PlatformError) => e._tag === "SystemError" && e.reason === "AlreadyExists"

/**
 * The store as an Effect needing a `FileSystem`.
 *
 * @example
 * ```ts
 * import { NodeFileSystem } from "@effect/platform-node"
 * import { Effect } from "effect"
 * import { JsonlStore } from "@rein/batch"
 *
 * const store = JsonlStore.make({ path: "run.jsonl" }).pipe(Effect.provide(NodeFileSystem.layer))
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const make = (options: Options): Effect.Effect<Service, never, FileSystem.FileSystem> =>
  Effect.map(FileSystem.FileSystem, (fs) => {
    const file = options.path
    const fsync = options.fsync === true
    const mode = options.mode ?? defaultMode
    const io = (what: string) => (e: PlatformError) =>
      new ArtifactError({ reason: "io", message: `${what} ${file}: ${e.message}` })
    const missing = (message: string) => new ArtifactError({ reason: "missing", message: `${file}: ${message}` })

    const { reader, records, scan } = JsonlRead.make(fs, file, io)

    // Best effort: a directory cannot be fsynced everywhere (Windows), and the file itself already is.
    // Run each time the artifact is opened for writing with fsync: who created the file, and whether its
    // directory entry reached the disk, is not known (a crashed run, a run without fsync).
    const syncDirectory = Effect.scoped(
      Effect.flatMap(fs.open(path.dirname(file), { flag: "r" }), (dir) => dir.sync)
    ).pipe(Effect.ignore)

    const append = (
      manifest: Manifest,
      truncateTo: number | undefined,
      truncatedBytes: number
    ): Effect.Effect<Opened, ArtifactError, Scope.Scope> =>
      Effect.gen(function*() {
        const handle = yield* Effect.mapError(fs.open(file, { flag: "a", mode }), io("cannot open"))
        if (truncateTo !== undefined) {
          yield* Effect.mapError(handle.truncate(truncateTo), io("cannot truncate"))
          if (fsync) yield* Effect.mapError(handle.sync, io("cannot fsync"))
        }
        if (fsync) yield* syncDirectory
        const write = yield* makeWriter(handle, { path: file, fsync })
        const recordAt = yield* reader(manifest.identityFingerprint)
        return { manifest, truncatedBytes, append: write, recordAt }
      })

    // A new artifact: the file is created (or emptied), the manifest written and flushed, then appends.
    const start = (
      manifest: Manifest,
      existed: boolean,
      truncatedBytes: number
    ): Effect.Effect<Opened, ArtifactError, Scope.Scope> =>
      Effect.gen(function*() {
        const line = yield* Jsonl.manifestLine(manifest)
        const handle = yield* fs.open(file, { flag: existed ? "a" : "ax", mode }).pipe(
          Effect.mapError((e) =>
            isAlreadyExists(e)
              ? new ArtifactError({ reason: "exists", message: `${file} already exists` })
              : io("cannot create")(e)
          )
        )
        if (existed) yield* Effect.mapError(handle.truncate(0), io("cannot truncate"))
        yield* Effect.mapError(handle.writeAll(line), io("cannot write the manifest to"))
        if (fsync) {
          yield* Effect.mapError(handle.sync, io("cannot fsync"))
          yield* syncDirectory
        }
        const write = yield* makeWriter(handle, { path: file, fsync })
        return { manifest, truncatedBytes, append: write }
      })

    const create = (manifest: Manifest) =>
      Effect.flatMap(
        fs.stat(file).pipe(
          Effect.map((info) => Option.some(Number(info.size))),
          Effect.catchIf(isNotFound, () => Effect.succeedNone),
          Effect.mapError(io("cannot stat"))
        ),
        (size) =>
          Option.match(size, {
            onNone: () => start(manifest, false, 0),
            onSome: (bytes) =>
              bytes === 0 || options.overwrite === true
                ? start(manifest, true, 0)
                : Effect.fail(
                  new ArtifactError({
                    reason: "exists",
                    message: `${file} already exists (${bytes} bytes); resume it, or set overwrite`
                  })
                )
          })
      )

    const resume = (onRecord: OnRecord = ignore) =>
      Effect.flatMap(scan(onRecord), (scanned) => {
        if (Option.isNone(scanned)) return Effect.fail(missing("no artifact to resume"))
        const p = scanned.value
        if (p._tag === "Empty") {
          return Effect.fail(missing("no manifest line (an empty or unfinished file); nothing was truncated"))
        }
        return append(p.manifest, p.tornBytes > 0 ? p.validLength : undefined, p.tornBytes)
      })

    const open = (manifest: Manifest, onRecord: OnRecord = ignore) =>
      options.overwrite === true ? create(manifest) : Effect.flatMap(scan(onRecord), (scanned) => {
        if (Option.isNone(scanned)) return start(manifest, false, 0)
        const p = scanned.value
        if (p._tag === "Artifact") {
          return append(p.manifest, p.tornBytes > 0 ? p.validLength : undefined, p.tornBytes)
        }
        // Nothing complete in the file: a crash before the manifest was flushed leaves nothing or a prefix of
        // a manifest, which is replaced. Anything else is someone's file and is left alone.
        return Jsonl.isTornManifest(p.tail)
          ? start(manifest, true, p.tail.length)
          : Effect.fail(
            new ArtifactError({
              reason: "format",
              line: 1,
              message: "line 1: not a Rein artifact: the first line is not a manifest; nothing was truncated"
            })
          )
      })

    const noManifest = (scanned: Option.Option<Scanned>) =>
      Option.isNone(scanned)
        ? missing("no artifact")
        : missing("no manifest line (an empty or unfinished file)")

    const read: Effect.Effect<Contents, ArtifactError> = Effect.suspend(() => {
      const records: Array<ItemRecord> = []
      return Effect.flatMap(
        scan((record) => void records.push(record)),
        (scanned) =>
          Option.isSome(scanned) && scanned.value._tag === "Artifact"
            ? Effect.succeed({ manifest: scanned.value.manifest, records })
            : Effect.fail(noManifest(scanned))
      )
    })

    // The manifest is read first (the file's first line: one chunk, usually), then the records as they are
    // pulled.
    const stream: Effect.Effect<Streamed, ArtifactError> = Effect.flatMap(
      scan(ignore, true),
      (scanned) =>
        Option.isSome(scanned) && scanned.value._tag === "Artifact"
          ? Effect.succeed({ manifest: scanned.value.manifest, records })
          : Effect.fail(noManifest(scanned))
    )

    return ArtifactStore.of({ create, resume, open, read, stream })
  })

/**
 * The JSONL store as a layer (needs a `FileSystem`, e.g. `NodeFileSystem.layer`).
 *
 * @example
 * ```ts
 * import { NodeFileSystem } from "@effect/platform-node"
 * import { Layer } from "effect"
 * import { JsonlStore } from "@rein/batch"
 *
 * const artifacts = JsonlStore.layer({ path: "run.jsonl", fsync: true }).pipe(Layer.provide(NodeFileSystem.layer))
 * ```
 * @category layers
 * @since 0.1.0
 */
export const layer = (options: Options): Layer.Layer<ArtifactStore, never, FileSystem.FileSystem> =>
  Layer.effect(ArtifactStore, make(options))
