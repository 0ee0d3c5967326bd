/**
 * Reading a JSONL artifact in bounded memory: the file read a chunk at a time into one buffer, its lines
 * decoded by `Jsonl.scanner` as they complete, so a file of any size is read in the memory of one chunk and
 * one line.
 *
 * @internal
 */
import type { PlatformError } from "@effect/platform/Error"
import type * as FileSystem from "@effect/platform/FileSystem"
import { Chunk, Effect, Option, Stream } from "effect"
import type { ArtifactError, ItemRecord, OnRecord } from "../ArtifactStore.js"
import type { Scanned, Scanner } from "./jsonl.js"
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
  // The one reading of the file: each step reads the next chunk into one buffer (no allocation per chunk)
  // and pushes it to the scanner; it says whether there was a chunk (none at the end of the file).
  const reading = (handle: FileSystem.File, scanner: Scanner): Effect.Effect<boolean, ArtifactError> => {
    const buffer = new Uint8Array(CHUNK)
    return Effect.flatMap(Effect.mapError(handle.read(buffer), io("cannot read")), (size) =>
      size === BigInt(0)
        ? Effect.succeed(false)
        : Effect.as(scanner.push(buffer.subarray(0, Number(size))), true))
  }

  /**
   * Reads the file, each record handed to `onRecord`, none kept: none when there is no file. `headOnly` stops
   * at the chunk that completes the manifest line.
   */
  const scan = (onRecord: OnRecord, headOnly = false): Effect.Effect<Option.Option<Scanned>, ArtifactError> =>
    Effect.scoped(Effect.flatMap(
      fs.open(file, { flag: "r" }).pipe(
        Effect.asSome,
        Effect.catchAll((e) =>
          isNotFound(e) ? Effect.succeed(Option.none<FileSystem.File>()) : Effect.fail(io("cannot read")(e))
        )
      ),
      Option.match({
        onNone: () => Effect.succeedNone,
        onSome: (handle) => {
          const scanner = makeScanner(onRecord)
          const next = reading(handle, scanner)
          const loop: Effect.Effect<void, ArtifactError> = Effect.flatMap(
            next,
            (read) => read && (!headOnly || scanner.manifest() === undefined) ? loop : Effect.void
          )
          return Effect.map(loop, () => Option.some(scanner.end()))
        }
      })
    ))

  /**
   * The records as the file's chunks are read, each chunk's complete lines at a time (a final line without
   * its newline is left out, as reading leaves it).
   */
  const records: Stream.Stream<ItemRecord, ArtifactError> = Stream.unwrapScoped(
    Effect.map(Effect.mapError(fs.open(file, { flag: "r" }), io("cannot read")), (handle) => {
      const out: Array<ItemRecord> = []
      const next = reading(handle, makeScanner((record) => void out.push(record)))
      return Stream.repeatEffectChunkOption(Effect.matchEffect(next, {
        onFailure: (e) => Effect.fail(Option.some(e)),
        onSuccess: (read) => read ? Effect.succeed(Chunk.unsafeFromArray(out.splice(0))) : Effect.fail(Option.none())
      }))
    })
  )

  return { scan, records }
}
