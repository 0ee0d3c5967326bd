/**
 * A worker of a distributed batch run (`PgBatchRun`): it leases items from the run's queue, resolves each
 * item's input from the source by its submission index (checking its fingerprint against the one
 * submitted), runs them with batch's own engine (`Batch.drain`: the contract, the item deadline, the
 * gate, abort modes, events, the checkpoint records of `Checkpoint`) and writes each terminal record fenced
 * by its lease. Many workers, on one machine or many, run one run together.
 *
 * The queue: a worker leases up to `leaseBatch` items per round trip (`SELECT … FOR UPDATE SKIP LOCKED`,
 * lowest index first), each lease with a fencing token and an expiry on the database clock; a heartbeat
 * every `heartbeatMillis` extends its leases; a lease that expired (its worker died or stalled past
 * `leaseMillis`) is taken by the next worker that asks, with a new token. A terminal record is written by
 * one statement that marks the item done and appends the record only while the writer's token is still
 * the item's (`UPDATE … WHERE lease_token = $t`): a worker whose lease was taken over cannot write, its
 * result is dropped and counted (`fencedOut`). Records are group-committed in the background: an item
 * leaves its concurrency slot when its record is handed over, not when it commits (one database round trip
 * per item would otherwise be added to every item's time in the slot); the worker waits for every record
 * before it sweeps or leaves, and a failed write stops it. So a result published by a worker is final once
 * its record committed (`onRecorded`); the run's results are the records in the database. So every item gets exactly one terminal record, and a call is
 * made twice only for an item whose worker lost its lease while the call was in flight.
 *
 * Budget: the token and cost caps are the shared hard budget (`PgBudget`, core's `SharedBudget`, provided
 * with the worker's `Rein`). When the run has a budget on record (`PgBatchRun.start`'s `budget`, shared by
 * `PgBatchRun.sharedLimits`) and it can admit no more (an item ended `BudgetExhausted`, not `unavailable`, and
 * the whole budget, read in the database then, could grant no reservation that large anywhere, counting the
 * units other workers lease and have not used, nor more than the request's own budget had left), the run stops
 * with `budget_exceeded` naming the resource, and its other items get `batch_budget_exceeded` without a call,
 * as a single-process run gives them when a soft cap is reached. A refusal while another worker's slice could
 * still admit the item stops nothing: the worker reads again for up to a second (the holder reports what it
 * used, or gives back what it does not need, within a heartbeat; the wait ends once the units are back in the
 * pool), then that item stays `budget_exhausted` and a later refusal stops the run. It
 * settles each attempt in-process against its slice; it is not in the terminal write's transaction and need
 * not be: the slice's exposure, reported at each heartbeat, already counts every reservation in flight, and a
 * dead worker's lease is reclaimed with that exposure charged as spent. A worker that dies after the provider answered and before its record committed has its item run
 * again by another worker and its call charged by the reclaim: both calls are paid for, none is lost from
 * the accounting, and spent never exceeds the cap.
 *
 * Run-wide guardrails: the batch deadline counts from the session's start on the database clock (each
 * worker runs with the time left, and the heartbeat checks it too); a stop (fail-fast, a batch timeout, a
 * soft cap, the shared hard budget exhausted: see Budget) is recorded once on the run row, the first trigger winning with its item id, and every worker
 * learns it at its next heartbeat: it then admits nothing more, and its calls in flight drain or are
 * cancelled per its own `abortMode`. The stop travels through batch's `RunLimits` seam: this module wraps
 * the worker's limits with a stop recorded on the run row. Those limits are the `RunLimits` in the context
 * when there is one — `PgRunLimits`, so that every worker of the run shares its requests- and
 * tokens-per-minute buckets, its cooldowns and its soft caps (`maxTotalTokens`, `maxTotalCost`) — and else
 * in-memory limits made from the guardrails (rate limits and soft caps then count per worker). An artifact failure stops only the worker that had it (its leases
 * go back to the queue). After a stop, the worker gives every item not run (pending, its own, or held by
 * an expired lease) the stop's record, without a call, as a single-process run does for the items it
 * accepted but never started. A worker that fails or is interrupted (Ctrl-C) gives back the leases it holds as
 * it leaves (its calls ended), so other workers take those items at once; a killed one's expire. A source
 * that fails (an item it cannot give, or not the one submitted) or a lease that fails ends the worker's
 * intake: the items it had started run to their end and are recorded (their calls were made: another worker
 * running them again would pay twice), then the worker fails with that error.
 *
 * @since 0.1.0
 */
