/**
 * One batch run shared by many worker processes through PostgreSQL: the run row, its items as a work queue,
 * and its artifact (the terminal records). `start` submits a run's items (or joins the run when it is
 * running); workers (`PgWorker`) lease and execute them; `status` reads the whole run from any machine.
 *
 * The database holds no prompt and no input: an item row has its id, submission index and fingerprints.
 * Every worker resolves an item's input from the same source (by index) and checks its fingerprint before
 * running it. An item whose input has no fingerprint (a non-finite number, a bigint, a cycle…) is submitted
 * with the input fingerprint `none`, and the worker that takes it refuses it alone before any call, recorded
 * as `Refused` (`invalid_request`, naming the item and where its input fails), as in a single-process run.
 *
 * Identity, fingerprints and resume policies are batch's own (`Identity`, `Fingerprint`, `Resume`) and mean
 * what they mean for the JSONL store: starting a run that ended begins a new session in which a finished
 * item runs again unless `Resume.index` over the run's records (under the session's identity and policy)
 * has a record to reuse for its id and input fingerprint; an item whose input changed runs again.
 *
 * Each session's caps are shared through rows named `rein-batch/<run>/<session start>` in `PgRunLimits`'
 * and `PgBudget`'s tables; they are kept an hour after the session ended (for operators), then `status` and
 * `start` delete them, unless a lease on them is still live.
 *
 * Sessions: `start` on an absent run creates it; on a `running` run it joins (adds items it lacks, changes
 * nothing else; a different identity is refused); on a `stopped` or `finished` run it starts a new session
 * (the stop cleared, the deadline counted from now, the resume policy applied).
 *
 * Order: a run's items keep the indexes of their first submission, and every later `start` must submit them
 * in that order (new items after them); a reordered submission is refused as `InvalidInput` naming the first
 * item out of order with both its indexes, and nothing of it is submitted. This is stricter than the JSONL
 * store, where an item's identity is its id and input fingerprint only and a reordered input resumes: there
 * one process reads one source, while here the index is how every worker finds the item in its own copy of
 * the source, so renumbering a run's items would let a worker still reading the old order take one item for
 * another (its id and fingerprint check fails the worker with `InputMismatch`). Reuse is unchanged: within a
 * run, a record is reused by id, input fingerprint and identity, as in the JSONL store.
 *
 * Queue choice: `graphile-worker` and `pg-boss` were considered. Both lease jobs with
 * `FOR UPDATE SKIP LOCKED` and expire stuck jobs, but neither fences the completion of a job by a lease
 * token (a worker whose job was re-assigned after its lease expired can still complete it — pg-boss
 * completes by job id, graphile-worker by job id and worker id while a reclaimed job keeps its id), neither
 * writes an application record in the completing statement, and both add a job table row, a notification
 * and a completion round trip per item beside our own record. A run here needs exactly one terminal record
 * per item, fenced by its lease, written in the statement that marks the item done; the queue is three
 * statements (`lease`, `heartbeat`, `finish`), so it is written here on `@effect/sql`.
 *
 * @since 0.1.0
 */
import { SqlClient } from "@effect/sql"
import { SqlError } from "@effect/sql/SqlError"
import type { Identity } from "@rein/batch"
import { ArtifactStore, Guardrails, Resume, RunLimits, Termination } from "@rein/batch"
import { Contract } from "@rein/core"
import { Duration, Effect, Either, Layer, Option, Predicate, Schema, Stream } from "effect"
import * as Items from "./internal/batchItems.js"
import * as Q from "./internal/batchStatements.js"
import { describe, isConflict, retryConflicts, sqlState } from "./internal/sqlError.js"
import * as PgBudget from "./PgBudget.js"
import * as PgRunLimits from "./PgRunLimits.js"

/**
 * Why a distributed run could not go on:
 *
 * - `NotFound`: no run of this id;
 * - `IdentityMismatch`: a worker or a joining `start` whose identity is not the running session's;
 * - `InputMismatch`: the input a worker resolved for an item is not the one submitted (`itemId` names it);
 * - `InvalidInput`: a blank run id, a run id or an item id too long (`MAX_RUN_ID_BYTES`, `MAX_ITEM_ID_BYTES`),
 *   or two items with one id (`itemId` names it, `index` and
 *   `firstIndex` are the two items' submission indexes; the database finds it, and nothing is submitted), or
 *   an item out of the run's order (`index` in this submission, `recordedIndex` on record; nothing is submitted);
 * - `Conflict`: `start` ran inside the caller's REPEATABLE READ or SERIALIZABLE transaction and its change lost to
 *   a concurrent one (SQLSTATE 40001, 40P01); it cannot be run again inside that transaction, whose snapshot is
 *   fixed: roll the transaction back and run it again whole;
 * - `Unavailable`: the database failed or could not be reached.
 *
 * @example
 * ```ts
 * import { PgBatchRun } from "@rein/postgres"
 *
 * const error = new PgBatchRun.PgBatchError({ reason: "NotFound", message: "no run \"nightly\"" })
 * ```
 * @category errors
 * @since 0.1.0
 */
