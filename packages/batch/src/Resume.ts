/**
 * Resume: which earlier records a run may give back instead of calling the provider again.
 *
 * - `none`: checkpoint only — every item runs and is recorded; nothing is reused;
 * - `reuse-successes`: a recorded success is given back;
 * - `reuse-all`: a recorded failure is given back too, when it is reusable.
 *
 * A record matches an item only when its item id, its input fingerprint and its identity fingerprint all
 * equal the item's: a changed input, prompt version, model, parser or application version forces the item
 * to run again. Among the matching records the policy accepts, the newest (last in the file) wins.
 *
 * Whether a record may ever be reused is decided when it is made (`makeRecord`), and stored with it:
 * guardrail audit records (`batch_deadline_exceeded`, `batch_aborted`, `batch_budget_exceeded`), records
 * whose artifact write failed (`artifact_error`) and configuration failures (`refused`: nothing was
 * called, and a fixed configuration must run it) are never reused. They record what happened to the run,
 * not an answer for the item, so they never hide an older reusable record either.
 *
 * @since 0.1.0
 */
import type { Scope } from "effect"
import { Chunk, Effect, Option, Schema, Stream } from "effect"
import type { ArtifactError, ItemRecord, Opened, Position } from "./ArtifactStore.js"
import { ArtifactStore, makeManifest } from "./ArtifactStore.js"
import { identity as identityFingerprint } from "./Fingerprint.js"
import type { Identity } from "./Identity.js"
import * as Kept from "./internal/kept.js"
import { describe } from "./internal/schema.js"

/**
 * The resume policy.
 *
 * @example
 * ```ts
 * import { Schema } from "effect"
 * import { Resume } from "@rein/batch"
 *
 * Schema.decodeUnknownSync(Resume.Policy)("reuse-successes") // "reuse-successes"
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const Policy = Schema.Literal("none", "reuse-successes", "reuse-all").annotations({
  identifier: "ResumePolicy",
  message: (issue) =>
    `Expected a resume policy ("none", "reuse-successes" or "reuse-all"), actual ${describe(issue.actual)}`
})

/**
 * @category models
 * @since 0.1.0
 */
export type Policy = typeof Policy.Type

/**
 * Categories whose records are never reused: the run's guardrail audit records, failed artifact writes,
 * and configuration failures.
 *
 * @example
 * ```ts
 * import { Resume } from "@rein/batch"
 *
 * Resume.NEVER_REUSED.has("batch_aborted") // true
 * ```
 * @category constants
 * @since 0.1.0
 */
export const NEVER_REUSED: ReadonlySet<string> = new Set([
  "batch_deadline_exceeded",
  "batch_aborted",
  "batch_budget_exceeded",
  "artifact_error",
  "refused"
])

/**
 * Whether a record of this outcome and category may be reused by a later run (under a policy that allows
 * it). A success always may (its category is `ok`).
 *
 * @example
 * ```ts
 * import { Resume } from "@rein/batch"
 *
 * Resume.isReusable("failure", "content_filtered") // true (under reuse-all)
 * Resume.isReusable("failure", "batch_deadline_exceeded") // false
 * ```
 * @category guards
 * @since 0.1.0
 */
export const isReusable = (outcome: ItemRecord["outcome"], category: string): boolean =>
  outcome === "success" || !NEVER_REUSED.has(category)

/**
 * What a record is made of; `kind` and `reusable` are filled in.
 *
 * @example
 * ```ts
 * import type { Resume } from "@rein/batch"
 *
 * declare const fields: Resume.RecordFields
 * const auditOnly: Resume.RecordFields = { ...fields, result: undefined, reusable: false }
 * ```
 * @category models
 * @since 0.1.0
 */
export type RecordFields = Omit<ItemRecord, "kind" | "reusable"> & {
  /** `false` marks a record non-reusable although its category would allow it; `true` cannot override. */
  readonly reusable?: boolean | undefined
}

/**
 * Makes an item record, deciding once, here, whether it may be reused.
 *
 * @example
 * ```ts
 * import { Resume } from "@rein/batch"
 *
 * const audit = Resume.makeRecord({
 *   itemId: "inv-7", index: 7, promptFingerprint: "sha256:…", inputFingerprint: "sha256:…",
 *   identityFingerprint: "sha256:…", outcome: "failure", category: "batch_aborted",
 *   usage: "unknown", cost: 0, attempts: 0, durationMillis: 0
 * })
 * audit.reusable // false
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const makeRecord = (fields: RecordFields): ItemRecord => {
  const { reusable, ...rest } = fields
  return { kind: "item", ...rest, reusable: reusable !== false && isReusable(fields.outcome, fields.category) }
}

/**
 * What a run may reuse: its policy, its identity and how many items have a record to reuse.
 *
 * @example
 * ```ts
 * import type { Resume } from "@rein/batch"
 *
 * declare const session: Resume.Session
 * const line = `${session.index.size} items reusable under ${session.index.policy}`
 * ```
 * @category models
 * @since 0.1.0
 */
