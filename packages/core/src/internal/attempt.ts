/**
 * Running one physical attempt: in its own fiber, bounded by a timeout, torn down with a bounded grace.
 *
 * @internal
 */
import {
  Cause,
  Chunk,
  Clock,
  Context,
  Effect,
  Exit,
  Fiber,
  FiberId,
  FiberRef,
  Option,
  Runtime,
  RuntimeFlags,
  Scope,
  Stream
} from "effect"
import { ProviderFailure } from "../Failure.js"
import type { FinishReason, ToolCallCount } from "../Outcome.js"
import { countToolCalls } from "../Outcome.js"
import type { AttemptContext, CompletionRequest, Provider, ProviderResponse, StreamPart } from "../Provider.js"
import type { Usage } from "../Usage.js"
import * as Fork from "./fork.js"
import { IDLE, keepMap } from "./maps.js"
import * as Timers from "./timers.js"

/** How one attempt ended, before it becomes a record. @internal */
export type AttemptEnd<S> =
  | { readonly _tag: "Success"; readonly payload: S; readonly usage: Usage } & Answer
  | { readonly _tag: "Failure"; readonly failure: ProviderFailure } & Answer
  | {
    readonly _tag: "Timeout"
    readonly confirmed: boolean
    /** Completes when an unconfirmed teardown finally ends. */
    readonly settled: Effect.Effect<void>
  }
  | {
    /** The caller interrupted while the attempt ran: torn down (within the grace) before this end. */
    readonly _tag: "Interrupted"
    readonly confirmed: boolean
    readonly settled: Effect.Effect<void>
  }

