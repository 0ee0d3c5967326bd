/**
 * Results: turning an item's exit into its one terminal result (the stop's collateral, fail-fast), and
 * publishing it — appended to the artifact first, counted, announced, then delivered in completion order or
 * in submission order (a buffer until every earlier result is published).
 *
 * @internal
 */
import type { Outcome } from "@rein/core"
import { stackless } from "@rein/core/Stackless"
import { Cause, Effect, Exit, Option } from "effect"
import type { Category } from "../Category.js"
import * as Categories from "../Category.js"
import type * as Events from "../Events.js"
import { summarise } from "../Events.js"
import type { Failed, ItemError, ItemResult, Succeeded } from "../Result.js"
import { ArtifactFailed, BatchAborted, BatchBudgetExceeded, BatchDeadlineExceeded, categoryOf } from "../Result.js"
import type { Stop } from "../Termination.js"
import type { ItemState, RunState } from "./state.js"
import { stop } from "./state.js"

/** What every result of an item carries. @internal */
export interface Base<I> {
  readonly index: number
  readonly itemId: string
  readonly item: I
  readonly durationMillis: number
}

/** @internal */
export interface Results<I> {
  /** The stop's result for an item it caught (never started, or interrupted by it). */
  readonly collateral: (
    base: Base<I>,
    stop: Stop,
    cause: Outcome.Cause | null,
    attempts: ReadonlyArray<Outcome.AttemptRecord>
  ) => Failed<I>
  /** The result of an executed item (a failure of a configured category trips fail-fast). */
  readonly toResult: (
    exit: Exit.Exit<Outcome.Completion, Outcome.Terminal>,
    base: Base<I>,
    it: ItemState
  ) => Effect.Effect<Succeeded<I> | Failed<I>>
  /** Persists, counts, announces and publishes one result. */
  readonly complete: (result: ItemResult<I>) => Effect.Effect<void>
}

const causeOf = (e: ItemError | Outcome.Terminal): Outcome.Cause | null => (e._tag === "Refused" ? null : e.lastFailure)

/** The records of an item's settled attempts, in order. */
const settledRecords = (it: ItemState): ReadonlyArray<Outcome.AttemptRecord> => {
  const records: Array<Outcome.AttemptRecord> = []
  for (const ticket of it.tickets) if (ticket.record !== undefined) records.push(ticket.record)
  return records
}

/** The last failure among an item's attempts, as a terminal's cause. */
const lastFailure = (records: ReadonlyArray<Outcome.AttemptRecord>): Outcome.Cause | null => {
  for (let i = records.length - 1; i >= 0; i--) {
    const r = records[i]!
    if (r.failure !== null) return { kind: r.failure, code: r.code ?? r.failure, endpoint: r.endpoint }
  }
  return null
}

const HALTED: Stop = {
  _tag: "FailFast",
  kind: "fail_fast",
  reason: "the run stopped",
  itemId: "",
  category: "batch_aborted"
}

/** @internal */
export const make = <I>(
  state: RunState<I>,
  deliver: (result: ItemResult<I>) => Effect.Effect<void>
): Results<I> => {
  // Items that never started share their stop's one error (immutable data): a collection stopped early
  // gives each of its remaining items a result, and building (and validating) one error each would cost
  // more than everything else they do.
  let unstarted: { readonly stop: Stop; readonly error: ItemError } | undefined

  const collateral: Results<I>["collateral"] = (base, stop, cause, attempts) => {
    const category = collateralCategory(stop)
    if (cause !== null || attempts.length > 0) {
      return { _tag: "Failed", ...base, category, error: collateralError(stop, cause, attempts) }
    }
    if (unstarted?.stop !== stop) unstarted = { stop, error: collateralError(stop, null, []) }
    return { _tag: "Failed", ...base, category, error: unstarted.error }
  }

  const toResult: Results<I>["toResult"] = (exit, base, it) => {
    if (Exit.isSuccess(exit)) return Effect.succeed({ _tag: "Succeeded", ...base, completion: exit.value })
    const failure = Cause.failureOption(exit.cause)
    const stopped = state.stopped
    if (Option.isNone(failure)) {
      // Interrupted by `cancel-active`: the stop decides the result, with the attempts the gate settled (the
      // interrupted one included, as the journal has it). Anything else (a defect) is a bug and propagates;
      // the caller's own interruption never reaches here (it interrupts this worker too).
      if (stopped === undefined || !Cause.isInterruptedOnly(exit.cause)) {
        return Effect.failCause(exit.cause) as Effect.Effect<never>
      }
      const attempts = settledRecords(it)
      return Effect.succeed(collateral(base, stopped, lastFailure(attempts), attempts))
    }
    const error = failure.value
    // Halted: the gate closed under the item (a stop). After a cap was reached, any failure is the cap's.
    if (error._tag === "Halted" || (stopped !== undefined && stopped.kind === "budget_exceeded")) {
      return Effect.succeed(collateral(base, stopped ?? HALTED, causeOf(error), error.attempts))
    }
    const category = Categories.ofTerminal(error)
    const result: Failed<I> = { _tag: "Failed", ...base, category, error }
    // Only a terminal item failure trips fail-fast; the first trigger wins.
    return stopped === undefined && state.abortOn.has(category)
      ? Effect.as(
        stop(state, {
          _tag: "FailFast",
          kind: "fail_fast",
          reason: `fail-fast: item ${JSON.stringify(base.itemId)} failed with ${category}`,
          itemId: base.itemId,
          category
        }),
        result
      )
      : Effect.succeed(result)
  }

  const announce = (result: ItemResult<I>): Effect.Effect<void> =>
    state.settings.onEvent === undefined ? Effect.void : state.event((at): Events.Event => {
      const ids = { at, index: result.index, itemId: result.itemId }
      switch (result._tag) {
        case "Failed":
          return {
            _tag: "ItemFailed",
            ...ids,
            category: result.category,
            error: result.error._tag,
            attempts: summarise(result.error.attempts),
            ...(result.error._tag === "PlanExhausted" && result.error.breakers !== undefined
              ? { breakers: result.error.breakers }
              : {})
          }
        case "Reused":
          return { _tag: "ItemReused", ...ids }
        case "Succeeded":
          return {
            _tag: "ItemCompleted",
            ...ids,
            endpoint: result.completion.endpoint,
            attempts: summarise(result.completion.attempts)
          }
        default:
          return { _tag: "ItemCompleted", ...ids }
      }
    })

  const quiet = state.settings.onEvent === undefined && state.settings.progress === undefined
  const finish = (r: ItemResult<I>): Effect.Effect<void> => {
    count(state, r)
    state.observer?.done(r)
    return quiet ? deliver(r) : Effect.zipRight(announce(r), Effect.zipRight(state.progress, deliver(r)))
  }

  const complete = (result: ItemResult<I>): Effect.Effect<void> => {
    const artifacts = state.settings.artifacts
    if (artifacts === undefined || (result._tag !== "Succeeded" && result._tag !== "Failed")) return finish(result)
    const record = Effect.flatMap(artifacts.toRecord(result), (line) => artifacts.opened.append(line))
    if (result._tag === "Failed" && Categories.isCollateral(result.category)) {
      // Guardrail audit records are written best-effort (and never reused).
      return Effect.zipRight(Effect.ignore(record), finish(result))
    }
    return Effect.matchEffect(record, {
      onSuccess: () => finish(result),
      onFailure: (error) =>
        Effect.zipRight(
          stop(state, {
            _tag: "ArtifactFailure",
            kind: "artifact_error",
            reason: `artifact append failed for item ${JSON.stringify(result.itemId)}: ${error.message}`,
            itemId: result.itemId
          }),
          finish(artifactFailed(result, error.message))
        )
    })
  }

  return { collateral, toResult, complete }
}

