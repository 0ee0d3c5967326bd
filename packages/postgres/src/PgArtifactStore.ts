/**
 * Batch's `ArtifactStore` on PostgreSQL: a run's manifest is its row in `rein_batch_runs`, its records the
 * rows of `rein_batch_records` in the order written (the JSONL file's lines). A checkpointed single-process
 * run (`Checkpoint.run`) works on it unchanged, and a distributed run (`PgBatchRun`, `PgWorker`) writes the
 * same records, so either reads the other's artifact.
 *
 * The store's contract is `ArtifactStore`'s: `append` returns once the record is committed; appends never
 * interleave (each is one `INSERT`); after a failed append, or once the scope that opened the artifact
 * closed, every append fails with `closed`. Nothing is ever truncated: a commit is all or nothing, so there
 * is no torn final record (`truncatedBytes` is always 0). A record that does not decode is a `format` error
 * naming its line (the manifest is line 1), as in the JSONL file.
 *
 * @since 0.1.0
 */
import { SqlClient } from "@effect/sql"
import type { SqlError } from "@effect/sql/SqlError"
import type { ArtifactStore as Store } from "@rein/batch"
import { ArtifactStore } from "@rein/batch"
import type { Scope } from "effect"
import { Effect, Either, Layer, Schema } from "effect"
import * as Q from "./internal/batchStatements.js"
import { describe } from "./internal/sqlError.js"

/**
 * Which run's artifact, and whether `create` and `open` may replace an existing one (its records and items
 * are deleted).
 *
 * @example
 * ```ts
 * import type { PgArtifactStore } from "@rein/postgres"
 *
 * const options: PgArtifactStore.Options = { runId: "nightly-2025-01-01" }
 * ```
 * @category models
 * @since 0.1.0
 */
export interface Options {
  readonly runId: string
  readonly overwrite?: boolean | undefined
}

const io = (e: SqlError) => new ArtifactStore.ArtifactError({ reason: "io", message: describe(e) })

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

const recordsOf = (runId: string, rows: ReadonlyArray<Q.RecordRow>) => {
  const records: Array<Store.ItemRecord> = []
  for (let i = 0; i < rows.length; i++) {
    const decoded = decodeRecord(rows[i]!.record)
    if (Either.isLeft(decoded)) {
      return Either.left(
        new ArtifactStore.ArtifactError({
          reason: "format",
          message: `record ${i + 1} of run ${JSON.stringify(runId)} is not an item record`,
          line: i + 2
        })
      )
    }
    records.push(decoded.right)
  }
  return Either.right(records)
}

/**
 * The store for one run.
 *
 * @example
 * ```ts
 * import { SqlClient } from "@effect/sql"
 * import { Effect } from "effect"
 * import { PgArtifactStore } from "@rein/postgres"
 *
 * const records = Effect.flatMap(PgArtifactStore.make({ runId: "nightly" }), (store) => store.read)
 * // Effect<Contents, ArtifactError, SqlClient>
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const make = (options: Options): Effect.Effect<Store.Service, never, SqlClient.SqlClient> =>
  Effect.map(SqlClient.SqlClient, (sql) => {
    const runId = options.runId

    const read: Effect.Effect<Store.Contents | undefined, Store.ArtifactError> = Effect.gen(function*() {
      const run = yield* Q.readRun(sql, runId)
      if (run === undefined) return undefined
      const manifest = yield* manifestOf(runId, run.manifest)
      const records = yield* recordsOf(runId, yield* Q.records(sql, runId))
      return { manifest, records }
    }).pipe(Effect.catchTag("SqlError", (e) => Effect.fail(io(e))))

    const opened = (contents: Store.Contents): Effect.Effect<Store.Opened, never, Scope.Scope> =>
      Effect.gen(function*() {
        let refused: string | undefined
        yield* Effect.addFinalizer(() => Effect.sync(() => void (refused ??= "it is closed")))
        const append = (record: Store.ItemRecord): Effect.Effect<void, Store.ArtifactError> =>
          Effect.suspend(() => {
            if (refused !== undefined) {
              return Effect.fail(
                new ArtifactStore.ArtifactError({
                  reason: "closed",
                  message: `run ${JSON.stringify(runId)} refuses appends: ${refused}`
                })
              )
            }
            return Effect.asVoid(Q.appendRecord(sql, runId, record)).pipe(
              Effect.catchTag("SqlError", (e) => {
                refused ??= e.message
                return Effect.fail(io(e))
              })
            )
          })
        return { manifest: contents.manifest, existing: contents.records, truncatedBytes: 0, append }
      })

    const create = (manifest: Store.Manifest) =>
      Effect.gen(function*() {
        const inserted = yield* Q.insertRun(sql, { runId, manifest, settings: {}, deadlineMillis: null })
        if (inserted.length === 0) {
          if (options.overwrite !== true) {
            return yield* new ArtifactStore.ArtifactError({
              reason: "exists",
              message: `run ${JSON.stringify(runId)} exists (overwrite is off)`
            })
          }
          yield* sql`DELETE FROM rein_batch_runs WHERE run_id = ${runId}`
          yield* Q.insertRun(sql, { runId, manifest, settings: {}, deadlineMillis: null })
        }
        return yield* opened({ manifest, records: [] })
      }).pipe(Effect.catchTag("SqlError", (e) => Effect.fail(io(e))))

    const resume = Effect.flatMap(read, (contents) =>
      contents === undefined
        ? Effect.fail(
          new ArtifactStore.ArtifactError({ reason: "missing", message: `no run ${JSON.stringify(runId)}` })
        )
        : opened(contents))

    return {
      create,
      resume,
      open: (manifest) =>
        options.overwrite === true
          ? create(manifest)
          : Effect.flatMap(read, (contents) => contents === undefined ? create(manifest) : opened(contents)),
      read: Effect.flatMap(read, (contents) =>
        contents === undefined
          ? Effect.fail(
            new ArtifactStore.ArtifactError({ reason: "missing", message: `no run ${JSON.stringify(runId)}` })
          )
          : Effect.succeed(contents))
    }
  })

/**
 * The store for one run as batch's `ArtifactStore` service.
 *
 * @example
 * ```ts
 * import { PgClient } from "@effect/sql-pg"
 * import { Effect, Layer, Redacted } from "effect"
 * import { Checkpoint } from "@rein/batch"
 * import { PgArtifactStore } from "@rein/postgres"
 *
 * const Store = PgArtifactStore.layer({ runId: "nightly" }).pipe(
 *   Layer.provide(PgClient.layer({ url: Redacted.make("postgres://localhost/rein") }))
 * )
 * ```
 * @category layers
 * @since 0.1.0
 */
export const layer = (options: Options): Layer.Layer<ArtifactStore.ArtifactStore, never, SqlClient.SqlClient> =>
  Layer.effect(ArtifactStore.ArtifactStore, make(options))
