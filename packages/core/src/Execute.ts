/**
 * Executes one request: the interpreter of planner decisions for a single answer. Each attempt runs in its
 * own fiber, bounded by `min(attemptTimeout, remaining)`; when that bound expires or the caller interrupts,
 * the attempt is interrupted and given `teardownGrace` to run its finalizers (HTTP abort, process kill).
 * Rein returns after the grace even if the provider ignores interruption, and says so
 * (`teardownUnconfirmed`). Caller interruption propagates as interruption, after teardown.
 *
 * @since 0.1.0
 */
import { Cause, Effect, Exit, Option, RuntimeFlags } from "effect"
import type { Contract } from "./Contract.js"
import * as Attempt from "./internal/attempt.js"
import type { Rein } from "./internal/context.js"
import * as Loop from "./internal/loop.js"
import { IDLE, keepMap } from "./internal/maps.js"
import type { Writer } from "./Journal.js"
import * as Outcome from "./Outcome.js"
import type { AttemptContext, CompletionRequest, Provider, ProviderResponse } from "./Provider.js"

/**
 * The failure table after a contract's narrowing and widening.
 *
 * @category planning
 * @since 0.1.0
 */
export const effectiveTable = Loop.effectiveTable

/**
 * Builds the planner's static view of a request.
 *
 * @category planning
 * @since 0.1.0
 */
export const makeSpec = Loop.makeSpec

/**
 * Closes the request's journal entry with its outcome (no-op without a journal). Without `toOutcome` a
 * success leaves the entry open: a committed stream closes it when the stream ends.
 *
 * `Effect.onExit`'s guarantee (the entry is closed however the request ends, an interruption included),
 * with `interruptible`: whether the caller's region is, read by the caller in its own step. With it the
 * region is entered in one step (not `uninterruptibleMask`'s two), and not at all when the caller is
 * uninterruptible already.
 *
 * @internal
 */
export const journaled = <A>(
  env: Loop.Env,
  effect: Effect.Effect<A, Outcome.Terminal>,
  toOutcome?: (a: A) => Outcome.Completion,
  interruptible?: boolean
): Effect.Effect<A, Outcome.Terminal> => {
  const writer = env.writer
  if (writer === undefined) return effect
  if (interruptible === undefined) {
    return Effect.uninterruptibleMask((restore) => closing(writer, restore(effect), toOutcome))
  }
  return interruptible
    ? Effect.uninterruptible(closing(writer, Effect.interruptible(effect), toOutcome))
    : closing(writer, effect, toOutcome)
}

/**
 * The request, then its entry closed with how it ended (`Effect.onExit`'s handling of the end's own failure).
 * The end runs in the handler's own step when the writer can (`unsafeEnd`) and its sink's effect is an `Exit`:
 * then closing the entry takes no effect step of its own.
 */
const closing = <A>(
  writer: Writer,
  effect: Effect.Effect<A, Outcome.Terminal>,
  toOutcome: ((a: A) => Outcome.Completion) | undefined
): Effect.Effect<A, Outcome.Terminal> =>
  Effect.matchCauseEffect(effect, {
    onFailure: (cause) => {
      const end = ending(writer, Cause.isFailType(cause) ? cause.error : outcomeOf(cause))
      if (isExit(end)) return Exit.failCause(Exit.isSuccess(end) ? cause : Cause.sequential(cause, end.cause))
      return Effect.matchCauseEffect(end, {
        onFailure: (ended) => Exit.failCause(Cause.sequential(cause, ended)),
        onSuccess: () => Exit.failCause(cause)
      })
    },
    onSuccess: (a) => {
      if (toOutcome === undefined) return Exit.succeed(a)
      const end = ending(writer, toOutcome(a))
      return isExit(end) ? Exit.as(end, a) : Effect.as(end, a)
    }
  })

/** How a request that did not fail alone with its error ended: a defect is journaled as what it is, and only an
 * interruption alone is `Interrupted`. */
const outcomeOf = (cause: Cause.Cause<Outcome.Terminal>): Parameters<Writer["end"]>[0] => {
  const failure = Cause.failureOption(cause)
  return Option.isSome(failure) ? failure.value : Cause.isInterruptedOnly(cause) ? INTERRUPTED : DEFECT
}

/** `Exit.isExit` keeping the effect's types (an effect that is an `Exit` is one of its own success and error). */
const isExit = <A, E>(effect: Effect.Effect<A, E>): effect is Exit.Exit<A, E> => Exit.isExit(effect)

/** The writer's end: its work done now when it can (`unsafeEnd`; a throw is the end's defect, as in `end`). */
const ending = (writer: Writer, outcome: Parameters<Writer["end"]>[0]): Effect.Effect<void> => {
  if (writer.unsafeEnd === undefined) return writer.end(outcome)
  try {
    return writer.unsafeEnd(outcome)
  } catch (defect) {
    return Exit.die(defect)
  }
}

/** @internal */
export const INTERRUPTED = { _tag: "Interrupted" } as const

