/**
 * Where a batch run's terminal results are kept, so that a run that dies part-way can resume without
 * paying again for what succeeded and without losing or duplicating a record. The embedded default is a
 * JSONL file (`JsonlStore`); the service is the seam for other stores.
 *
 * The contract every store keeps: `append` returns only once the record is written and flushed (and
 * fsynced when asked), and the run publishes a result only after its record was appended; concurrent
 * appends never interleave; after a failed append the store refuses every further append (`closed`), and
 * the run ends with `artifact_error`. Reading never repairs: a store truncates only an unterminated final
 * record, only when opened for writing, and never when anything else about the artifact is wrong.
 *
 * @since 0.1.0
 */
import type { Scope, Stream } from "effect"
import { Clock, Context, Effect, Schema } from "effect"
import { identity as identityFingerprint } from "./Fingerprint.js"
import { Identity } from "./Identity.js"
import { NonNegativeInt, NonNegativeNumber as NonNegative, PositiveInt } from "./internal/schema.js"

export {
  /**
   * The identity of a run (re-exported from `Identity`).
   *
   * @category models
   * @since 0.1.0
   */
  Identity
} from "./Identity.js"

/**
 * The current artifact schema version. A file with a higher version is refused (`version`).
 *
 * @example
 * ```ts
 * import { ArtifactStore } from "@rein/batch"
 *
 * ArtifactStore.SCHEMA_VERSION // 1
 * ```
 * @category constants
 * @since 0.1.0
 */
export const SCHEMA_VERSION = 1

/**
 * The version of `@rein/batch` written into new manifests.
 *
 * @example
 * ```ts
 * import { ArtifactStore } from "@rein/batch"
 *
 * ArtifactStore.PACKAGE_VERSION // "0.1.0"
 * ```
 * @category constants
 * @since 0.1.0
 */
export const PACKAGE_VERSION = "0.1.0"

/**
 * The first line of an artifact file: what the file is, and the identity of the run that created it.
 *
 * @example
 * ```ts
 * import { ArtifactStore } from "@rein/batch"
 *
 * const line: typeof ArtifactStore.Manifest.Encoded = {
 *   kind: "manifest", schemaVersion: 1,
 *   identity: { provider: "openai", model: "gpt-4.1-mini", promptVersion: "p4", parserVersion: "j2", applicationVersion: "a7", extra: {} },
 *   identityFingerprint: "sha256:…", createdAt: "2025-01-01T00:00:00.000Z", packageVersion: "0.1.0"
 * }
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const Manifest = Schema.Struct({
  kind: Schema.Literal("manifest"),
  schemaVersion: PositiveInt,
  identity: Identity,
  identityFingerprint: Schema.String,
  /** Wall-clock creation time, ISO 8601. */
  createdAt: Schema.String,
  packageVersion: Schema.String
})

/**
 * @category models
 * @since 0.1.0
 */
export type Manifest = typeof Manifest.Type

