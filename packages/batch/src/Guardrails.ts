/**
 * The run-wide guardrails of a batch, as a Schema decoded once at the edge: concurrency, the item and batch
 * deadlines, the abort mode, fail-fast categories, soft token and cost caps, rate limits, provider capacity,
 * the shared cooldown after a 429, the startup ramp, result order and dry run. Every duration is finite and
 * > 0, every limit finite and positive; a bad field is named in the error. Everything is opt-in: without
 * guardrails a run is a bounded-concurrency loop over the executor.
 *
 * @since 0.1.0
 */
import { Either, Schema } from "effect"
import { identity } from "effect/Function"
import { Category } from "./Category.js"
import {
  decodeWith,
  describe,
  NonNegativeInt,
  OwnRecord,
  PositiveDuration,
  PositiveInt,
  PositiveNumber
} from "./internal/schema.js"

/**
 * What happens to provider calls already in flight when the run stops (batch deadline, fail-fast, cap):
 *
 * - `drain-active`: calls in flight finish (their results are kept); nothing new starts;
 * - `cancel-active`: calls in flight are interrupted and their items get the stop's collateral result.
 *
 * @example
 * ```ts
 * import { Guardrails } from "@rein/batch"
 *
 * Guardrails.make({ batchDeadline: "1 hour", abortMode: "cancel-active" })
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const AbortMode = Schema.Literal("drain-active", "cancel-active").annotations({
  message: (issue) => ({
    message: `Expected "drain-active" or "cancel-active", actual ${describe(issue.actual)}`,
    override: true
  })
})

/**
 * @category models
 * @since 0.1.0
 */
export type AbortMode = typeof AbortMode.Type

/**
 * The order results are published in.
 *
 * @example
 * ```ts
 * import { Guardrails } from "@rein/batch"
 *
 * Guardrails.make({ order: "submission" })
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const Order = Schema.Literal("completion", "submission").annotations({
  message: (issue) => ({
    message: `Expected "completion" or "submission", actual ${describe(issue.actual)}`,
    override: true
  })
})

/**
 * @category models
 * @since 0.1.0
 */
export type Order = typeof Order.Type

/**
 * The guardrails of one run.
 *
 * @example
 * ```ts
 * import { Guardrails } from "@rein/batch"
 *
 * const guardrails = Guardrails.make({
 *   concurrency: 20,
 *   itemDeadline: "3 minutes",
 *   batchDeadline: "1 hour",
 *   abortOn: ["authentication", "insufficient_balance"],
 *   abortMode: "drain-active",
 *   maxTotalTokens: 5_000_000
 * })
 * ```
 * @category schemas
 * @since 0.1.0
 */
export class Guardrails extends Schema.Class<Guardrails>("Guardrails")({
  /** Items executing at once (default 8). */
  concurrency: Schema.optionalWith(PositiveInt, { exact: true, default: () => 8 }),
  /** One end-to-end bound per item: admission waits, attempts and backoff (not queue wait, not persistence). */
  itemDeadline: Schema.optionalWith(PositiveDuration, { exact: true }),
  /** The whole run, from its start. At expiry nothing new is pulled or started. */
  batchDeadline: Schema.optionalWith(PositiveDuration, { exact: true }),
  /** Terminal item failure categories that stop the run (fail-fast). */
  abortOn: Schema.optionalWith(Schema.Array(Category), { exact: true, default: () => [] }),
  abortMode: Schema.optionalWith(AbortMode, { exact: true, default: () => "drain-active" as const }),
  /** Soft cap on tokens reported by finished attempts (equality trips). */
  maxTotalTokens: Schema.optionalWith(PositiveNumber, { exact: true }),
  /** Soft cap on the cost of finished attempts (equality trips). */
  maxTotalCost: Schema.optionalWith(PositiveNumber, { exact: true }),
  /** Attempts admitted per minute, across the run (a token bucket; a full minute's worth may burst). */
  requestsPerMinute: Schema.optionalWith(PositiveNumber, { exact: true }),
  /** Tokens per minute: each attempt reserves its worst case, reconciled to the actual usage when it ends. */
  tokensPerMinute: Schema.optionalWith(PositiveNumber, { exact: true }),
  /** Attempts in flight at once per endpoint id. */
  capacity: Schema.optionalWith(OwnRecord(PositiveInt), {
    exact: true,
    default: () => ({})
  }),
  /**
   * After a 429, every new attempt on that endpoint waits this long (a Retry-After may lengthen the shared
   * cooldown, never shorten it). Absent: no shared cooldown (the item's own retry still honours Retry-After).
   */
  cooldown: Schema.optionalWith(PositiveDuration, { exact: true }),
  /** Attempts in flight grow linearly from 1 to `concurrency` over this time from the run's start. */
  startupRamp: Schema.optionalWith(PositiveDuration, { exact: true }),
  /** 429 retries per endpoint, counted apart from the contract's `retry.perEndpoint` (sets `retry.rateLimited`). */
  rateLimitRetries: Schema.optionalWith(NonNegativeInt, { exact: true }),
  order: Schema.optionalWith(Order, { exact: true, default: () => "completion" as const }),
  /** Walk the source and publish what would run, without any provider call; nothing is counted. */
  dryRun: Schema.optionalWith(Schema.Boolean, { exact: true, default: () => false })
}) {}

/**
 * The encoded (JSON) form of the guardrails.
 *
 * @category models
 * @since 0.1.0
 */
export type GuardrailsInput = typeof Guardrails.Encoded

/**
 * A guardrails decode failure, naming each bad field.
 *
 * @example
 * ```ts
 * import { Either } from "effect"
 * import { Guardrails } from "@rein/batch"
 *
 * const message = Either.match(Guardrails.decode({ concurrency: 0 }), { onLeft: (e) => e.message, onRight: () => "ok" })
 * ```
 * @category errors
 * @since 0.1.0
 */
export class GuardrailsError extends Schema.TaggedError<GuardrailsError>()("GuardrailsError", {
  message: Schema.String
}) {}

const decodeGuardrails = decodeWith(Guardrails)

/**
 * Decodes guardrails from unknown input (parsed JSON), naming every bad field.
 *
 * @example
 * ```ts
 * import { Guardrails } from "@rein/batch"
 *
 * Guardrails.decode({ batchDeadline: 0 })
 * // Left(GuardrailsError: "batchDeadline: Expected a positive finite duration …, actual 0")
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const decode = (input: unknown): Either.Either<Guardrails, GuardrailsError> =>
  Either.mapLeft(decodeGuardrails(input), (message) => new GuardrailsError({ message }))

/**
 * Builds guardrails from their JSON form; throws a `GuardrailsError` on bad input. For trusted, literal
 * config.
 *
 * @example
 * ```ts
 * import { Guardrails } from "@rein/batch"
 *
 * const guardrails = Guardrails.make({ concurrency: 200, order: "submission" })
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const make = (input: GuardrailsInput = {}): Guardrails => Either.getOrThrowWith(decode(input), identity)