import { SqlClient } from "@effect/sql"
import type { SqlError } from "@effect/sql/SqlError"
import type { Events, Identity, Stats, Termination } from "@rein/batch"
import { ArtifactStore, Batch, Checkpoint, Fingerprint, Guardrails, Result, Resume, RunLimits } from "@rein/batch"
import type { SourceError } from "@rein/batch/Source"
import type { Contract, Outcome, Rein } from "@rein/core"
import { Input } from "@rein/core"
import type { Scope } from "effect"
import { Chunk, Clock, Duration, Effect, Either, Exit, Fiber, Option, Random, Schema, Stream, Struct } from "effect"
import { hostname } from "node:os"
import * as Items from "./internal/batchItems.js"
import * as Q from "./internal/batchStatements.js"
import type * as Budget from "./internal/budgetService.js"
import { SharedBudget } from "./internal/budgetService.js"
import * as BudgetStop from "./internal/budgetStop.js"
import * as Fence from "./internal/fence.js"
import * as Grantable from "./internal/grantable.js"
import * as IdleWait from "./internal/idleWait.js"
import * as LeaseAhead from "./internal/leaseAhead.js"
import { Millis } from "./internal/optionSchemas.js"
import { describe, retryConflicts } from "./internal/sqlError.js"
import { capsOf, PgBatchError, stopOf, unavailable } from "./PgBatchRun.js"

/**
 * How a worker runs: the run, the source of inputs by submission index, the identity (it must be the
 * running session's), the contract and guardrails each item runs under here (`concurrency`, `abortMode`,
 * `abortOn`, the item deadline, rate limits; the batch deadline is the run's), how an item becomes a
 * request, id and input (as `start` was told), what of a success is kept, and the lease timing.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Contract } from "@rein/core"
 * import { Guardrails, Identity } from "@rein/batch"
 * import type { PgWorker } from "@rein/postgres"
 *
 * declare const contract: Contract.Contract
 * declare const identity: Identity.Identity
 * const prompts = ["Summarise A", "Summarise B"]
 * const options: PgWorker.Options<string> = {
 *   runId: "nightly",
 *   item: (index) => Effect.succeed(prompts[index]!),
 *   identity,
 *   contract,
 *   guardrails: Guardrails.make({ concurrency: 16, abortOn: ["authentication"] })
 * }
 * ```
 * @category models
 * @since 0.1.0
 */
export interface Options<I, E = never, R = never> extends Items.ItemOptions<I> {
  readonly runId: string
  /** The item submitted at this index (the same source `PgBatchRun.start` read). */
  readonly item: (index: number) => Effect.Effect<I, E, R>
  readonly identity: Identity.Identity
  readonly contract: Contract.Contract
  readonly guardrails?: Guardrails.Guardrails | undefined
  /** What of a success is kept as its result (default: the completion's text); `false` keeps none. */
  readonly result?: ((completion: Outcome.Completion, item: I) => unknown) | false | undefined
  /**
   * Receives every event of this worker's part, in order. An item's result is published (and its event
   * raised) once its record is handed to the writer: the record commits after (see `onRecorded`).
   */
  readonly onEvent?: ((event: Events.Event) => Effect.Effect<void>) | undefined
  /** Called with an item's id once its terminal record committed (not when the fence dropped it). */
  readonly onRecorded?: ((itemId: string) => Effect.Effect<void>) | undefined
  /** This worker's name on its leases (default: host, process id and a random suffix). */
  readonly owner?: string | undefined
  /** How long a lease lasts without a heartbeat (default 30 s; positive, at most 2^31 − 1 ms, 24.8 days). */
  readonly leaseMillis?: number | undefined
  /**
   * How often leases are extended and the run's stop and deadline read (default a third of the lease; positive,
   * at most 2^31 − 1 ms: a longer timer would never fire).
   */
  readonly heartbeatMillis?: number | undefined
  /**
   * Items leased by the first round trip (default the concurrency); each later one, which leases ahead of the
   * engine, takes what this worker starts in about 250 ms at its recent pace, at least max(1, ⌈leaseBatch/4⌉)
   * and at most `leaseBatch`.
   */
  readonly leaseBatch?: number | undefined
}

/**
 * What one worker did: how its part ended (the run's stop when there was one), its own stats, how many
 * items it leased, how many results the fence dropped, how many items it gave the stop's record without a
 * call, and the run's status when it left.
 *
 * @example
 * ```ts
 * import type { PgWorker } from "@rein/postgres"
 *
 * const line = (s: PgWorker.Summary) => `${s.owner}: ${s.stats.succeeded} ok, ${s.fencedOut} fenced out`
 * ```
 * @category models
 * @since 0.1.0
 */
