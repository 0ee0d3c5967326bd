/**
 * The terminal result of one accepted item. Every item taken from the source gets exactly one: a success
 * (the executor's `Completion`), a failure (the executor's terminal outcome, or the collateral error of a
 * stop), a reused earlier record (resume), or, in a dry run, the request that would have run. Collateral
 * errors are `Schema.TaggedError`s like the executor's, and keep the provider failure that preceded them
 * as `lastFailure` (a kind and a code, never provider text; serialised as `cause`).
 *
 * @since 0.1.0
 */
import { Outcome } from "@rein/core"
import type { Provider } from "@rein/core"
import { Schema } from "effect"
import type { ItemRecord } from "./ArtifactStore.js"
import type { Category } from "./Category.js"

const collateral = {
  reason: Schema.String,
  /** The provider failure that preceded the stop, serialised under its 0.1.0 key `cause` (see `Outcome`). */
  lastFailure: Schema.propertySignature(Schema.NullOr(Outcome.Cause)).pipe(Schema.fromKey("cause")),
  attempts: Schema.Array(Outcome.AttemptRecord)
}

/**
 * The batch deadline expired before the item finished (queued, waiting, or cancelled in flight).
 *
 * @example
 * ```ts
 * import { Result } from "@rein/batch"
 *
 * const error = new Result.BatchDeadlineExceeded({ reason: "the batch deadline of 3600000 ms expired", lastFailure: null, attempts: [] })
 * ```
 * @category errors
 * @since 0.1.0
 */
export class BatchDeadlineExceeded extends Schema.TaggedError<BatchDeadlineExceeded>()(
  "BatchDeadlineExceeded",
  collateral
) {}

/**
 * Fail-fast stopped the run before the item finished.
 *
 * @example
 * ```ts
 * import { Result } from "@rein/batch"
 *
 * const error = new Result.BatchAborted({ reason: "fail-fast: item \"7\" failed with authentication", lastFailure: null, attempts: [] })
 * ```
 * @category errors
 * @since 0.1.0
 */
export class BatchAborted extends Schema.TaggedError<BatchAborted>()("BatchAborted", collateral) {}

/**
 * A soft cap stopped the run before the item finished, or the item's failure came after the cap was
 * reached (its provider failure is the `lastFailure`).
 *
 * @example
 * ```ts
 * import { Result } from "@rein/batch"
 *
 * const error = new Result.BatchBudgetExceeded({
 *   reason: "token cap reached: 100 of 10 tokens",
 *   lastFailure: { kind: "server_error", code: "500", endpoint: "openai/mini" },
 *   attempts: []
 * })
 * ```
 * @category errors
 * @since 0.1.0
 */
export class BatchBudgetExceeded extends Schema.TaggedError<BatchBudgetExceeded>()(
  "BatchBudgetExceeded",
  collateral
) {}

/**
 * The item's record could not be appended to the artifact, so its outcome (`original`) is not published as
 * such; the run stops with `artifact_error`.
 *
 * @example
 * ```ts
 * import type { Result } from "@rein/batch"
 *
 * const lost = (e: Result.ArtifactFailed) => `${e.original} not persisted: ${e.reason}`
 * ```
 * @category errors
 * @since 0.1.0
 */
export class ArtifactFailed extends Schema.TaggedError<ArtifactFailed>()("ArtifactFailed", {
  ...collateral,
  original: Schema.String
}) {}

/**
 * Why an item failed.
 *
 * @example
 * ```ts
 * import type { Result } from "@rein/batch"
 *
 * const isCollateral = (e: Result.ItemError) => e._tag.startsWith("Batch")
 * ```
 * @category models
 * @since 0.1.0
 */
export type ItemError = Outcome.Terminal | BatchDeadlineExceeded | BatchAborted | BatchBudgetExceeded | ArtifactFailed

/**
 * A successful item.
 *
 * @example
 * ```ts
 * import type { Result } from "@rein/batch"
 *
 * const text = (r: Result.Succeeded<string>) => r.completion.text
 * ```
 * @category models
 * @since 0.1.0
 */
export interface Succeeded<I> {
  readonly _tag: "Succeeded"
  readonly index: number
  readonly itemId: string
  readonly item: I
  readonly completion: Outcome.Completion
  /** Time inside the item deadline (admission waits, attempts, backoff). */
  readonly durationMillis: number
}

/**
 * A failed item.
 *
 * @example
 * ```ts
 * import type { Result } from "@rein/batch"
 *
 * const why = (r: Result.Failed<string>) => `${r.itemId}: ${r.category} (${r.error._tag})`
 * ```
 * @category models
 * @since 0.1.0
 */
export interface Failed<I> {
  readonly _tag: "Failed"
  readonly index: number
  readonly itemId: string
  readonly item: I
  readonly category: Category
  readonly error: ItemError
  readonly durationMillis: number
}

/**
 * An item whose earlier record was reused: no call, no cost, not counted against the caps.
 *
 * @example
 * ```ts
 * import type { Result } from "@rein/batch"
 *
 * const kept = (r: Result.Reused<string>) => r.record.result
 * ```
 * @category models
 * @since 0.1.0
 */
export interface Reused<I> {
  readonly _tag: "Reused"
  readonly index: number
  readonly itemId: string
  readonly item: I
  readonly record: ItemRecord
}

/**
 * An item walked by a dry run: the request that would have run.
 *
 * @example
 * ```ts
 * import type { Result } from "@rein/batch"
 *
 * const prompt = (r: Result.Planned<string>) => r.request.prompt
 * ```
 * @category models
 * @since 0.1.0
 */
export interface Planned<I> {
  readonly _tag: "Planned"
  readonly index: number
  readonly itemId: string
  readonly item: I
  readonly request: Provider.CompletionRequest
}

/**
 * The terminal result of one item.
 *
 * @example
 * ```ts
 * import type { Result } from "@rein/batch"
 *
 * const line = (r: Result.ItemResult<string>) =>
 *   r._tag === "Succeeded" ? `${r.itemId}: ${r.completion.text}` : r._tag === "Failed" ? `${r.itemId}: ${r.category}` : r.itemId
 * ```
 * @category models
 * @since 0.1.0
 */
export type ItemResult<I> = Succeeded<I> | Failed<I> | Reused<I> | Planned<I>

/**
 * The category of a result: `ok` for a success, the record's for a reused one, `planned` in a dry run.
 *
 * @example
 * ```ts
 * import type { Result } from "@rein/batch"
 * import { Result as R } from "@rein/batch"
 *
 * declare const r: Result.ItemResult<string>
 * R.categoryOf(r)
 * ```
 * @category utils
 * @since 0.1.0
 */
export const categoryOf = <I>(result: ItemResult<I>): string => {
  switch (result._tag) {
    case "Succeeded":
      return "ok"
    case "Failed":
      return result.category
    case "Reused":
      return result.record.category
    case "Planned":
      return "planned"
  }
}
