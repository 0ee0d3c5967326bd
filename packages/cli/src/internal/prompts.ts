/**
 * The input of `rein batch`: a JSONL file, one item per line — a JSON string (the prompt), or an object
 * `{ "id", "prompt", "system"?, "inputTokens"?, "maxOutputTokens"? }`. Ids default to the line number and
 * must be unique (a resumed run matches records by id). Blank lines are skipped.
 *
 * The file is read as a stream: a line is decoded when the run pulls its item, so a run over a huge file
 * starts at once and holds only what it has pulled (plus one read buffer). A bad line is an `InputError`
 * naming the file and line, raised when the run reaches it. Counting the items (for the progress bar and
 * the summary) scans the bytes once without decoding them.
 *
 * @internal
 */
import type { PlatformError } from "@effect/platform/Error"
import * as FileSystem from "@effect/platform/FileSystem"
import { Effect, Either, Option, Schema, Stream } from "effect"
import { InputError } from "../InputError.js"
import { describeReadError, parseJson } from "./files.js"
import { decodeWith, describe, PositiveInt } from "./schema.js"

/** @internal */
export interface PromptItem {
  readonly id: string
  readonly prompt: string
  readonly system?: string | undefined
  readonly inputTokens?: number | undefined
  readonly maxOutputTokens?: number | undefined
}

const Item = Schema.Struct({
  id: Schema.optional(Schema.NonEmptyTrimmedString),
  prompt: Schema.String,
  system: Schema.optional(Schema.String),
  inputTokens: Schema.optional(PositiveInt),
  maxOutputTokens: Schema.optional(PositiveInt)
})

const decodeItem = decodeWith(Item)

/** One parsed input line: a prompt string, or an item object; the error names the field. @internal */
export const decodeLine = (json: unknown): Either.Either<string | typeof Item.Type, string> =>
  typeof json === "string"
    ? Either.right(json)
    : typeof json === "object" && json !== null && !Array.isArray(json)
    ? decodeItem(json)
    : Either.left(`Expected a prompt string or an object with a "prompt", actual ${describe(json)}`)

// Blank means ASCII whitespace only, the same bytes `countPrompts` skips, so that both agree on the items.
const BLANK = /^[ \t\r\v\f]*$/
const isBlankByte = (b: number): boolean => b === 32 || (b >= 9 && b <= 13 && b !== 10)

// The read buffer of the count.
const CHUNK = 1024 * 1024

const noItems = (path: string) => new InputError({ message: `${path}: no items (one JSON prompt or object per line)` })

const readError = (path: string) => (e: PlatformError) =>
  new InputError({ message: `cannot read the input ${path}: ${describeReadError(e)}` })

/**
 * How many items the file holds (its non-blank lines), read in chunks without decoding: bounded memory.
 * Fails when the file cannot be read or holds no item.
 *
 * @internal
 */
export const countPrompts = (path: string): Effect.Effect<number, InputError, FileSystem.FileSystem> =>
  Effect.flatMap(FileSystem.FileSystem, (fs) => {
    let count = 0
    // Whether the current line has a non-blank byte yet; once it has, the rest of it is skipped natively.
    let content = false
    const scan = (bytes: Uint8Array): void => {
      let i = 0
      while (i < bytes.length) {
        if (!content) {
          const b = bytes[i]!
          if (b !== 10 && isBlankByte(b)) {
            i++
            continue
          }
          if (b === 10) {
            i++
            continue
          }
          content = true
        }
        const newline = bytes.indexOf(10, i)
        if (newline === -1) return
        count++
        content = false
        i = newline + 1
      }
    }
    // One buffer, read into again and again: no allocation per chunk.
    const readAll = Effect.scoped(Effect.flatMap(fs.open(path, { flag: "r" }), (file) => {
      const buffer = new Uint8Array(CHUNK)
      const loop: Effect.Effect<void, PlatformError> = Effect.flatMap(file.read(buffer), (size) => {
        const n = Number(size)
        if (n === 0) return Effect.void
        scan(buffer.subarray(0, n))
        return loop
      })
      return loop
    }))
    return readAll.pipe(
      Effect.mapError(readError(path)),
      Effect.flatMap(() => {
        const total = count + (content ? 1 : 0)
        return total === 0 ? Effect.fail(noItems(path)) : Effect.succeed(total)
      })
    )
  })

/** Decodes one line (1-based `line`) into an item, checking its id against those seen so far (when given). */
const itemOf = (
  path: string,
  raw: string,
  line: number,
  seen: Map<string, number> | undefined
): Either.Either<PromptItem, InputError> => {
  const where = `${path}:${line}`
  const json = parseJson(raw, where, false)
  if (Either.isLeft(json)) return Either.left(json.left)
  const decoded = decodeLine(json.right)
  if (Either.isLeft(decoded)) {
    return Either.left(new InputError({ message: `${where}: ${decoded.left.split("\n").join("; ")}` }))
  }
  const item: PromptItem = typeof decoded.right === "string"
    ? { id: `line-${line}`, prompt: decoded.right }
    : { ...decoded.right, id: decoded.right.id ?? `line-${line}` }
  if (seen === undefined) return Either.right(item)
  const earlier = seen.get(item.id)
  if (earlier !== undefined) {
    return Either.left(
      new InputError({ message: `${where}: id ${JSON.stringify(item.id)} already used on line ${earlier}` })
    )
  }
  seen.set(item.id, line)
  return Either.right(item)
}

/** Decodes the line `line` (1-based) as `streamPrompts` does, without the check of ids seen before. @internal */
export const decodeAt = (path: string, raw: string, line: number): Either.Either<PromptItem, InputError> =>
  itemOf(path, raw, line, undefined)

/**
 * The items of the file, read and decoded as they are pulled. A file with no item fails when the stream
 * ends (`countPrompts` says so before a run).
 *
 * @internal
 */
export const streamPrompts = (path: string): Stream.Stream<PromptItem, InputError, FileSystem.FileSystem> =>
  Stream.map(streamLines(path, true), (located) => located.item)

/** An item and its line (1-based). @internal */
export interface Located {
  readonly item: PromptItem
  readonly line: number
}

/**
 * The items of the file with their lines, as `streamPrompts` reads them, without checking ids against those
 * before: what it holds is a chunk or two of the file, not every id (a distributed run's `start` has its
 * database find two items with one id).
 *
 * @internal
 */
export const streamLocated = (path: string): Stream.Stream<Located, InputError, FileSystem.FileSystem> =>
  streamLines(path, false)

const streamLines = (path: string, checkIds: boolean): Stream.Stream<Located, InputError, FileSystem.FileSystem> =>
  Stream.unwrap(Effect.map(FileSystem.FileSystem, (fs) => {
    // Ids seen so far (a resumed run matches records by id): the one thing that grows with the file.
    const seen = checkIds ? new Map<string, number>() : undefined
    let line = 0
    let items = 0
    // A small read-ahead: what is held is the lines of a chunk or two, however big the file.
    return fs.stream(path, { chunkSize: 64 * 1024, bufferSize: 2 }).pipe(
      Stream.mapError(readError(path)),
      Stream.decodeText(),
      Stream.splitLines,
      Stream.filterMap((raw) => {
        line++
        return BLANK.test(raw) ? Option.none() : Option.some([raw, line] as const)
      }),
      Stream.mapEffect(([raw, n]) => {
        items++
        return Either.map(itemOf(path, raw, n, seen), (item): Located => ({ item, line: n }))
      }),
      Stream.concat(Stream.suspend(() => (items === 0 ? Stream.fail(noItems(path)) : Stream.empty)))
    )
  }))
