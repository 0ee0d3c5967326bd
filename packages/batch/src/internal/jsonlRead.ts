/**
 * Reading a JSONL artifact in bounded memory: the file read a chunk at a time into one buffer, its lines
 * decoded by `Jsonl.scanner` as they complete, so a file of any size is read in the memory of one chunk and
 * one line.
 *
 * @internal
 */
import type { PlatformError } from "@effect/platform/Error"
import type * as FileSystem from "@effect/platform/FileSystem"
import { Chunk, Effect, Either, Option, Stream } from "effect"
import type { ArtifactError, ItemRecord, OnRecord } from "../ArtifactStore.js"
import type { Scanned } from "./jsonl.js"
import { scanner as makeScanner } from "./jsonl.js"

/**
 * The bytes read at a time. Each read costs a round trip to the thread pool: 64 KiB reads made resuming a
 * 200,000-record artifact a third slower in CPU time than reading it whole; 1 MiB ones cost nothing measurable.
 * @internal
 */
export const CHUNK = 1024 * 1024

const isNotFound = (e: PlatformError) => e._tag === "SystemError" && e.reason === "NotFound"

/** The readers of one file; `io` names a file system failure. @internal */
export const make = (
  fs: FileSystem.FileSystem,
  file: string,
  io: (what: string) => (e: PlatformError) => ArtifactError
) => {
  // The file read into one buffer (no allocation per chunk), until `push` says stop.
  const eachChunk = (push: (chunk: Uint8Array) => Either.Either<boolean, ArtifactError>) =>
    Effect.scoped(Effect.flatMap(fs.open(file, { flag: "r" }), (handle) => {
      const buffer = new Uint8Array(CHUNK)
      const loop: Effect.Effect<void, PlatformError | ArtifactError> = Effect.flatMap(handle.read(buffer), (size) => {
        const n = Number(size)
        return n === 0
          ? Effect.void
          : Effect.flatMap(push(buffer.subarray(0, n)), (more) => more ? loop : Effect.void)
      })
      return loop
    }))

  /**
   * Reads the file, each record handed to `onRecord`, none kept: none when there is no file. `headOnly` stops
   * at the chunk that completes the manifest line.
   */
  const scan = (onRecord: OnRecord, headOnly = false): Effect.Effect<Option.Option<Scanned>, ArtifactError> =>
    Effect.suspend(() => {
      const scanner = makeScanner(onRecord)
      const more = () => !headOnly || scanner.manifest() === undefined
      return eachChunk((chunk) => Either.map(scanner.push(chunk), more)).pipe(
        Effect.map(() => Option.some(scanner.end())),
        Effect.catchAll((e) =>
          e._tag === "ArtifactError"
            ? Effect.fail(e)
            : isNotFound(e)
            ? Effect.succeedNone
            : Effect.fail(io("cannot read")(e))
        )
      )
    })

  /**
   * The records as the file's chunks are read, each chunk's complete lines at a time (a final line without
   * its newline is left out, as reading leaves it).
   */
  const records: Stream.Stream<ItemRecord, ArtifactError> = Stream.unwrapScoped(
    Effect.map(Effect.mapError(fs.open(file, { flag: "r" }), io("cannot read")), (handle) => {
      const buffer = new Uint8Array(CHUNK)
      const out: Array<ItemRecord> = []
      const scanner = makeScanner((record) => void out.push(record))
      const next = Effect.flatMap(
        Effect.mapError(handle.read(buffer), (e) => Option.some(io("cannot read")(e))),
        (size) =>
          size === BigInt(0)
            ? Effect.fail(Option.none())
            : Either.match(scanner.push(buffer.subarray(0, Number(size))), {
              onLeft: (e) => Effect.fail(Option.some(e)),
              onRight: () => Effect.succeed(Chunk.unsafeFromArray(out.splice(0)))
            })
      )
      return Stream.repeatEffectChunkOption(next)
    })
  )

  return { scan, records }
}