/**
 * The manifest a new artifact of this identity gets: the current schema version, the identity and its
 * fingerprint, the wall-clock time from Effect's `Clock` (so `TestClock` controls it), the package version.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { ArtifactStore, Identity } from "@rein/batch"
 *
 * const manifest = ArtifactStore.makeManifest(Identity.make({
 *   provider: "openai", model: "gpt-4.1-mini", promptVersion: "p4", parserVersion: "j2", applicationVersion: "a7"
 * }))
 * // Effect<Manifest>
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const makeManifest = (identity: Identity): Effect.Effect<Manifest> =>
  Effect.map(Clock.currentTimeMillis, (millis) => ({
    kind: "manifest" as const,
    schemaVersion: SCHEMA_VERSION,
    identity,
    identityFingerprint: identityFingerprint(identity),
    createdAt: new Date(millis).toISOString(),
    packageVersion: PACKAGE_VERSION
  }))

// Usage as a record stores it: token counts are finite and ≥ 0 (a line saying `1e400` or `-5` is malformed).
const RecordedUsage = Schema.Union(
  Schema.Struct({ inputTokens: NonNegative, outputTokens: NonNegative }),
  Schema.Literal("unknown")
)

/**
 * One terminal item. It holds fingerprints, never the prompt or the input; `result` is the output the
 * caller chose to keep (left out for audit-only runs) and `error` the encoded terminal error, which never
 * contains raw provider text.
 *
 * @example
 * ```ts
 * import { ArtifactStore } from "@rein/batch"
 *
 * const record: ArtifactStore.ItemRecord = {
 *   kind: "item", itemId: "inv-1", index: 0,
 *   promptFingerprint: "sha256:…", inputFingerprint: "sha256:…", identityFingerprint: "sha256:…",
 *   outcome: "success", category: "ok", reusable: true,
 *   usage: { inputTokens: 900, outputTokens: 120 }, cost: 0.00055, attempts: 1, endpoint: "openai/mini", durationMillis: 840,
 *   result: { total: 118.5 }
 * }
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const ItemRecord = Schema.Struct({
  kind: Schema.Literal("item"),
  itemId: Schema.String,
  /** The item's position in the source (submission order). */
  index: NonNegativeInt,
  /** SHA-256 of the prompt, and of the whole input item (canonical JSON). */
  promptFingerprint: Schema.String,
  inputFingerprint: Schema.String,
  identityFingerprint: Schema.String,
  outcome: Schema.Literal("success", "failure"),
  /** `ok` for a success, else the error category (`rate_limited`, `batch_deadline_exceeded`, …). */
  category: Schema.String,
  /** Whether a resumed run may reuse this record (never for guardrail audit records or config failures). */
  reusable: Schema.Boolean,
  usage: RecordedUsage,
  cost: Schema.Union(NonNegative, Schema.Literal("unknown")),
  attempts: NonNegativeInt,
  /** The endpoint that answered (a success's); absent in records written before it was kept. */
  endpoint: Schema.optional(Schema.String),
  durationMillis: NonNegative,
  /** The result (a success's text or parsed value); absent for audit-only runs. */
  result: Schema.optional(Schema.Unknown),
  /** The encoded terminal error of a failure (so that `reuse-all` can give it back); no raw provider text. */
  error: Schema.optional(Schema.Unknown),
  /**
   * The request id of the item's outcome (`Outcome.RequestId`): its journal record's id when the run was
   * journaled, or the id its request gave. Absent when there was none, for collateral failures, and in records
   * written before it was kept. Not part of any fingerprint: a resumed run reuses a record with or without it.
   */
  requestId: Schema.optional(Schema.String)
})

/**
 * @category models
 * @since 0.1.0
 */
export type ItemRecord = typeof ItemRecord.Type

/**
 * Why a store failed.
 *
 * - `format`: not a Rein artifact (no manifest first line), a malformed complete line, or a line longer than
 *   16 MiB (`Journal.MAX_LINE_BYTES`), complete or not (refused once its bytes pass the bound);
 * - `version`: written by a newer schema version;
 * - `missing`: no file, or no manifest in it, where one is required;
 * - `exists`: `create` found a non-empty file and `overwrite` is off;
 * - `encode`: a record has no JSON form (its `result` holds a bigint or a cycle), or its line would be longer
 *   than 16 MiB;
 * - `io`: the file system failed;
 * - `closed`: an earlier append failed (or the artifact was closed), so no further append is accepted.
 *
 * @example
 * ```ts
 * import { ArtifactStore } from "@rein/batch"
 *
 * const repairable = (reason: ArtifactStore.ArtifactErrorReason) => reason === "io" || reason === "closed"
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const ArtifactErrorReason = Schema.Literal("format", "version", "missing", "exists", "encode", "io", "closed")

/**
 * @category models
 * @since 0.1.0
 */
export type ArtifactErrorReason = typeof ArtifactErrorReason.Type