export class PgBatchError extends Schema.TaggedError<PgBatchError>()("PgBatchError", {
  reason: Schema.Literal("NotFound", "IdentityMismatch", "InputMismatch", "InvalidInput", "Conflict", "Unavailable"),
  message: Schema.String,
  itemId: Schema.optional(Schema.String),
  /** The submission index of the item refused (for two items with one id: the second). */
  index: Schema.optional(Schema.Number),
  /** For two items with one id: the submission index of the first. */
  firstIndex: Schema.optional(Schema.Number),
  /** For an item submitted out of the run's order: its index on record. */
  recordedIndex: Schema.optional(Schema.Number)
}) {}

/** PostgreSQL's `undefined_table`: a statement on a table that does not exist. */
const UNDEFINED_TABLE = "42P01"

/** @internal */
export const unavailable = (e: SqlError) => new PgBatchError({ reason: "Unavailable", message: describe(e) })

/**
 * How a run is started: its id, what makes results interchangeable (`identity`), the resume policy of a
 * new session, its items (read once, in order), how an item becomes
 * a request, an id and a fingerprinted input (as `Batch` and `Checkpoint` options), and the contract and
 * guardrails (kept as the run's summary; the guardrails' `batchDeadline` is the run-wide deadline).
 *
 * @example
 * ```ts
 * import { Contract } from "@rein/core"
 * import { Guardrails, Identity } from "@rein/batch"
 * import type { PgBatchRun } from "@rein/postgres"
 *
 * declare const contract: Contract.Contract
 * const options: PgBatchRun.StartOptions<string> = {
 *   runId: "nightly-2025-01-01",
 *   identity: Identity.make({
 *     provider: "openai", model: "gpt-4.1-mini", promptVersion: "p4", parserVersion: "j2", applicationVersion: "a7"
 *   }),
 *   resume: "reuse-successes",
 *   items: ["Summarise A", "Summarise B"],
 *   contract,
 *   guardrails: Guardrails.make({ batchDeadline: "1 hour" })
 * }
 * ```
 * @category models
 * @since 0.1.0
 */
export interface StartOptions<I, E = never, R = never> extends Items.ItemOptions<I> {
  readonly runId: string
  readonly identity: Identity.Identity
  readonly resume: Resume.Policy
  /**
   * The items, read once, in order, as they are submitted: a chunk of them at a time is held in memory, never
   * all (a lazy iterable or a stream keeps a submission of millions of items in bounded memory). A start that
   * lost to a deadlock does not read them again (see `start`): an iterator or a stream that can be run once only
   * is fine.
   */
  readonly items: Iterable<I> | Stream.Stream<I, E, R>
  /** Where an item is in its source, for error messages (default: `item <its submission index>`). */
  readonly where?: ((item: I, index: number) => string) | undefined
  /** Items per submitting statement (default 2,000): what this process holds of the items at once. */
  readonly submitChunk?: number | undefined
  readonly contract?: Contract.Contract | undefined
  readonly guardrails?: Guardrails.Guardrails | undefined
  /** The run's hard budget, shared by all its workers (`PgBudget`; see `sharedLimits`). */
  readonly budget?: Budget | undefined
}

/**
 * What `start` did: `created` a run, `joined` a running one, or `restarted` one that ended (a new session);
 * how many items this `start` submitted and how many the resume policy put back to run.
 *
 * @example
 * ```ts
 * import type { PgBatchRun } from "@rein/postgres"
 *
 * const line = (s: PgBatchRun.Started) => `${s.session} ${s.runId}: ${s.items} items, ${s.reopened} to run again`
 * ```
 * @category models
 * @since 0.1.0
 */
export interface Started {
  readonly runId: string
  readonly session: "created" | "joined" | "restarted"
  readonly items: number
  readonly reopened: number
}

const CHUNK = 2_000

// The run's summary: the encoded contract, guardrails and budget (no prompt is in any).
const summaryOf = (options: StartOptions<unknown, unknown, unknown>): unknown => ({
  ...(options.budget === undefined ? {} : { budget: options.budget }),
  ...(options.guardrails === undefined ? {} : {
    guardrails: Either.getOrUndefined(Schema.encodeEither(Guardrails.Guardrails)(options.guardrails))
  }),
  ...(options.contract === undefined ? {} : {
    contract: Either.getOrUndefined(Schema.encodeEither(Contract.Contract)(options.contract))
  })
})

