/**
 * The JSONL artifact format, as pure functions over bytes: parsing with the crash rules, and encoding one
 * record as one line.
 *
 * Crash rules. A line is complete when it ends with `\n`. A final line without one is what a crash in the
 * middle of a write leaves: readers ignore it and a writable open truncates it (the item then runs again).
 * Everything else that is wrong is a format error naming the line, and the caller truncates nothing: a
 * malformed complete line (even the last one — it was fully written, so it is not a torn write), a file
 * whose first line is not a manifest, a manifest of a future schema version, and a line longer than
 * `MAX_LINE_BYTES`, complete or not: the writer never writes one (a record that long is an `encode` error),
 * so a crash cannot leave one, and it is refused as soon as its bytes pass the bound, without reading the
 * rest (a file of gigabytes without a newline after a manifest is refused after 16 MiB, not read whole).
 *
 * @internal
 */
import { Input } from "@rein/core"
import { Either, Schema, SchemaAST } from "effect"
import type { Manifest, OnRecord, Position } from "../ArtifactStore.js"
import { ArtifactError, ItemRecord, Manifest as ManifestSchema, SCHEMA_VERSION } from "../ArtifactStore.js"
import { formatParseError } from "./schema.js"

const NEWLINE = 0x0a

/**
 * The longest line (without its newline) an artifact holds, in bytes: a journal's (`Journal.MAX_LINE_BYTES`,
 * 16 MiB; a test checks they agree). A record holds no prompt; its `result` (a model's answer) is far smaller.
 * Not read from `Journal`: importing it here splits the CLI bundle's shared chunk, one more file for every
 * `rein batch` start (packages/cli/test/startup.test.ts). @internal
 */
export const MAX_LINE_BYTES = 16 * 1024 * 1024

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

const TOO_DEEP =
  `nested deeper than ${Input.MAX_JSON_DEPTH} levels of arrays and objects (no record is: not a Rein artifact, or a damaged one)`

const tooLong = (line: number, maxLineBytes: number) =>
  formatError(line, `longer than ${maxLineBytes} bytes (no record is that long: not a Rein artifact, or a damaged one)`)

const isObject = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