export interface Summary {
  readonly owner: string
  readonly termination: Termination.Termination
  readonly stats: Stats.Stats
  readonly leased: number
  readonly fencedOut: number
  readonly swept: number
  readonly runStatus: "running" | "stopped" | "finished"
}

interface Leased<I> {
  readonly item: I
  readonly itemId: string
  readonly index: number
  /** The input and prompt fingerprints, computed once (when the input is checked against the row). */
  readonly fingerprints: { readonly input: string; readonly prompt: string }
  /** For an input with no fingerprint (submitted as `none`): its refusal, before any call. */
  readonly refused?: Outcome.Refused | undefined
}

const DEFAULT_GUARDRAILS = Guardrails.make()
const SWEEP_BATCH = 500

// The category and encoded error of an item the stop reached before it started (as the engine's collateral).
const collateralOf = (stop: Termination.Stop) => {
  const fields = { reason: stop.reason, lastFailure: null, attempts: [] }
  switch (stop.kind) {
    case "batch_timeout":
      return {
        category: "batch_deadline_exceeded",
        error: Schema.encodeSync(Result.BatchDeadlineExceeded)(new Result.BatchDeadlineExceeded(fields))
      }
    case "budget_exceeded":
      return {
        category: "batch_budget_exceeded",
        error: Schema.encodeSync(Result.BatchBudgetExceeded)(new Result.BatchBudgetExceeded(fields))
      }
    case "fail_fast":
    case "artifact_error":
      return {
        category: "batch_aborted",
        error: Schema.encodeSync(Result.BatchAborted)(new Result.BatchAborted(fields))
      }
  }
}

// Every statement here is one autocommitted transaction: one that lost to a deadlock or a serialization
// failure was rolled back whole and runs again (a bounded number of times).
const db = <A>(effect: Effect.Effect<A, SqlError>): Effect.Effect<A, PgBatchError> =>
  Effect.mapError(retryConflicts(effect), unavailable)

const itemIdOfStop = (stop: Termination.Stop): string | null =>
  stop.kind === "fail_fast" || stop.kind === "artifact_error" ? stop.itemId : null

interface Context<I, E, R> {
  readonly sql: SqlClient.SqlClient
  readonly options: Options<I, E, R>
  readonly owner: string
  readonly leaseMillis: number
  readonly heartbeatMillis: number
  readonly identityFingerprint: string
  readonly fence: Fence.Fence
  readonly limits: RunLimits.Service
  /** The run's budget on record, when it has one (the `SharedBudget` in the worker's context). */
  readonly budget: Option.Option<Budget.Service>
  leased: number
  /** The items this worker ran and their time: how long it waits, at most, between looks (`IdleWait`). */
  readonly ran: IdleWait.Ran
}

// The in-memory limits, with the stop recorded on the run row: the first stop of the whole run wins.
const sharedStop = (sql: SqlClient.SqlClient, runId: string, inner: RunLimits.Service): RunLimits.Service => {
  const record = (stop: Termination.Stop): Effect.Effect<Termination.Stop> =>
    stop.kind === "artifact_error"
      ? inner.stop(stop)
      : Q.stop(sql, runId, stop, itemIdOfStop(stop)).pipe(
        Effect.map((onRecord) => stopOf(onRecord) ?? stop),
        Effect.catchAll((e) =>
          Effect.as(Effect.logWarning(`the run's stop could not be recorded: ${describe(e)}`), stop)
        ),
        Effect.flatMap(inner.stop)
      )
  return {
    waits: inner.waits,
    admit: inner.admit,
    release: inner.release,
    released: inner.released,
    charge: inner.charge,
    totals: inner.totals,
    cool: inner.cool,
    cooldownLeft: inner.cooldownLeft,
    stop: record,
    stopped: inner.stopped,
    whenStopped: inner.whenStopped,
    ...(inner.unsafeAdmit === undefined ? {} : { unsafeAdmit: inner.unsafeAdmit }),
    ...(inner.unsafeRelease === undefined ? {} : { unsafeRelease: inner.unsafeRelease }),
    ...(inner.unsafeStopped === undefined ? {} : { unsafeStopped: inner.unsafeStopped })
  }
}

// Learns the run's stop from its row, and stops the run at its deadline.
const observe = <I, E, R>(ctx: Context<I, E, R>, row: Omit<Q.BeatRow, "open"> | undefined) =>
  Effect.gen(function*() {
    if (row === undefined) return
    const stop = stopOf(row.stop)
    if (stop !== undefined) {
      yield* ctx.limits.stop(stop)
    } else if (row.deadline_millis !== null && row.elapsed_millis >= row.deadline_millis) {
      yield* ctx.limits.stop(deadlineStop(row.deadline_millis))
    }
  })

