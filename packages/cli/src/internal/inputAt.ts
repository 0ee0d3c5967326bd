/**
 * The input of a distributed run's worker, read by submission index in bounded memory: a worker needs the
 * items the run leased to it (lowest index first, so mostly ascending), never the whole file. The reader
 * keeps a cursor (the byte offset, line and item index it reached), one read buffer, and a checkpoint every
 * `every` items (offset and line of that item); an index ahead of the cursor is reached by reading on, one
 * behind it (an expired lease taken over, an item reopened) from the checkpoint before it, reading at most
 * `every` lines. Memory: the buffer and the longest line, plus two numbers per `every` items (with the
 * default 1,024: 16 bytes per 1,024 items, 16 KB for a million) — against the whole input before.
 *
 * Lines, blanks, ids and errors are exactly those of `streamPrompts` (the same decoding; a line ends at
 * `\n`, and a `\r` before it is dropped), so index `i` is the item `streamPrompts` gives `i`-th and
 * `PgBatchRun.start` submitted at `i`. Duplicate ids are not checked here: `start` refused them, and the
 * worker checks each item's id and fingerprint against what was submitted.
 *
 * @internal
 */
import type { PlatformError } from "@effect/platform/Error"
import * as FileSystem from "@effect/platform/FileSystem"
import type { Scope } from "effect"
import { Effect, Either } from "effect"
import { InputError } from "../InputError.js"
import { describeReadError } from "./files.js"
import type { PromptItem } from "./prompts.js"
import { decodeAt } from "./prompts.js"

/** Reads the item at a submission index. @internal */
export type ItemAt = (index: number) => Effect.Effect<PromptItem, InputError>

interface Position {
  readonly offset: number
  readonly line: number
  readonly index: number
}

const NEWLINE = 10
const BLANK = /^[ \t\r\v\f]*$/
const decoder = new TextDecoder()

/**
 * Opens the file for reading items by index, for the life of the scope. `chunk` is the read buffer's size,
 * `every` the distance between checkpoints (small values for tests).
 *
 * @internal
 */
export const open = (
  path: string,
  options: { readonly chunk?: number | undefined; readonly every?: number | undefined } = {}
): Effect.Effect<ItemAt, InputError, FileSystem.FileSystem | Scope.Scope> =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const readError = (e: PlatformError) =>
      new InputError({ message: `cannot read the input ${path}: ${describeReadError(e)}` })
    const file = yield* Effect.mapError(fs.open(path, { flag: "r" }), readError)
    const every = options.every ?? 1024
    const buffer = new Uint8Array(options.chunk ?? 64 * 1024)
    // The buffer holds the file's bytes [start, end).
    let start = 0
    let end = 0
    // Checkpoint k is the position of item k × every.
    const checkpoints: Array<Position> = [{ offset: 0, line: 1, index: 0 }]
    let cursor: Position = checkpoints[0]!

    const fill = (offset: number) =>
      Effect.flatMap(Effect.zipRight(file.seek(offset, "start"), file.read(buffer)), (size) =>
        Effect.sync(() => {
          start = offset
          end = offset + Number(size)
        }))

    // The physical line at `offset` (without its `\n`), and where the next begins; `undefined` at the end.
    const lineAt = (offset: number): Effect.Effect<{ text: string; next: number } | undefined, PlatformError> =>
      Effect.gen(function*() {
        const pieces: Array<Uint8Array> = []
        let at = offset
        while (true) {
          if (at < start || at >= end) yield* fill(at)
          if (end === at) {
            // The end of the file: a last line without `\n`, or nothing.
            if (pieces.length === 0) return undefined
            return { text: join(pieces), next: at }
          }
          const from = at - start
          const newline = buffer.subarray(from, end - start).indexOf(NEWLINE)
          if (newline !== -1) {
            pieces.push(buffer.slice(from, from + newline))
            return { text: join(pieces), next: at + newline + 1 }
          }
          pieces.push(buffer.slice(from, end - start))
          at = end
        }
      })

    const seek = (index: number): Effect.Effect<PromptItem, InputError> =>
      Effect.gen(function*() {
        if (index < cursor.index) cursor = checkpoints[Math.floor(index / every)]!
        while (true) {
          const read = yield* Effect.mapError(lineAt(cursor.offset), readError)
          if (read === undefined) {
            return yield* new InputError({
              message: `${path}: no item at index ${index} (the file has ${cursor.index})`
            })
          }
          const raw = read.text.endsWith("\r") ? read.text.slice(0, -1) : read.text
          const blank = BLANK.test(raw)
          const here = cursor
          cursor = { offset: read.next, line: here.line + 1, index: blank ? here.index : here.index + 1 }
          if (blank) continue
          if (here.index % every === 0 && checkpoints.length === here.index / every) checkpoints.push(here)
          if (here.index === index) {
            return yield* Either.match(decodeAt(path, raw, here.line), {
              onLeft: Effect.fail,
              onRight: Effect.succeed
            })
          }
        }
      })

    // One reader at a time: the cursor and the buffer are shared.
    const lock = yield* Effect.makeSemaphore(1)
    return (index: number) => lock.withPermits(1)(seek(index))
  })

const join = (pieces: ReadonlyArray<Uint8Array>): string => {
  if (pieces.length === 1) return decoder.decode(pieces[0])
  const all = new Uint8Array(pieces.reduce((n, p) => n + p.length, 0))
  let at = 0
  for (const p of pieces) {
    all.set(p, at)
    at += p.length
  }
  return decoder.decode(all)
}
