/**
 * The per-request contract: one deadline, one budget, one attempt policy, the ordered candidates that may
 * run, what they must be able to do, and the operation mode. A Schema, decodable from JSON; every
 * duration is finite and positive, and a bad field is named in the error.
 *
 * @since 0.1.0
 */
import { Duration, Either, Schema } from "effect"
import { identity } from "effect/Function"
import { EndpointId } from "./Catalog.js"
import { FailureKind, FallbackWidenable, RetryWidenable } from "./Failure.js"
import {
  decodeWith,
  Fraction,
  nonEmptyArray,
  NonNegativeInt,
  NonNegativeNumber as NonNegative,
  numberWhere
} from "./internal/decode.js"
import { PositiveDuration } from "./internal/duration.js"

/**
 * The hard admission budget of one request. Each limit is optional; a `cost` or `tokens` limit needs an
 * input-token bound on the request (else it is refused: fail closed).
 *
 * @category models
 * @since 0.1.0
 */
export class BudgetLimits extends Schema.Class<BudgetLimits>("BudgetLimits")({
  cost: Schema.optional(NonNegative),
  tokens: Schema.optional(NonNegativeInt),
  calls: Schema.optional(NonNegativeInt)
}) {}

/**
 * How one endpoint is retried: `perEndpoint` retries after the first attempt, exponential backoff from
 * `base` by `factor` up to `max`, with ±`jitter` (a fraction) drawn from Effect's `Random`. A server's
 * Retry-After, in whatever form, is honoured up to `maxRetryAfter` (default 10 minutes): longer hints are
 * clamped to it before anything (a wait, a breaker, a batch's shared cooldown) consumes them.
 *
 * @category models
 * @since 0.1.0
 */
export class RetryPolicy extends Schema.Class<RetryPolicy>("RetryPolicy")({
  perEndpoint: Schema.optionalWith(NonNegativeInt, { default: () => 2 }),
  /** When set, 429 retries have their own cap and do not use up `perEndpoint`. */
  rateLimited: Schema.optional(NonNegativeInt),
  base: Schema.optionalWith(PositiveDuration, { default: () => Duration.millis(250) }),
  factor: Schema.optionalWith(numberWhere("a finite number ≥ 1", (n) => Number.isFinite(n) && n >= 1), {
    default: () => 2
  }),
  max: Schema.optionalWith(PositiveDuration, { default: () => Duration.millis(4_000) }),
  /** The longest Retry-After honoured: a longer one (a server's typo, an hour-long date) is clamped to it. */
  maxRetryAfter: Schema.optionalWith(PositiveDuration, { default: () => Duration.minutes(10) }),
  jitter: Schema.optionalWith(Fraction, { default: () => 0.2 })
}) {}

/**
 * Capabilities every candidate must have.
 *
 * @category models
 * @since 0.1.0
 */
export class Requirements extends Schema.Class<Requirements>("Requirements")({
  tools: Schema.optionalWith(Schema.Boolean, { default: () => false }),
  structuredOutput: Schema.optionalWith(Schema.Boolean, { default: () => false }),
  streaming: Schema.optionalWith(Schema.Boolean, { default: () => false })
}) {}

/**
 * Narrowing (and the allowed widening) of the failure table.
 *
 * @category models
 * @since 0.1.0
 */
export class FailurePolicy extends Schema.Class<FailurePolicy>("FailurePolicy")({
  noRetry: Schema.optionalWith(Schema.Array(FailureKind), { default: () => [] }),
  noFallback: Schema.optionalWith(Schema.Array(FailureKind), { default: () => [] }),
  alsoRetry: Schema.optionalWith(Schema.Array(RetryWidenable), { default: () => [] }),
  alsoFallback: Schema.optionalWith(Schema.Array(FallbackWidenable), { default: () => [] })
}) {}

/**
 * The operation mode. `read-only` and `advisory` run; `effectful` is refused by the executor (effectful
 * calls belong in a durable ledger, not behind retries).
 *
 * @category schemas
 * @since 0.1.0
 */
export const Mode = Schema.Literal("read-only", "advisory", "effectful")

/**
 * @category models
 * @since 0.1.0
 */
export type Mode = typeof Mode.Type

const Candidates = nonEmptyArray(EndpointId, "candidate").pipe(Schema.filter((ids) => {
  const seen = new Set<string>()
  for (const [i, id] of ids.entries()) {
    if (seen.has(id)) return { path: [i], message: `Duplicate candidate ${JSON.stringify(id)}` }
    seen.add(id)
  }
  return true
}))

