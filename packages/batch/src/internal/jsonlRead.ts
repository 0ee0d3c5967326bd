/**
 * Reading a JSONL artifact in bounded memory: the file read a chunk at a time into one buffer, its lines
 * decoded by `Jsonl.scanner` as they complete, so a file of any size is read in the memory of one chunk and
 * one line.
 *
 * @internal
 */
import type { PlatformError } from "@effect/platform/Error"
import type * as FileSystem from "@effect/platform/FileSystem"
import type { Scope } from "effect"
import { Chunk, Effect, Either, Option, Stream } from "effect"
import type { ItemRecord, OnRecord, Position } from "../ArtifactStore.js"
import { ArtifactError } from "../ArtifactStore.js"
import type { Scanned, Scanner } from "./jsonl.js"
import { readBack, scanner as makeScanner } from "./jsonl.js"

const NEWLINE = 0x0a

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
   * at the chunk that completes the manifest line, and reads nothing after that line.
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
          const scanner = makeScanner(onRecord, { headOnly })
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
   * its newline is left out, as reading leaves it). A chunk that fails (a bad or overlong line) gives the
   * records of its lines before the failing one first, then the failure: nothing read is lost.
   */
  const records: Stream.Stream<ItemRecord, ArtifactError> = Stream.unwrapScoped(
    Effect.map(Effect.mapError(fs.open(file, { flag: "r" }), io("cannot read")), (handle) => {
      const out: Array<ItemRecord> = []
      let failed: ArtifactError | undefined
      const next = reading(handle, makeScanner((record) => void out.push(record)))
      const given = () => Chunk.unsafeFromArray(out.splice(0))
      return Stream.repeatEffectChunkOption(
        Effect.suspend(() =>
          failed !== undefined ? Effect.fail(Option.some(failed)) : Effect.matchEffect(next, {
            onFailure: (e) => {
              if (out.length === 0) return Effect.fail(Option.some(e))
              failed = e
              return Effect.sync(given)
            },
            onSuccess: (read) => read ? Effect.sync(given) : Effect.fail(Option.none())
          })
        )
      )
    })
  )

  const readFully = (handle: FileSystem.File, from: number, buffer: Uint8Array): Effect.Effect<number, ArtifactError> =>
    Effect.flatMap(Effect.mapError(handle.seek(from, "start"), io("cannot read")), () => {
      const more = (filled: number): Effect.Effect<number, ArtifactError> =>
        filled === buffer.length ? Effect.succeed(filled) : Effect.flatMap(
          Effect.mapError(handle.read(buffer.subarray(filled)), io("cannot read")),
          (size) => size === BigInt(0) ? Effect.succeed(filled) : more(filled + Number(size))
        )
      return more(0)
    })

  /**
   * Reads records back at the positions the scan gave, through a handle of the scope, one read at a time.
   * Records read back roughly in file order (a resumed run's items come up about as they were written) are
   * served from one window of `CHUNK` bytes read around them; a record far from the window is read alone.
   */
  const reader = (
    identityFingerprint: string
  ): Effect.Effect<(at: Position) => Effect.Effect<ItemRecord, ArtifactError>, ArtifactError, Scope.Scope> =>
    Effect.map(
      Effect.zip(Effect.mapError(fs.open(file, { flag: "r" }), io("cannot read")), Effect.makeSemaphore(1)),
      ([handle, lock]) => {
        let start = 0 // the window holds the file's bytes from `start`
        let window = new Uint8Array(0)
        const load = (at: Position): Effect.Effect<void, ArtifactError> => {
          const near = at.offset >= start - CHUNK && at.offset < start + window.length + CHUNK
          const from = near ? Math.max(0, at.offset - CHUNK / 16) : at.offset
          const size = Math.max(near ? CHUNK : 0, at.offset - from + at.length + 1)
          const buffer = size === CHUNK && window.buffer.byteLength === CHUNK
            ? new Uint8Array(window.buffer)
            : new Uint8Array(size)
          return Effect.map(readFully(handle, from, buffer), (n) => {
            start = from
            window = buffer.subarray(0, n)
          })
        }
        const changed = (at: Position, why: string) =>
          new ArtifactError({
            reason: "format",
            message: `${file}: the record at byte ${at.offset} ${why} (the file changed while it was open)`
          })
        const parse = (at: Position): Either.Either<ItemRecord, ArtifactError> => {
          const from = at.offset - start
          if (from < 0 || from + at.length >= window.length || window[from + at.length] !== NEWLINE) {
            return Either.left(changed(at, "is no longer a complete line"))
          }
          // The parse error is not quoted: it can hold the record's values (a model answer), and this is logged.
          return Either.mapLeft(
            readBack(window.subarray(from, from + at.length), at, identityFingerprint),
            (why) => changed(at, why)
          )
        }
        // A read in flight fills the window's buffer: nothing is parsed from it meanwhile. Without one, a
        // record in the window is parsed at once, without taking the lock (most lookups of a resumed run).
        let reading = false
        const loadAndParse = (at: Position) =>
          lock.withPermits(1)(Effect.suspend(() => {
            const inWindow = at.offset >= start && at.offset + at.length < start + window.length
            if (inWindow) return parse(at)
            reading = true
            return Effect.ensuring(
              Effect.flatMap(load(at), () => parse(at)),
              Effect.sync(() => {
                reading = false
              })
            )
          }))
        return (at) =>
          !reading && at.offset >= start && at.offset + at.length < start + window.length
            ? parse(at)
            : loadAndParse(at)
      }
    )

  return { scan, records, reader }
}