/** What an attempt's record keeps of the answer (never its text or tool parameters). @internal */
export interface Answer {
  readonly finishReason?: FinishReason | undefined
  readonly toolCalls?: ReadonlyArray<ToolCallCount> | undefined
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
 * Watches `fiber` for at most `millis`: `onEnd` is called once, with the fiber's exit, or with `undefined`
 * when the time ran out first. The bound is an entry in the clock's one timer (see `timers.ts`), not a
 * fiber of its own, so it fires whatever the caller's interruptibility (also inside finalizers). The
 * returned function stops watching (nothing happens once `onEnd` was called).
 */
const watch = <A, E>(
  clock: Clock.Clock,
  runtime: Runtime.Runtime<never>,
  fiber: Fiber.RuntimeFiber<A, E>,
  millis: number,
  onEnd: (exit: Exit.Exit<A, E> | undefined) => void
): () => void => {
  // A fiber that already ended (a teardown whose attempt processed its interruption before its caller ran)
  // needs no timer entry: arming and disarming the clock's sleeper for it costs a fork and an interruption.
  const ended = fiber.unsafePoll()
  if (ended !== null) {
    onEnd(ended)
    return NOOP
  }
  let done = false
  const entry = Timers.after(clock, runtime, millis, () => {
    if (done) return
    done = true
    fiber.removeObserver(onExit)
    onEnd(undefined)
  })
  const onExit = (exit: Exit.Exit<A, E>) => {
    if (done) return
    done = true
    Timers.cancel(clock, entry)
    onEnd(exit)
  }
  // A fiber that already ended calls `onExit` at once.
  fiber.addObserver(onExit)
  return () => {
    if (done) return
    done = true
    fiber.removeObserver(onExit)
    Timers.cancel(clock, entry)
  }
}

const NOOP = (): void => {}

/** Waits for `fiber` at most `millis`: `None` when the time ran out first. */
const awaitWithin = <A, E>(
  clock: Clock.Clock,
  runtime: Runtime.Runtime<never>,
  fiber: Fiber.RuntimeFiber<A, E>,
  millis: number
): Effect.Effect<Option.Option<Exit.Exit<A, E>>> =>
  Effect.async<Option.Option<Exit.Exit<A, E>>>((resume) =>
    Effect.sync(
      watch(clock, runtime, fiber, millis, (exit) =>
        resume(exit === undefined ? NONE : Effect.succeed(Option.some(exit))))
    )
  )

const NONE = Effect.succeed(Option.none<never>())

const runtimeOf = (fiber: Fiber.RuntimeFiber<unknown, unknown>, flags: RuntimeFlags.RuntimeFlags) =>
  Runtime.make({ context: fiber.currentContext, fiberRefs: fiber.getFiberRefs(), runtimeFlags: flags })

/**
 * Interrupts `fiber` (unless it ended or `interrupted` says it already was) and waits at most `graceMillis`
 * for its finalizers; `true` when teardown completed. A second interruption is not free: even an ended fiber
 * takes the message in a scheduler task of its own and adds it to its interruption cause (a hash of the cause).
 *
 * @internal
 */
const teardown = <A, E>(
  clock: Clock.Clock,
  runtime: Runtime.Runtime<never>,
  fiber: Fiber.RuntimeFiber<A, E>,
  graceMillis: number,
  interrupted: boolean
): Effect.Effect<boolean> =>
  Effect.suspend(() => {
    if (fiber.unsafePoll() !== null) return TORN_DOWN
    if (!interrupted) fiber.unsafeInterruptAsFork(FiberId.none)
    return Effect.map(awaitWithin(clock, runtime, fiber, graceMillis), Option.isSome)
  })

const TORN_DOWN = Effect.succeed(true)

/**
 * Waits for `fiber` at most `millis` (also inside a finalizer); `true` when it ended.
 *
 * @internal
 */
export const endsWithin = <A, E>(fiber: Fiber.RuntimeFiber<A, E>, millis: number): Effect.Effect<boolean> =>
  Effect.withFiberRuntime((self, status) =>
    Effect.map(
      awaitWithin(
        Context.get(self.currentDefaultServices, Clock.Clock),
        runtimeOf(self, status.runtimeFlags),
        fiber,
        millis
      ),
      Option.isSome
    )
  )

/**
 * What the caller does once the attempt has ended. `then` is called synchronously while interruption is
 * still held off, so that the caller records and settles the attempt before any interruption can land; the
 * effect it returns runs interruptibly. `interrupted` runs (after teardown, uninterruptibly) when the caller is
 * interrupted while the attempt runs, with how the teardown went.
 *
 * @internal
 */
export interface Continue<S, B, E2> {
  /** The clock's reading when the attempt started: its timeout counts from it (else from when it is watched). */
  readonly startNanos?: bigint
  /** Called synchronously once the attempt runs in its own fiber (not when it ended without suspending). */
  readonly started?: (fiber: Fiber.RuntimeFiber<unknown, unknown>) => void
  /**
   * `fiber`: the caller's own fiber, when `then` runs in one of its steps (always, but for a provider that threw
   * before returning its effect): what the continuation would otherwise ask of the fiber in an effect of its own
   * (its minimum log level, its span) it can read here, in this step.
   */
  readonly then: (end: AttemptEnd<S>, fiber?: Fiber.RuntimeFiber<unknown, unknown>) => Effect.Effect<B, E2>
  readonly interrupted: (end: Extract<AttemptEnd<S>, { readonly _tag: "Interrupted" }>) => Effect.Effect<void>
}

/**
 * Runs `work` in its own fiber bounded by `timeoutMillis`, so that a provider ignoring interruption cannot
 * hold the caller past the teardown grace; `end` turns the fiber's exit into the attempt's end, handed to
 * `k.then`. Caller interruption tears the attempt down (waiting at most the grace), runs `k.interrupted`,
 * and propagates.
 *
 * The attempt's fiber is started at once and runs synchronously until its first asynchronous step: a
 * provider that answers without suspending costs no timer and no scheduler hop. One that suspends costs an
 * entry in the clock's one timer (due `timeoutMillis` after `k.startNanos`, the attempt's recorded start, when
 * given) and one wait. The fork happens inside the uninterruptible region, so no
 * interruption can slip between starting the fiber and watching it, nor between its end and `k.then`.
 *
 * @internal
 */
export const bounded = <A, E, S, B, E2>(
  work: Effect.Effect<A, E>,
  end: (exit: Exit.Exit<A, E>) => AttemptEnd<S>,
  timeoutMillis: number,
  graceMillis: number,
  k: Continue<S, B, E2>
): Effect.Effect<B, E2> =>
  Effect.uninterruptibleMask((restore) =>
    Effect.withFiberRuntime<B, E2>((parent, status) => {
      const clock = Context.get(parent.currentDefaultServices, Clock.Clock)
      // Made once per caller fiber while its references stay the same (see `fork.ts`).
      const site = Fork.siteOf(parent, RuntimeFlags.enable(status.runtimeFlags, RuntimeFlags.Interruption))
      const runtime = site.runtime
      // The provider's fiber never fails: its exit is data (a failing fiber would also be logged).
      const fiber = site.fork(asExit(work))
      const polled = fiber.unsafePoll()
      if (polled !== null) return restoreUnlessDone(restore, k.then(end(Exit.flatten(polled)), parent), parent)
      k.started?.(fiber)
      const waiting = new Waiting(parent, clock, runtime, fiber, timeoutMillis, graceMillis, end, k, restore)
      return Effect.matchCauseEffect(restore(Effect.async(waiting.register)), waiting)
    })
  )

/**
 * One suspended attempt's wait and what follows it, in one object: the fiber's observer, the timer's callback,
 * the wait's registration and its two continuations are its fields, not a closure (and a closure context) per
 * step: this runs once per attempt that suspends.
 */
class Waiting<A, E, S, B, E2> implements Timers.Entry {
  private done = false
  // The wait is its own timer entry (see `Timers.Entry`): `fire` is the timeout.
  key = 0
  seq = 0
  index = -1
  prev: Timers.Entry | undefined = undefined
  next: Timers.Entry | undefined = undefined
  private resume: ((effect: Effect.Effect<Exit.Exit<A, E> | undefined>) => void) | undefined = undefined
  constructor(
    /** The caller's fiber: `onSuccess` runs in one of its steps. */
    private readonly parent: Fiber.RuntimeFiber<unknown, unknown>,
    private readonly clock: Clock.Clock,
    private readonly runtime: Runtime.Runtime<never>,
    private readonly fiber: Fiber.RuntimeFiber<Exit.Exit<A, E>>,
    private readonly timeoutMillis: number,
    private readonly graceMillis: number,
    private readonly end: (exit: Exit.Exit<A, E>) => AttemptEnd<S>,
    private readonly k: Continue<S, B, E2>,
    /** The caller's own interruptibility (the rest runs uninterruptibly: see `bounded`). */
    private readonly restore: <X, EX, RX>(effect: Effect.Effect<X, EX, RX>) => Effect.Effect<X, EX, RX>
  ) {}

