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
import type { Manifest } from "../ArtifactStore.js"
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

const parseLine = (bytes: Uint8Array, line: number): Either.Either<unknown, ArtifactError> => {
  let text: string
  try {
    text = decoder.decode(bytes)
  } catch {
    return Either.left(formatError(line, "not valid UTF-8"))
  }
  try {
    return Either.right(JSON.parse(text) as unknown)
  } catch {
    return Either.left(formatError(line, text.length === 0 ? "an empty line" : "not valid JSON"))
  }
}

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

const parseRecord = (bytes: Uint8Array, line: number): Either.Either<ItemRecord, ArtifactError> =>
  Either.flatMap(parseLine(bytes, line), (json) => {
    if (isObject(json) && json.kind === "manifest") {
      return Either.left(formatError(line, "a second manifest"))
    }
    return Either.mapLeft(decodeRecord(json), (e) => formatError(line, `bad item record: ${formatParseError(e)}`))
  })

/** Parses a whole artifact under the crash rules. @internal */
export const parse = (bytes: Uint8Array): Either.Either<Parsed, ArtifactError> => {
  const lastNewline = bytes.lastIndexOf(NEWLINE)
  const validLength = lastNewline + 1
  if (validLength === 0) return Either.right({ _tag: "Empty", tail: bytes })
  let start = bytes.indexOf(NEWLINE)
  const manifest = parseManifest(bytes.subarray(0, start))
  if (Either.isLeft(manifest)) return Either.left(manifest.left)
  const records: Array<ItemRecord> = []
  let line = 1
  start += 1
  while (start < validLength) {
    line += 1
    const end = bytes.indexOf(NEWLINE, start)
    const record = parseRecord(bytes.subarray(start, end), line)
    if (Either.isLeft(record)) return Either.left(record.left)
    records.push(record.right)
    start = end + 1
  }
  return Either.right({
    _tag: "Artifact",
    manifest: manifest.right,
    records,
    validLength,
    tornBytes: bytes.length - validLength
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