// Extends this worker's leases, learns the run's stop, and stops the run at its deadline.
const beat = <I, E, R>(ctx: Context<I, E, R>) =>
  Effect.flatMap(db(Q.heartbeat(ctx.sql, ctx.options.runId, ctx.owner, ctx.leaseMillis)), (row) => observe(ctx, row))

// As `beat`, without extending any lease (the heartbeat does that every `heartbeatMillis`).
const look = <I, E, R>(ctx: Context<I, E, R>) =>
  Effect.flatMap(db(Q.look(ctx.sql, ctx.options.runId)), (row) => observe(ctx, row))

// Every `heartbeatMillis`, a beat.
const heartbeat = <I, E, R>(ctx: Context<I, E, R>) =>
  Effect.forever(
    Effect.zipRight(
      Effect.sleep(Duration.millis(ctx.heartbeatMillis)),
      Effect.catchAll(beat(ctx), (e) => Effect.logWarning(`heartbeat failed: ${e.message}`))
    )
  )

const deadlineStop = (millis: number): Termination.Stop => ({
  _tag: "BatchTimeout",
  kind: "batch_timeout",
  reason: `the batch deadline of ${millis} ms expired`
})

// Resolves a leased row's input from the source and checks it is the item submitted.
const resolve = <I, E, R>(ctx: Context<I, E, R>, row: Q.LeaseRow) =>
  Effect.flatMap(ctx.options.item(row.idx), (item) => {
    const key = Items.keyOf(ctx.options, item, row.idx)
    const mismatch = (why: string) =>
      Effect.fail(
        new PgBatchError({
          reason: "InputMismatch",
          message: `item ${JSON.stringify(row.item_id)} (index ${row.idx}): ${why}`,
          itemId: row.item_id
        })
      )
    const found = Either.isRight(key) ? key.right : key.left.key
    // (An input with a fingerprint and a prompt without one: the input's is compared below.)
    if (
      Either.isLeft(key) && found.inputFingerprint === Items.NO_FINGERPRINT &&
      row.input_fingerprint !== Items.NO_FINGERPRINT
    ) {
      return mismatch(`its input has no fingerprint (${key.left.error.message})`)
    }
    if (found.itemId !== row.item_id) {
      return mismatch(`the source has item ${JSON.stringify(found.itemId)} there`)
    }
    if (found.inputFingerprint !== row.input_fingerprint) {
      return mismatch(`its input fingerprint is ${found.inputFingerprint}, ${row.input_fingerprint} was submitted`)
    }
    return Effect.succeed<Leased<I>>({
      item,
      itemId: row.item_id,
      index: row.idx,
      fingerprints: { input: found.inputFingerprint, prompt: found.promptFingerprint },
      // Submitted without a fingerprint, and still without one: refused alone (see `artifactsOf`'s `lookup`).
      refused: Either.isLeft(key) ? Items.refusedInput(row.item_id, key.left.error) : undefined
    })
  })

// One lease round trip: up to `batch` items, their tokens registered for the fence, their inputs resolved.
// The statement and the registration are one uninterruptible step: a lease the database granted is always
// known to the fence, so that `releaseOwned` or the sweep can give it back.
const leaseOnce = <I, E, R>(ctx: Context<I, E, R>, batch: number) =>
  Effect.flatMap(
    Effect.uninterruptible(Effect.tap(
      db(Q.lease(ctx.sql, ctx.options.runId, ctx.owner, batch, ctx.leaseMillis, true)),
      (rows) =>
        Effect.sync(() => {
          ctx.leased += rows.length
          for (const row of rows) ctx.fence.tokens.set(row.item_id, row.lease_token)
        })
    )),
    // `UPDATE … RETURNING` gives its rows in the plan's order, not the lease's `idx` order: resolved lowest
    // index first, the items run in input order and a source that fails names its first missing item.
    (rows) => Effect.forEach([...rows].sort(byIndex), (row) => resolve(ctx, row))
  )

const byIndex = (a: Q.LeaseRow, b: Q.LeaseRow): number => a.idx - b.idx