  /** Starts watching: the fiber's exit, or `undefined` when the timeout came first. (No canceler: `onFailure` stops.) */
  readonly register = (resume: (effect: Effect.Effect<Exit.Exit<A, E> | undefined>) => void): void => {
    if (this.done) return
    this.resume = resume
    // A fiber that already ended needs no timer entry (as in `watch`).
    const ended = this.fiber.unsafePoll()
    if (ended !== null) return this.onExit(ended)
    const from = this.k.startNanos
    if (from === undefined) Timers.scheduleIn(this.clock, this.runtime, this.timeoutMillis, this)
    else Timers.scheduleFrom(this.clock, this.runtime, from, this.timeoutMillis, this)
    // A fiber that already ended calls `onExit` at once.
    this.fiber.addObserver(this.onExit)
  }

  private readonly onExit = (exit: Exit.Exit<Exit.Exit<A, E>>): void => {
    if (this.done) return
    this.done = true
    Timers.cancel(this.clock, this)
    // The attempt's fiber ends in success (its exit is data: see `asExit`), and an `Exit` is an effect: resumed
    // with it, the caller goes on with its value without a `succeed` (and its run-loop step) per attempt.
    this.resume!(Exit.isSuccess(exit) ? exit : Effect.succeed(Exit.flatten(exit)))
  }

  /** The timeout (called by the timer). */
  fire(): void {
    if (this.done) return
    this.done = true
    this.fiber.removeObserver(this.onExit)
    // Timed out: the attempt's teardown starts here, in the timer's own step, not when this caller's fiber
    // next runs. With many expiries at once, the attempts' fibers then process their interruption in the same
    // scheduler pass as their callers (one pass, not two). `teardown` below waits for it within the grace, as
    // before, without interrupting it a second time.
    this.fiber.unsafeInterruptAsFork(FiberId.none)
    this.resume!(TIMED_OUT)
  }

  /** Stops watching (nothing happens once the wait ended). */
  private stop(): void {
    if (this.done) return
    this.done = true
    this.fiber.removeObserver(this.onExit)
    Timers.cancel(this.clock, this)
  }

  // Only interruption reaches here: the wait itself never fails.
  readonly onFailure = (cause: Cause.Cause<never>): Effect.Effect<never, E2> => {
    this.stop()
    const { fiber, k } = this
    return Effect.zipRight(
      Effect.flatMap(
        // A gate that cancels requests may have interrupted the attempt already (see `Gate.Running`).
        teardown(this.clock, this.runtime, fiber, this.graceMillis, false),
        (confirmed) => k.interrupted({ _tag: "Interrupted", confirmed, settled: Effect.asVoid(Fiber.await(fiber)) })
      ),
      Effect.failCause(cause)
    )
  }

