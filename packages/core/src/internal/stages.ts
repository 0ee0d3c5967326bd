/**
 * Stream stages that cost nothing per chunk (a streamed answer's path, #22). Effect's `Stream.unwrapScoped`
 * flattens a stream of one stream: every chunk of the inner stream crosses a `ConcatAll` of the channel
 * executor (a child executor, a subexecutor step per chunk). `unwrapScoped` here is the same as a channel
 * continuation: the inner stream runs in the same executor and its chunks pass through untouched (the same
 * chunks and errors; pinned against Effect's own in `Stages.test.ts`). `repeat` is `Stream.repeatEffectChunkOption` without the
 * `Option`s and tuples of its `unfoldChunkEffect` per chunk.
 *
 * @internal
 */
import { Channel, Chunk, Effect, Exit, Scope, Stream } from "effect"

/**
 * `Stream.unwrapScoped` without its per-chunk stage: the effect runs in a scope of its own (closed with the
 * effect's failure if it fails), closed with the stream's exit once the stream ended. One difference, for
 * an inner stream with finalizers of its own: when it fails, Effect's closes the scope before them, this one
 * after them (as on a clean end). `executeStream`'s inner stream (`repeat`) has none. @internal
 */
export const unwrapScoped = <A, E2, R2, E, R>(
  effect: Effect.Effect<Stream.Stream<A, E2, R2>, E, R>
): Stream.Stream<A, E | E2, Exclude<R, Scope.Scope> | R2> =>
  Stream.fromChannel(
    Channel.unwrap(Effect.uninterruptibleMask((restore) =>
      Effect.map(Scope.make(), (scope) =>
        Channel.ensuringWith(
          Channel.flatMap(
            Channel.fromEffect(
              Effect.tapErrorCause(
                restore(Scope.extend(effect, scope)),
                (cause) => Scope.close(scope, Exit.failCause(cause))
              )
            ),
            Stream.toChannel
          ),
          (exit) => Scope.close(scope, exit)
        ))
    ))
  )

/**
 * The chunks `pull` answers, each emitted as it is (an empty one too), until it answers `undefined` (the end)
 * or fails: `Stream.repeatEffectChunkOption` with the end as `undefined` instead of `Option.none()`. @internal
 */
export const repeat = <A, E, R>(
  pull: Effect.Effect<Chunk.Chunk<A> | undefined, E, R>
): Stream.Stream<A, E, R> => {
  const again = () => loop
  const loop: Channel.Channel<Chunk.Chunk<A>, unknown, E, unknown, unknown, unknown, R> = Channel.flatMap(
    Channel.fromEffect(pull),
    (chunk) => chunk === undefined ? Channel.void : Channel.flatMap(Channel.write(chunk), again)
  )
  return Stream.fromChannel(loop)
}