// The next leased items, or `None` when no item is left but this worker's own, or the run stopped. With
// nothing to lease while other workers hold items, it waits a moment (50 ms, doubling up to a quarter of its
// items' mean duration, or to `heartbeatMillis` before it ran any: see `internal/idleWait`) and asks again (a
// holder may finish the run's last item, or die and its lease expire). Each look is three small statements
// (lease, count of the open items through their partial index, the run's row).
const nextLeases = <I, E, R>(
  ctx: Context<I, E, R>,
  batch: number
): Effect.Effect<Option.Option<ReadonlyArray<Leased<I>>>, E | PgBatchError, R> =>
  Effect.gen(function*() {
    let looks = 0
    while (true) {
      if (Option.isSome(yield* ctx.limits.stopped)) return Option.none()
      const leased = yield* leaseOnce(ctx, batch)
      if (leased.length > 0) return Option.some(leased)
      const left = yield* db(Q.remaining(ctx.sql, ctx.options.runId, ctx.owner))
      if (left.open === 0) return Option.none()
      // Nothing leased with items open: held by others, or the run stopped or passed its deadline.
      // Only a read: rewriting every held lease on each idle pass (20 a second) was the heartbeat's work.
      yield* look(ctx)
      if (Option.isSome(yield* ctx.limits.stopped)) return Option.none()
      // Backs off from 50 ms while nothing comes free, at most to a quarter of an item (or the heartbeat).
      yield* Effect.sleep(Duration.millis(IdleWait.nth(looks++, ctx.ran, ctx.heartbeatMillis)))
    }
  })

// The leased items as a lazy source that keeps one lease round trip ahead: when the engine takes a group of
// leased items, the next group is already being leased in the background, so the engine's free slots never
// wait for a round trip to the database (on a loaded machine, that wait was most of a worker's wall time).
// The first lease takes `batch` items (it fills the free slots); every later one, the prefetch included, takes
// what the engine takes in about `LeaseAhead.AHEAD_MILLIS` at its recent pace, between max(1, ⌈batch/4⌉) and
// `batch` (see `internal/leaseAhead`): a slow worker holds few items it has not started (never a whole second
// `batch`, which a worker joining later could not get while the heartbeat renewed it for a whole item's
// duration), and a fast one does not pay a lease statement per few items.
// A failure to lease or resolve (the source's error, a mismatch, the database) ends the stream and is kept in
// `failed`: the engine then finishes the items it started (their calls were made) before the worker fails.
const source = <I, E, R>(
  ctx: Context<I, E, R>,
  batch: number,
  failed: { error: Option.Option<E | PgBatchError> }
): Stream.Stream<Leased<I>, never, R> =>
  Stream.unwrapScoped(Effect.gen(function*() {
    const scope = yield* Effect.scope
    type Ahead = Fiber.Fiber<Option.Option<ReadonlyArray<Leased<I>>>, E | PgBatchError>
    let ahead: Ahead | undefined
    // The last groups handed to the engine: every one of them was taken when the engine asks again.
    const handed: Array<LeaseAhead.Handed> = []
    const next = Effect.gen(function*() {
      const size = LeaseAhead.sizeOf(batch, handed, yield* Clock.currentTimeMillis)
      // `await`, not `join`: joining would merge the prefetch's fiber refs into the engine worker that pulls
      // now, and with them the context of the engine worker that forked it (its gate: that worker's items
      // would then be admitted and settled as another's).
      const got = ahead === undefined ? yield* nextLeases(ctx, batch) : yield* Effect.flatten(Fiber.await(ahead))
      if (Option.isNone(got)) {
        ahead = undefined
        return got
      }
      LeaseAhead.record(handed, { at: yield* Clock.currentTimeMillis, size: got.value.length })
      ahead = yield* Effect.forkIn(nextLeases(ctx, size), scope)
      return got
    })
    return Stream.repeatEffectChunkOption(
      next.pipe(
        Effect.catchAll((error) =>
          Effect.sync(() => {
            failed.error = Option.some(error)
            ahead = undefined
            return Option.none()
          })
        ),
        Effect.flatMap((o) =>
          Option.isNone(o) ? Effect.fail(Option.none()) : Effect.succeed(Chunk.unsafeFromArray(o.value))
        )
      )
    )
  }))