/**
 * A store failure. `line` (1-based) names the offending line of a format or version error. Nothing is
 * truncated on any of these errors.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { ArtifactStore } from "@rein/batch"
 *
 * declare const read: Effect.Effect<void, ArtifactStore.ArtifactError>
 * const explained = read.pipe(
 *   Effect.catchTag("ArtifactError", (e) => Effect.logError(`${e.reason} at line ${e.line ?? "-"}: ${e.message}`))
 * )
 * ```
 * @category errors
 * @since 0.1.0
 */
export class ArtifactError extends Schema.TaggedError<ArtifactError>()("ArtifactError", {
  reason: ArtifactErrorReason,
  message: Schema.String,
  line: Schema.optional(Schema.Number)
}) {}

/**
 * What opening an existing artifact does with the records it holds: each is handed over as it is read,
 * oldest first, and the store keeps none of them, so that opening an artifact of millions of records holds
 * only what the receiver keeps (`Resume.open` keeps one reusable record per item).
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { ArtifactStore } from "@rein/batch"
 *
 * let failures = 0
 * const onRecord: ArtifactStore.OnRecord = (record) => {
 *   if (record.outcome === "failure") failures += 1
 * }
 * const resumed = Effect.flatMap(ArtifactStore.ArtifactStore, (store) => store.resume(onRecord))
 * ```
 * @category models
 * @since 0.1.0
 */
export type OnRecord = (record: ItemRecord, at?: Position) => void

/**
 * Where a store that can read a record back (`Opened.recordAt`) has it, as it hands the record to an
 * `OnRecord`: in the JSONL store, the byte offset of the record's line and the line's length (without its
 * newline), and a 32-bit hash of its bytes (`digest`): a record read back from bytes that no longer hash to it
 * changed after it was handed over, and is not given back. The JSONL store works the hash out only when it is
 * read, during the `OnRecord` call (afterwards it is `undefined`), so a receiver pays it only for the records
 * it keeps. A receiver that keeps the position instead of the record holds a few bytes per record.
 *
 * @example
 * ```ts
 * import type { ArtifactStore } from "@rein/batch"
 *
 * const positions: Array<number> = []
 * const onRecord: ArtifactStore.OnRecord = (_record, at) => {
 *   if (at !== undefined) positions.push(at.offset)
 * }
 * ```
 * @category models
 * @since 0.1.0
 */
export interface Position {
  readonly offset: number
  readonly length: number
  /** A hash of the bytes the store read there: reading back other bytes fails (`format`). */
  readonly digest?: number | undefined
  /**
   * The line was exactly a record as the store writes it (its fields checked at open): read back as the same
   * bytes (`digest`), it is taken as parsed, not checked again.
   */
  readonly exact?: boolean | undefined
}

/**
 * An artifact opened for writing and the append operation. It lives as long as the `Scope` it was opened
 * in; closing the scope closes the file. (The records it already held were handed to the `OnRecord` it
 * was opened with.)
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { ArtifactStore } from "@rein/batch"
 *
 * declare const opened: ArtifactStore.Opened
 * declare const record: ArtifactStore.ItemRecord
 * const publish = (result: string) => Effect.zipRight(opened.append(record), Effect.log(result))
 * ```
 * @category models
 * @since 0.1.0
 */
export interface Opened {
  /** The file's manifest (for a resumed file, the one it was created with). */
  readonly manifest: Manifest
  /** Bytes of an unterminated final line that opening dropped (0 when the file ended cleanly). */
  readonly truncatedBytes: number
  /**
   * Writes one record and returns once it is written and flushed (and fsynced when the store was asked
   * to). Concurrent appends never interleave. After any failure every later append fails with `closed`.
   */
  readonly append: (record: ItemRecord) => Effect.Effect<void, ArtifactError>
  /**
   * Reads back the record the store handed to the `OnRecord` with this position, while the artifact is open
   * (a store that gives no positions has none). Fails with `format` when the bytes there are no longer that
   * record's line, or `io`.
   */
  readonly recordAt?: ((at: Position) => Effect.Effect<ItemRecord, ArtifactError>) | undefined
}

