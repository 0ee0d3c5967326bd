/**
 * What an observer of a run sees: an event for each step (run started; item started, admitted to an
 * attempt, completed, failed, reused; cooldown started and ended; run aborted — once, with its cause — and
 * run completed, with the termination and stats), and a progress value a CLI can draw. Events are a
 * Schema, so they can be logged as JSON lines. Offsets are milliseconds from the run's start on the
 * monotonic clock.
 *
 * @since 0.1.0
 */
import { Outcome } from "@rein/core"
import { Schema } from "effect"
import { Category } from "./Category.js"
import { Stats } from "./Stats.js"
import { Termination } from "./Termination.js"

const at = Schema.Number

/**
 * The run started (its batch deadline, if any, starts now).
 *
 * @example
 * ```ts
 * import { Schema } from "effect"
 * import { Events } from "@rein/batch"
 *
 * Schema.decodeUnknownSync(Events.RunStarted)({ _tag: "RunStarted", at: 0 })
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const RunStarted = Schema.TaggedStruct("RunStarted", { at })

/**
 * An accepted item starts executing.
 *
 * @example
 * ```ts
 * import { Events } from "@rein/batch"
 *
 * const started = Events.ItemStarted.make({ at: 12, index: 3, itemId: "doc-3" })
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const ItemStarted = Schema.TaggedStruct("ItemStarted", { at, index: Schema.Number, itemId: Schema.String })

/**
 * An attempt of an item was admitted (after `waitedMillis` at the run's limits).
 *
 * @example
 * ```ts
 * import { Events } from "@rein/batch"
 *
 * const admitted = Events.ItemAdmitted.make({ at: 40, index: 3, itemId: "doc-3", endpoint: "openai/mini", attempt: 1, waitedMillis: 28 })
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const ItemAdmitted = Schema.TaggedStruct("ItemAdmitted", {
  at,
  index: Schema.Number,
  itemId: Schema.String,
  endpoint: Schema.String,
  attempt: Schema.Number,
  waitedMillis: Schema.Number
})

/**
 * One attempt of a finished item, as a progress display tells it: where it ran, why it ran (first try,
 * retry, fallback) and how it failed, if it did (a kind and a normalised code, never provider text).
 *
 * @example
 * ```ts
 * import { Events } from "@rein/batch"
 *
 * const failed: Events.AttemptSummary = { endpoint: "fake/a", role: "first", failure: "overloaded", code: "http_503" }
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const AttemptSummary = Schema.typeSchema(Outcome.AttemptRecord).pipe(
  Schema.pick("endpoint", "role", "failure", "code")
)

/**
 * @category models
 * @since 0.1.0
 */
export type AttemptSummary = typeof AttemptSummary.Type

/**
 * The attempts of an item as `AttemptSummary`s, in order.
 *
 * @example
 * ```ts
 * import { Events } from "@rein/batch"
 * import type { Outcome } from "@rein/core"
 *
 * declare const completion: Outcome.Completion
 * Events.summarise(completion.attempts) // [{ endpoint: "fake/a", role: "first", failure: "overloaded", … }, …]
 * ```
 * @category utils
 * @since 0.1.0
 */
export const summarise = (attempts: ReadonlyArray<Outcome.AttemptRecord>): ReadonlyArray<AttemptSummary> =>
  attempts.map((a) => ({ endpoint: a.endpoint, role: a.role, failure: a.failure, code: a.code }))

/**
 * An item succeeded: on `endpoint`, after `attempts` (absent in a dry run).
 *
 * @example
 * ```ts
 * import { Events } from "@rein/batch"
 *
 * const completed = Events.ItemCompleted.make({ at: 900, index: 3, itemId: "doc-3" })
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const ItemCompleted = Schema.TaggedStruct("ItemCompleted", {
  at,
  index: Schema.Number,
  itemId: Schema.String,
  endpoint: Schema.optional(Schema.String),
  attempts: Schema.optional(Schema.Array(AttemptSummary))
})

/**
 * An item failed (terminally, or as collateral of a stop), after `attempts`.
 *
 * @example
 * ```ts
 * import { Events } from "@rein/batch"
 *
 * const failed = Events.ItemFailed.make({
 *   at: 900, index: 3, itemId: "doc-3", category: "authentication", error: "FailedSafe"
 * })
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const ItemFailed = Schema.TaggedStruct("ItemFailed", {
  at,
  index: Schema.Number,
  itemId: Schema.String,
  category: Category,
  /**
   * The tag of the error that ended the item (`PlanExhausted`, `DeadlineExceeded`, `BatchAborted`, …): why it
   * ended, where `category` says what failed. Never the error's message.
   */
  error: Schema.optional(Schema.String),
  /** The attempts made before the item failed. */
  attempts: Schema.optional(Schema.Array(AttemptSummary)),
  /**
   * The breakers that refused the candidates left (a `PlanExhausted` item: which endpoint, its state, when it may
   * half-open); absent when no breaker refused one.
   */
  breakers: Schema.optional(Schema.Array(Outcome.BreakerRefusal))
})