const deadlineOf = (options: StartOptions<unknown, unknown, unknown>): number | null =>
  options.guardrails?.batchDeadline === undefined ? null : Duration.toMillis(options.guardrails.batchDeadline)

const placeOf = <I, E, R>(options: StartOptions<I, E, R>, item: I, index: number) =>
  options.where === undefined ? `item ${index}` : options.where(item, index)

// The key of the item at `index`, with where it is; an item whose id is too long is refused. An item whose input
// has no fingerprint is submitted with the input fingerprint `none`: the worker that takes it refuses it alone,
// recorded as `Refused` (as in a single-process run), and the other items run. The id is resolved once
// (`itemId` may be the caller's function).
const submittedOf = <I, E, R>(
  options: StartOptions<I, E, R>,
  item: I,
  index: number
): Either.Either<Q.Submitted, PgBatchError> => {
  // A getter or a proxy that throws, a `null` item, a caller's function that throws: the start is refused,
  // naming the item, not ended by a defect.
  const computed = Either.try({
    try: () => ({
      found: Items.keyOf(options, item, index),
      place: options.where === undefined ? null : options.where(item, index)
    }),
    catch: (e) =>
      new PgBatchError({
        reason: "InvalidInput",
        message: `item ${index}: its id, request or fingerprints cannot be computed: ${
          e instanceof Error ? e.message : String(e)
        }`,
        index
      })
  })
  return Either.flatMap(computed, ({ found, place }) => {
    const key = Either.isRight(found) ? found.right : found.left.key
    return Either.map(idBounded(options, item, index, key.itemId), () => ({ ...key, place }))
  })
}

// An id longer than the database's keys hold (an index row is at most about 2.7 KB) is refused here, naming the
// item's place; it failed the start with the database's error, as `Unavailable`.
const idBounded = <I, E, R>(options: StartOptions<I, E, R>, item: I, index: number, itemId: string) => {
  // Typed a string; a JavaScript caller's (or an item's `id`) may be a number, an object or a symbol.
  if (typeof itemId !== "string") {
    return Either.left(
      new PgBatchError({
        reason: "InvalidInput",
        message: `the id of item ${index} (${placeOf(options, item, index)}) is a ${typeof itemId}, not a string`,
        index
      })
    )
  }
  const bytes = Buffer.byteLength(itemId, "utf8")
  return bytes <= MAX_ITEM_ID_BYTES ? Either.void : Either.left(
    new PgBatchError({
      reason: "InvalidInput",
      message: `the id of item ${index} (${placeOf(options, item, index)}) is ${bytes} bytes: an item id in a ` +
        `shared run holds at most ${MAX_ITEM_ID_BYTES}`,
      itemId: itemId.slice(0, 64),
      index
    })
  )
}

// A chunk had an id the submission already had (in it or before it): the error names the id and both items.
const duplicateIn = (sql: SqlClient.SqlClient, chunk: ReadonlyArray<Q.Submitted>) =>
  Effect.flatMap(Q.submittedAt(sql, chunk.map((k) => k.itemId)), (rows) => {
    const first = new Map(rows.map((row) => [row.item_id, row]))
    // The item refused is the one not recorded; of several, the earliest.
    const second = chunk.find((k) => first.get(k.itemId)?.idx !== k.index)!
    const earlier = first.get(second.itemId)!
    return Effect.fail(
      new PgBatchError({
        reason: "InvalidInput",
        message: `two items have the id ${JSON.stringify(second.itemId)}: ${
          earlier.place ?? `item ${earlier.idx}`
        } and ${second.place ?? `item ${second.index}`}`,
        itemId: second.itemId,
        index: second.index,
        firstIndex: earlier.idx
      })
    )
  })

// An item whose index is not the run's (reordered items, or a new item where the run has another): the error
// names it, its index in this submission and the run's.
const outOfOrder = (runId: string, moved: Q.Moved) => {
  const item = `item ${JSON.stringify(moved.item_id)}${moved.place === null ? "" : ` (${moved.place})`}`
  const why = moved.recorded_idx !== null
    ? `${item} is at index ${moved.idx} of this submission but at index ${moved.recorded_idx} of run ${
      JSON.stringify(runId)
    }`
    : `${item} is new at index ${moved.idx} of this submission, but run ${JSON.stringify(runId)} has item ${
      JSON.stringify(moved.holder)
    } there`
  return new PgBatchError({
    reason: "InvalidInput",
    message: `${why}: a run's items keep the order of their first submission (each worker finds an item in its ` +
      `source by its index); submit them in that order, new items after them`,
    itemId: moved.item_id,
    index: moved.idx,
    ...(moved.recorded_idx === null ? {} : { recordedIndex: moved.recorded_idx })
  })
}

