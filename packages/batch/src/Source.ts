/**
 * Where a run's items come from: an array, any iterable (a generator, possibly infinite), an async iterable
 * or an Effect `Stream`. Items are pulled one at a time, only when a worker is free to execute one, so an
 * item that is never pulled is never materialised (for a `Stream`, the unit of materialisation is the
 * stream's chunk; only pulled items are accepted). The source is closed when the run ends, however it ends.
 *
 * @since 0.1.0
 */
import type { Stream } from "effect"
import { Schema } from "effect"

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
 * @since 0.1.0
 */
export type Source<I, E = never, R = never> = Iterable<I> | AsyncIterable<I> | Stream.Stream<I, E, R>

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
 * @since 0.1.0
 */
export class SourceError extends Schema.TaggedError<SourceError>()("SourceError", {
  message: Schema.String,
  cause: Schema.Unknown
}) {}
