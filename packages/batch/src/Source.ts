/**
 * Where a run's items come from: an array, any iterable (a generator, possibly infinite), an async iterable
 * or an Effect `Stream`. Items are pulled one at a time, only when a worker is free to execute one. The
 * source is closed when the run ends, however it ends.
 *
 * Two kinds of source, two meanings of "accepted":
 *
 * - A **collection** (an array, a `Chunk`, a `Set`: its size is known, its items already exist) hands all
 *   of its items over. Every item gets exactly one terminal result with its submission index: when the run
 *   stops early, the items not started get the stop's result (`batch_aborted`, `batch_deadline_exceeded`,
 *   `batch_budget_exceeded`) without a call, in the artifact as an audit record and as an `ItemFailed` event.
 * - A **lazy** source (any other iterable, an async iterable, a `Stream`) hands over only what is pulled:
 *   an item never pulled was never accepted and is never materialised (for a `Stream`, the unit of
 *   materialisation is the stream's chunk; only pulled items are accepted). To run an array lazily, pass
 *   `array.values()`.
 *
 * @since 0.1.0
 */
import { Chunk, Schema } from "effect"
import type { Stream } from "effect"

/**
 * A run's items.
 *
 * @example
 * ```ts
 * import type { Source } from "@rein/batch"
 *
 * function* forever() {
 *   let i = 0
 *   while (true) yield `prompt ${i++}`
 * }
 * const source: Source.Source<string> = forever()
 * ```
 * @category models
 * @since 0.1.0
 */
export type Source<I, E = never, R = never> = Iterable<I> | AsyncIterable<I> | Stream.Stream<I, E, R>

/**
 * Whether a source is a collection of known size (an array, a `Chunk`, a `Set`), whose every item is
 * handed over to the run and gets a result, rather than a lazy source.
 *
 * @example
 * ```ts
 * import { Source } from "@rein/batch"
 *
 * Source.isCollection(["a", "b"]) // true
 * Source.isCollection(["a", "b"].values()) // false: pulled lazily
 * ```
 * @category guards
 * @since 0.1.0
 */
export const isCollection = (source: unknown): boolean =>
  Array.isArray(source) || Chunk.isChunk(source) || source instanceof Set

/**
 * An iterable or async iterable threw or rejected while the run pulled from it. The run stops pulling,
 * lets the accepted items finish, then fails with this error.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import type { Batch, Source } from "@rein/batch"
 *
 * declare const run: Effect.Effect<Batch.Summary<string>, Source.SourceError>
 * const safe = run.pipe(Effect.catchTag("SourceError", (e) => Effect.die(e.cause)))
 * ```
 * @category errors
 * @since 0.1.0
 */
export class SourceError extends Schema.TaggedError<SourceError>()("SourceError", {
  message: Schema.String,
  cause: Schema.Unknown
}) {}