export interface Reusable {
  readonly policy: Policy
  readonly identityFingerprint: string
  /** Items that have a record to reuse. */
  readonly size: number
}

/**
 * Looks up the record to reuse for an item, under one policy and one identity.
 *
 * @example
 * ```ts
 * import { Option } from "effect"
 * import { Resume } from "@rein/batch"
 *
 * declare const index: Resume.Index
 * const reused = Option.map(index.lookup("inv-1", "sha256:…"), (record) => record.result)
 * ```
 * @category models
 * @since 0.1.0
 */
export interface Index extends Reusable {
  /** The newest reusable record of this item id and input fingerprint, under this identity and policy. */
  readonly lookup: (itemId: string, inputFingerprint: string) => Option.Option<ItemRecord>
}

const accepts = (policy: Policy, record: ItemRecord): boolean =>
  record.reusable && (policy === "reuse-all" || (policy === "reuse-successes" && record.outcome === "success"))

// An index being built from records read oldest first: `add` keeps a record only when the policy would reuse
// it, and only the newest per item id and input fingerprint — in typed arrays (`Kept`): a kept record costs its
// position (or, without one, the record) and a hashed key, no string. `counting` keeps neither (`inspect`).
const builder = (
  options: { readonly policy: Policy; readonly identityFingerprint: string },
  counting = false
) => {
  const kept = Kept.make()
  const add = (record: ItemRecord, at?: Position): void => {
    if (record.identityFingerprint !== options.identityFingerprint || !accepts(options.policy, record)) return
    const slot = kept.slotOf(record.itemId, record.inputFingerprint)
    if (!counting) kept.put(slot, record, at)
  }
  // A kept record is checked to be this key's (another key of the same 64-bit hash replaces it).
  const checked = (record: ItemRecord, itemId: string, inputFingerprint: string): Option.Option<ItemRecord> =>
    record.itemId === itemId && record.inputFingerprint === inputFingerprint &&
      record.identityFingerprint === options.identityFingerprint && accepts(options.policy, record)
      ? Option.some(record)
      : Option.none()
  const found = (itemId: string, inputFingerprint: string): ItemRecord | Position | undefined => {
    const slot = kept.find(itemId, inputFingerprint)
    return slot === -1 ? undefined : kept.at(slot)
  }
  const isRecord = (held: ItemRecord | Position): held is ItemRecord => "itemId" in held
  // Only records are kept without a store that gives positions (`index`).
  const lookup = (itemId: string, inputFingerprint: string): Option.Option<ItemRecord> => {
    const held = found(itemId, inputFingerprint)
    return held !== undefined && isRecord(held) ? checked(held, itemId, inputFingerprint) : Option.none()
  }
  // A record read back is reused only when it is the one indexed; one that cannot be read back is not reused.
  const reading = (recordAt: Opened["recordAt"]) => (itemId: string, inputFingerprint: string) => {
    const held = found(itemId, inputFingerprint)
    if (held === undefined) return Effect.succeedNone
    if (isRecord(held)) return Effect.succeed(checked(held, itemId, inputFingerprint))
    if (recordAt === undefined) return Effect.succeedNone
    return Effect.matchEffect(recordAt(held), {
      onSuccess: (record) => Effect.succeed(checked(record, itemId, inputFingerprint)),
      onFailure: (e) =>
        Effect.as(Effect.logWarning(`item ${JSON.stringify(itemId)} not reused: ${e.message}`), Option.none())
    })
  }
  const done = (): Index => ({
    policy: options.policy,
    identityFingerprint: options.identityFingerprint,
    size: kept.size(),
    lookup
  })
  return { add: options.policy === "none" ? () => {} : add, done, reading }
}

/**
 * Builds the lookup from records read oldest first (`ArtifactStore.read`'s). `Resume.open` builds it while
 * the artifact is read, without the records in between.
 *
 * @example
 * ```ts
 * import { Effect, Option } from "effect"
 * import { ArtifactStore, Resume } from "@rein/batch"
 *
 * const wouldReuse = Effect.flatMap(ArtifactStore.ArtifactStore, (store) => store.read).pipe(
 *   Effect.map(({ manifest, records }) =>
 *     Resume.index(records, { policy: "reuse-successes", identityFingerprint: manifest.identityFingerprint })
 *   ),
 *   Effect.map((index) => Option.isSome(index.lookup("inv-1", "sha256:…")))
 * )
 * ```
 * @category utils
 * @since 0.1.0
 */
export const index = (
  records: Iterable<ItemRecord>,
  options: { readonly policy: Policy; readonly identityFingerprint: string }
): Index => {
  const building = builder(options)
  for (const record of records) building.add(record)
  return building.done()
}

