/**
 * The fenced writer of one worker: every terminal record is written under the lease token the worker holds
 * for its item, and concurrent appends share statements (group commit: each of a few writer fibers takes
 * every waiting record and writes them in one `finish`, so a slow commit holds back one group, not all). A record whose lease was taken over (or whose item was
 * finished by another holder) is dropped by the fence and counted, both here and on the run row; its
 * append still succeeds, because for this worker the item is over.
 *
 * @internal
 */
import type { SqlClient } from "@effect/sql"
import { ArtifactStore } from "@rein/batch"
import type { Scope } from "effect"
import { Deferred, Effect, FiberId, Queue } from "effect"
import * as Q from "./batchStatements.js"

interface Pending {
  readonly terminal: Q.Terminal
  readonly done: Deferred.Deferred<boolean, ArtifactStore.ArtifactError>
}

/** @internal */
export interface Fence {
  /** The lease token of every item this worker holds, by item id. */
  readonly tokens: Map<string, string>
  /** Writes the record under the item's lease; `true` when written, `false` when the fence dropped it. */
  readonly write: (record: ArtifactStore.ItemRecord) => Effect.Effect<boolean, ArtifactStore.ArtifactError>
  /** Results dropped by the fence so far. */
  readonly fencedOut: () => number
}

const MAX_GROUP = 256
const WRITERS = 4

/** @internal */
export const make = (sql: SqlClient.SqlClient, runId: string): Effect.Effect<Fence, never, Scope.Scope> =>
  Effect.gen(function*() {
    const tokens = new Map<string, string>()
    let fenced = 0
    const queue = yield* Effect.acquireRelease(Queue.unbounded<Pending>(), Queue.shutdown)

    const writeGroup = (group: ReadonlyArray<Pending>) =>
      Q.finish(sql, runId, group.map((p) => p.terminal)).pipe(
        Effect.flatMap((rows) => {
          const written = new Set(rows.map((r) => r.item_id))
          const dropped = group.length - written.size
          fenced += dropped
          return Effect.zipRight(
            dropped > 0 ? Effect.ignore(Q.countFenced(sql, runId, dropped)) : Effect.void,
            Effect.forEach(group, (p) => Deferred.succeed(p.done, written.has(p.terminal.itemId)), { discard: true })
          )
        }),
        Effect.catchAll((e) =>
          Effect.forEach(group, (p) =>
            Deferred.fail(
              p.done,
              new ArtifactStore.ArtifactError({ reason: "io", message: `terminal write failed: ${e.message}` })
            ), { discard: true })
        )
      )

    for (let i = 0; i < WRITERS; i++) {
      yield* Effect.forkScoped(
        Effect.forever(Effect.flatMap(Queue.takeBetween(queue, 1, MAX_GROUP), (chunk) => writeGroup([...chunk])))
      )
    }

    const write = (record: ArtifactStore.ItemRecord) =>
      Effect.suspend(() => {
        const token = tokens.get(record.itemId)
        if (token === undefined) {
          fenced++
          return Effect.as(Effect.ignore(Q.countFenced(sql, runId, 1)), false)
        }
        const done = Deferred.unsafeMake<boolean, ArtifactStore.ArtifactError>(FiberId.none)
        return Effect.zipRight(
          Queue.offer(queue, { terminal: { itemId: record.itemId, token, record }, done }),
          Effect.tap(Deferred.await(done), () => Effect.sync(() => tokens.delete(record.itemId)))
        )
      })

    return { tokens, write, fencedOut: () => fenced }
  })
