/**
 * The JSONL artifact format, as pure functions over bytes: parsing with the crash rules, and encoding one
 * record as one line.
 *
 * Crash rules. A line is complete when it ends with `\n`. A final line without one is what a crash in the
 * middle of a write leaves: readers ignore it and a writable open truncates it (the item then runs again).
 * Everything else that is wrong is a format error naming the line, and the caller truncates nothing: a
 * malformed complete line (even the last one — it was fully written, so it is not a torn write), a file
 * whose first line is not a manifest, a manifest of a future schema version.
 *
 * @internal
 */
import { Either, Schema } from "effect"
import type { Manifest, OnRecord } from "../ArtifactStore.js"
import { ArtifactError, ItemRecord, Manifest as ManifestSchema, SCHEMA_VERSION } from "../ArtifactStore.js"
import { formatParseError } from "./schema.js"

const NEWLINE = 0x0a

/** The start of every manifest line this store writes (the encoder writes `kind` first). @internal */
export const MANIFEST_PREFIX = "{\"kind\":\"manifest\""

/** What a file holds. @internal */
export type Parsed =
  /** No complete line: an empty file, or only an unterminated first line (`tail` bytes of it). */
  | { readonly _tag: "Empty"; readonly tail: Uint8Array }
  | {
    readonly _tag: "Artifact"
    readonly manifest: Manifest
    readonly records: ReadonlyArray<ItemRecord>
    /** Bytes up to and including the last newline: what survives a truncation. */
    readonly validLength: number
    /** Bytes after the last newline (an unterminated final line). */
    readonly tornBytes: number
  }

const decoder = new TextDecoder("utf-8", { fatal: true })
const lenient = new TextDecoder("utf-8")
const encoder = new TextEncoder()

const decodeManifest = Schema.decodeUnknownEither(ManifestSchema, { errors: "all" })
const decodeRecord = Schema.decodeUnknownEither(ItemRecord, { errors: "all" })
const encodeManifest = Schema.encodeEither(ManifestSchema)
// A record's encoded form is its type (no transformations), so validating it is enough — and much cheaper
// than encoding on the append path. Validation rebuilds the value in schema order without excess fields.
const validateRecord = Schema.validateEither(ItemRecord)

const formatError = (line: number, message: string) =>
  new ArtifactError({ reason: "format", line, message: `line ${line}: ${message}; nothing was truncated` })

const isObject = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

// The line's text and its JSON.
const parseText = (bytes: Uint8Array, line: number): Either.Either<readonly [string, unknown], ArtifactError> => {
  let text: string
  try {
    text = decoder.decode(bytes)
  } catch {
    return Either.left(formatError(line, "not valid UTF-8"))
  }
  try {
    return Either.right([text, JSON.parse(text) as unknown])
  } catch {
    return Either.left(formatError(line, text.length === 0 ? "an empty line" : "not valid JSON"))
  }
}

const parseLine = (bytes: Uint8Array, line: number): Either.Either<unknown, ArtifactError> =>
  Either.map(parseText(bytes, line), ([, json]) => json)

const parseManifest = (bytes: Uint8Array): Either.Either<Manifest, ArtifactError> =>
  Either.flatMap(
    Either.mapLeft(parseLine(bytes, 1), () => formatError(1, "not a Rein artifact: the first line is not a manifest")),
    (json) => {
      if (!isObject(json) || json.kind !== "manifest") {
        return Either.left(formatError(1, "not a Rein artifact: the first line is not a manifest"))
      }
      // The version decides how the rest reads, so it is checked before the manifest's other fields: a
      // future version may have changed them.
      const version = json.schemaVersion
      if (typeof version === "number" && version > SCHEMA_VERSION) {
        return Either.left(
          new ArtifactError({
            reason: "version",
            line: 1,
            message:
              `line 1: artifact schema version ${version} is newer than this reader's (${SCHEMA_VERSION}); nothing was truncated`
          })
        )
      }
      return Either.mapLeft(decodeManifest(json), (e) => formatError(1, `bad manifest: ${formatParseError(e)}`))
    }
  )

// `identityFingerprint`: the manifest's, which a record written under it shares instead of holding a copy.
const shareIdentity = (json: unknown, identityFingerprint: string): void => {
  if (isObject(json) && json.identityFingerprint === identityFingerprint) json.identityFingerprint = identityFingerprint
}

