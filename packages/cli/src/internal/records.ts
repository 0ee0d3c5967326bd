/**
 * Reading a journal file for `replay` and `explain`: an unreadable, malformed or future-version record is
 * bad input (exit 2) with its line number; an empty journal too. As `Journal.readJsonl`: a final line
 * without a newline (a write cut short) is not a record.
 *
 * @internal
 */
import type { FileSystem } from "@effect/platform"
import { Journal } from "@rein/core"
import { Effect, Either, Predicate } from "effect"
import { InputError } from "../InputError.js"
import { readText } from "./files.js"

/** A line of a batch artifact (`rein batch --out`): its manifest or an item's record. */
const isArtifactLine = (line: string): boolean => {
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
  "--record writes. An item's line in the artifact holds its outcome and category and, when it failed, " +
  "error.reason and error.attempts (each attempt's endpoint, role, failure kind and code, timing and charge); " +
  "to see why each attempt was made, run the prompt with rein run … --record journal.jsonl"

/** @internal */
export const readRecords = (
  path: string
): Effect.Effect<ReadonlyArray<Journal.JournalRecord>, InputError, FileSystem.FileSystem> =>
  Effect.flatMap(readText(path, "record"), (text) => {
    const lines = text.split("\n")
    lines.pop()
    const records: Array<Journal.JournalRecord> = []
    for (const [i, line] of lines.entries()) {
      if (line.trim() === "") continue
      const decoded = Journal.decodeLine(line, i + 1)
      if (Either.isLeft(decoded)) {
        if (isArtifactLine(line)) return Effect.fail(new InputError({ message: artifactGiven(path) }))
        const e = decoded.left
        const detail = e.message.split("\n").slice(0, 5).join("; ")
        return Effect.fail(
          new InputError({ message: `${path}:${i + 1}: not a readable record (${e.reason}): ${detail}` })
        )
      }
      records.push(decoded.right)
    }
    return records.length === 0
      ? Effect.fail(new InputError({ message: `${path}: no records (write one with rein run --record ${path})` }))
      : Effect.succeed(records)
  })
