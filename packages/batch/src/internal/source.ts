/**
 * Pulling a source one item at a time.
 *
 * @internal
 */
import { Chunk, Effect, Option, Predicate, Stream } from "effect"
import type { Scope } from "effect"
import type { Source } from "../Source.js"
import { isCollection, SourceError } from "../Source.js"

/** @internal */
export interface Puller<I, E, R> {
  /** The next item, or `None` once the source is exhausted. */
  readonly pull: Effect.Effect<Option.Option<I>, E, R>
  /** Pulls may suspend (an async iterable, a stream): they are serialised and raced with the stop. */
  readonly async: boolean
  /**
   * `pull` as one synchronous step, for sources that never suspend (arrays, iterables): the next item, `END` once
   * the source is exhausted, or its failure (no `Option` and `Either` per item).
   */
  readonly unsafePull?: () => I | typeof END | PullFailed<E>
  /**
   * A collection of known size (see `Source.isCollection`): all of its items were handed over, so each
   * gets a result, and a stop does not end the pulling (the rest get the stop's result, without a call).
   */
  readonly sized: boolean
}

/** What `Puller.unsafePull` returns once the source is exhausted (this module's own: never an item). @internal */
export const END: unique symbol = Symbol("end")

/** A source's failure, as `Puller.unsafePull` returns it (this module's own class: never an item). @internal */
export class PullFailed<E> {
  constructor(readonly error: E) {}
}

/** `unsafePull`'s answer as `pull`'s. */
const asPulled = <I, E>(pulled: I | typeof END | PullFailed<E>): Effect.Effect<Option.Option<I>, E> =>
  pulled === END
    ? Effect.succeed(Option.none())
    : pulled instanceof PullFailed
    ? Effect.fail(pulled.error as E)
    : Effect.succeed(Option.some(pulled as I))

const sourceError = (cause: unknown) => new SourceError({ message: "the source failed while being pulled", cause })

const isStream = (u: unknown): u is Stream.Stream<unknown, unknown, unknown> =>
  Predicate.hasProperty(u, Stream.StreamTypeId)

const isAsyncIterable = (u: unknown): u is AsyncIterable<unknown> => Predicate.hasProperty(u, Symbol.asyncIterator)

/**
 * Opens a source in the current scope: closing the scope closes the source (an iterator's `return`, an
 * async iterator's `return`, a stream's finalizers).
 *
 * @internal
 */
export const open = <I, E, R>(
  source: Source<I, E, R>
): Effect.Effect<Puller<I, E | SourceError, R>, never, Scope.Scope | R> => {
  if (Array.isArray(source) || Chunk.isChunk(source)) {
    const items: ReadonlyArray<I> = Array.isArray(source) ? source : Chunk.toReadonlyArray(source as Chunk.Chunk<I>)
    let i = 0
    const unsafePull = (): I | typeof END => (i < items.length ? items[i++]! : END)
    return Effect.succeed({
      pull: Effect.sync(() => (i < items.length ? Option.some(items[i++]!) : Option.none())),
      async: false,
      unsafePull,
      sized: true
    })
  }
  if (isStream(source)) {
    return Effect.map(Stream.toPull(source as Stream.Stream<I, E, R>), (pullChunk) => {
      let buffer: Chunk.Chunk<I> = Chunk.empty()
      let done = false
      const pull: Effect.Effect<Option.Option<I>, E, R> = Effect.suspend(() => {
        if (Chunk.isNonEmpty(buffer)) {
          const head = Chunk.headNonEmpty(buffer)
          buffer = Chunk.drop(buffer, 1)
          return Effect.succeed(Option.some(head))
        }
        if (done) return Effect.succeed(Option.none())
        return Effect.matchEffect(pullChunk, {
          onFailure: (e) => {
            done = true
            return Option.isNone(e) ? Effect.succeed(Option.none()) : Effect.fail(e.value)
          },
          onSuccess: (chunk) => {
            buffer = chunk
            return pull
          }
        })
      })
      return { pull, async: true, sized: false }
    })
  }
  if (isAsyncIterable(source)) {
    return Effect.suspend(() => {
      const iterator = (source as AsyncIterable<I>)[Symbol.asyncIterator]()
      let done = false
      let pending = false
      const close = Effect.suspend(() => {
        if (done || iterator.return === undefined) return Effect.void
        done = true
        // A pull abandoned at a stop is still pending: the iterator closes once it settles. Waiting for it
        // could hang the run on a source that never answers, so the close is started and not awaited.
        return pending
          ? Effect.sync(() => void iterator.return!().then(undefined, () => undefined))
          : Effect.tryPromise(() => iterator.return!()).pipe(Effect.ignore)
      })
      const pull: Effect.Effect<Option.Option<I>, SourceError> = Effect.suspend(() => {
        if (done) return Effect.succeed(Option.none())
        pending = true
        return Effect.tryPromise({ try: () => iterator.next(), catch: sourceError }).pipe(
          Effect.map((r) => {
            pending = false
            if (r.done === true) {
              done = true
              return Option.none()
            }
            return Option.some(r.value)
          }),
          Effect.tapError(() =>
            Effect.sync(() => {
              pending = false
              done = true
            })
          )
        )
      })
      return Effect.as(Effect.addFinalizer(() => close), { pull, async: true, sized: false })
    })
  }
  return Effect.suspend(() => {
    const iterator = (source as Iterable<I>)[Symbol.iterator]()
    let done = false
    const unsafePull = (): I | typeof END | PullFailed<SourceError> => {
      if (done) return END
      try {
        const r = iterator.next()
        if (r.done === true) {
          done = true
          return END
        }
        return r.value
      } catch (cause) {
        done = true
        return new PullFailed(sourceError(cause))
      }
    }
    const pull: Effect.Effect<Option.Option<I>, SourceError> = Effect.suspend(() => asPulled(unsafePull()))
    const close = Effect.sync(() => {
      if (done) return
      done = true
      try {
        iterator.return?.()
      } catch {
        // A source that throws while closing has nothing more to give; the run's outcome stands.
      }
    })
    return Effect.as(Effect.addFinalizer(() => close), { pull, async: false, unsafePull, sized: isCollection(source) })
  })
}