  readonly onSuccess = (exit: Exit.Exit<A, E> | undefined): Effect.Effect<B, E2> => {
    const parent = this.parent
    if (exit !== undefined) return restoreUnlessDone(this.restore, this.k.then(this.end(exit), parent), parent)
    // Timed out: torn down (within the grace) before the caller goes on, whatever interrupts it. The attempt
    // was interrupted in the timer's step and usually processed it before this caller ran: then its teardown
    // is confirmed here, in this step (no teardown effect to run).
    const { fiber, k } = this
    if (fiber.unsafePoll() !== null) return restoreUnlessDone(this.restore, k.then(TIMED_OUT_CONFIRMED, parent), parent)
    return Effect.flatMap(
      teardown(this.clock, this.runtime, fiber, this.graceMillis, true),
      (confirmed) =>
        this.restore(k.then(
          confirmed ? TIMED_OUT_CONFIRMED : { _tag: "Timeout", confirmed, settled: Effect.asVoid(Fiber.await(fiber)) },
          parent
        ))
    )
  }
}

/**
 * `restore(effect)`, unless the effect is already its result (an `Exit`: a committed answer's completion, an
 * expired request's `DeadlineExceeded`): that does no work an interruption could cut short. A success: an
 * interruption pending now lands as the uninterruptible region ends, just as it would have landed on `restore`
 * (the completion dropped either way). A failure: only when `fiber` (the caller's, running this step) has no
 * interruption pending, else through `restore` as before: an interruption landing on the region's end would
 * keep the failure beside it in the cause, where `restore` leaves the interruption alone. Saves a
 * runtime-flags step, its revert and their objects on every successful attempt and every expiry.
 */
const restoreUnlessDone = <X, EX>(
  restore: <Y, EY, RY>(effect: Effect.Effect<Y, EY, RY>) => Effect.Effect<Y, EY, RY>,
  effect: Effect.Effect<X, EX>,
  fiber: Fiber.RuntimeFiber<unknown, unknown>
): Effect.Effect<X, EX> =>
  Exit.isExit(effect) &&
    (Exit.isSuccess(effect) || Cause.isEmpty(fiber.getFiberRef(FiberRef.interruptedCause)))
    ? effect
    : restore(effect)

// Its map outlives a full collection between runs (see `internal/maps.ts`): doubles for the two bounds.
// Its timer key is a double too (nanoseconds past the timer's origin outgrow a small integer at once).
const idleWaiting = new Waiting(IDLE, IDLE, IDLE, IDLE, 0.5, 0.5, IDLE, IDLE, IDLE)
idleWaiting.key = 0.5
keepMap(idleWaiting)

const TIMED_OUT = Effect.succeed(undefined)

/** The handlers of `Effect.exit`, made once: `Effect.exit` builds two closures and two option objects per call. */
interface AsExit<A, E> {
  onFailure(cause: Cause.Cause<E>): Effect.Effect<Exit.Exit<A, E>>
  onSuccess(a: A): Effect.Effect<Exit.Exit<A, E>>
}

const AS_EXIT: AsExit<unknown, unknown> = {
  onFailure: (cause) => Effect.succeed(Exit.failCause(cause)),
  onSuccess: (a) => Effect.succeed(Exit.succeed(a))
}

/** `Effect.exit(work)`, without allocating its handlers. */
const asExit = <A, E>(work: Effect.Effect<A, E>): Effect.Effect<Exit.Exit<A, E>> =>
  Effect.matchCauseEffect(work, AS_EXIT as AsExit<A, E>)

/** A timeout whose teardown is confirmed: the attempt's fiber has ended, so there is nothing left to await. */
const TIMED_OUT_CONFIRMED: AttemptEnd<never> = { _tag: "Timeout", confirmed: true, settled: Effect.void }

/**
 * The ends a call makes, every one with the same fields in the same order (the absent ones `undefined`, which
 * every reader treats as absent): one hidden class in V8, so the readers of an end (`recordOf`, the settlements),
 * optimized on a run of successes, are not deoptimized by the first failure (#22). A committed answer's end
 * (`Execute.commit`) is made by `answered` too.
 *
 * @internal
 */
export const answered = <S>(
  payload: S,
  usage: Usage,
  finishReason: FinishReason | undefined,
  toolCalls: ReadonlyArray<ToolCallCount> | undefined
): AttemptEnd<S> => ({ _tag: "Success", payload, usage, failure: undefined, finishReason, toolCalls }) as AttemptEnd<S>

const failedWith = (
  failure: ProviderFailure,
  finishReason?: FinishReason,
  toolCalls?: ReadonlyArray<ToolCallCount>
): AttemptEnd<never> =>
  ({ _tag: "Failure", payload: undefined, usage: undefined, failure, finishReason, toolCalls }) as AttemptEnd<never>

const callEnd = (exit: Exit.Exit<ProviderResponse, ProviderFailure>): AttemptEnd<ProviderResponse> => {
  if (!Exit.isSuccess(exit)) return failedWith(failureOf(exit.cause))
  const response = exit.value
  return response.finishReason === undefined && response.toolCalls === undefined
    ? answered(response, response.usage, undefined, undefined)
    : answered(response, response.usage, response.finishReason, countToolCalls(response.toolCalls))
}

const DEFECT_END: AttemptEnd<never> = failedWith(DEFECT)

/** An answer cut at the output limit, as a failure (the contract's `truncation: "fail"`). @internal */
export const truncated = (usage: Usage): ProviderFailure =>
  new ProviderFailure({
    kind: "truncated",
    code: "finish_length",
    dispatched: true,
    ...(usage === "unknown" ? {} : { usage })
  })

/** `callEnd`, where a `length` finish is the failure `truncated`. */
const strictCallEnd = (exit: Exit.Exit<ProviderResponse, ProviderFailure>): AttemptEnd<ProviderResponse> => {
  const end = callEnd(exit)
  return end._tag === "Success" && end.finishReason === "length"
    ? failedWith(truncated(end.usage), "length", end.toolCalls)
    : end
}

/**
 * One call as an attempt; with `truncationFails`, an answer cut at the output limit is a failure. Provider
 * code that throws before it returns its effect ends the attempt exactly like a defect inside the effect
 * (`unknown`, never retried; what it threw is dropped), handed to `k.then` at once: the throw happens in the
 * caller's synchronous step, so no interruption can land before it.
 *
 * @internal
 */
export const call = <B, E2>(
  provider: Provider,
  request: CompletionRequest,
  context: AttemptContext,
  timeoutMillis: number,
  graceMillis: number,
  k: Continue<ProviderResponse, B, E2>,
  truncationFails = false
): Effect.Effect<B, E2> => {
  let effect: Effect.Effect<ProviderResponse, ProviderFailure>
  try {
    effect = provider.call(request, context)
  } catch {
    return k.then(DEFECT_END)
  }
  return bounded(effect, truncationFails ? strictCallEnd : callEnd, timeoutMillis, graceMillis, k)
}

/** A stream that delivered its first visible delta: the rest is pulled from `pull` until `scope` closes. @internal */
export interface Opened {
  readonly first: ReadonlyArray<StreamPart>
  readonly pull: Effect.Effect<Chunk.Chunk<StreamPart>, Option.Option<ProviderFailure>>
  readonly scope: Scope.CloseableScope
}

/**
 * Opens the provider's stream and pulls until the first caller-visible delta (or a clean end, or a failure).
 * The stream's resources live in their own scope, closed on failure here and by the caller after commit.
 *
 * @internal
 */
export const open = <B, E2>(
  provider: Provider,
  request: CompletionRequest,
  context: AttemptContext,
  timeoutMillis: number,
  graceMillis: number,
  k: Continue<Opened, B, E2>,
  truncationFails = false
): Effect.Effect<B, E2> => {
  // Like `call`: a stream function that throws is a defect of the attempt, never of the caller.
  let stream: Stream.Stream<StreamPart, ProviderFailure>
  try {
    stream = provider.stream!(request, context)
  } catch {
    return k.then(DEFECT_END)
  }
  return Effect.flatMap(Scope.make(), (scope) => {
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
            if (done && truncationFails && seen.some((p) => p.finishReason === "length")) {
              return { _tag: "Failure", failure: truncated(usage), finishReason: "length" } as AttemptEnd<Opened>
            }
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
        // The first visible part commits: text, or a part the adapter marks visible (reasoning, tool-call
        // deltas). Metadata before it is held and emitted after commit, from this endpoint only.
        if (parts.some((p) => p.delta.length > 0 || p.visible === true || p.done === true)) {
          return { _tag: "Success", payload: { first: seen, pull, scope }, usage: "unknown" } as AttemptEnd<Opened>
        }
      }
    })
    return bounded(
      work.pipe(Effect.onInterrupt(() => Scope.close(scope, Exit.void))),
      openEnd,
      timeoutMillis,
      graceMillis,
      k
    )
  })
}

const openEnd = (exit: Exit.Exit<AttemptEnd<Opened>>): AttemptEnd<Opened> =>
  Exit.isSuccess(exit) ? exit.value : { _tag: "Failure", failure: failureOf(exit.cause) }

const EMPTY_PULL: Effect.Effect<Chunk.Chunk<StreamPart>, Option.Option<ProviderFailure>> = Effect.fail(Option.none())