const DEFECT = { _tag: "Defect" } as const

/**
 * Executes one request under a contract (see `Rein.execute`).
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Execute } from "@rein/core"
 * import type { Contract } from "@rein/core"
 *
 * declare const contract: Contract.Contract
 * const completion = Execute.execute({ prompt: "hi", inputTokens: 5 }, contract)
 * ```
 * @category execution
 * @since 0.1.0
 */
export const execute = (
  request: CompletionRequest,
  contract: Contract
): Effect.Effect<Outcome.Completion, Outcome.Terminal, Rein> =>
  Effect.withFiberRuntime((fiber, status) => {
    const interruptible = RuntimeFlags.interruption(status.runtimeFlags)
    const prepared = Loop.prepareIn(fiber, request, contract, false)
    // Only the request id is left to draw: the request runs in the draw's own continuation, from one reading
    // of the clock taken there (a step after `prepareIn`'s: not its origin).
    if (prepared instanceof Loop.Unnamed) {
      return Effect.flatMap(prepared.draw, (n) => {
        const env = prepared.named(n)
        return run(request, env, interruptible, env.clock.unsafeCurrentTimeNanos())
      })
    }
    // Prepared in this step: the request's start is the clock's reading for its first steps (see `Loop.Now`).
    return Effect.isEffect(prepared)
      ? Effect.flatMap(prepared, (env) => run(request, env, interruptible))
      : run(request, prepared, interruptible, prepared.deadline.originNanos)
  })

const run = (
  request: CompletionRequest,
  env: Loop.Env,
  interruptible: boolean,
  now?: Loop.Now
): Effect.Effect<Outcome.Completion, Outcome.Terminal> =>
  journaled(
    env,
    Loop.run<ProviderResponse, Outcome.Completion>(env, new Calling(request, env), now),
    identity,
    interruptible
  )

const identity = <A>(a: A): A => a

/** The loop's driver for one answer: every attempt is one call. (A class, so that a request allocates one
 * object, not a closure per request.) */
class Calling implements Loop.Driver<ProviderResponse, Outcome.Completion> {
  constructor(readonly request: CompletionRequest, readonly env: Loop.Env) {}
  attempt(
    provider: Provider,
    context: AttemptContext,
    timeoutMillis: number,
    k: Attempt.Continue<ProviderResponse, Outcome.Completion, Outcome.Terminal>
  ): Effect.Effect<Outcome.Completion, Outcome.Terminal> {
    const env = this.env
    return Attempt.call(
      provider,
      this.request,
      context,
      timeoutMillis,
      env.graceMillis,
      k,
      env.contract.truncation === "fail"
    )
  }
  commit(committed: Loop.Committed<ProviderResponse>): Effect.Effect<Outcome.Completion> {
    return commit(committed)
  }
}

// Its map outlives a full collection between runs (see `internal/maps.ts`).
keepMap(new Calling(IDLE, IDLE))

/** A committed answer becomes the completion (its record settled in the same step). */
const commit = (committed: Loop.Committed<ProviderResponse>): Effect.Effect<Outcome.Completion> => {
  const response = committed.payload
  const [record, settling] = committed.finishNow(
    response.finishReason === undefined && response.toolCalls === undefined
      ? Attempt.answered(undefined, committed.usage, undefined, undefined)
      : Attempt.answered(undefined, committed.usage, response.finishReason, Outcome.countToolCalls(response.toolCalls))
  )
  const completion = answerOf(baseOf(committed, record, response.text), response)
  return settling === undefined ? Effect.succeed(completion) : Effect.as(settling, completion)
}

/**
 * The completion of a plain answer: its request's id (when it has one) written in the literal, not spread in
 * after (a copy of the completion: 0.45 KB more per answer under a journal, measured with `bench/ab/ab-reqid.mjs`).
 */
const baseOf = (
  committed: Loop.Committed<ProviderResponse>,
  record: Outcome.AttemptRecord,
  text: string
): Outcome.Completion => {
  const { id: endpoint, model, provider } = committed.endpoint
  const { records: attempts, requestId } = committed.progress
  const { simulated, usage } = record
  const cost = Loop.totalCost(attempts)
  return requestId === undefined
    ? { text, endpoint, provider, model, usage, cost, simulated, attempts }
    : { text, endpoint, provider, model, usage, cost, simulated, attempts, requestId }
}

/** The completion with what the answer carries beyond text (only when it does: a plain answer allocates nothing). */
const answerOf = (base: Outcome.Completion, response: ProviderResponse): Outcome.Completion =>
  response.finishReason === undefined && response.toolCalls === undefined && response.reasoning === undefined &&
    response.payload === undefined
    ? base
    : {
      ...base,
      ...(response.finishReason === undefined ? {} : { finishReason: response.finishReason }),
      ...(response.toolCalls === undefined ? {} : { toolCalls: response.toolCalls }),
      ...(response.reasoning === undefined ? {} : { reasoning: response.reasoning }),
      ...(response.payload === undefined ? {} : { payload: response.payload })
    }
