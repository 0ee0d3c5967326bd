/**
 * Running one physical attempt: in its own fiber, bounded by a timeout, torn down with a bounded grace.
 *
 * @internal
 */
import type { Clock } from "effect"
import { Cause, Chunk, Effect, Exit, Fiber, FiberId, Option, Runtime, Scope, Stream } from "effect"
import { ProviderFailure } from "../Failure.js"
import type { ProviderResponse, StreamPart } from "../Provider.js"
import type { Usage } from "../Usage.js"
import { clampMillis } from "./duration.js"
import * as Timers from "./timers.js"

/** How one attempt ended, before it becomes a record. @internal */
export type AttemptEnd<S> =
  | { readonly _tag: "Success"; readonly payload: S; readonly usage: Usage }
  | { readonly _tag: "Failure"; readonly failure: ProviderFailure }
  | {
    readonly _tag: "Timeout"
    readonly confirmed: boolean
    /** Completes when an unconfirmed teardown finally ends. */
    readonly settled: Effect.Effect<void>
  }

/** A defect or self-interruption inside provider code: unclassifiable, so `unknown` (never retried). @internal */
export const DEFECT = new ProviderFailure({ kind: "unknown", code: "provider_defect", dispatched: true })

/** A stream that ended without its terminator. @internal */
export const TRUNCATED = new ProviderFailure({ kind: "transport", code: "stream_truncated", dispatched: true })

const failureOf = <E>(cause: Cause.Cause<E>): ProviderFailure => {
  // Provider prose inside a defect is dropped on purpose: it may hold prompts or secrets.
  const failure = Cause.failureOption(cause)
  return Option.isSome(failure) && failure.value instanceof ProviderFailure ? failure.value : DEFECT
}

/**
 * Interrupts the attempt and waits at most `grace` for its finalizers; `true` when teardown completed.
 * Teardown runs in uninterruptible regions (finalizers, `onInterrupt`): the wait itself must stay
 * interruptible, or the grace timer could never cut it short.
 *
 * @internal
 */
export const teardown = <A, E>(fiber: Fiber.RuntimeFiber<A, E>, graceMillis: number): Effect.Effect<boolean> =>
  Effect.suspend(() => {
    fiber.unsafeInterruptAsFork(FiberId.none)
    return endsWithin(fiber, graceMillis)
  })

/**
 * Waits for `fiber` at most `millis`: `None` when the time ran out first. The bound is an entry in the
 * clock's one timer (see `timers.ts`), not a fiber of its own.
 */
const awaitWithin = <A, E>(
  clock: Clock.Clock,
  runtime: Runtime.Runtime<never>,
  fiber: Fiber.RuntimeFiber<A, E>,
  millis: number
): Effect.Effect<Option.Option<Exit.Exit<A, E>>> =>
  Effect.async<Option.Option<Exit.Exit<A, E>>>((resume) => {
    let done = false
    const at = clock.unsafeCurrentTimeNanos() + BigInt(Math.ceil(clampMillis(millis) * 1e6))
    const entry = Timers.schedule(clock, runtime, at, () => {
      if (done) return
      done = true
      fiber.removeObserver(onExit)
      resume(NONE)
    })
    const onExit = (exit: Exit.Exit<A, E>) => {
      if (done) return
      done = true
      Timers.cancel(clock, entry)
      resume(Effect.succeed(Option.some(exit)))
    }
    // A fiber that already ended calls `onExit` at once.
    fiber.addObserver(onExit)
    return Effect.sync(() => {
      if (done) return
      done = true
      fiber.removeObserver(onExit)
      Timers.cancel(clock, entry)
    })
  })

const NONE = Effect.succeed(Option.none<never>())

/**
 * Waits for `fiber` at most `millis` (interruptibly, so it may run inside a finalizer); `true` when it ended.
 *
 * @internal
 */
export const endsWithin = <A, E>(fiber: Fiber.RuntimeFiber<A, E>, millis: number): Effect.Effect<boolean> =>
  Effect.clockWith((clock) =>
    Effect.flatMap(
      Effect.runtime<never>(),
      (runtime) => Effect.map(Effect.interruptible(awaitWithin(clock, runtime, fiber, millis)), Option.isSome)
    )
  )

/**
 * Runs `work` in its own fiber bounded by `timeoutMillis`, so that a provider ignoring interruption cannot
 * hold the caller past the teardown grace. Caller interruption tears the attempt down (within the grace)
 * before it propagates.
 *
 * The attempt's fiber is started at once and runs synchronously until its first asynchronous step: a
 * provider that answers without suspending costs no timer and no scheduler hop. One that suspends costs an
 * entry in the clock's one timer.
 *
 * @internal
 */