const count = <I>(state: RunState<I>, result: ItemResult<I>): void => {
  const stats = state.stats
  switch (result._tag) {
    case "Succeeded":
      stats.succeeded++
      break
    case "Failed":
      stats.failed++
      break
    case "Reused":
      stats.reused++
      break
    case "Planned":
      stats.planned++
      break
  }
  const category = categoryOf(result)
  state.byCategory[category] = (state.byCategory[category] ?? 0) + 1
}

/** The result of an item whose record could not be appended (the original outcome is kept inside). */
const artifactFailed = <I>(result: Succeeded<I> | Failed<I>, message: string): Failed<I> => ({
  _tag: "Failed",
  index: result.index,
  itemId: result.itemId,
  item: result.item,
  durationMillis: result.durationMillis,
  category: "artifact_error",
  error: stackless(() =>
    new ArtifactFailed({
      reason: `the record of item ${JSON.stringify(result.itemId)} could not be appended: ${message}`,
      lastFailure: result._tag === "Failed" ? causeOf(result.error) : null,
      attempts: result._tag === "Succeeded" ? result.completion.attempts : result.error.attempts,
      original: categoryOf(result)
    })
  )
})

/**
 * Delivery in submission order: results wait in a buffer until every earlier one is published; each
 * published result gives its place in the window back.
 *
 * @internal
 */
export const inSubmissionOrder = <I>(
  publish: (result: ItemResult<I>) => Effect.Effect<void>,
  window: Effect.Semaphore | undefined
): (result: ItemResult<I>) => Effect.Effect<void> => {
  const pending = new Map<number, ItemResult<I>>()
  let nextIndex = 0
  let draining = false
  const drain: Effect.Effect<void> = Effect.suspend(() => {
    const r = pending.get(nextIndex)
    if (r === undefined) {
      draining = false
      return Effect.void
    }
    pending.delete(nextIndex)
    return Effect.zipRight(
      publish(r),
      Effect.suspend(() => {
        nextIndex++
        return window === undefined ? drain : Effect.zipRight(window.release(1), drain)
      })
    )
  })
  return (result) =>
    Effect.suspend(() => {
      pending.set(result.index, result)
      if (draining) return Effect.void
      draining = true
      return drain
    })
}

const collateralCategory = (stop: Stop): Category => {
  switch (stop.kind) {
    case "batch_timeout":
      return "batch_deadline_exceeded"
    case "budget_exceeded":
      return "batch_budget_exceeded"
    case "fail_fast":
    case "artifact_error":
      return "batch_aborted"
  }
}

const collateralError = (
  stop: Stop,
  cause: Outcome.Cause | null,
  attempts: ReadonlyArray<Outcome.AttemptRecord>
): ItemError => {
  const fields = { reason: stop.reason, lastFailure: cause, attempts }
  // Without validation (`true`): every field is the run's own (the stop's reason, the records the executor
  // built). Validating re-checked each attempt record against its schema, once per cancelled item: with a
  // thousand items cancelled at once that was most of the time between their teardown and their results.
  switch (stop.kind) {
    case "batch_timeout":
      return stackless(() => new BatchDeadlineExceeded(fields, true))
    case "budget_exceeded":
      return stackless(() => new BatchBudgetExceeded(fields, true))
    case "fail_fast":
    case "artifact_error":
      return stackless(() => new BatchAborted(fields, true))
  }
}