// The checkpoint hook of batch's `Checkpoint` (records made by batch's own code), appending through the fence
// and recording each item at its submission index.
const artifactsOf = <I, E, R>(ctx: Context<I, E, R>, manifest: ArtifactStore.Manifest): Batch.Artifacts<Leased<I>> => {
  const options = ctx.options
  const request = Items.requestOf(options)
  const opened: ArtifactStore.Opened = {
    manifest,
    truncatedBytes: 0,
    append: (record) => ctx.fence.submit(record)
  }
  const index = Resume.index([], { policy: "none", identityFingerprint: ctx.identityFingerprint })
  const session: Resume.Session = {
    policy: "none",
    identity: options.identity,
    identityFingerprint: ctx.identityFingerprint,
    opened,
    index,
    lookup: () => Effect.succeedNone,
    append: opened.append
  }
  const keep = options.result
  const hook = Checkpoint.artifacts<Leased<I>>(session, {
    request: (l) => request(l.item, l.index),
    input: (l) => options.input === undefined ? l.item : options.input(l.item),
    result: keep === false ? false : keep === undefined ? undefined : (completion, l) => keep(completion, l.item),
    fingerprints: (l) => l.fingerprints
  })
  return {
    opened,
    // An item whose input has no fingerprint fails alone as `Refused`, before any call (as batch's `Checkpoint`
    // refuses it); every other item has no record to reuse (a session's reuse was applied by `start`).
    lookup: (l) => l.refused ?? Option.none(),
    toRecord: (result) =>
      Effect.flatMap(hook.toRecord(result), (record) => {
        IdleWait.count(ctx.ran, record.attempts, result.durationMillis)
        return Effect.as(watchBudget(ctx, result, record), { ...record, index: result.item.index })
      })
  }
}

// An item the run's shared budget refused stops the run (`budget_exceeded`, first trigger wins), as a soft
// cap reached stops a single-process run, once the whole budget, read in the database, can admit no such
// item either: not only this worker's slice and the pool (see `internal/budgetStop`). While another worker's
// slice could still admit it, the worker reads again (every `HELD_POLL`, for up to `HELD_WAIT`, the item
// keeping its slot) before it lets the item go as refused: a holder reports what it used, or gives back what
// it holds beyond its need (all it has unused, at rest), within a heartbeat, and meanwhile this worker does not
// refuse the run's other items one after the other, at the speed of a database read, before the units could
// be used. The wait ends as soon as the units are back in the pool, where this worker's next item gets them
// (its view of the pool is the one just read). (A process that holds a slice reserves, or did within a
// heartbeat: one that does not holds none.) A failed read stops nothing.
const watchBudget = <I, E, R>(
  ctx: Context<I, E, R>,
  result: Result.Succeeded<Leased<I>> | Result.Failed<Leased<I>>,
  record: ArtifactStore.ItemRecord
): Effect.Effect<void> => {
  const refused = BudgetStop.refusal(result)
  if (refused === undefined || Option.isNone(ctx.budget)) return Effect.void
  const budget = ctx.budget.value
  // Only a budget shared through the database (a `PgBudget`) has units held elsewhere worth waiting for.
  const shared = Grantable.readerOf(budget)
  const read = shared ?? budget.left
  const contract = ctx.options.contract
  const check = (waited: number): Effect.Effect<void, Grantable.Failure> =>
    Effect.flatMap(read, (grantable) => {
      const stop = BudgetStop.stopFor(contract, record, refused, grantable)
      if (stop !== undefined) return Effect.asVoid(ctx.limits.stop(stop))
      if (
        shared === undefined || waited >= HELD_WAIT_MILLIS ||
        !BudgetStop.grantableElsewhere(contract, record, refused, grantable) ||
        (budget.unsafeLeft !== undefined && BudgetStop.admitsHere(budget.unsafeLeft(), refused))
      ) {
        return Effect.void
      }
      return Effect.zipRight(Effect.sleep(Duration.millis(HELD_POLL_MILLIS)), check(waited + HELD_POLL_MILLIS))
    })
  return check(0).pipe(
    Effect.catchAll((e) =>
      Effect.logWarning(`the run's budget could not be read after a refusal, the run goes on: ${describe(e)}`)
    )
  )
}

/** How long a refusal waits, at most, for units other workers hold to be used (about a budget heartbeat). */
const HELD_WAIT_MILLIS = 1_000
const HELD_POLL_MILLIS = 100