/**
 * What `read` gives back: the manifest and every complete record, oldest first (all of them in memory at
 * once: `stream` reads them in bounded memory).
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { ArtifactStore } from "@rein/batch"
 *
 * const successes = Effect.flatMap(ArtifactStore.ArtifactStore, (store) => store.read).pipe(
 *   Effect.map((contents) => contents.records.filter((r) => r.outcome === "success").length)
 * )
 * ```
 * @category models
 * @since 0.1.0
 */
export interface Contents {
  readonly manifest: Manifest
  readonly records: ReadonlyArray<ItemRecord>
}

/**
 * What `stream` gives back: the manifest, and the complete records, oldest first, as a stream read in
 * bounded memory (a chunk of the file, a page of rows) however many records the artifact holds. Reading
 * them fails with `format` (naming the line, as `read` does) or `io`; a store that holds a connection for
 * them (PostgreSQL's) fails with `closed` once the scope that opened the artifact closed.
 *
 * @example
 * ```ts
 * import { Stream } from "effect"
 * import type { ArtifactStore } from "@rein/batch"
 *
 * declare const streamed: ArtifactStore.Streamed
 * const failures = Stream.runCount(Stream.filter(streamed.records, (r) => r.outcome === "failure"))
 * ```
 * @category models
 * @since 0.1.0
 */
export interface Streamed {
  readonly manifest: Manifest
  readonly records: Stream.Stream<ItemRecord, ArtifactError>
}

/**
 * The artifact store service: where a run's manifest and item records live (the embedded default is a
 * JSONL file, see `JsonlStore`).
 *
 * @example
 * ```ts
 * import { Effect, Stream } from "effect"
 * import type { ArtifactStore } from "@rein/batch"
 *
 * const records = (store: ArtifactStore.Service) =>
 *   Effect.scoped(Effect.flatMap(store.stream, (streamed) => Stream.runCount(streamed.records)))
 * ```
 * @category models
 * @since 0.1.0
 */
export interface Service {
  /** Creates a new artifact with this manifest (fails with `exists` when there is one). */
  readonly create: (manifest: Manifest) => Effect.Effect<Opened, ArtifactError, Scope.Scope>
  /**
   * Opens the existing artifact for appending (its manifest as written), handing each record it holds to
   * `onRecord` (oldest first) as it is read.
   */
  readonly resume: (onRecord?: OnRecord) => Effect.Effect<Opened, ArtifactError, Scope.Scope>
  /**
   * Opens the existing artifact for appending (its records handed to `onRecord`), or creates one with this
   * manifest when there is none.
   */
  readonly open: (manifest: Manifest, onRecord?: OnRecord) => Effect.Effect<Opened, ArtifactError, Scope.Scope>
  /** Reads the manifest and every record, all held at once. */
  readonly read: Effect.Effect<Contents, ArtifactError>
  /** Opens the artifact for reading in bounded memory for the scope (`missing` when there is none). */
  readonly stream: Effect.Effect<Streamed, ArtifactError, Scope.Scope>
}

/**
 * The artifact store service.
 *
 * - `create`: a new artifact with this manifest (a non-empty file is `exists` unless the store
 *   overwrites);
 * - `resume`: an existing artifact (it must exist and carry a manifest), every record read and handed to
 *   the `OnRecord` before anything is truncated, its unterminated final line truncated, appends after it;
 * - `open`: `resume` when the artifact exists, else `create` — the same command for the first run and
 *   every resumed one;
 * - `read`: read only, nothing truncated (an unterminated final line is ignored), every record at once;
 * - `stream`: as `read`, the records as a stream in bounded memory.
 *
 * @example
 * ```ts
 * import { Effect, Stream } from "effect"
 * import { ArtifactStore } from "@rein/batch"
 *
 * const count = Effect.flatMap(ArtifactStore.ArtifactStore, (store) =>
 *   Effect.scoped(Effect.flatMap(store.stream, ({ records }) => Stream.runCount(records))))
 * ```
 * @category tags
 * @since 0.1.0
 */
export class ArtifactStore extends Context.Tag("@rein/batch/ArtifactStore")<ArtifactStore, Service>() {}