// A record line and its text.
const parseRecordText = (
  bytes: Uint8Array,
  line: number,
  identityFingerprint: string
): Either.Either<readonly [ItemRecord, string], ArtifactError> =>
  Either.flatMap(parseText(bytes, line), ([text, json]) => {
    if (isObject(json) && json.kind === "manifest") return Either.left(formatError(line, "a second manifest"))
    shareIdentity(json, identityFingerprint)
    return Either.match(decodeRecord(json), {
      onLeft: (e) => Either.left(formatError(line, `bad item record: ${formatParseError(e)}`)),
      onRight: (record) => Either.right([record, text] as const)
    })
  })

/** One record line (without its newline), as the scanner reads it; `line` names it in an error. @internal */
export const parseRecord = (
  bytes: Uint8Array,
  line: number,
  identityFingerprint: string
): Either.Either<ItemRecord, ArtifactError> =>
  Either.map(parseRecordText(bytes, line, identityFingerprint), ([record]) => record)

/**
 * A 32-bit FNV-1a hash of bytes taken four at a time (four times fewer steps than a byte at a time: 0.6 µs
 * for a 550-byte line against 2.5): `Position.digest`. Each step is a bijection of the hash, so a change to
 * one word always changes it. @internal
 */
export const digest = (bytes: Uint8Array): number => {
  let h = 0x811c9dc5
  const words = bytes.length & ~3
  let i = 0
  for (; i < words; i += 4) {
    h = Math.imul(h ^ (bytes[i]! | (bytes[i + 1]! << 8) | (bytes[i + 2]! << 16) | (bytes[i + 3]! << 24)), 0x01000193)
  }
  for (; i < bytes.length; i++) h = Math.imul(h ^ bytes[i]!, 0x01000193)
  return h
}

/**
 * A record line read back whose bytes hash to the `digest` of a line that was decoded and found to be exactly
 * its record's encoding: its JSON is that record (same fields, same order, same values), so it is not
 * decoded again. Anything else (another hash, no digest) is parsed in full. @internal
 */
export const readBack = (
  bytes: Uint8Array,
  expected: number | undefined,
  identityFingerprint: string
): Either.Either<ItemRecord, ArtifactError> => {
  if (expected === undefined || digest(bytes) !== expected) return parseRecord(bytes, 0, identityFingerprint)
  const json: unknown = JSON.parse(decoder.decode(bytes))
  shareIdentity(json, identityFingerprint)
  // The same bytes decoded to this very record at open (`scanner`), and its JSON is it.
  return Either.right(json as ItemRecord)
}

/** What a scanned file holds (its records went to the scanner's `onRecord`). @internal */
export type Scanned =
  /** No complete line: an empty file, or only an unterminated first line (`tail` bytes of it). */
  | { readonly _tag: "Empty"; readonly tail: Uint8Array }
  | {
    readonly _tag: "Artifact"
    readonly manifest: Manifest
    /** Bytes up to and including the last newline: what survives a truncation. */
    readonly validLength: number
    /** Bytes after the last newline (an unterminated final line). */
    readonly tornBytes: number
  }

/**
 * Reads an artifact fed to it in chunks of any size, under the crash rules: the manifest, then each record
 * handed to `onRecord` as its line completes (and not kept), so a file of millions of records is read in
 * the memory of one chunk and one line. @internal
 */
export interface Scanner {
  /** The next bytes of the file; fails on the first malformed complete line (nothing after it is read). */
  readonly push: (chunk: Uint8Array) => Either.Either<void, ArtifactError>
  /** What the file held, once every byte was pushed. */
  readonly end: () => Scanned
  /** The manifest, once its line is complete. */
  readonly manifest: () => Manifest | undefined
}