// Gives every item nobody runs any more (pending, this worker's unstarted leases, expired leases) the stop's
// record, without a call, under a fresh lease so that a late holder is fenced out.
const sweep = <I, E, R>(ctx: Context<I, E, R>, stop: Termination.Stop) =>
  Effect.gen(function*() {
    const { category, error } = collateralOf(stop)
    yield* db(Q.releaseOwned(ctx.sql, ctx.options.runId, ctx.owner))
    let swept = 0
    while (true) {
      const rows = yield* db(Q.lease(ctx.sql, ctx.options.runId, ctx.owner, SWEEP_BATCH, ctx.leaseMillis, false))
      if (rows.length === 0) return swept
      const terminals = rows.map((row): Q.Terminal => ({
        itemId: row.item_id,
        token: row.lease_token,
        record: JSON.stringify(Resume.makeRecord({
          itemId: row.item_id,
          index: row.idx,
          promptFingerprint: row.prompt_fingerprint,
          inputFingerprint: row.input_fingerprint,
          identityFingerprint: ctx.identityFingerprint,
          outcome: "failure",
          category,
          usage: { inputTokens: 0, outputTokens: 0 },
          cost: 0,
          attempts: 0,
          durationMillis: 0,
          error
        }))
      }))
      swept += (yield* db(Q.finish(ctx.sql, ctx.options.runId, terminals))).length
    }
  })

const guardrailsFor = (g: Guardrails.Guardrails, run: Q.RunRow): Guardrails.Guardrails | Termination.Stop => {
  if (run.deadline_millis === null) {
    return g.batchDeadline === undefined ? g : new Guardrails.Guardrails(Struct.omit(g, "batchDeadline"))
  }
  const left = run.deadline_millis - run.elapsed_millis
  if (left <= 0) return deadlineStop(run.deadline_millis)
  return new Guardrails.Guardrails({ ...g, batchDeadline: Duration.millis(left) })
}

const ownerOf = <I, E, R>(options: Options<I, E, R>) =>
  options.owner === undefined
    ? Effect.map(Random.nextIntBetween(0, 1 << 30), (n) => `${hostname()}:${process.pid}:${n.toString(36)}`)
    : Effect.succeed(options.owner)

/**
 * Runs this worker until the run has no item left for it: every item done, or the run stopped and every
 * item nobody holds given the stop's record. Fails with `PgBatchError` when the run is absent, its session
 * has another identity, an input does not match what was submitted, or the database failed.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { PgWorker } from "@rein/postgres"
 *
 * declare const options: PgWorker.Options<string>
 * const report = Effect.map(PgWorker.run(options), (s) => `${s.stats.succeeded} ok, run ${s.runStatus}`)
 * ```
 * @category running
 * @since 0.1.0
 */
export const run = <I, E = never, R = never>(
  options: Options<I, E, R>
): Effect.Effect<Summary, E | PgBatchError | SourceError, R | Rein.Rein | SqlClient.SqlClient> =>
  Effect.flatMap(ownerOf(options), (owner) =>
    Effect.scoped(runScoped({ ...options, owner })).pipe(
      Effect.onExit((exit) => Exit.isSuccess(exit) ? Effect.void : releaseOnExit(options, owner))
    ))

// A worker that failed (an input that does not match, a source error, the database) or was interrupted (Ctrl-C)
// gives back the leases it still holds once its scope closed (its calls ended, its heartbeat stopped): other
// workers take those items at once rather than after `leaseMillis`. Bounded by a heartbeat (a database that
// does not answer lets the leases expire, as a killed worker's do); a release that fails changes nothing.
const releaseOnExit = <I, E, R>(options: Options<I, E, R>, owner: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Q.releaseOwned(sql, options.runId, owner).pipe(
      retryConflicts,
      // A finalizer runs uninterruptibly: the statement is made interruptible, and not awaited once interrupted.
      Effect.disconnect,
      Effect.interruptible,
      Effect.timeoutOption(Duration.millis(options.heartbeatMillis ?? (options.leaseMillis ?? 30_000) / 3)),
      Effect.ignore
    ))

/** The lease's and heartbeat's timings, as the other shared services' durations: positive, at most 2^31 − 1 ms. */
const Timings = Schema.Struct({ leaseMillis: Schema.optional(Millis), heartbeatMillis: Schema.optional(Millis) })

/**
 * The worker's timings, checked before anything is read: a heartbeat longer than the longest timer would never
 * run (its leases would lapse under a live worker), a lease of 1e300 ms is no interval PostgreSQL holds.
 */
const checkTimings = <I, E, R>(options: Options<I, E, R>): Effect.Effect<void, PgBatchError> =>
  Schema.decodeUnknown(Timings)({ leaseMillis: options.leaseMillis, heartbeatMillis: options.heartbeatMillis }).pipe(
    Effect.mapError((e) => new PgBatchError({ reason: "InvalidInput", message: Input.formatParseError(e) })),
    Effect.asVoid
  )

