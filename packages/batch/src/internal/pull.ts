/**
 * Pulling: one item at a time from the source when a worker is free, each accepted item given its index.
 * A collection's items were all handed over: after a stop it is still pulled, to the end, and each item
 * gets the stop's result without a call; a lazy source stops being pulled, and a pull that has not answered
 * at a stop is abandoned (that item was never accepted).
 *
 * @internal
 */
import { Effect, Option } from "effect"
import type { Puller } from "./source.js"
import { END, PullFailed } from "./source.js"
import type { RunState } from "./state.js"

/** An accepted item and its index. @internal */
export type Pulled<I> = Option.Option<readonly [I, number]>

/** Where `Pulling.pullNow` puts the accepted item and its index (one per worker, reused: no tuple per item). @internal */
export interface Slot<I> {
  item: I | undefined
  index: number
}

/** @internal */
export interface Pulling<I, E, R> {
  /** The next accepted item, or `None` when there is nothing more to pull. */
  readonly pull: Effect.Effect<Pulled<I>, never, R>
  /**
   * `pull` as one synchronous step, when the source never suspends (`undefined` otherwise): puts the next accepted
   * item into `into`, or answers `false` when there is nothing more to pull.
   */
  readonly pullNow: ((into: Slot<I>) => boolean) | undefined
  /** The source's failure, if it failed (the run fails with it after the accepted items finished). */
  readonly failure: () => Option.Option<E>
}

const STOPPED = Symbol("stopped")

/** @internal */
export const make = <I, E, R>(
  state: RunState<I>,
  puller: Puller<I, E, R>,
  ordered: boolean
): Effect.Effect<Pulling<I, E, R>> =>
  Effect.gen(function*() {
    let sourceFailure: Option.Option<E> = Option.none()
    let exhausted = false
    const stats = state.stats
    const sized = puller.sized

    /** Counts an accepted item: its index. */
    const acceptIndex = (): number => {
      const index = stats.accepted++
      state.observer?.accepted()
      return index
    }
    const accept = (next: Option.Option<I>): Pulled<I> => {
      if (Option.isNone(next)) {
        exhausted = true
        return Option.none()
      }
      return Option.some([next.value, acceptIndex()] as const)
    }
    const failed = (e: E): Pulled<I> => {
      exhausted = true
      if (Option.isNone(sourceFailure)) sourceFailure = Option.some(e)
      return Option.none()
    }
    const onSourceError = (e: E) => Effect.sync(() => failed(e))

    const pullLock = puller.async ? yield* Effect.makeSemaphore(1) : undefined
    const pull: Effect.Effect<Pulled<I>, never, R> = pullLock === undefined
      ? Effect.suspend(() =>
        (state.stopped !== undefined && !sized) || exhausted
          ? Effect.succeed(Option.none())
          : Effect.matchEffect(puller.pull, { onFailure: onSourceError, onSuccess: (o) => Effect.succeed(accept(o)) })
      )
      : pullLock.withPermits(1)(Effect.suspend(() =>
        state.stopped !== undefined || exhausted
          ? Effect.succeed(Option.none())
          : Effect.raceFirst(Effect.either(puller.pull), Effect.as(state.closedAwait, STOPPED)).pipe(
            Effect.flatMap((r) =>
              r === STOPPED
                ? Effect.succeed(Option.none())
                : r._tag === "Left"
                ? onSourceError(r.left)
                : Effect.succeed(accept(r.right))
            )
          )
      ))

    const unsafePull = puller.unsafePull
    // One pull as a synchronous step (a source that never suspends, outside submission order).
    const pullNow = unsafePull === undefined || ordered
      ? undefined
      : (into: Slot<I>): boolean => {
        if ((state.stopped !== undefined && !sized) || exhausted) return false
        const pulled = unsafePull()
        if (pulled === END) {
          exhausted = true
          return false
        }
        if (pulled instanceof PullFailed) {
          failed(pulled.error as E)
          return false
        }
        into.item = pulled as I
        into.index = acceptIndex()
        return true
      }

    return { pull, pullNow, failure: () => sourceFailure }
  })