const streamOf = <I, E, R>(items: Iterable<I> | Stream.Stream<I, E, R>, chunk: number): Stream.Stream<I, E, R> =>
  Predicate.hasProperty(items, Stream.StreamTypeId)
    ? items as Stream.Stream<I, E, R>
    // Not `Stream.fromIterable`: its chunks hold up to 4,096 items, more than one submitting chunk. (The
    // generator makes the `IterableIterator` `fromIteratorSucceed` asks for.)
    : Stream.suspend(() =>
      Stream.fromIteratorSucceed(
        (function*() {
          yield* items as Iterable<I>
        })(),
        chunk
      )
    )

/**
 * Reads the items once, in order, into the transaction's submission (`Q.openSubmission`), `submitChunk` at a
 * time (one statement each): what this process holds is one chunk, however many items there are. Two items with
 * one id are found by the submission's primary key, in the database. Nothing of the run is touched or locked.
 * Answers how many items were submitted.
 */
const stage = <I, E, R>(sql: SqlClient.SqlClient, options: StartOptions<I, E, R>) =>
  Effect.gen(function*() {
    yield* Q.openSubmission(sql)
    const size = Math.max(1, Math.floor(options.submitChunk ?? CHUNK))
    let index = 0
    yield* Stream.runForEachChunk(Stream.rechunk(streamOf(options.items, size), size), (items) =>
      Effect.gen(function*() {
        const chunk: Array<Q.Submitted> = []
        for (const item of items) chunk.push(yield* submittedOf(options, item, index++))
        if ((yield* Q.stageItems(sql, chunk)) < chunk.length) yield* duplicateIn(sql, chunk)
      }))
    return index
  })

const decodeRecord = Schema.decodeUnknownEither(ArtifactStore.ItemRecord)

/** Records read at a time when a new session applies its resume policy. */
const RECORDS_PAGE = 2_000

/**
 * The records of a page, decoded (a record that does not decode is skipped, never reused), and of them the
 * (id, input fingerprint) pairs batch's own `Resume.index` reuses under this policy and identity. A pair is
 * reusable when any record of it is: the newest only decides which record, not whether.
 */
const reusableIn = (rows: ReadonlyArray<Q.RecordRow>, policy: Resume.Policy, identityFingerprint: string) => {
  const records: Array<ArtifactStore.ItemRecord> = []
  for (const row of rows) {
    const decoded = decodeRecord(row.record)
    if (Either.isRight(decoded)) records.push(decoded.right)
  }
  const index = Resume.index(records, { policy, identityFingerprint })
  return records.filter((r) => Option.isSome(index.lookup(r.itemId, r.inputFingerprint)))
}

/**
 * A new session: the items whose records the policy does not reuse (under this identity, for this input) run
 * again. The records are read `RECORDS_PAGE` at a time and what they make reusable is kept in the database, so
 * the process holds one page, however many records the run has; one statement then puts the others back.
 */
const reopen = (sql: SqlClient.SqlClient, runId: string, policy: Resume.Policy, identityFingerprint: string) =>
  Effect.gen(function*() {
    yield* Q.openReusable(sql)
    let after = "0"
    while (policy !== "none") {
      const rows = yield* Q.recordsAfter(sql, runId, after, RECORDS_PAGE)
      const reusable = reusableIn(rows, policy, identityFingerprint)
      if (reusable.length > 0) yield* Q.addReusable(sql, reusable)
      if (rows.length < RECORDS_PAGE) break
      after = rows[rows.length - 1]!.at
    }
    return yield* Q.reopenUnreusable(sql, runId)
  })

// A running session under another identity refuses a joining start.
const identityRefused = (run: Q.RunRow | undefined, runId: string, identityFingerprint: string) =>
  run !== undefined && run.status === "running" && run.identity_fingerprint !== identityFingerprint
    ? Effect.fail(
      new PgBatchError({
        reason: "IdentityMismatch",
        message: `run ${
          JSON.stringify(runId)
        } is running under identity ${run.identity_fingerprint}, not ${identityFingerprint}`
      })
    )
    : Effect.void

/**
 * Everything a start changes in the run, from the submission alone (the items were read already): created or
 * locked (the run row orders the starts of one run), refused under another identity, the items added, the
 * session started or restarted.
 */