const runScoped = <I, E, R>(
  options: Options<I, E, R>
): Effect.Effect<Summary, E | PgBatchError | SourceError, R | Rein.Rein | SqlClient.SqlClient | Scope.Scope> =>
  Effect.gen(function*() {
    yield* checkTimings(options)
    const sql = yield* SqlClient.SqlClient
    const runId = options.runId
    const run = yield* db(Q.readRun(sql, runId))
    if (run === undefined) {
      return yield* new PgBatchError({ reason: "NotFound", message: `no run ${JSON.stringify(runId)}` })
    }
    const identityFingerprint = Fingerprint.identity(options.identity)
    if (identityFingerprint !== run.identity_fingerprint) {
      return yield* new PgBatchError({
        reason: "IdentityMismatch",
        message: `run ${
          JSON.stringify(runId)
        } runs under identity ${run.identity_fingerprint}, this worker has ${identityFingerprint}`
      })
    }
    const manifest = yield* Schema.decodeUnknown(ArtifactStore.Manifest)(run.manifest).pipe(
      Effect.mapError(() =>
        new PgBatchError({ reason: "Unavailable", message: `run ${JSON.stringify(runId)} has no valid manifest` })
      )
    )
    const base = options.guardrails ?? DEFAULT_GUARDRAILS
    const planned = guardrailsFor(base, run)
    const guardrails = "kind" in planned ? base : planned
    // Shared limits when the context has them (PgRunLimits), else this worker's own.
    const provided = yield* Effect.serviceOption(RunLimits.RunLimits)
    const inner = Option.isSome(provided) ? provided.value : yield* RunLimits.memory(RunLimits.configOf(guardrails))
    const leaseMillis = options.leaseMillis ?? 30_000
    const ctx: Context<I, E, R> = {
      sql,
      options,
      owner: yield* ownerOf(options),
      leaseMillis,
      heartbeatMillis: options.heartbeatMillis ?? leaseMillis / 3,
      identityFingerprint,
      fence: yield* Fence.make(sql, runId, {
        onWritten: options.onRecorded ?? (() => Effect.void),
        onFailed: (error, itemId) =>
          Effect.asVoid(inner.stop({
            _tag: "ArtifactFailure",
            kind: "artifact_error",
            reason: `the record of item ${JSON.stringify(itemId)} could not be written: ${error.message}`,
            itemId
          }))
      }),
      limits: sharedStop(sql, runId, inner),
      // Only a budget recorded with the run is the run's (`PgBatchRun.sharedLimits` provides it): its
      // exhaustion stops the run. Another shared budget in the context refuses items one by one.
      budget: (yield* capsOf(runId, run.settings)).budget === undefined
        ? Option.none()
        : yield* Effect.serviceOption(SharedBudget),
      leased: 0,
      ran: IdleWait.empty()
    }
    const onRecord = stopOf(run.stop)
    if (onRecord !== undefined) yield* inner.stop(onRecord)
    else if ("kind" in planned) yield* ctx.limits.stop(planned)
    yield* Effect.forkScoped(heartbeat(ctx))

    const request = Items.requestOf(options)
    const batch = options.leaseBatch ?? guardrails.concurrency
    // `drain`, not `stream`: the results are the records; and no event observer unless the caller has one
    // (an observer makes the engine raise every item's events: a third of a worker's CPU time per item).
    const failed: { error: Option.Option<E | PgBatchError> } = { error: Option.none() }
    const ending = yield* Batch.drain(source(ctx, batch, failed), {
      contract: options.contract,
      guardrails,
      request: (l: Leased<I>) => request(l.item, l.index),
      itemId: (l: Leased<I>) => l.itemId,
      onEvent: options.onEvent,
      artifacts: artifactsOf(ctx, manifest)
    }).pipe(Effect.provideService(RunLimits.RunLimits, ctx.limits))
    const termination = ending.termination
    // Every record handed over is committed (or the worker stops on the write that failed) before it goes on.
    yield* Effect.ignore(ctx.fence.drain)
    // The intake failed: its items started are recorded; the worker fails (its leases go back as it leaves).
    if (Option.isSome(failed.error)) return yield* Effect.fail(failed.error.value)
    const stopped = yield* inner.stopped
    let swept = 0
    if (Option.isSome(stopped) && stopped.value.kind !== "artifact_error") swept = yield* sweep(ctx, stopped.value)
    else yield* db(Q.releaseOwned(sql, runId, ctx.owner))
    yield* db(Q.finishRun(sql, runId))
    const after = yield* db(Q.readRun(sql, runId))
    return {
      owner: ctx.owner,
      termination: Option.isSome(stopped) ? stopped.value : termination,
      stats: ending.stats,
      leased: ctx.leased,
      fencedOut: ctx.fence.fencedOut(),
      swept,
      runStatus: after?.status ?? "running"
    }
  })
