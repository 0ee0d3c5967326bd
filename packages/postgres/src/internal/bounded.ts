/**
 * What every shared service does the same way: bound a database step by its query timeout, and label this
 * process in the rows it holds.
 *
 * @internal
 */
import { Duration, Effect } from "effect"
import { hostname } from "node:os"

/**
 * Bounds a database step by `timeout`, failing with `onTimeout()` then. The caller gets its answer on time even
 * when the statement cannot be interrupted at once (the driver's cancel of a query on a server that stopped
 * answering waits for seconds): the interruption finishes in the background.
 */
export const bounded =
  <E2>(timeout: Duration.DurationInput, onTimeout: () => E2) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | E2, R> =>
    effect.pipe(Effect.disconnect, Effect.timeoutFail({ duration: Duration.decode(timeout), onTimeout }))

/** The label of this process in the rows it holds: the one given, else `hostname:pid`. */
export const holderLabel = (label: string | undefined): string => label ?? `${hostname()}:${process.pid}`