export const bounded = <S>(
  work: Effect.Effect<AttemptEnd<S>>,
  timeoutMillis: number,
  graceMillis: number
): Effect.Effect<AttemptEnd<S>> =>
  Effect.clockWith((clock) =>
    Effect.flatMap(Effect.runtime<never>(), (runtime) =>
      Effect.uninterruptibleMask((restore) => {
        const fiber = Runtime.runFork(runtime)(Effect.interruptible(work))
        const polled = fiber.unsafePoll()
        if (polled !== null) {
          return Exit.isSuccess(polled) ? Effect.succeed(polled.value) : Effect.failCause(polled.cause)
        }
        return restore(awaitWithin(clock, runtime, fiber, timeoutMillis)).pipe(
          Effect.onInterrupt(() => teardown(fiber, graceMillis)),
          Effect.flatMap((result) =>
            Option.isSome(result)
              ? Exit.isSuccess(result.value)
                ? Effect.succeed(result.value.value)
                : Effect.failCause(result.value.cause)
              : Effect.map(teardown(fiber, graceMillis), (confirmed): AttemptEnd<S> => ({
                _tag: "Timeout",
                confirmed,
                settled: Effect.asVoid(Fiber.await(fiber))
              }))
          )
        )
      }))
  )

/** One call as an attempt. @internal */
export const call = (
  effect: Effect.Effect<ProviderResponse, ProviderFailure>,
  timeoutMillis: number,
  graceMillis: number
): Effect.Effect<AttemptEnd<string>> =>
  bounded(
    Effect.map(
      Effect.exit(effect),
      (exit): AttemptEnd<string> =>
        Exit.isSuccess(exit)
          ? { _tag: "Success", payload: exit.value.text, usage: exit.value.usage }
          : { _tag: "Failure", failure: failureOf(exit.cause) }
    ),
    timeoutMillis,
    graceMillis
  )

/** A stream that delivered its first visible delta: the rest is pulled from `pull` until `scope` closes. @internal */
export interface Opened {
  readonly first: ReadonlyArray<StreamPart>
  readonly pull: Effect.Effect<Chunk.Chunk<StreamPart>, Option.Option<ProviderFailure>>
  readonly scope: Scope.CloseableScope
}

/**
 * Opens a provider stream and pulls until the first caller-visible delta (or a clean end, or a failure).
 * The stream's resources live in their own scope, closed on failure here and by the caller after commit.
 *
 * @internal
 */
export const open = (
  stream: Stream.Stream<StreamPart, ProviderFailure>,
  timeoutMillis: number,
  graceMillis: number
): Effect.Effect<AttemptEnd<Opened>> =>
  Effect.flatMap(Scope.make(), (scope) => {
    const work = Effect.gen(function*() {
      const pull = yield* Scope.extend(Stream.toPull(stream), scope)
      const seen: Array<StreamPart> = []
      while (true) {
        const exit = yield* Effect.exit(pull)
        if (Exit.isFailure(exit)) {
          const failure = Cause.failureOption(exit.cause)
          if (Option.isSome(failure) && Option.isNone(failure.value)) {
            // The stream ended before any visible delta: complete if it said so, truncated otherwise.
            const done = seen.some((p) => p.done === true)
            const usage = seen.reduce<Usage>((u, p) => p.usage ?? u, "unknown")
            yield* Scope.close(scope, Exit.void)
            return done
              ? { _tag: "Success", payload: { first: seen, pull: EMPTY_PULL, scope }, usage } as AttemptEnd<Opened>
              : { _tag: "Failure", failure: TRUNCATED } as AttemptEnd<Opened>
          }
          yield* Scope.close(scope, Exit.void)
          const provider = Option.isSome(failure) && Option.isSome(failure.value) ? failure.value.value : undefined
          return { _tag: "Failure", failure: provider ?? failureOf(exit.cause) } as AttemptEnd<Opened>
        }
        const parts = Chunk.toReadonlyArray(exit.value)
        seen.push(...parts)
        if (parts.some((p) => p.delta.length > 0) || parts.some((p) => p.done === true)) {
          return { _tag: "Success", payload: { first: seen, pull, scope }, usage: "unknown" } as AttemptEnd<Opened>
        }
      }
    })
    return bounded(
      work.pipe(Effect.onInterrupt(() => Scope.close(scope, Exit.void))),
      timeoutMillis,
      graceMillis
    )
  })

const EMPTY_PULL: Effect.Effect<Chunk.Chunk<StreamPart>, Option.Option<ProviderFailure>> = Effect.fail(Option.none())
