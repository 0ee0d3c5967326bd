/**
 * Reading a run's artifact in bounded memory: the manifest, then the records a page at a time in the order
 * written (keyset pagination on `seq`: each page is the next `pageSize` records after the last one read), all in
 * one snapshot. The process holds one page of rows at a time, however many records the run has.
 *
 * Why a snapshot (one `REPEATABLE READ` transaction on one reserved connection): `seq` is a sequence, taken at
 * insert and committed in any order, so a record committed after a later page was read can have a smaller `seq`
 * than the last one read, and a cursor on `seq` alone would skip it for good. In one snapshot every page sees
 * the same committed records, as the single `SELECT` before it did. The price: the connection and the snapshot
 * are held until the reader's scope closes.
 *
 * @internal
 */
import { SqlClient } from "@effect/sql"
import type { SqlError } from "@effect/sql/SqlError"
import type { ArtifactStore as Store } from "@rein/batch"
import { ArtifactStore } from "@rein/batch"
import { Input } from "@rein/core"
import type { Scope } from "effect"
import { Chunk, Effect, Either, Option, Schema, Stream } from "effect"
import * as Q from "./batchStatements.js"
import { describe } from "./sqlError.js"

/** Records read at a time. */
export const PAGE_SIZE = 1_000

/** A failed statement, as the store reports it. */
export const io = (e: SqlError) => new ArtifactStore.ArtifactError({ reason: "io", message: describe(e) })

const validateRecord = Schema.validateEither(ArtifactStore.ItemRecord)
// `\u0000` in JSON text, not preceded by an escaped backslash (`\\u0000` is a backslash and "u0000").
const NUL = /(?:^|[^\\])(?:\\\\)*\\u0000/

/**
 * A record as the JSON text a row holds, or why the store cannot keep it (`encode`, naming the item and no
 * data): it is not an item record (a NaN cost: `JSON.stringify` would write `null`, and the run would no
 * longer read), it has no JSON form (a bigint or a cycle in `result`), or a string in it holds U+0000, which
 * PostgreSQL's `jsonb` cannot hold.
 */
export const recordJson = (record: Store.ItemRecord): Either.Either<string, Store.ArtifactError> => {
  const encode = (why: string) =>
    new ArtifactStore.ArtifactError({
      reason: "encode",
      message: `record of item ${JSON.stringify(record.itemId)} ${why}`
    })
  const valid = validateRecord(record)
  if (Either.isLeft(valid)) return Either.left(encode(`cannot be encoded: ${Input.formatParseError(valid.left)}`))
  let json: string
  try {
    json = JSON.stringify(record)
  } catch (cause) {
    // JSON.stringify throws on a bigint or a cycle in `result`; its message names no data.
    return Either.left(encode(`has no JSON form: ${cause instanceof Error ? cause.name : "unknown"}`))
  }
  // As the JSONL store: a result nested deeper than a reader accepts is refused (only a kept `result` nests deep).
  if (typeof record.result === "object" && record.result !== null && Input.tooDeep(json)) {
    return Either.left(
      encode(`is nested deeper than ${Input.MAX_JSON_DEPTH} levels of arrays and objects (a reader refuses it)`)
    )
  }
  return NUL.test(json)
    ? Either.left(encode("holds the character U+0000 in a string, which PostgreSQL's jsonb cannot store"))
    : Either.right(json)
}

const decodeManifest = Schema.decodeUnknownEither(ArtifactStore.Manifest)
const decodeRecord = Schema.decodeUnknownEither(ArtifactStore.ItemRecord)

const manifestOf = (runId: string, value: unknown) => {
  const version = typeof value === "object" && value !== null
    ? (value as { schemaVersion?: unknown }).schemaVersion
    : undefined
  if (typeof version === "number" && version > ArtifactStore.SCHEMA_VERSION) {
    return Either.left(
      new ArtifactStore.ArtifactError({
        reason: "version",
        message: `run ${
          JSON.stringify(runId)
        } was written by artifact schema version ${version} (this is ${ArtifactStore.SCHEMA_VERSION})`,
        line: 1
      })
    )
  }
  return Either.mapLeft(decodeManifest(value), () =>
    new ArtifactStore.ArtifactError({
      reason: "format",
      message: `run ${JSON.stringify(runId)} has no valid manifest`,
      line: 1
    }))
}

/** A page's records, decoded; `first` is the number (1-based) of its first record in the whole artifact. */
const recordsOf = (runId: string, rows: ReadonlyArray<Q.RecordRow>, first: number) => {
  const records: Array<Store.ItemRecord> = []
  for (let i = 0; i < rows.length; i++) {
    const decoded = decodeRecord(rows[i]!.record)
    if (Either.isLeft(decoded)) {
      return Either.left(
        new ArtifactStore.ArtifactError({
          reason: "format",
          message: `record ${first + i} of run ${JSON.stringify(runId)} is not an item record`,
          line: first + i + 1
        })
      )
    }
    records.push(decoded.right)
  }
  return Either.right(records)
}

/** The manifest, and the records as a stream of pages; the stream may be read while the scope is open. */
export interface Snapshot {
  readonly manifest: Store.Manifest
  readonly records: Stream.Stream<Store.ItemRecord, Store.ArtifactError>
}

interface Cursor {
  /** The `seq` of the last record read ("0": none yet). */
  readonly after: string
  /** The number (1-based) of the next record. */
  readonly next: number
}

/**
 * Opens a snapshot of the run's artifact for the scope; `undefined` when there is no such run. Reading the
 * records after the scope closed fails with `closed` (the connection went back to the pool).
 */
export const open = (
  sql: SqlClient.SqlClient,
  runId: string,
  pageSize: number
): Effect.Effect<Snapshot | undefined, Store.ArtifactError, Scope.Scope> =>
  Effect.gen(function*() {
    const conn = yield* sql.reserve
    yield* conn.executeUnprepared("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY", [], undefined)
    // Read only: ending it can neither fail in a way that matters nor lose anything.
    yield* Effect.addFinalizer(() => Effect.ignore(conn.executeUnprepared("COMMIT", [], undefined)))
    let closed = false
    yield* Effect.addFinalizer(() => Effect.sync(() => void (closed = true)))
    const inSnapshot = Effect.provideService(SqlClient.TransactionConnection, [conn, 1] as const)
    const run = yield* inSnapshot(Q.readRun(sql, runId))
    if (run === undefined) return undefined
    const manifest = yield* manifestOf(runId, run.manifest)
    const page = (cursor: Cursor) =>
      Effect.suspend(() =>
        closed
          ? Effect.fail(
            new ArtifactStore.ArtifactError({
              reason: "closed",
              message: `run ${JSON.stringify(runId)}: the records were read after their scope closed`
            })
          )
          : Effect.flatMap(
            Effect.catchTag(inSnapshot(Q.recordsAfter(sql, runId, cursor.after, pageSize)), "SqlError", (e) =>
              Effect.fail(io(e))),
            (rows) =>
              Effect.map(recordsOf(runId, rows, cursor.next), (records) =>
                [
                  Chunk.unsafeFromArray(records),
                  rows.length < pageSize
                    ? Option.none<Cursor>()
                    : Option.some({ after: rows[rows.length - 1]!.at, next: cursor.next + rows.length })
                ] as const)
          )
      )
    const records = Stream.paginateChunkEffect({ after: "0", next: 1 } as Cursor, page)
    return { manifest, records }
  }).pipe(Effect.catchTag("SqlError", (e) =>
    Effect.fail(io(e))))