const applyStart = (
  sql: SqlClient.SqlClient,
  start: {
    readonly options: StartOptions<unknown, unknown, unknown>
    readonly manifest: ArtifactStore.Manifest
    readonly items: number
  }
) =>
  Effect.gen(function*() {
    const { items, manifest, options } = start
    const runId = options.runId
    const settings = summaryOf(options)
    const deadlineMillis = deadlineOf(options)
    const created = (yield* Q.insertRun(sql, { runId, manifest, settings, deadlineMillis })).length > 0
    const run = (yield* Q.lockRun(sql, runId))!
    if (!created) yield* identityRefused(run, runId, manifest.identityFingerprint)
    const moved = yield* Q.applySubmission(sql, runId)
    if (moved !== null) return yield* outOfOrder(runId, moved)
    // A new run's session starts once its items are submitted (its deadline does not count the submission).
    if (created) yield* Q.startedNow(sql, runId)
    if (run.status === "running") {
      return { runId, session: created ? "created" : "joined", items, reopened: 0 } as const
    }
    yield* Q.restartRun(sql, { runId, identityFingerprint: manifest.identityFingerprint, settings, deadlineMillis })
    const reopened = yield* reopen(sql, runId, options.resume, manifest.identityFingerprint)
    return { runId, session: "restarted", items, reopened } as const
  })

/**
 * The caller's transaction's isolation level when it fixes one snapshot for the whole transaction (REPEATABLE
 * READ, SERIALIZABLE); `undefined` for READ COMMITTED (each statement sees what was committed before it).
 */
const fixedSnapshot = (sql: SqlClient.SqlClient) =>
  Effect.map(Q.isolation(sql), (level) => level === "repeatable read" || level === "serializable" ? level : undefined)

const conflict = (e: SqlError, level: string) =>
  new PgBatchError({
    reason: "Conflict",
    message: `the start lost to a concurrent change (${describe(e)}) inside the caller's ${level.toUpperCase()} ` +
      "transaction, where it cannot run again (its snapshot is fixed): roll it back and run it again whole, or " +
      "start outside it; nothing of this start was submitted"
  })

/**
 * The longest run id `start` takes, in UTF-8 bytes (with an item id, and the session's names built from it, it is
 * a key of the database's indexes, whose rows hold at most about 2.7 KB).
 *
 * @example
 * ```ts
 * import { PgBatchRun } from "@rein/postgres"
 *
 * const fits = (runId: string) => Buffer.byteLength(runId, "utf8") <= PgBatchRun.MAX_RUN_ID_BYTES
 * ```
 * @category running
 * @since 0.1.0
 */
export const MAX_RUN_ID_BYTES = 256

/**
 * The longest item id `start` takes, in UTF-8 bytes: a longer one fails the start with `InvalidInput` naming the
 * item's place, and nothing is submitted.
 *
 * @example
 * ```ts
 * import { PgBatchRun } from "@rein/postgres"
 *
 * const fits = (itemId: string) => Buffer.byteLength(itemId, "utf8") <= PgBatchRun.MAX_ITEM_ID_BYTES
 * ```
 * @category running
 * @since 0.1.0
 */
export const MAX_ITEM_ID_BYTES = 1024

// A blank run id (a run nobody could name) or one longer than the database's keys hold.
const runIdRefused = (runId: string): Effect.Effect<void, PgBatchError> => {
  const bytes = Buffer.byteLength(runId, "utf8")
  const message = runId.trim() === ""
    ? "the run id is blank: a run id names the run its workers join"
    : bytes > MAX_RUN_ID_BYTES
    ? `the run id is ${bytes} bytes: a run id holds at most ${MAX_RUN_ID_BYTES}`
    : undefined
  return message === undefined ? Effect.void : Effect.fail(new PgBatchError({ reason: "InvalidInput", message }))
}

/**
 * Starts a run, joins it while it runs, or starts a new session of it after it ended (see the module doc).
 * The items are submitted in one transaction, so a worker never sees half a submission: they are read once,
 * a chunk at a time (the process holds one chunk, never all the items), into a temporary table, and then the
 * run is changed from that table; two items with one id (found by the database) fail it with `InvalidInput`
 * naming the id and both items, and nothing of it is submitted.
 *
 * Starts of one run at the same time are ordered by the run row: one creates the run and the others join it
 * (or are refused, as above); the run row is held only while the run is changed, not while the items are read.
 * A change that lost to a deadlock or a serialization failure (SQLSTATE 40P01, 40001) is rolled back to the
 * end of the reading (a savepoint) and runs again, up to four times, from the temporary table: the items are
 * never read twice, so a source that can be read once only (an iterator, a stream of an async iterable) is
 * submitted whole. A change that lost every time fails the start with `Unavailable`, and nothing of it is
 * submitted. Its own transaction runs at READ COMMITTED, whatever the session's default.
 *
 * Inside the caller's transaction (a `withTransaction` around it), the start is a savepoint of it, and the
 * caller's isolation level holds. At READ COMMITTED it works as above. At REPEATABLE READ or SERIALIZABLE the
 * transaction's snapshot is fixed, so a change that lost would lose again: it is not run again, and the start
 * fails at once with `Conflict` (the savepoint is rolled back, so nothing of it was submitted). The caller's
 * transaction must then be rolled back and run again whole, as after any 40001 (under SERIALIZABLE the caller's
 * own `COMMIT` may also fail with 40001, which only the caller can retry).
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { PgBatchRun } from "@rein/postgres"
 *
 * declare const options: PgBatchRun.StartOptions<string>
 * const started = PgBatchRun.start(options).pipe(
 *   Effect.tap((s) => Effect.log(`${s.session}: ${s.items} items, ${s.reopened} to run again`))
 * )
 * ```
 * @category running
 * @since 0.1.0
 */
