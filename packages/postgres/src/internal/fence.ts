/**
 * The fenced writer of one worker: every terminal record is written under the lease token the worker holds
 * for its item, and concurrent records share statements (group commit: one writer fiber takes every record
 * that arrives within a linger and writes them in one `finish`; the records that arrive while it writes
 * join the next group).
 *
 * `submit` hands a record over and returns at once: the item's concurrency slot is not held while its
 * record commits (a database round trip would otherwise be added to every item's time in the slot). The
 * worker learns of each commit through `onWritten`, waits for every record with `drain` before it sweeps or
 * leaves, and stops (an `artifact_error` of its own) at the first failed write: its items not yet committed
 * stay leased to it and are taken over when the lease expires, so nothing is lost. `drain` ends the linger:
 * from then on the writer writes what it holds at once (nothing more is coming that a wait could join, and the
 * run's last records, which every other worker waits for, committed up to a linger late).
 *
 * A record whose lease was taken over (or whose item another holder finished) is dropped by the fence and
 * counted, here and on the run row.
 *
 * @internal
 */
import type { SqlClient } from "@effect/sql"
import { ArtifactStore } from "@rein/batch"
import type { Scope } from "effect"
import { Deferred, Effect, Either, FiberId, Queue } from "effect"
import { recordJson } from "./artifactRead.js"
import * as Q from "./batchStatements.js"
import { describe, retryConflicts } from "./sqlError.js"

/** @internal */
export interface Fence {
  /** The lease token of every item this worker holds, by item id. */
  readonly tokens: Map<string, string>
  /**
   * Hands the record over to be written under the item's lease; fails once an earlier write failed, and with
   * `encode` (a failed write: `onFailed`) for a record no row can hold (`artifactRead.recordJson`).
   */
  readonly submit: (record: ArtifactStore.ItemRecord) => Effect.Effect<void, ArtifactStore.ArtifactError>
  /** Completes when every record submitted so far is written or dropped; fails if a write failed. */
  readonly drain: Effect.Effect<void, ArtifactStore.ArtifactError>
  /** Results dropped by the fence so far. */
  readonly fencedOut: () => number
}

const MAX_GROUP = 512
const WRITERS = 1
// A writer that took a record waits this long for more before it writes: statements, not records, cost (each
// is a socket write and a parse here and a transaction in the database), and the item's slot is not held
// meanwhile; only its commit (`onRecorded`) and the worker's last `drain` wait. At bench 12's 200 ms latency
// (a worker finishes ~70 items a second), one writer lingering 100 ms spent 1,566 and 1,181 µs of the
// worker's CPU per item and 310 and 240 µs of PostgreSQL's, two lingering 20 ms 2,336 and 1,574 µs and 740
// and 530 µs (alternating runs, load 16-21).
const LINGER_MILLIS = 100

/** @internal */
export const make = (
  sql: SqlClient.SqlClient,
  runId: string,
  hooks: {
    /** Called with each record's item id once it committed (not for a record the fence dropped). */
    readonly onWritten: (itemId: string) => Effect.Effect<void>
    /** Called once, at the first failed write. */
    readonly onFailed: (error: ArtifactStore.ArtifactError, itemId: string) => Effect.Effect<void>
  }
): Effect.Effect<Fence, never, Scope.Scope> =>
  Effect.gen(function*() {
    const tokens = new Map<string, string>()
    let fenced = 0
    let pending = 0
    let failure: ArtifactStore.ArtifactError | undefined
    let idle: Deferred.Deferred<void> | undefined
    // Set by `drain`: the writer lingers no more (and a linger in progress ends).
    let draining = false
    const hurried = Deferred.unsafeMake<void>(FiberId.none)
    const linger = Effect.raceFirst(Effect.sleep(`${LINGER_MILLIS} millis`), Deferred.await(hurried))
    const queue = yield* Effect.acquireRelease(Queue.unbounded<Q.Terminal>(), Queue.shutdown)

    const settled = (n: number) =>
      Effect.sync(() => {
        pending -= n
        if (pending === 0 && idle !== undefined) {
          Deferred.unsafeDone(idle, Effect.void)
          idle = undefined
        }
      })

    const writeGroup = (group: ReadonlyArray<Q.Terminal>) =>
      // One statement: lost to a deadlock, it was rolled back whole, and its fence makes a second run safe.
      retryConflicts(Q.finish(sql, runId, group)).pipe(
        Effect.flatMap((rows) => {
          const written = new Set(rows.map((r) => r.item_id))
          const dropped = group.length - written.size
          fenced += dropped
          for (const t of group) tokens.delete(t.itemId)
          return Effect.zipRight(
            dropped > 0 ? Effect.ignore(Q.countFenced(sql, runId, dropped)) : Effect.void,
            Effect.forEach(written, hooks.onWritten, { discard: true })
          )
        }),
        Effect.catchAll((e) => {
          if (failure !== undefined) return Effect.void
          failure = new ArtifactStore.ArtifactError({ reason: "io", message: `terminal write failed: ${describe(e)}` })
          return hooks.onFailed(failure, group[0]!.itemId)
        }),
        Effect.ensuring(settled(group.length))
      )

    for (let i = 0; i < WRITERS; i++) {
      yield* Effect.forkScoped(
        Effect.forever(
          Effect.flatMap(Queue.take(queue), (first) =>
            Effect.zipRight(
              // No linger when a full group is already queued: waiting would only cap the writes at
              // MAX_GROUP records per linger while the backlog grows.
              Effect.flatMap(
                Queue.size(queue),
                (queued) => queued >= MAX_GROUP - 1 || draining ? Effect.void : linger
              ),
              Effect.flatMap(Queue.takeUpTo(queue, MAX_GROUP - 1), (rest) => writeGroup([first, ...rest]))
            ))
        )
      )
    }

    const closed = () =>
      new ArtifactStore.ArtifactError({ reason: "closed", message: `an earlier write failed: ${failure!.message}` })

    const submit = (record: ArtifactStore.ItemRecord) =>
      Effect.suspend(() => {
        if (failure !== undefined) return Effect.fail(closed())
        const token = tokens.get(record.itemId)
        if (token === undefined) {
          fenced++
          return Effect.ignore(Q.countFenced(sql, runId, 1))
        }
        // A record no row can hold fails alone, before it joins a group (one statement): it would fail the group.
        const json = recordJson(record)
        if (Either.isLeft(json)) {
          failure = json.left
          return Effect.zipRight(hooks.onFailed(json.left, record.itemId), Effect.fail(json.left))
        }
        pending++
        // Its checked text is what the group's statement holds: the record is serialised once.
        return Queue.offer(queue, { itemId: record.itemId, token, record: json.right })
      })

    const drain = Effect.suspend(() => {
      if (!draining) {
        draining = true
        Deferred.unsafeDone(hurried, Effect.void)
      }
      const done = pending === 0
        ? Effect.void
        : Deferred.await(idle ??= Deferred.unsafeMake<void>(FiberId.none))
      return Effect.zipRight(done, Effect.suspend(() => failure === undefined ? Effect.void : Effect.fail(closed())))
    })

    return { tokens, submit, drain, fencedOut: () => fenced }
  })