// The line's JSON.
const parseLine = (bytes: Uint8Array, line: number): Either.Either<unknown, ArtifactError> => {
  let text: string
  try {
    text = decoder.decode(bytes)
  } catch {
    return Either.left(formatError(line, "not valid UTF-8"))
  }
  // Refused unparsed: V8 parses deeply nested arrays at ~50 times their size in memory (no record nests so deep:
  // the writer refuses one).
  if (Input.tooDeep(text)) return Either.left(formatError(line, TOO_DEEP))
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

// `identityFingerprint`: the manifest's, which a record written under it shares instead of holding a copy.
const shareIdentity = (json: unknown, identityFingerprint: string): void => {
  if (isObject(json) && json.identityFingerprint === identityFingerprint) json.identityFingerprint = identityFingerprint
}

// The item record's fields in the schema's order, and whether each may be absent.
const SIGNATURES = SchemaAST.isTypeLiteral(ItemRecord.ast) ? ItemRecord.ast.propertySignatures : []
const FIELDS = SIGNATURES.map((p) => String(p.name))
const OPTIONAL = SIGNATURES.map((p) => p.isOptional)

const isCount = (u: unknown): boolean => Number.isSafeInteger(u) && (u as number) >= 0
const isAmount = (u: unknown): boolean => typeof u === "number" && Number.isFinite(u) && u >= 0

// Whether an object's enumerable keys are exactly `fields` in that order, the optional ones possibly absent.
const hasFields = (json: Record<string, unknown>, fields: ReadonlyArray<string>, optional: ReadonlyArray<boolean>) => {
  let i = 0
  for (const key in json) {
    while (i < fields.length && fields[i] !== key) if (!optional[i++]) return false
    if (i === fields.length) return false
    i += 1
  }
  while (i < fields.length) if (!optional[i++]) return false
  return true
}

const USAGE = ["inputTokens", "outputTokens"]
const USAGE_OPTIONAL = [false, false]
const isUsage = (u: unknown): boolean =>
  u === "unknown" || (isObject(u) && hasFields(u, USAGE, USAGE_OPTIONAL) && isAmount(u.inputTokens) &&
    isAmount(u.outputTokens))

/**
 * Whether parsed JSON already is the item record the schema would decode it to: the schema's fields and no
 * other, in its order, each of its form (what the store writes). The schema rebuilds such a value field by
 * field into an equal one, so it is taken as it is; anything else is decoded by the schema (which also words
 * the error of a bad line). @internal
 */
export const isExactRecord = (json: unknown): json is ItemRecord => {
  if (!isObject(json) || !hasFields(json, FIELDS, OPTIONAL)) return false
  return json.kind === "item" && typeof json.itemId === "string" && isCount(json.index) &&
    typeof json.promptFingerprint === "string" && typeof json.inputFingerprint === "string" &&
    typeof json.identityFingerprint === "string" && (json.outcome === "success" || json.outcome === "failure") &&
    typeof json.category === "string" && typeof json.reusable === "boolean" && isUsage(json.usage) &&
    (json.cost === "unknown" || isAmount(json.cost)) && isCount(json.attempts) &&
    (json.endpoint === undefined || typeof json.endpoint === "string") && isAmount(json.durationMillis) &&
    (json.requestId === undefined || typeof json.requestId === "string")
}

// A record line's JSON, its identity fingerprint shared with the manifest's; a second manifest is an error.
const parseRecordJson = (
  bytes: Uint8Array,
  line: number,
  identityFingerprint: string
): Either.Either<unknown, ArtifactError> =>
  Either.flatMap(parseLine(bytes, line), (json) => {
    if (isObject(json) && json.kind === "manifest") return Either.left(formatError(line, "a second manifest"))
    shareIdentity(json, identityFingerprint)
    return Either.right(json)
  })

// A record line's JSON decoded by the schema.
const decoded = (json: unknown, line: number): Either.Either<ItemRecord, ArtifactError> =>
  Either.mapLeft(decodeRecord(json), (e) => formatError(line, `bad item record: ${formatParseError(e)}`))

// A record line's JSON as the item record, decoded by the schema unless it is exactly one.
const asRecord = (json: unknown, line: number): Either.Either<ItemRecord, ArtifactError> =>
  isExactRecord(json) ? Either.right(json) : decoded(json, line)

/** One record line (without its newline), as the scanner reads it; `line` names it in an error. @internal */
export const parseRecord = (
  bytes: Uint8Array,
  line: number,
  identityFingerprint: string
): Either.Either<ItemRecord, ArtifactError> =>
  Either.flatMap(parseRecordJson(bytes, line, identityFingerprint), (json) => asRecord(json, line))

/**
 * A 32-bit hash of bytes: two FNV-1a lanes over alternate 4-byte words, joined (two independent chains of
 * multiplications run side by side: 0.45 µs for a 550-byte line, against 0.68 for one lane of words and 2.5
 * for bytes one at a time): `Position.digest`. Each step is a bijection of its lane, so a change to one word
 * always changes the hash. @internal
 */
export const digest = (bytes: Uint8Array): number => {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  let a = 0x811c9dc5
  let b = 0x050c5d1f
  const pairs = bytes.length & ~7
  let i = 0
  for (; i < pairs; i += 8) {
    a = Math.imul(a ^ view.getInt32(i, true), 0x01000193)
    b = Math.imul(b ^ view.getInt32(i + 4, true), 0x01000193)
  }
  for (; i < bytes.length; i++) a = Math.imul(a ^ bytes[i]!, 0x01000193)
  return a ^ Math.imul(b, 0x9e3779b1)
}

/**
 * A record line read back at a position the scanner gave, or why it is not given back: bytes that no longer
 * hash to the position's `digest` (the line changed after it was read), or no longer an item record. Bytes
 * that hash as a line that was exactly a record at open (`exact`) are only parsed. @internal
 */
export const readBack = (
  bytes: Uint8Array,
  at: Pick<Position, "digest" | "exact">,
  identityFingerprint: string
): Either.Either<ItemRecord, string> => {
  if (at.digest !== undefined && digest(bytes) !== at.digest) return Either.left("is not the line read at open")
  const json = parseRecordJson(bytes, 0, identityFingerprint)
  const record = at.digest !== undefined && at.exact === true
    ? json as Either.Either<ItemRecord, ArtifactError>
    : Either.flatMap(json, (j) => asRecord(j, 0))
  return Either.mapLeft(record, () => "is no longer an item record")
}

/**
 * Where the scanner found a record line. Its `digest` is worked out only when read, and only while the record
 * is being handed over (the line's bytes are a view of a buffer the reader refills): a receiver that keeps
 * the position reads it then; read later, it is `undefined` (no digest). @internal
 */
export class LinePosition implements Position {
  #bytes: Uint8Array | undefined
  #digest: number | undefined
  constructor(readonly offset: number, readonly length: number, bytes: Uint8Array, readonly exact: boolean) {
    this.#bytes = bytes
  }
  get digest(): number | undefined {
    if (this.#digest === undefined && this.#bytes !== undefined) this.#digest = digest(this.#bytes)
    return this.#digest
  }
  /** The record was handed over: its bytes are let go. */
  release(): void {
    this.#bytes = undefined
  }
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

const PREFIX_BYTES = new TextEncoder().encode(MANIFEST_PREFIX)
const startsWithPrefix = (bytes: Uint8Array): boolean => PREFIX_BYTES.every((b, i) => bytes[i] === b)

/**
 * A scanner of one file. A line longer than `maxLineBytes` fails as soon as its bytes pass the bound: the
 * scanner holds at most that many bytes of a line. `headOnly` reads the manifest line and nothing after it
 * (what follows it in the chunk is neither parsed nor kept: its records are read by another scanner, which
 * gives those before a bad line first). @internal
 */
export const scanner = (
  onRecord: OnRecord,
  options: { readonly maxLineBytes?: number; readonly headOnly?: boolean } = {}
): Scanner => {
  const maxLineBytes = options.maxLineBytes ?? MAX_LINE_BYTES
  const headOnly = options.headOnly === true
  let manifest: Manifest | undefined
  let line = 0
  let consumed = 0 // bytes up to and including the last newline
  let carry: Array<Uint8Array> = [] // the current line's bytes from earlier chunks
  let carried = 0
  let headChecked = false // whether an unfinished first line was seen to start as a manifest does
  // `offset`: where the line starts in the file.
  const complete = (bytes: Uint8Array, offset: number): Either.Either<void, ArtifactError> => {
    line += 1
    if (manifest === undefined) {
      const m = parseManifest(bytes)
      if (Either.isLeft(m)) return Either.left(m.left)
      manifest = m.right
      return Either.void
    }
    const json = parseRecordJson(bytes, line, manifest.identityFingerprint)
    if (Either.isLeft(json)) return Either.left(json.left)
    const exact = isExactRecord(json.right)
    const parsed = exact ? Either.right(json.right) : decoded(json.right, line)
    if (Either.isLeft(parsed)) return Either.left(parsed.left)
    // The line's digest is worked out only for a receiver that keeps its position (a record it may reuse).
    const at = new LinePosition(offset, bytes.length, bytes, exact)
    onRecord(parsed.right, at)
    at.release()
    return Either.void
  }
  const push = (chunk: Uint8Array): Either.Either<void, ArtifactError> => {
    if (headOnly && manifest !== undefined) return Either.void
    let start = 0
    let end = chunk.indexOf(NEWLINE)
    while (end !== -1) {
      const piece = chunk.subarray(start, end)
      if (carried + piece.length > maxLineBytes) return Either.left(tooLong(line + 1, maxLineBytes))
      const bytes = carried === 0 ? piece : concat([...carry, piece])
      const offset = consumed
      consumed += carried + piece.length + 1
      carry = []
      carried = 0
      const done = complete(bytes, offset)
      if (Either.isLeft(done) || (headOnly && manifest !== undefined)) return done
      start = end + 1
      end = chunk.indexOf(NEWLINE, start)
    }
    if (start < chunk.length) {
      // An unfinished line is refused once it passes the bound (before more of it is kept): after a manifest,
      // a stream without a newline would otherwise be carried whole.
      if (carried + chunk.length - start > maxLineBytes) return Either.left(tooLong(line + 1, maxLineBytes))
      // A chunk may be a view of a buffer the reader reuses: the carried part is copied.
      carry.push(chunk.slice(start))
      carried += chunk.length - start
      // An unfinished first line that already cannot be a manifest is refused now, not after the rest of it is
      // read and kept: a file of gigabytes without a newline (a binary, /dev/zero) would be carried whole.
      if (manifest === undefined && !headChecked && carried >= PREFIX_BYTES.length) {
        headChecked = true
        if (!startsWithPrefix(carry.length === 1 ? carry[0]! : concat(carry))) {
          return Either.left(formatError(1, "not a Rein artifact: the first line is not a manifest"))
        }
      }
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

// A value as one line, ending in a newline; one longer than `MAX_LINE_BYTES` is an `encode` error naming `what`
// (a reader would refuse it: the store never writes one). `JSON.stringify` may throw (a bigint, a cycle).
// With `nested`, one nested deeper than `Input.MAX_JSON_DEPTH` is an `encode` error too (a reader refuses it unparsed).
const boundedLine = (
  encoded: unknown,
  what: () => string,
  nested = false
): Either.Either<Uint8Array, ArtifactError> => {
  const text = JSON.stringify(encoded)
  if (nested && Input.tooDeep(text)) {
    return Either.left(
      new ArtifactError({
        reason: "encode",
        message:
          `${what()} is nested deeper than ${Input.MAX_JSON_DEPTH} levels of arrays and objects (a reader refuses it)`
      })
    )
  }
  const line = encoder.encode(`${text}\n`)
  return line.length - 1 > MAX_LINE_BYTES
    ? Either.left(
      new ArtifactError({
        reason: "encode",
        message: `${what()} is ${line.length - 1} bytes as a line, more than an artifact line holds (${MAX_LINE_BYTES})`
      })
    )
    : Either.right(line)
}

/** A manifest as one line, ending in a newline (at most `MAX_LINE_BYTES` before it). @internal */
export const manifestLine = (manifest: Manifest): Either.Either<Uint8Array, ArtifactError> =>
  Either.match(encodeManifest(manifest), {
    onLeft: (e) =>
      Either.left(
        new ArtifactError({ reason: "encode", message: `manifest cannot be encoded: ${formatParseError(e)}` })
      ),
    onRight: (encoded) => boundedLine(encoded, () => "the manifest")
  })

// An item id for a message: quoted, and cut short when long (an id may be what made its record too long).
const shortId = (id: string): string =>
  id.length > 80 ? `${JSON.stringify(id.slice(0, 80))}… (${id.length} characters)` : JSON.stringify(id)

/**
 * A record as one line, ending in a newline. `JSON.stringify` escapes every newline inside strings. A line
 * longer than `MAX_LINE_BYTES` is an `encode` error (a reader would refuse it). @internal
 */
export const recordLine = (record: ItemRecord): Either.Either<Uint8Array, ArtifactError> =>
  Either.flatMap(
    Either.mapLeft(validateRecord(record), (e) =>
      new ArtifactError({
        reason: "encode",
        message: `record of item ${JSON.stringify(record.itemId)} cannot be encoded: ${formatParseError(e)}`
      })),
    (encoded) => {
      try {
        // Only a kept `result` can nest deep (the rest of a record is a few levels deep).
        const nested = typeof record.result === "object" && record.result !== null
        return boundedLine(encoded, () => `record of item ${shortId(record.itemId)}`, nested)
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
