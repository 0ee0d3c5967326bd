/**
 * Streaming execution with commit-once. Before the first caller-visible delta, a failing stream retries or
 * falls back like any attempt. At the first delta the request commits: from then on a failure is
 * terminal, output is never spliced from another model, and a stream that ends without its terminator is
 * reported as a failure, never as a clean end. Usage and cost of the committed attempt are settled when
 * the stream ends, fails, or the consumer stops early.
 *
 * The contract's `attemptTimeout` bounds the time a stream attempt waits on its provider: to the first delta,
 * then between deltas while the consumer waits for the next. It is paused while the consumer holds a delta
 * (from the moment a delta is handed over until the consumer asks for the next), so a slow consumer never
 * times out the provider's attempt. The deadline covers everything, the consumer's time included.
 *
 * @since 0.1.0
 */
import { Cause, Chunk, Effect, Exit, Fiber, Option, Scope, Stream } from "effect"
import type { Contract } from "./Contract.js"
import { INTERRUPTED, journaled } from "./Execute.js"
import type { ProviderFailure } from "./Failure.js"
import * as Attempt from "./internal/attempt.js"
import type { Rein } from "./internal/context.js"
import * as Loop from "./internal/loop.js"
import * as BoundedPull from "./internal/pull.js"
import * as Stages from "./internal/stages.js"
import * as Outcome from "./Outcome.js"
import type { CompletionRequest, StreamPart } from "./Provider.js"
import type { Usage } from "./Usage.js"

/**
 * What a streamed request emits: text deltas from the one committed endpoint, then its completion (the
 * full attempts record, usage and cost; `text` holds the whole answer).
 *
 * @example
 * ```ts
 * import { Option, Stream } from "effect"
 * import type { Streaming } from "@rein/core"
 *
 * const textOnly = (events: Stream.Stream<Streaming.Event>) =>
 *   Stream.filterMap(events, (e) => (e._tag === "Delta" ? Option.some(e.text) : Option.none()))
 * ```
 * @category models
 * @since 0.1.0
 */
export type Event =
  | {
    readonly _tag: "Delta"
    readonly text: string
    readonly endpoint: string
    /** The provider part's opaque payload (for an `@effect/ai` model: the stream part), when it has one. */
    readonly payload?: unknown
  }
  | { readonly _tag: "Completed"; readonly completion: Outcome.Completion }

type Step =
  | { readonly _tag: "End" }
  | { readonly _tag: "Failed"; readonly failure: ProviderFailure }
  | { readonly _tag: "Expired" }

/**
 * Executes one request as a stream of deltas (see the module summary for the commit rule).
 *
 * @example
 * ```ts
 * import { Effect, Stream } from "effect"
 * import { Streaming } from "@rein/core"
 * import type { Contract } from "@rein/core"
 *
 * declare const contract: Contract.Contract
 * const printed = Streaming.executeStream({ prompt: "hi", inputTokens: 5 }, contract).pipe(
 *   Stream.runForEach((e) => Effect.log(e._tag === "Delta" ? e.text : "done"))
 * )
 * ```
 * @category execution
 * @since 0.1.0
 */