/** A scanner of one file. @internal */
export const scanner = (onRecord: OnRecord): Scanner => {
  let manifest: Manifest | undefined
  let line = 0
  let consumed = 0 // bytes up to and including the last newline
  let carry: Array<Uint8Array> = [] // the current line's bytes from earlier chunks
  let carried = 0
  // `offset`: where the line starts in the file.
  const complete = (bytes: Uint8Array, offset: number): Either.Either<void, ArtifactError> => {
    line += 1
    if (manifest === undefined) {
      const m = parseManifest(bytes)
      if (Either.isLeft(m)) return Either.left(m.left)
      manifest = m.right
      return Either.void
    }
    const parsed = parseRecordText(bytes, line, manifest.identityFingerprint)
    if (Either.isLeft(parsed)) return Either.left(parsed.left)
    const [record, text] = parsed.right
    // A line that is exactly its record's encoding can be read back without decoding: its digest says so.
    // (Working it out only for a receiver that reads it, through a getter, made the open twice as costly.)
    const exact = JSON.stringify(record) === text
    onRecord(record, { offset, length: bytes.length, digest: exact ? digest(bytes) : undefined })
    return Either.void
  }
  const push = (chunk: Uint8Array): Either.Either<void, ArtifactError> => {
    let start = 0
    let end = chunk.indexOf(NEWLINE)
    while (end !== -1) {
      const piece = chunk.subarray(start, end)
      const bytes = carried === 0 ? piece : concat([...carry, piece])
      const offset = consumed
      consumed += carried + piece.length + 1
      carry = []
      carried = 0
      const done = complete(bytes, offset)
      if (Either.isLeft(done)) return done
      start = end + 1
      end = chunk.indexOf(NEWLINE, start)
    }
    if (start < chunk.length) {
      // A chunk may be a view of a buffer the reader reuses: the carried part is copied.
      carry.push(chunk.slice(start))
      carried += chunk.length - start
    }
    return Either.void
  }
  const end = (): Scanned =>
    manifest === undefined
      ? { _tag: "Empty", tail: concat(carry) }
      : { _tag: "Artifact", manifest, validLength: consumed, tornBytes: carried }
  return { push, end, manifest: () => manifest }
}

/** Parses a whole artifact under the crash rules, keeping every record. @internal */
export const parse = (bytes: Uint8Array): Either.Either<Parsed, ArtifactError> => {
  const records: Array<ItemRecord> = []
  const scan = scanner((record) => void records.push(record))
  return Either.map(scan.push(bytes), () => {
    const scanned = scan.end()
    return scanned._tag === "Empty" ? scanned : { ...scanned, records }
  })
}

/**
 * Whether an unterminated first line can be a manifest cut short by a crash (and so may be replaced by a
 * new one), rather than some other file that must be left alone.
 *
 * @internal
 */
export const isTornManifest = (tail: Uint8Array): boolean => {
  const text = lenient.decode(tail)
  return text.startsWith(MANIFEST_PREFIX) || MANIFEST_PREFIX.startsWith(text)
}

/** A manifest as one line, ending in a newline. @internal */
export const manifestLine = (manifest: Manifest): Either.Either<Uint8Array, ArtifactError> =>
  Either.match(encodeManifest(manifest), {
    onLeft: (e) =>
      Either.left(
        new ArtifactError({ reason: "encode", message: `manifest cannot be encoded: ${formatParseError(e)}` })
      ),
    onRight: (encoded) => Either.right(encoder.encode(`${JSON.stringify(encoded)}\n`))
  })

/** A record as one line, ending in a newline. `JSON.stringify` escapes every newline inside strings. @internal */
export const recordLine = (record: ItemRecord): Either.Either<Uint8Array, ArtifactError> =>
  Either.flatMap(
    Either.mapLeft(validateRecord(record), (e) =>
      new ArtifactError({
        reason: "encode",
        message: `record of item ${JSON.stringify(record.itemId)} cannot be encoded: ${formatParseError(e)}`
      })),
    (encoded) => {
      try {
        return Either.right(encoder.encode(`${JSON.stringify(encoded)}\n`))
      } catch (cause) {
        // JSON.stringify throws on a bigint or a cycle in `result`; its message names no data.
        return Either.left(
          new ArtifactError({
            reason: "encode",
            message: `record of item ${JSON.stringify(record.itemId)} has no JSON form: ${
              cause instanceof Error ? cause.name : "unknown"
            }`
          })
        )
      }
    }
  )

/** One buffer from many. @internal */
export const concat = (chunks: ReadonlyArray<Uint8Array>): Uint8Array => {
  if (chunks.length === 1) return chunks[0]!
  let size = 0
  for (const c of chunks) size += c.length
  const out = new Uint8Array(size)
  let at = 0
  for (const c of chunks) {
    out.set(c, at)
    at += c.length
  }
  return out
}