/**
 * An artifact opened for a run: the open file, this run's identity fingerprint, and the lookup of records
 * to reuse.
 *
 * @example
 * ```ts
 * import { Effect, Option } from "effect"
 * import type { ArtifactStore, Resume } from "@rein/batch"
 *
 * declare const session: Resume.Session
 * declare const record: ArtifactStore.ItemRecord
 * const checkpoint = Effect.flatMap(
 *   session.lookup(record.itemId, record.inputFingerprint),
 *   (reused) => Option.isSome(reused) ? Effect.void : session.append(record)
 * )
 * ```
 * @category models
 * @since 0.1.0
 */
export interface Session {
  readonly policy: Policy
  readonly identity: Identity
  readonly identityFingerprint: string
  readonly opened: Opened
  readonly index: Reusable
  /**
   * The newest reusable record of this item id and input fingerprint, under this identity and policy. A store
   * that reads records back (`Opened.recordAt`) has it read back from the artifact; one that cannot be read
   * back as it was indexed (the file changed under the run) is not reused, with a warning logged.
   */
  readonly lookup: (itemId: string, inputFingerprint: string) => Effect.Effect<Option.Option<ItemRecord>>
  /** `opened.append`. */
  readonly append: (record: ItemRecord) => Effect.Effect<void, ArtifactError>
}

/**
 * Opens the store's artifact for a run under an identity and a policy: a new artifact when there is none
 * (or when the policy is `none` and the store overwrites), else the existing one is resumed — its
 * unterminated final line truncated — and indexed for reuse while it is read: the run holds the newest
 * record per item that the policy reuses (none under `none`), never the artifact's other records; from a
 * store that reads records back (the JSONL store) only its position and a hashed key, 40 to 80 bytes in
 * typed arrays, the record read back when its item comes up (a resumed run of a million reused successes
 * holds about 45 MB, none of it on the heap). A record whose line changed after it was indexed is not reused.
 *
 * @example
 * ```ts
 * import { NodeFileSystem } from "@effect/platform-node"
 * import { Effect } from "effect"
 * import { Identity, JsonlStore, Resume } from "@rein/batch"
 *
 * const identity = Identity.make({
 *   provider: "openai", model: "gpt-4.1-mini", promptVersion: "p4", parserVersion: "j2", applicationVersion: "a7"
 * })
 * const reusable = Effect.scoped(
 *   Effect.map(Resume.open({ identity, policy: "reuse-successes" }), (session) => session.index.size)
 * ).pipe(Effect.provide(JsonlStore.layer({ path: "run.jsonl" })), Effect.provide(NodeFileSystem.layer))
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const open = (options: {
  readonly identity: Identity
  readonly policy: Policy
}): Effect.Effect<Session, ArtifactError, ArtifactStore | Scope.Scope> =>
  Effect.gen(function*() {
    const store = yield* ArtifactStore
    const manifest = yield* makeManifest(options.identity)
    const fingerprint = manifest.identityFingerprint
    const building = builder({ policy: options.policy, identityFingerprint: fingerprint })
    const opened = yield* store.open(manifest, building.add)
    const { identityFingerprint, policy, size } = building.done()
    return {
      policy: options.policy,
      identity: options.identity,
      identityFingerprint: fingerprint,
      opened,
      index: { policy, identityFingerprint, size },
      lookup: building.reading(opened.recordAt),
      append: opened.append
    }
  })

/**
 * Reads an artifact without opening it for writing (nothing is truncated) and counts what a resumed run would
 * reuse under this identity and policy. The records are streamed and none is kept: an artifact of millions of
 * records is read in the memory of a chunk of it and a hashed key (12 bytes) per item it would reuse.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Identity, Resume } from "@rein/batch"
 *
 * declare const identity: Identity.Identity
 * const wouldReuse = Effect.map(Resume.inspect({ identity, policy: "reuse-all" }), (reusable) => reusable.size)
 * ```
 * @category utils
 * @since 0.1.0
 */
export const inspect = (options: {
  readonly identity: Identity
  readonly policy: Policy
}): Effect.Effect<Reusable, ArtifactError, ArtifactStore> =>
  Effect.flatMap(ArtifactStore, (store) =>
    Effect.scoped(Effect.flatMap(store.stream, ({ records }) => {
      const fingerprint = identityFingerprint(options.identity)
      const building = builder({ policy: options.policy, identityFingerprint: fingerprint }, true)
      const add = (chunk: Chunk.Chunk<ItemRecord>) =>
        Effect.sync(() => Chunk.forEach(chunk, (record) => building.add(record)))
      return Effect.as(Stream.runForEachChunk(records, add), building)
    })).pipe(Effect.map((building) => {
      const { identityFingerprint, policy, size } = building.done()
      return { identityFingerprint, policy, size }
    })))
