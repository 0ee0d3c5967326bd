/**
 * Reading a journal file for `replay` and `explain`: an unreadable, malformed or future-version record is
 * bad input (exit 2) with its line number; an empty journal too. As `Journal.readJsonl`: a final line
 * without a newline (a write cut short) is not a record.
 *
 * @internal
 */
import type { FileSystem } from "@effect/platform"
import { Journal } from "@rein/core"
import { Effect, Either } from "effect"
import { InputError } from "../InputError.js"
import { readText } from "./files.js"

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