export const start = <I, E = never, R = never>(
  options: StartOptions<I, E, R>
): Effect.Effect<Started, PgBatchError | E, SqlClient.SqlClient | R> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* runIdRefused(options.runId)
    const manifest = yield* ArtifactStore.makeManifest(options.identity)
    // The shared services' rows of every run's sessions that ended more than an hour ago, best-effort.
    yield* clean(sql, null)
    // A join under another identity is refused before the items are read (and again, under the run row's
    // lock, when the run is changed).
    yield* identityRefused(yield* Q.readRun(sql, options.runId), options.runId, manifest.identityFingerprint)
    const outer = yield* Effect.serviceOption(SqlClient.TransactionConnection)
    return yield* sql.withTransaction(Effect.gen(function*() {
      // Its own transaction runs at READ COMMITTED whatever the session's default (a lost change can then run
      // again in its savepoint); inside the caller's, the caller's level decides.
      const fixed = Option.isNone(outer) ? yield* Effect.as(Q.readCommitted(sql), undefined) : yield* fixedSnapshot(sql)
      const items = yield* stage(sql, options)
      const change = sql.withTransaction(
        applyStart(sql, { options: options as StartOptions<unknown, unknown, unknown>, manifest, items })
      )
      // Lost to a deadlock or a serialization failure, the change is rolled back to its savepoint (the
      // submission is kept) and runs again from the submission: the items are not read again. Not in a
      // snapshot fixed for the whole transaction: there it would lose again, every time.
      return yield* fixed === undefined ? retryConflicts(change) : Effect.catchIf(
        change,
        (e): e is SqlError => e instanceof SqlError && isConflict(e),
        (e) => Effect.fail(conflict(e, fixed))
      )
    }))
  }).pipe(
    // Only the database's own errors: the source's errors (`E`) pass as they are.
    Effect.catchIf((e): e is SqlError => e instanceof SqlError, (e) => Effect.fail(unavailable(e)))
  )

/**
 * A run as any machine sees it: its session, stop (first trigger wins, with its item id), deadline, items
 * by state and by outcome category, what the finished ones cost, and how many results the lease fence
 * dropped (a worker that lost its lease and finished anyway).
 *
 * @example
 * ```ts
 * import type { PgBatchRun } from "@rein/postgres"
 *
 * const line = (s: PgBatchRun.Status) => `${s.status}: ${s.items.done}/${s.items.total} done, $${s.cost}`
 * ```
 * @category models
 * @since 0.1.0
 */
export interface Status {
  readonly runId: string
  readonly status: "running" | "stopped" | "finished"
  readonly identityFingerprint: string
  readonly createdAt: string
  readonly startedAt: string
  readonly elapsedMillis: number
  readonly deadlineMillis: number | null
  readonly stop: Termination.Stop | null
  readonly stopItemId: string | null
  /** When the stop was recorded, on the database clock; a batch timeout's is when the deadline passed. */
  readonly stoppedAt: string | null
  readonly items: {
    readonly total: number
    readonly pending: number
    readonly leased: number
    readonly done: number
  }
  readonly byCategory: Readonly<Record<string, number>>
  /** What the finished items' records say they cost (items of unknown cost apart). */
  readonly cost: number
  readonly unknownCost: number
  readonly fencedOut: number
  readonly settings: unknown
}

const decodeStop = Schema.decodeUnknownOption(Termination.Termination)

/** The stop on record, decoded (`undefined` when there is none). @internal */
export const stopOf = (value: unknown): Termination.Stop | undefined =>
  Option.getOrUndefined(
    Option.filter(decodeStop(value), (t): t is Termination.Stop => t.kind !== "completed")
  )

/**
 * Reads a run's status. A session whose deadline passed on the database clock with items open and no worker
 * alive to record it is recorded here as stopped by the batch timeout, at the deadline (a worker joining
 * later gives its open items the stop's record); a session whose items are all done is recorded as finished.
 * It also deletes the shared services' rows (budget, soft-cap totals, rate buckets) of this run's sessions
 * that ended more than an hour ago and that no live lease holds (`start` does so for every run). The writes
 * are best-effort: with a role that may only read, the status is still read.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { PgBatchRun } from "@rein/postgres"
 *
 * const report = Effect.map(PgBatchRun.status("nightly"), (s) => `${s.items.done} of ${s.items.total}`)
 * ```
 * @category running
 * @since 0.1.0
 */