/**
 * The contract as a Schema. Encoded form: durations as milliseconds or strings such as `"30 seconds"`.
 *
 * @category models
 * @since 0.1.0
 */
export class Contract extends Schema.Class<Contract>("Contract")({
  /** Total time from the start of execution to the terminal outcome. */
  deadline: PositiveDuration,
  /**
   * Upper bound for one attempt; each attempt gets `min(attemptTimeout, remaining)`. It is the provider's time:
   * for a stream (`Rein.executeStream`), the time waiting on the provider, to the first delta and then between
   * deltas while the consumer waits for the next. It is paused while the consumer holds a delta (from its
   * hand-over until the consumer asks for the next), so a slow consumer never times out the attempt; a provider
   * that stalls while the consumer waits still does. The `deadline` covers everything, the consumer's time too.
   */
  attemptTimeout: Schema.optional(PositiveDuration),
  /** How long Rein waits for an interrupted attempt to tear down before returning anyway. */
  teardownGrace: Schema.optionalWith(PositiveDuration, { default: () => Duration.millis(250) }),
  /** The least time worth starting an attempt with (and after its backoff). */
  minAttempt: Schema.optional(PositiveDuration),
  budget: Schema.optionalWith(BudgetLimits, { default: () => new BudgetLimits({}) }),
  /** The ordered candidates: only these may run, in this order. */
  candidates: Candidates,
  retry: Schema.optionalWith(RetryPolicy, { default: () => RetryPolicy.make({}) }),
  requires: Schema.optionalWith(Requirements, { default: () => Requirements.make({}) }),
  mode: Schema.optionalWith(Mode, { default: () => "read-only" as const }),
  /**
   * Whether simulated endpoints (a `Fake` provider, the CLI's fake) may run. Off by default: each is then
   * illegal (predicate `simulation`), and a request with no other candidate is `Refused`
   * (`no_legal_candidate`, "…the contract does not allow simulation"). Set it `true` in tests and examples.
   */
  allowSimulated: Schema.optionalWith(Schema.Boolean, { default: () => false }),
  failures: Schema.optionalWith(FailurePolicy, { default: () => FailurePolicy.make({}) }),
  /**
   * What an answer cut at the output limit (finish reason `length`) is: `"fail"` (the default) makes it a
   * failure of kind `truncated` (fallback only to a candidate with a larger output limit, never a retry
   * on the same endpoint); `"accept"` makes it a success whose `finishReason` says `length`. The limits
   * compared are the bounds each candidate would be sent: the request's own `maxOutputTokens` when it has
   * one — the same for every candidate, so a truncated answer under an own bound never falls back (it ends
   * `PlanExhausted` with the `truncated` cause) — else each endpoint's catalog `maxOutputTokens`.
   */
  truncation: Schema.optionalWith(Schema.Literal("fail", "accept"), { default: () => "fail" as const })
}) {}

/**
 * The encoded (JSON) form of a contract.
 *
 * @category models
 * @since 0.1.0
 */
export type ContractInput = typeof Contract.Encoded

/**
 * A contract decode failure, with a message naming each bad field.
 *
 * @category errors
 * @since 0.1.0
 */
export class ContractError extends Schema.TaggedError<ContractError>()("ContractError", {
  message: Schema.String
}) {}

const decodeContract = decodeWith(Contract)

/**
 * Decodes a contract from unknown input (parsed JSON), naming every bad field.
 *
 * @example
 * ```ts
 * import { Contract } from "@rein/core"
 *
 * Contract.decode({ deadline: -1, candidates: ["a"] })
 * // Left(ContractError: "deadline: Expected a positive finite duration …, actual -1")
 * ```
 * @category decoding
 * @since 0.1.0
 */
export const decode = (input: unknown): Either.Either<Contract, ContractError> =>
  Either.mapLeft(decodeContract(input), (message) => new ContractError({ message }))

/**
 * Builds a contract from its JSON form; throws a `ContractError` on bad input. For trusted, literal config.
 *
 * @example
 * ```ts
 * import { Contract } from "@rein/core"
 *
 * const contract = Contract.make({
 *   deadline: "30 seconds",
 *   attemptTimeout: "10 seconds",
 *   budget: { cost: 0.02, calls: 6 },
 *   candidates: ["openai/mini", "anthropic/haiku"],
 *   retry: { perEndpoint: 2, base: "250 millis", factor: 2, max: "4 seconds", jitter: 0.2 }
 * })
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const make = (input: ContractInput): Contract => Either.getOrThrowWith(decode(input), identity)
