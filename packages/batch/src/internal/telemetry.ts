/**
 * A run's telemetry, when `Telemetry` is provided: a run span (`rein.batch.run`) with an item span
 * (`rein.batch.item`) around each executed item — the item's request span is its child — and the batch
 * progress metrics (accepted, done, failed, in flight). Without `Telemetry`, `observe` gives `undefined` and
 * the run pays nothing.
 *
 * @internal
 */
import { Telemetry } from "@rein/core"
import type { Outcome } from "@rein/core"
import type { Tracer } from "effect"
import { Cause, Clock, Effect, Exit, FiberId, MetricLabel, Option } from "effect"
import type { ItemResult } from "../Result.js"

const metrics = Telemetry.metrics
const NO_LABELS: ReadonlyArray<MetricLabel.MetricLabel> = []

// One label array per value: Effect caches a metric's hook by the array's identity.
const labelSets = new Map<string, ReadonlyArray<MetricLabel.MetricLabel>>()
const label = (key: string, value: string): ReadonlyArray<MetricLabel.MetricLabel> => {
  const id = `${key}=${value}`
  let found = labelSets.get(id)
  if (found === undefined) labelSets.set(id, found = [MetricLabel.make(key, value)])
  return found
}

/** What the engine tells telemetry. @internal */
export interface Observer {
  readonly accepted: () => void
  /** A terminal result was published (executed, reused, planned or collateral). */
  readonly done: (result: ItemResult<unknown>) => void
  /** Runs one item's execution inside its span, counted in flight. */
  readonly item: <R>(
    executed: Effect.Effect<Outcome.Completion, Outcome.Terminal, R>,
    index: number,
    itemId: string
  ) => Effect.Effect<Outcome.Completion, Outcome.Terminal, R>
}

/** How an effect ended, as a span may say it: the failure's tag, never its fields (no reasons, no sources). */
const bare = (exit: Exit.Exit<unknown, unknown>): readonly [string, Exit.Exit<void, string>] => {
  if (Exit.isSuccess(exit)) return ["Completion", Exit.void]
  if (Cause.isInterruptedOnly(exit.cause)) return ["Interrupted", Exit.interrupt(FiberId.none)]
  const failure = Cause.failureOption(exit.cause)
  const error = Option.getOrUndefined(failure)
  const tag = Option.isNone(failure)
    ? "Defect"
    : typeof error === "object" && error !== null && "_tag" in error && typeof error._tag === "string"
    ? error._tag
    : "Error"
  return [tag, Exit.fail(tag)]
}

/**
 * Runs `effect` as the child of a new span `name`, which ends with the bare exit and the attributes `annotate`
 * reads from the value.
 */
const spanned = <A, E, R>(
  name: string,
  attributes: Record<string, unknown>,
  effect: Effect.Effect<A, E, R>,
  annotate: (span: Tracer.Span, exit: Exit.Exit<A, E>) => void
): Effect.Effect<A, E, R> =>
  Effect.flatMap(Effect.makeSpan(name, { attributes }), (span) =>
    Effect.withParentSpan(effect, span).pipe(
      Effect.onExit((exit) =>
        Effect.flatMap(Clock.currentTimeNanos, (now) =>
          Effect.sync(() => {
            annotate(span, exit)
            span.end(now, bare(exit)[1])
          }))
      )
    ))

const observer: Observer = {
  accepted: () => metrics.batchAccepted.unsafeUpdate(1, NO_LABELS),
  done: (result) => {
    metrics.batchDone.unsafeUpdate(1, label("rein.batch.item.result", result._tag))
    if (result._tag === "Failed") {
      metrics.batchFailed.unsafeUpdate(1, label("rein.batch.item.category", result.category))
    }
  },
  item: (executed, index, itemId) =>
    Effect.suspend(() => {
      metrics.batchInFlight.unsafeUpdate(1, NO_LABELS)
      return spanned(
        "rein.batch.item",
        { "rein.batch.item.id": itemId, "rein.batch.item.index": index },
        executed,
        (span, exit) => {
          metrics.batchInFlight.unsafeUpdate(-1, NO_LABELS)
          span.attribute("rein.batch.item.outcome", bare(exit)[0])
        }
      )
    })
}

/** The run's observer, or `undefined` without `Telemetry`. @internal */
export const observe: Effect.Effect<Observer | undefined> = Effect.map(
  Effect.serviceOption(Telemetry.Telemetry),
  (t) => Option.isSome(t) ? observer : undefined
)

/** The run inside its span (when `Telemetry` is provided), annotated from its value as it ends. @internal */
export const run = <A, E, R>(
  effect: Effect.Effect<A, E, R>,
  annotate: (a: A) => Record<string, unknown>
): Effect.Effect<A, E, R> =>
  Effect.flatMap(
    Effect.serviceOption(Telemetry.Telemetry),
    (t) =>
      Option.isNone(t) ? effect : spanned("rein.batch.run", {}, effect, (span, exit) => {
        if (Exit.isSuccess(exit)) { for (const [k, v] of Object.entries(annotate(exit.value))) span.attribute(k, v) }
      })
  )