export const executeStream = (
  request: CompletionRequest,
  contract: Contract
): Stream.Stream<Event, Outcome.Terminal, Rein> =>
  Stages.unwrapScoped(Effect.gen(function*() {
    const env = yield* Loop.prepare(request, contract, true)
    const truncationFails = contract.truncation === "fail"
    const committed = yield* journaled(
      env,
      Loop.loop<Attempt.Opened, Loop.Committed<Attempt.Opened>>(env, {
        attempt: (provider, context, timeoutMillis, k) =>
          Attempt.open(provider, request, context, timeoutMillis, env.graceMillis, k, truncationFails),
        commit: Effect.succeed
      })
    )
    const opened = committed.payload
    const endpoint = committed.endpoint.id
    let usage: Usage = "unknown"
    let sawDone = false
    let finishReason: Outcome.FinishReason | undefined = undefined
    const text: Array<string> = []
    let finished = false
    // The attempt's timeout counts the time spent waiting on the provider, not the consumer's: it is paused
    // while the consumer holds a delta. The deadline covers everything (see `internal/pull.ts`).
    const bound = yield* BoundedPull.make(opened.pull, committed.endsNanos, env.deadline.expiresNanos, env.graceMillis)

    // Until the stream is finished, closing the consumer's scope tears the provider stream down and records
    // the attempt as interrupted (usage unknown unless reported: the reservation stays charged).
    yield* Effect.addFinalizer(() =>
      Effect.zipRight(
        bound.stop,
        finished ? Effect.void : Effect.flatMap(close(opened.scope, env.graceMillis), (closed) =>
          Effect.zipRight(
            committed.finish(
              usage === "unknown"
                ? { _tag: "Interrupted", ...closed }
                : { _tag: "Success", payload: undefined, usage }
            ),
            env.writer === undefined ? Effect.void : env.writer.end(INTERRUPTED)
          ))
      )
    )

    const absorb = (part: StreamPart) => {
      if (part.usage !== undefined) {
        usage = part.usage
      }
      if (part.done === true) {
        sawDone = true
      }
      if (part.finishReason !== undefined) finishReason = part.finishReason
      text.push(part.delta)
    }

    /** A failed pull: the provider's failure, the stream's end, or a defect. */
    const stepOf = (cause: Cause.Cause<Option.Option<ProviderFailure>>): Step =>
      cause._tag !== "Fail"
        ? { _tag: "Failed", failure: Attempt.DEFECT }
        : Option.isSome(cause.error)
        ? { _tag: "Failed", failure: cause.error.value }
        : { _tag: "End" }

    const finishWith = (
      end: Attempt.AttemptEnd<unknown>
    ): Effect.Effect<Chunk.Chunk<Event>, Outcome.Terminal> =>
      Effect.gen(function*() {
        finished = true
        yield* bound.stop
        yield* close(opened.scope, env.graceMillis)
        // Bound by the deadline, or by an attempt timeout that holds paused past it: the deadline ended it, and
        // the record says so.
        const atDeadline = end._tag === "Timeout" && (committed.binding === "deadline" || pastDeadline(env))
        const record = yield* committed.finish(end, atDeadline)
        if (end._tag === "Success") {
          const completed: Outcome.Completion = {
            text: text.join(""),
            endpoint,
            provider: committed.endpoint.provider,
            model: committed.endpoint.model,
            usage: record.usage,
            cost: Loop.totalCost(committed.progress.records),
            simulated: record.simulated,
            attempts: committed.progress.records,
            ...(finishReason === undefined ? {} : { finishReason }),
            ...Loop.withId(env.requestId)
          }
          if (env.writer !== undefined) yield* env.writer.end(completed)
          return Chunk.of<Event>({ _tag: "Completed", completion: completed })
        }
        if (atDeadline) {
          const error = new Outcome.DeadlineExceeded({
            phase: "attempt",
            reason: `the deadline expired while streaming from ${endpoint}`,
            lastFailure: Loop.causeOf(committed.progress),
            teardownUnconfirmed: false,
            attempts: committed.progress.records,
            ...Loop.withId(env.requestId)
          }, true)
          if (env.writer !== undefined) yield* env.writer.end(error)
          return yield* Effect.fail(error)
        }
        const error = yield* committed.stopCommitted
        if (env.writer !== undefined) yield* env.writer.end(error)
        return yield* Effect.fail(error)
      })

    const eventsOf = (parts: Iterable<StreamPart>): Chunk.Chunk<Event> => {
      const events: Array<Event> = []
      for (const part of parts) {
        absorb(part)
        if (part.payload !== undefined) {
          events.push({ _tag: "Delta", text: part.delta, endpoint, payload: part.payload })
        } else if (part.delta.length > 0) events.push({ _tag: "Delta", text: part.delta, endpoint })
      }
      return Chunk.unsafeFromArray(events)
    }

    const ended = (step: Step): Effect.Effect<Chunk.Chunk<Event>, Outcome.Terminal> => {
      switch (step._tag) {
        case "End":
          return finishWith(
            !sawDone
              ? { _tag: "Failure", failure: Attempt.TRUNCATED }
              : truncationFails && finishReason === "length"
              // Cut at the output limit after commit: a failure, never a clean end.
              ? { _tag: "Failure", failure: Attempt.truncated(usage), finishReason }
              : { _tag: "Success", payload: undefined, usage, finishReason }
          )
        case "Failed":
          return finishWith({ _tag: "Failure", failure: step.failure })
        case "Expired":
          return finishWith({ _tag: "Timeout", confirmed: true, settled: Effect.void })
      }
    }

    // One provider chunk is one chunk of events: no stream per part, no race per pull (see `internal/pull.ts`),
    // no stage per chunk (`internal/stages.ts`; `undefined` is the end).
    let first = true
    const next = Effect.suspend((): Effect.Effect<Chunk.Chunk<Event> | undefined, Outcome.Terminal> => {
      if (finished) return END
      if (first) {
        first = false
        return Effect.succeed(eventsOf(opened.first))
      }
      return Effect.flatMap(bound.next, (result) =>
        Option.isNone(result)
          ? ended(EXPIRED)
          : Exit.isSuccess(result.value)
          ? Effect.succeed(eventsOf(result.value.value))
          : ended(stepOf(result.value.cause)))
    })
    return Stages.repeat(next)
  }))

/** Whether the request's deadline has come. */
const pastDeadline = (env: Loop.Env): boolean => env.clock.unsafeCurrentTimeNanos() >= env.deadline.expiresNanos

const END = Effect.succeed(undefined)
const EXPIRED: Step = { _tag: "Expired" }

/** Closes a provider stream's scope, waiting at most the teardown grace: whether it closed in time, and the
 * effect that completes when it does. */
const close = (
  scope: Scope.CloseableScope,
  graceMillis: number
): Effect.Effect<{ readonly confirmed: boolean; readonly settled: Effect.Effect<void> }> =>
  Effect.flatMap(
    Effect.forkDaemon(Scope.close(scope, Exit.void)),
    (fiber) =>
      Effect.map(Attempt.endsWithin(fiber, graceMillis), (confirmed) => ({ confirmed, settled: Fiber.await(fiber) }))
  )