/**
 * An item's earlier record was reused (no call made).
 *
 * @example
 * ```ts
 * import { Events } from "@rein/batch"
 *
 * const reused = Events.ItemReused.make({ at: 0, index: 3, itemId: "doc-3" })
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const ItemReused = Schema.TaggedStruct("ItemReused", { at, index: Schema.Number, itemId: Schema.String })

/**
 * A 429 started a shared cooldown of an endpoint, until `untilMillis`.
 *
 * @example
 * ```ts
 * import { Events } from "@rein/batch"
 *
 * const cooling = Events.CooldownStarted.make({ at: 100, endpoint: "openai/mini", untilMillis: 2_100 })
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const CooldownStarted = Schema.TaggedStruct("CooldownStarted", {
  at,
  endpoint: Schema.String,
  untilMillis: Schema.Number
})

/**
 * An endpoint's cooldown ended.
 *
 * @example
 * ```ts
 * import { Events } from "@rein/batch"
 *
 * const ended = Events.CooldownEnded.make({ at: 2_100, endpoint: "openai/mini" })
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const CooldownEnded = Schema.TaggedStruct("CooldownEnded", { at, endpoint: Schema.String })

/**
 * The run stopped early (exactly once): the termination that stopped it, and `fix`, what to change so that a
 * run gets further (`Termination.fix` of the termination: the text the summary and `rein status` print after
 * the reason). `fix` is optional so that events logged before it was added still decode; a run always sets it.
 *
 * @example
 * ```ts
 * import { Termination } from "@rein/batch"
 * import type { Events } from "@rein/batch"
 *
 * // "fail-fast: item \"7\" failed with authentication; check the endpoint's credentials …"
 * // (an event logged before `fix` was added: the same text, from `Termination.describe`)
 * const why = (e: typeof Events.RunAborted.Type) =>
 *   e.fix === undefined ? Termination.describe(e.termination) : `${e.termination.reason}; ${e.fix}`
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const RunAborted = Schema.TaggedStruct("RunAborted", {
  at,
  termination: Termination,
  fix: Schema.optional(Schema.String)
})

/**
 * The run ended: every accepted item has its result.
 *
 * @example
 * ```ts
 * import type { Events } from "@rein/batch"
 *
 * const line = (e: typeof Events.RunCompleted.Type) => `${e.termination.kind} after ${e.stats.accepted} items`
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const RunCompleted = Schema.TaggedStruct("RunCompleted", { at, termination: Termination, stats: Stats })

/**
 * Any event of a run.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import type { Events } from "@rein/batch"
 *
 * const onEvent = (event: Events.Event) =>
 *   event._tag === "RunAborted" ? Effect.logWarning(event.termination.reason, event.fix ?? "") : Effect.void
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const Event = Schema.Union(
  RunStarted,
  ItemStarted,
  ItemAdmitted,
  ItemCompleted,
  ItemFailed,
  ItemReused,
  CooldownStarted,
  CooldownEnded,
  RunAborted,
  RunCompleted
)

/**
 * @category models
 * @since 0.1.0
 */
export type Event = typeof Event.Type

/**
 * A snapshot of a run for a progress display.
 *
 * @example
 * ```ts
 * import { Effect, SubscriptionRef } from "effect"
 * import { Events } from "@rein/batch"
 *
 * const progress = SubscriptionRef.make(Events.initialProgress)
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const Progress = Schema.Struct({
  accepted: Schema.Number,
  done: Schema.Number,
  succeeded: Schema.Number,
  failed: Schema.Number,
  reused: Schema.Number,
  inFlight: Schema.Number,
  tokens: Schema.Number,
  cost: Schema.Number
})

/**
 * @category models
 * @since 0.1.0
 */
export type Progress = typeof Progress.Type

/**
 * Progress before the run starts.
 *
 * @example
 * ```ts
 * import { SubscriptionRef } from "effect"
 * import { Events } from "@rein/batch"
 *
 * const progress = SubscriptionRef.make(Events.initialProgress)
 * ```
 * @category constants
 * @since 0.1.0
 */
export const initialProgress: Progress = {
  accepted: 0,
  done: 0,
  succeeded: 0,
  failed: 0,
  reused: 0,
  inFlight: 0,
  tokens: 0,
  cost: 0
}
