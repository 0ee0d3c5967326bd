/**
 * Streaming execution with commit-once. Before the first caller-visible delta, a failing stream retries or
 * falls back like any attempt. At the first delta the request commits: from then on a failure is
 * terminal, output is never spliced from another model, and a stream that ends without its terminator is
 * reported as a failure, never as a clean end. Usage and cost of the committed attempt are settled when
 * the stream ends, fails, or the consumer stops early.
 *
 * @since 0.1.0
 */
import { Clock, Duration, Effect, Exit, Fiber, Option, Scope, Stream } from "effect"
import type { Contract } from "./Contract.js"
import { INTERRUPTED, journaled } from "./Execute.js"
import type { ProviderFailure } from "./Failure.js"
import * as Attempt from "./internal/attempt.js"
import type { Rein } from "./internal/context.js"
import { clampMillis } from "./internal/duration.js"
import * as Loop from "./internal/loop.js"
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
  | { readonly _tag: "Part"; readonly part: StreamPart }
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
  Stream.unwrapScoped(Effect.gen(function*() {
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

    // Until the stream is finished, closing the consumer's scope tears the provider stream down and records
    // the attempt as interrupted (usage unknown unless reported: the reservation stays charged).
    yield* Effect.addFinalizer(() =>
      finished ? Effect.void : Effect.flatMap(
        close(opened.scope, env.graceMillis),
        (closed) =>
          Effect.zipRight(
            committed.finish(
              usage === "unknown"
                ? { _tag: "Interrupted", ...closed }
                : { _tag: "Success", payload: undefined, usage }
            ),
            env.writer === undefined ? Effect.void : env.writer.end(INTERRUPTED)
          )
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

    const pullStep: Effect.Effect<ReadonlyArray<Step>> = Effect.flatMap(Clock.currentTimeNanos, (now) => {
      const left = Number(committed.endsNanos - now) / 1e6
      if (left <= 0) {
        return Effect.succeed([{ _tag: "Expired" } as const])
      }
      return Effect.timeoutOption(Effect.exit(opened.pull), Duration.millis(clampMillis(left))).pipe(
        Effect.map((result): ReadonlyArray<Step> => {
          if (Option.isNone(result)) {
            return [{ _tag: "Expired" }]
          }
          const exit = result.value
          if (Exit.isSuccess(exit)) {
            return Array.from(exit.value, (part) => ({ _tag: "Part", part }) as const)
          }
          const failure = Exit.causeOption(exit).pipe(
            Option.flatMap((c) => Option.flatten(Option.fromNullable(c._tag === "Fail" ? c.error : undefined)))
          )
          if (Option.isSome(failure)) return [{ _tag: "Failed", failure: failure.value }]
          const isEnd = exit.cause._tag === "Fail" && Option.isNone(exit.cause.error)
          return isEnd ? [{ _tag: "End" }] : [{ _tag: "Failed", failure: Attempt.DEFECT }]
        })
      )
    })

    const finishWith = (end: Attempt.AttemptEnd<unknown>): Effect.Effect<Stream.Stream<Event, Outcome.Terminal>> =>
      Effect.gen(function*() {
        finished = true
        yield* close(opened.scope, env.graceMillis)
        const record = yield* committed.finish(end)
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
            ...(finishReason === undefined ? {} : { finishReason })
          }
          if (env.writer !== undefined) yield* env.writer.end(completed)
          return Stream.succeed<Event>({ _tag: "Completed", completion: completed })
        }
        if (end._tag === "Timeout" && committed.binding === "deadline") {
          const error = new Outcome.DeadlineExceeded({
            phase: "attempt",
            reason: `the deadline expired while streaming from ${endpoint}`,
            cause: Loop.causeOf(committed.progress),
            teardownUnconfirmed: false,
            attempts: committed.progress.records
          }, true)
          if (env.writer !== undefined) yield* env.writer.end(error)
          return Stream.fail<Outcome.Terminal>(error)
        }
        const error = yield* committed.stopCommitted
        if (env.writer !== undefined) yield* env.writer.end(error)
        return Stream.fail<Outcome.Terminal>(error)
      })

    const first: ReadonlyArray<Step> = opened.first.map((part) => ({ _tag: "Part", part }) as const)
    const steps = Stream.concat(
      Stream.fromIterable(first),
      Stream.repeatEffect(pullStep).pipe(Stream.flattenIterables)
    )
    return steps.pipe(
      Stream.takeUntil((s) => s._tag !== "Part"),
      Stream.flatMap((s): Stream.Stream<Event, Outcome.Terminal> => {
        switch (s._tag) {
          case "Part": {
            absorb(s.part)
            if (s.part.payload !== undefined) {
              return Stream.succeed<Event>({ _tag: "Delta", text: s.part.delta, endpoint, payload: s.part.payload })
            }
            return s.part.delta.length === 0
              ? Stream.empty
              : Stream.succeed<Event>({ _tag: "Delta", text: s.part.delta, endpoint })
          }
          case "End":
            return Stream.unwrap(finishWith(
              !sawDone
                ? { _tag: "Failure", failure: Attempt.TRUNCATED }
                : truncationFails && finishReason === "length"
                // Cut at the output limit after commit: a failure, never a clean end.
                ? { _tag: "Failure", failure: Attempt.truncated(usage), finishReason }
                : { _tag: "Success", payload: undefined, usage, finishReason }
            ))
          case "Failed":
            return Stream.unwrap(finishWith({ _tag: "Failure", failure: s.failure }))
          case "Expired":
            return Stream.unwrap(finishWith({ _tag: "Timeout", confirmed: true, settled: Effect.void }))
        }
      })
    )
  }))

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
