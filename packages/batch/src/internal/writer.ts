/**
 * The writer of an open artifact: leader/follower group commit. An append encodes its line and adds it to
 * the pending group. If nobody is writing, it becomes the leader: it takes every pending line, writes them
 * with one write (and one fsync when asked), settles them all, and hands the lead to the owner of the
 * oldest line that arrived meanwhile. Otherwise it waits for its line to be written (or for the lead).
 *
 * So lines never interleave (one writer at a time), concurrent appends share writes and fsyncs, a lone
 * appender writes in its own fiber with no hand-off, and no leader serves more than one group beyond its
 * own. (A semaphore would wake every waiter on each release: quadratic under contention.)
 *
 * An append is uninterruptible once its line is encoded: an interrupted write could leave half a line in
 * the middle of the file — which a later append would turn into a malformed non-final line, an artifact
 * that no longer opens — and a waiter that has been handed the lead must take it. The wait is bounded by
 * a write or two.
 *
 * @internal
 */
import type { FileSystem } from "@effect/platform"
import type { Scope } from "effect"
import { Cause, Deferred, Effect, Exit } from "effect"
import type { ItemRecord } from "../ArtifactStore.js"
import { ArtifactError } from "../ArtifactStore.js"
import { concat, recordLine } from "./jsonl.js"

interface Entry {
  readonly bytes: Uint8Array
  /** `written`, or `lead`: the line is not written yet and its owner must write it (and what came after). */
  readonly done: Deferred.Deferred<"written" | "lead", ArtifactError>
}

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
    let pending: Array<Entry> = []
    let leading = false
    // Why the artifact refuses appends; set once, by the first failure (or by closing), never cleared.
    let refused: ArtifactError | undefined
    const closed = () =>
      new ArtifactError({
        reason: "closed",
        message: `artifact ${options.path} refuses appends: ${refused?.message ?? "it is closed"}`
      })
    const settle = (group: ReadonlyArray<Entry>, exit: Exit.Exit<"written", ArtifactError>) =>
      Effect.forEach(group, (e) => Deferred.done(e.done, exit), { discard: true })

    // Writes the pending group (which holds the leader's own line), passes the lead on, and returns how the
    // group's write ended. (A promoted leader's own `done` already holds `lead`, so the result is returned.)
    const lead = (): Effect.Effect<void, ArtifactError> =>
      Effect.suspend(() => {
        const group = pending
        pending = []
        const write: Effect.Effect<Exit.Exit<void, ArtifactError>> = refused !== undefined
          ? Effect.succeed(Exit.fail(closed()))
          : Effect.map(
            Effect.exit(
              options.fsync
                ? Effect.zipRight(file.writeAll(concat(group.map((e) => e.bytes))), file.sync)
                : file.writeAll(concat(group.map((e) => e.bytes)))
            ),
            (exit) => {
              if (Exit.isSuccess(exit)) return Exit.void
              refused = new ArtifactError({
                reason: "io",
                message: `append to ${options.path} failed: ${causeMessage(exit.cause)}`
              })
              return Exit.fail(refused)
            }
          )
        return Effect.flatMap(write, (exit) =>
          settle(group, Exit.as(exit, "written" as const)).pipe(
            Effect.zipRight(Effect.suspend(() => {
              const next = pending[0]
              if (next === undefined) {
                leading = false
                return Effect.void
              }
              return Deferred.succeed(next.done, "lead")
            })),
            Effect.zipRight(exit)
          ))
      })

    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        refused ??= new ArtifactError({ reason: "closed", message: "it was closed" })
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
        return Effect.uninterruptible(Effect.flatMap(Deferred.make<"written" | "lead", ArtifactError>(), (done) => {
          const entry: Entry = { bytes: line.right, done }
          pending.push(entry)
          if (!leading) {
            leading = true
            return lead()
          }
          return Effect.flatMap(Deferred.await(done), (signal) => signal === "lead" ? lead() : Effect.void)
        }))
      })
  })
