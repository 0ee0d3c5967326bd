/**
 * Batch's `ArtifactStore` on PostgreSQL: a run's manifest is its row in `rein_batch_runs`, its records the
 * rows of `rein_batch_records` in the order written (the JSONL file's lines). A checkpointed single-process
 * run (`Checkpoint.run`) works on it unchanged, and a distributed run (`PgBatchRun`, `PgWorker`) writes the
 * same records, so either reads the other's artifact.
 *
 * The store's contract is `ArtifactStore`'s: `append` returns once the record is committed; appends never
 * interleave (each is one `INSERT`); after a failed append, or once the scope that opened the artifact
 * closed, every append fails with `closed`. A record the store cannot keep as written is an `encode` error, as
 * in the JSONL file: not an item record, no JSON form, or a string holding U+0000 (`jsonb` cannot hold it).
 * Nothing is ever truncated: a commit is all or nothing, so there is no torn final record (`truncatedBytes` is
 * always 0). A record that does not decode is a `format` error naming its line (the manifest is line 1), as in
 * the JSONL file.
 *
 * Every read is of one snapshot and a page of records at a time (`internal/artifactRead.ts`); `stream` reads a
 * run of millions of records in the memory of one page.
 *
 * @since 0.1.0
 */
import { SqlClient } from "@effect/sql"
import type { ArtifactStore as Store } from "@rein/batch"
import { ArtifactStore } from "@rein/batch"
import type { Scope } from "effect"
import { Chunk, Effect, Either, Layer, Stream } from "effect"
import * as R from "./internal/artifactRead.js"
import * as Q from "./internal/batchStatements.js"

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

/**
 * A run's artifact open for reading in bounded memory (batch's `ArtifactStore.Streamed`): its manifest, and its
 * records, oldest first, as a stream read a page at a time. The records are those of one snapshot, taken when
 * the artifact was opened, however long reading them takes.
 *
 * @example
 * ```ts
 * import type { PgArtifactStore } from "@rein/postgres"
 * import { Stream } from "effect"
 *
 * declare const streamed: PgArtifactStore.Streamed
 * const failures = Stream.runCount(Stream.filter(streamed.records, (r) => r.outcome === "failure"))
 * ```
 * @category models
 * @since 0.1.0
 */
export type Streamed = Store.Streamed

/**
 * The store of one run: batch's `ArtifactStore` service. `stream` reads the records in bounded memory, and
 * `resume` and `open` hand them over a page at a time (holding one page of rows); `read` gives every record at
 * once, as the service's contract says.
 *
 * @example
 * ```ts
 * import { Effect, Stream } from "effect"
 * import type { PgArtifactStore } from "@rein/postgres"
 *
 * const count = (store: PgArtifactStore.Service) =>
 *   Effect.scoped(Effect.flatMap(store.stream, (s) => Stream.runCount(s.records)))
 * ```
 * @category models
 * @since 0.1.0
 */
export interface Service extends Store.Service {
  /**
   * Opens the artifact for reading in bounded memory for the scope (one connection and one snapshot are held
   * until it closes; reading after it closed fails with `closed`); fails with `missing` when there is no run.
   */
  readonly stream: Effect.Effect<Streamed, Store.ArtifactError, Scope.Scope>
}

const missing = (runId: string) =>
  new ArtifactStore.ArtifactError({ reason: "missing", message: `no run ${JSON.stringify(runId)}` })

/** The manifest, each record handed to `onRecord` as its page is read (one page of rows held at a time). */
const readAll = (sql: SqlClient.SqlClient, runId: string, onRecord: Store.OnRecord) =>
  Effect.scoped(Effect.flatMap(R.open(sql, runId, R.PAGE_SIZE), (snapshot) => {
    if (snapshot === undefined) return Effect.succeed(undefined)
    return Effect.as(
      Stream.runForEachChunk(
        snapshot.records,
        (chunk) => Effect.sync(() => Chunk.forEach(chunk, (record) => onRecord(record)))
      ),
      snapshot.manifest
    )
  }))

const ignore: Store.OnRecord = () => {}

/**
 * The store for one run.
 *
 * @example
 * ```ts
 * import { Effect, Stream } from "effect"
 * import { PgArtifactStore } from "@rein/postgres"
 *
 * const records = Effect.flatMap(PgArtifactStore.make({ runId: "nightly" }), (store) => store.read)
 * // Effect<Contents, ArtifactError, SqlClient>
 * const successes = Effect.flatMap(PgArtifactStore.make({ runId: "nightly" }), (store) =>
 *   Effect.scoped(Effect.flatMap(store.stream, (s) =>
 *     Stream.runCount(Stream.filter(s.records, (r) => r.outcome === "success")))))
 * // Effect<number, ArtifactError, SqlClient>, one page of records in memory at a time
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const make = (options: Options): Effect.Effect<Service, never, SqlClient.SqlClient> =>
  Effect.map(SqlClient.SqlClient, (sql) => {
    const runId = options.runId

    const opened = (manifest: Store.Manifest): Effect.Effect<Store.Opened, never, Scope.Scope> =>
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
            const json = R.recordJson(record)
            if (Either.isLeft(json)) {
              refused ??= json.left.message
              return Effect.fail(json.left)
            }
            return Effect.asVoid(Q.appendRecord(sql, runId, record.itemId, json.right)).pipe(
              Effect.catchTag("SqlError", (e) => {
                refused ??= e.message
                return Effect.fail(R.io(e))
              })
            )
          })
        return { manifest, truncatedBytes: 0, append }
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
        return yield* opened(manifest)
      }).pipe(Effect.catchTag("SqlError", (e) => Effect.fail(R.io(e))))

    const resume = (onRecord: Store.OnRecord = ignore) =>
      Effect.flatMap(
        readAll(sql, runId, onRecord),
        (manifest) => manifest === undefined ? Effect.fail(missing(runId)) : opened(manifest)
      )

    const read = Effect.suspend(() => {
      const records: Array<Store.ItemRecord> = []
      return Effect.flatMap(
        readAll(sql, runId, (record) => void records.push(record)),
        (manifest) =>
          manifest === undefined
            ? Effect.fail(missing(runId))
            : Effect.succeed({ manifest, records } satisfies Store.Contents)
      )
    })

    return {
      create,
      resume,
      open: (manifest, onRecord = ignore) =>
        options.overwrite === true
          ? create(manifest)
          : Effect.flatMap(
            readAll(sql, runId, onRecord),
            (existing) => existing === undefined ? create(manifest) : opened(existing)
          ),
      read,
      stream: Effect.flatMap(
        R.open(sql, runId, R.PAGE_SIZE),
        (snapshot) => snapshot === undefined ? Effect.fail(missing(runId)) : Effect.succeed(snapshot)
      )
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