export const status = (runId: string): Effect.Effect<Status, PgBatchError, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    // Best-effort: a role that may only read still reads the status (what it sees is then unrecorded). In its
    // own transaction, a savepoint inside a caller's, so that a refused write does not abort the reads.
    yield* Effect.ignore(sql.withTransaction(Effect.zipRight(Q.stopAtDeadline(sql, runId), Q.finishRun(sql, runId))))
    // A database no run was started on has no Rein tables (only a start or a worker migrates): no such run.
    const run = yield* Effect.catchIf(
      Q.readRun(sql, runId),
      (e) => sqlState(e) === UNDEFINED_TABLE,
      () => Effect.succeed(undefined)
    )
    if (run === undefined) {
      return yield* new PgBatchError({ reason: "NotFound", message: `no run ${JSON.stringify(runId)}` })
    }
    // The shared services' rows of this run's sessions that ended more than an hour ago, best-effort.
    yield* clean(sql, runId)
    const rows = yield* Q.counts(sql, runId)
    const items = { total: 0, pending: 0, leased: 0, done: 0 }
    const byCategory: Record<string, number> = {}
    let cost = 0
    let unknownCost = 0
    for (const row of rows) {
      items.total += row.n
      if (row.state === "pending" || row.state === "leased" || row.state === "done") items[row.state] += row.n
      if (row.state === "done" && row.category !== null) {
        byCategory[row.category] = (byCategory[row.category] ?? 0) + row.n
      }
      cost += row.cost ?? 0
      unknownCost += row.unknown_cost
    }
    return {
      runId,
      status: run.status,
      identityFingerprint: run.identity_fingerprint,
      createdAt: run.created_at,
      startedAt: run.started_at,
      elapsedMillis: run.elapsed_millis,
      deadlineMillis: run.deadline_millis,
      stop: stopOf(run.stop) ?? null,
      stopItemId: run.stop_item_id,
      stoppedAt: run.stopped_at,
      items,
      byCategory,
      cost,
      unknownCost,
      fencedOut: run.fenced_out,
      settings: run.settings
    }
  }).pipe(Effect.catchTag("SqlError", (e) => Effect.fail(unavailable(e))))

/**
 * A run's hard budget (`PgBudget`'s caps): cost in dollars, tokens, calls; an absent cap is unlimited.
 *
 * @example
 * ```ts
 * import { Schema } from "effect"
 * import { PgBatchRun } from "@rein/postgres"
 *
 * const budget = Schema.decodeUnknownSync(PgBatchRun.Budget)({ cost: 25, calls: 10_000 })
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const Budget = Schema.Struct({
  cost: Schema.optional(
    Schema.Number.pipe(Schema.finite(), Schema.nonNegative(), Schema.lessThanOrEqualTo(Number.MAX_SAFE_INTEGER / 1e9))
  ),
  tokens: Schema.optional(Schema.NonNegativeInt),
  calls: Schema.optional(Schema.NonNegativeInt)
})

/**
 * @category models
 * @since 0.1.0
 */
export type Budget = typeof Budget.Type

/**
 * The caps a run's workers share, fixed when its session starts (`start`'s guardrails and budget): the soft
 * caps and the requests- and tokens-per-minute rates (shared through `PgRunLimits`), and the hard budget
 * (shared through `PgBudget`). `undefined`: no such cap.
 *
 * @example
 * ```ts
 * import type { PgBatchRun } from "@rein/postgres"
 *
 * const capped = (c: PgBatchRun.Caps) => c.maxTotalCost !== undefined || c.budget?.cost !== undefined
 * ```
 * @category models
 * @since 0.1.0
 */
export interface Caps {
  readonly maxTotalTokens: number | undefined
  readonly maxTotalCost: number | undefined
  readonly requestsPerMinute: number | undefined
  readonly tokensPerMinute: number | undefined
  readonly budget: Budget | undefined
}

const Settings = Schema.Struct({
  guardrails: Schema.optional(Guardrails.Guardrails),
  budget: Schema.optional(Budget)
})

const decodeSettings = Schema.decodeUnknownEither(Settings)

/** The caps of a run's settings (a run whose settings do not decode fails: never taken for no caps). @internal */
export const capsOf = (runId: string, settings: unknown): Either.Either<Caps, PgBatchError> =>
  Either.match(decodeSettings(settings), {
    // Caps that cannot be read are never taken for no caps.
    onLeft: () =>
      Either.left(
        new PgBatchError({
          reason: "Unavailable",
          message: `run ${JSON.stringify(runId)} has settings that do not decode`
        })
      ),
    onRight: ({ budget, guardrails: g }) =>
      Either.right({
        maxTotalTokens: g?.maxTotalTokens,
        maxTotalCost: g?.maxTotalCost,
        requestsPerMinute: g?.requestsPerMinute,
        tokensPerMinute: g?.tokensPerMinute,
        budget: budget === undefined || Object.values(budget).every((v) => v === undefined) ? undefined : budget
      })
  })

