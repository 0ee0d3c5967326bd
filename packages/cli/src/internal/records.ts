/**
 * Reading a journal file for `replay` and `explain`: an unreadable, malformed or future-version record is
 * bad input (exit 2) with its line number; an empty journal too. As `Journal.readJsonl`: a final line
 * without a newline (a write cut short) is not a record.
 *
 * @internal
 */
import * as FileSystem from "@effect/platform/FileSystem"
import { Input, Journal } from "@rein/core"
import { Effect, Either, Predicate, Stream } from "effect"
import { InputError } from "../InputError.js"
import { describeReadError } from "./files.js"

/** A line of a batch artifact (`rein batch --out`): its manifest or an item's record. */
const isArtifactLine = (line: string): boolean => {
  if (Input.tooDeep(line)) return false
  try {
    const value: unknown = JSON.parse(line)
    return Predicate.hasProperty(value, "kind") && (value.kind === "manifest" || value.kind === "item")
  } catch {
    return false
  }
}

/** What to do with a batch artifact given where a journal was expected (it was a screen of schema errors). */
const artifactGiven = (path: string): string =>
  `${path} is a batch artifact (rein batch --out), not a journal: replay and explain read what rein run ` +
  "--record and rein batch --record write. An item's line in the artifact holds its outcome and category and, " +
  "when it failed, error.reason and error.attempts (each attempt's endpoint, role, failure kind and code, timing " +
  "and charge); to see why each attempt was made, give the batch --record journal.jsonl (or run the prompt with " +
  "rein run … --record journal.jsonl)"

/** The error for a journal line that is not a record (a batch artifact's lines get their own). */
const notARecord = (path: string, line: Journal.Line, e: Journal.JournalError): InputError => {
  if (isArtifactLine(line.text)) return new InputError({ message: artifactGiven(path) })
  const detail = e.message.split("\n").slice(0, 5).join("; ")
  return new InputError({ message: `${path}:${line.number}: not a readable record (${e.reason}): ${detail}` })
}

/**
 * The records of a journal as a stream: memory holds one line (at most `Journal.MAX_LINE_BYTES`), never the
 * file. Does not check that there is a record (see `noRecords`).
 *
 * @internal
 */
export const streamRecords = (
  path: string,
  options?: { readonly maxLineBytes?: number | undefined }
): Stream.Stream<Journal.JournalRecord, InputError, FileSystem.FileSystem> =>
  Stream.unwrap(Effect.map(FileSystem.FileSystem, (fs) =>
    Journal.splitLines(
      fs.stream(path).pipe(
        Stream.mapError((e) => new InputError({ message: `cannot read the record ${path}: ${describeReadError(e)}` }))
      ),
      { path, maxLineBytes: options?.maxLineBytes }
    ))).pipe(
      Stream.mapError((e) =>
        e._tag === "InputError" ? e : new InputError({
          message: `${path}:${e.line}: not a readable record: the line is longer than ${
            options?.maxLineBytes ?? Journal.MAX_LINE_BYTES
          } bytes (is this a journal written by rein run --record?)`
        })
      ),
      Stream.filter((line) => line.text.trim() !== ""),
      Stream.mapEffect((line) =>
        Either.mapLeft(Journal.decodeLine(line.text, line.number), (e) => notARecord(path, line, e))
      )
    )

/** The error for a journal without a record. @internal */
export const noRecords = (path: string): InputError =>
  new InputError({ message: `${path}: no records (write one with rein run --record ${path})` })
