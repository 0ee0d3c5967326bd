/**
 * Where a batch run's terminal results are kept, so that a run that dies part-way can resume without
 * paying again for what succeeded and without losing or duplicating a record. The embedded default is a
 * JSONL file (`JsonlStore`); the service is the seam for other stores.
 *
 * The contract every store keeps: `append` returns only once the line is written and flushed (and
 * fsynced when asked), and the run publishes a result only after its record was appended; concurrent
 * appends never interleave; after a failed append the store refuses every further append.
 *
 * @since 0.1.0
 */
import type { Effect } from "effect"
import { Context, Schema } from "effect"
import { Usage } from "@rein/core/Usage"

/**
 * The current artifact schema version. A file with a higher version is refused.
 *
 * @since 0.1.0
 */
export const SCHEMA_VERSION = 1

/**
 * What makes two runs interchangeable: any change forces re-execution.
 *
 * @since 0.1.0
 */
export const Identity = Schema.Struct({
  provider: Schema.String,
  model: Schema.String,
  promptVersion: Schema.String,
  parserVersion: Schema.String,
  applicationVersion: Schema.String,
  extra: Schema.Record({ key: Schema.String, value: Schema.String })
})

/**
 * @since 0.1.0
 */
export type Identity = typeof Identity.Type

/**
 * The first line of an artifact file.
 *
 * @since 0.1.0
 */
export const Manifest = Schema.Struct({
  kind: Schema.Literal("manifest"),
  schemaVersion: Schema.Number,
  identity: Identity,
  identityFingerprint: Schema.String,
  createdAt: Schema.String,
  packageVersion: Schema.String
})

/**
 * @since 0.1.0
 */
export type Manifest = typeof Manifest.Type

/**
 * One terminal item.
 *
 * @since 0.1.0
 */
export const ItemRecord = Schema.Struct({
  kind: Schema.Literal("item"),
  itemId: Schema.String,
  /** The item's position in the source (submission order). */
  index: Schema.Number,
  /** SHA-256 of the prompt, and of the whole input item (canonical JSON). */
  promptFingerprint: Schema.String,
  inputFingerprint: Schema.String,
  identityFingerprint: Schema.String,
  outcome: Schema.Literal("success", "failure"),
  /** `ok` for a success, else the error category (`rate_limited`, `batch_deadline_exceeded`, …). */
  category: Schema.String,
  /** Whether a resumed run may reuse this record (never for guardrail audit records or config failures). */
  reusable: Schema.Boolean,
  usage: Usage,
  cost: Schema.Union(Schema.Number, Schema.Literal("unknown")),
  attempts: Schema.Number,
  durationMillis: Schema.Number,
  /** The result (a success's text or parsed value); absent for audit-only runs. */
  result: Schema.optional(Schema.Unknown)
})

/**
 * @since 0.1.0
 */
export type ItemRecord = typeof ItemRecord.Type

/**
 * A store failure: format errors (malformed non-final line, future schema version, unknown file, missing
 * or empty file where one is required) and I/O failures. Nothing is truncated on a format error.
 *
 * @since 0.1.0
 */
export class ArtifactError extends Schema.TaggedError<ArtifactError>()("ArtifactError", {
  reason: Schema.Literal("format", "version", "missing", "io", "closed"),
  message: Schema.String,
  line: Schema.optional(Schema.Number)
}) {}

/**
 * An opened artifact: what was already there (for resume) and the append operation.
 *
 * @since 0.1.0
 */
export interface Opened {
  readonly manifest: Manifest
  /** Records read back from an existing file, oldest first (empty for a new file). */
  readonly existing: ReadonlyArray<ItemRecord>
  /** Writes one line and flushes it before returning. */
  readonly append: (record: ItemRecord) => Effect.Effect<void, ArtifactError>
}

/**
 * The artifact store service.
 *
 * - `create`: a new artifact (an existing non-empty file is an error unless `overwrite`);
 * - `resume`: read an existing artifact (it must exist and carry a manifest), drop an unterminated final
 *   line (truncating it), and append after it;
 * - `read`: read only, nothing truncated (an unterminated final line is ignored).
 *
 * @since 0.1.0
 */
export class ArtifactStore extends Context.Tag("@rein/batch/ArtifactStore")<ArtifactStore, {
  readonly create: (manifest: Manifest) => Effect.Effect<Opened, ArtifactError>
  readonly resume: (manifest: Manifest) => Effect.Effect<Opened, ArtifactError>
  readonly read: Effect.Effect<{ readonly manifest: Manifest; readonly records: ReadonlyArray<ItemRecord> }, ArtifactError>
}>() {}