const readOrFail = (sql: SqlClient.SqlClient, runId: string) =>
  Effect.flatMap(
    Effect.catchTag(Q.readRun(sql, runId), "SqlError", (e) => Effect.fail(unavailable(e))),
    (run) =>
      run === undefined
        ? Effect.fail(new PgBatchError({ reason: "NotFound", message: `no run ${JSON.stringify(runId)}` }))
        : Effect.succeed(run)
  )

/**
 * The caps of a run's current session, as recorded when it started.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { PgBatchRun } from "@rein/postgres"
 *
 * const cost = Effect.map(PgBatchRun.caps("nightly"), (c) => c.maxTotalCost ?? "no cost cap")
 * ```
 * @category running
 * @since 0.1.0
 */
export const caps = (runId: string): Effect.Effect<Caps, PgBatchError, SqlClient.SqlClient> =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => Effect.flatMap(readOrFail(sql, runId), (run) => capsOf(runId, run.settings))
  )

/**
 * The run's shared limits for one of its workers: batch's `RunLimits` on `PgRunLimits` with the soft caps
 * and rates on record for the run's current session (the other limits, such as per-endpoint capacity and
 * the startup ramp, are this worker's `guardrails`; a run with no soft cap and no rate has nothing to
 * share, and gets this worker's in-memory limits, without a round trip per attempt), and, when the run has
 * a budget, core's `SharedBudget` on `PgBudget` with its caps. Both are named after the run's session, so every worker of a session shares
 * one set of totals, rate buckets and one budget, and a new session starts from zero. Provide it to
 * `PgWorker.run` (the budget must be around the worker's calls, so provide it outside `Rein`'s layer or
 * merged with it). Fails with `NotFound` for no such run.
 *
 * @example
 * ```ts
 * import { PgClient } from "@effect/sql-pg"
 * import { Effect, Layer, Redacted } from "effect"
 * import { PgBatchRun, PgWorker } from "@rein/postgres"
 *
 * declare const options: PgWorker.Options<string>
 * const Db = PgClient.layer({ url: Redacted.make("postgres://localhost/rein") })
 * const worker = PgWorker.run(options).pipe(
 *   Effect.provide(PgBatchRun.sharedLimits("nightly", options.guardrails)),
 *   Effect.provide(Db)
 * )
 * ```
 * @category layers
 * @since 0.1.0
 */
export const sharedLimits = (
  runId: string,
  guardrails: Guardrails.Guardrails = Guardrails.make()
): Layer.Layer<RunLimits.RunLimits, PgBatchError, SqlClient.SqlClient> =>
  Layer.unwrapEffect(Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const run = yield* readOrFail(sql, runId)
    const c = yield* capsOf(runId, run.settings)
    const name = Q.sessionName(runId, run.started_at)
    const failed = (e: PgRunLimits.PgRunLimitsError | PgBudget.PgBudgetError) =>
      new PgBatchError({ reason: "Unavailable", message: `run ${JSON.stringify(runId)}: ${e.message}` })
    const config: RunLimits.Config = {
      ...RunLimits.configOf(guardrails),
      maxTotalTokens: c.maxTotalTokens,
      maxTotalCost: c.maxTotalCost,
      requestsPerMinute: c.requestsPerMinute,
      tokensPerMinute: c.tokensPerMinute
    }
    // With no soft cap and no rate there are no totals to share: no round trip per attempt for nothing.
    const shares = [c.maxTotalTokens, c.maxTotalCost, c.requestsPerMinute, c.tokensPerMinute].some((v) =>
      v !== undefined
    )
    const limits = shares
      ? PgRunLimits.layer(config, { name })
      : Layer.effect(RunLimits.RunLimits, RunLimits.memory(config))
    // A layer that provides more than it says (the budget, when there is one) is still this layer's type.
    const budget = c.budget === undefined ? Layer.empty : PgBudget.layer({ name, ...c.budget })
    return Layer.mapError(Layer.merge(limits, budget), failed)
  }))

// Deletes the rows of ended sessions nothing uses any more (`Q.cleanSessions`: of one run, or of every run
// for `null`), best-effort.
const clean = (sql: SqlClient.SqlClient, runId: string | null): Effect.Effect<void> =>
  Q.cleanSessions(sql, runId).pipe(
    Effect.catchAll((e) => Effect.logWarning(`ended sessions' rows not deleted: ${e.message}`)),
    Effect.asVoid
  )
