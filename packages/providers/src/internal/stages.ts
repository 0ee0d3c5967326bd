/**
 * Stream stages that cost nothing per chunk. Effect's `Stream.unwrap`, `Stream.provideService` and
 * `Stream.provideSomeContext` are built on `Stream.flatMap` (a stream of one stream, flattened): every chunk of
 * the inner stream then crosses a `ConcatAll` of the channel executor (a child executor, a subexecutor step per
 * chunk). These are the same operations as channel continuations: the inner stream runs in the same executor
 * and its chunks pass through untouched (the same chunks, errors, finalizers and their order; pinned against
 * Effect's own in `Stages.test.ts`). `mapParts` is `Stream.mapEffect` for a function that answers most elements at
 * once: no effect run per element. Used on a streamed answer's path, where a stage per delta showed (#22).
 *
 * @internal
 */
import { Channel, Chunk, Context, Effect, Stream } from "effect"

/** `Stream.unwrap` without its per-chunk stage. @internal */
export const unwrap = <A, E2, R2, E, R>(
  effect: Effect.Effect<Stream.Stream<A, E2, R2>, E, R>
): Stream.Stream<A, E | E2, R | R2> => Stream.fromChannel(Channel.unwrap(Effect.map(effect, Stream.toChannel)))

/** `Stream.mapInputContext` without its per-chunk stage. @internal */
export const mapInputContext = <A, E, R0, R>(
  self: Stream.Stream<A, E, R>,
  f: (context: Context.Context<R0>) => Context.Context<R>
): Stream.Stream<A, E, R0> => Stream.fromChannel(Channel.mapInputContext(Stream.toChannel(self), f))

/** `Stream.provideSomeContext` without its per-chunk stage. @internal */
export const provideSomeContext = <A, E, R, R2>(
  self: Stream.Stream<A, E, R>,
  context: Context.Context<R2>
): Stream.Stream<A, E, Exclude<R, R2>> =>
  mapInputContext(
    self as Stream.Stream<A, E, R2 | Exclude<R, R2>>,
    (outer: Context.Context<Exclude<R, R2>>) => Context.merge(outer, context)
  )

/** `Stream.provideService` without its per-chunk stages. @internal */
export const provideService = <A, E, R, I, S>(
  self: Stream.Stream<A, E, R>,
  tag: Context.Tag<I, S>,
  service: S
): Stream.Stream<A, E, Exclude<R, I>> =>
  mapInputContext(
    self as Stream.Stream<A, E, I | Exclude<R, I>>,
    (outer: Context.Context<Exclude<R, I>>) => Context.add(outer, tag, service)
  )

/**
 * `Stream.mapEffect(self, f)` (sequential: every element its own chunk, in order, `f` called when the element
 * is reached, the elements before a failing one emitted first) for an `f` that answers an element at once, or
 * fails the stream with an effect (run, as `mapEffect` runs it, in its place). @internal
 */
export const mapParts = <A, E, R, B, E2>(
  self: Stream.Stream<A, E, R>,
  f: (a: A) => B | Effect.Effect<never, E2>
): Stream.Stream<B, E | E2, R> => {
  const reader: Channel.Channel<Chunk.Chunk<B>, Chunk.Chunk<A>, E | E2, E, unknown, unknown> = Channel.readWithCause({
    onInput: (chunk: Chunk.Chunk<A>) => emit(chunk, 0),
    onFailure: Channel.failCause,
    onDone: Channel.succeed
  })
  const emit = (
    chunk: Chunk.Chunk<A>,
    i: number
  ): Channel.Channel<Chunk.Chunk<B>, Chunk.Chunk<A>, E | E2, E, unknown, unknown> => {
    if (i >= chunk.length) return reader
    const b = f(Chunk.unsafeGet(chunk, i))
    return Effect.isEffect(b)
      ? Channel.fromEffect(b as Effect.Effect<never, E2>)
      : Channel.flatMap(Channel.write(Chunk.of(b)), () => emit(chunk, i + 1))
  }
  return Stream.pipeThroughChannel(self, reader)
}
