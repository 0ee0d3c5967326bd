/**
 * The single writer of an open artifact. Appends queue up; one fiber takes everything queued, writes it
 * with one write (and one fsync when asked) and only then completes each append — group commit. Lines
 * never interleave because there is only one writer, and many concurrent appends share one fsync instead
 * of each paying for its own.
 *
 * A write is uninterruptible: an interrupted write could leave half a line in the middle of the file, which
 * a later append would turn into a malformed non-final line — an artifact that no longer opens.
 *
 * @internal
 */
import type { FileSystem } from "@effect/platform"
import type { Chunk, Scope } from "effect"
import { Cause, Deferred, Effect, Exit, Queue } from "effect"
import type { ItemRecord } from "../ArtifactStore.js"
import { ArtifactError } from "../ArtifactStore.js"
import { concat, recordLine } from "./jsonl.js"

interface Pending {
  readonly bytes: Uint8Array
  readonly done: Deferred.Deferred<void, ArtifactError>
}

/** Records written per write at most (bounds the size of one write and the latency of the first waiter). */
const MAX_GROUP = 1024

const causeMessage = (cause: Cause.Cause<unknown>): string => {
  const error = Cause.squash(cause)
  return error instanceof Error ? error.message : String(error)
}

/** @internal */
export const makeWriter = (
  file: FileSystem.File,
  options: { readonly path: string; readonly fsync: boolean }
): Effect.Effect<(record: ItemRecord) => Effect.Effect<void, ArtifactError>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const queue = yield* Queue.unbounded<Pending>()
    // Why the artifact refuses appends; set once, by the first failure (or by closing), never cleared.
    let refused: ArtifactError | undefined
    const closed = () =>
      new ArtifactError({
        reason: "closed",
        message: `artifact ${options.path} refuses appends: ${refused?.message ?? "it is closed"}`
      })
    const settle = (group: Iterable<Pending>, exit: Exit.Exit<void, ArtifactError>) =>
      Effect.forEach(group, (p) => Deferred.done(p.done, exit), { discard: true })

    const flush = (group: Chunk.Chunk<Pending>) =>
      Effect.uninterruptible(Effect.suspend(() => {
        if (refused !== undefined) return settle(group, Exit.fail(closed()))
        const bytes = concat(Array.from(group, (p) => p.bytes))
        const write = options.fsync ? Effect.zipRight(file.writeAll(bytes), file.sync) : file.writeAll(bytes)
        return Effect.flatMap(Effect.exit(write), (exit) => {
          if (Exit.isSuccess(exit)) return settle(group, Exit.void)
          const error = new ArtifactError({
            reason: "io",
            message: `append to ${options.path} failed: ${causeMessage(exit.cause)}`
          })
          refused = error
          return settle(group, Exit.fail(error))
        })
      }))

    yield* Effect.forkScoped(Effect.forever(Effect.flatMap(Queue.takeBetween(queue, 1, MAX_GROUP), flush)))
    // Runs before the writer is interrupted (finalizers run in reverse): whatever is still queued was never
    // written, and its append fails rather than waiting forever.
    yield* Effect.addFinalizer(() =>
      Effect.suspend(() => {
        refused ??= new ArtifactError({ reason: "closed", message: "it was closed" })
        return Effect.flatMap(Queue.takeAll(queue), (rest) => settle(rest, Exit.fail(closed())))
      })
    )

    return (record: ItemRecord) =>
      Effect.suspend(() => {
        if (refused !== undefined) return Effect.fail(closed())
        const line = recordLine(record)
        if (line._tag === "Left") {
          refused = line.left
          return Effect.fail(line.left)
        }
        return Effect.flatMap(
          Deferred.make<void, ArtifactError>(),
          (done) => Effect.zipRight(Queue.offer(queue, { bytes: line.right, done }), Deferred.await(done))
        )
      })
  })
