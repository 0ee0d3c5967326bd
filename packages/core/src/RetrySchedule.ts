/**
 * A contract's retry policy as an Effect `Schedule`: for a sequence of failures on one endpoint, the
 * delays the planner would wait before each retry, and where it would stop retrying. Every step asks the
 * planner itself (`Planner.decide`, over a one-candidate spec derived from the contract like every
 * request's), so the schedule and the executor cannot disagree: the exponential backoff with its jitter
 * (one `Random.next` per failure, as the executor draws it), Retry-After (clamped to
 * `retry.maxRetryAfter`; a longer hint than the backoff wins), the per-endpoint and rate-limit retry caps,
 * the failure table (a kind that is not retried stops), and the deadline (a wait that leaves no time for
 * an attempt of `minAttempt` stops).
 *
 * Fallback is not a schedule: after an endpoint's retries, the executor folds over the contract's later
 * candidates with `firstSuccessOf` semantics — the first legal candidate after the current one is tried
 * (with its own retries), never one behind it, and the first success wins. "Legal" is the planner's
 * eleven predicates, among them the failure table's fallback rule for the last failure's kind.
 *
 * @since 0.1.0
 */
import { Clock, Duration, Effect, Random, Schedule } from "effect"
import * as ScheduleDecision from "effect/ScheduleDecision"
import * as Interval from "effect/ScheduleInterval"
import type { Contract } from "./Contract.js"
import type { FailureKind } from "./Failure.js"
import { boundRetryAfter, derive } from "./internal/spec.js"
import * as Planner from "./Planner.js"

/**
 * What the schedule needs of a failure: its kind and Retry-After, if any. A `Failure.ProviderFailure` is
 * one.
 *
 * @example
 * ```ts
 * import type { RetrySchedule } from "@rein/core"
 *
 * const failed: RetrySchedule.Failed = { kind: "rate_limited", retryAfterMillis: 2_000 }
 * ```
 * @category models
 * @since 0.1.0
 */
export interface Failed {
  readonly kind: FailureKind
  readonly retryAfterMillis?: number | undefined
}

const ENDPOINT = "retried"

/** The one candidate: capable of anything, so only the retry policy, the table and time decide. */
const candidate: Planner.CandidateSpec = {
  id: ENDPOINT,
  listed: true,
  known: true,
  hasProvider: true,
  scope: "",
  contextWindow: Number.MAX_SAFE_INTEGER,
  maxOutputTokens: Number.MAX_SAFE_INTEGER,
  tools: true,
  structuredOutput: true,
  streaming: true,
  simulated: false,
  prices: { inputTokens: 0, outputTokens: 0, request: 0 }
}

const NO_FACTS = () => ({ hasProvider: true, simulated: false })
const NONE: { readonly [endpoint: string]: never } = Object.freeze(Object.create(null))

/** The contract's spec with one candidate (the retry policy and table derived as every request's are). */
const specOf = (contract: Contract): Planner.Spec => ({
  ...derive(contract, new Map(), NO_FACTS, null, null, { order: [] }),
  candidates: [candidate]
})

interface State {
  readonly failures: number
  readonly rateLimited: number
}

/** The planner's snapshot after `state.failures` failures, the last one `input`, at `elapsedMillis`. */
const snapshotOf = (
  contract: Contract,
  state: State,
  input: Failed,
  elapsedMillis: number,
  jitter: number
): Planner.Snapshot => ({
  elapsedMillis,
  remainingMillis: Math.max(0, Duration.toMillis(contract.deadline) - elapsedMillis),
  budget: { cost: null, tokens: null, calls: null },
  attempts: state.failures,
  current: ENDPOINT,
  triesOnCurrent: state.failures,
  rateLimitedOnCurrent: state.rateLimited,
  last: { kind: input.kind, retryAfterMillis: boundRetryAfter(input.retryAfterMillis, contract) },
  health: NONE,
  retryTokens: { global: null, endpoints: NONE },
  committed: false,
  jitter
})

/**
 * The contract's retries on one endpoint as a `Schedule` whose deadline started at `startMillis` (the
 * clock's milliseconds when the first attempt began). Each output is the delay before the next retry.
 *
 * @example
 * ```ts
 * import { Clock, Effect } from "effect"
 * import { Contract, RetrySchedule } from "@rein/core"
 *
 * const contract = Contract.make({ deadline: "10 seconds", candidates: ["a"], retry: { perEndpoint: 2 } })
 * declare const call: Effect.Effect<string, RetrySchedule.Failed>
 * const retried = Effect.flatMap(Clock.currentTimeMillis, (start) =>
 *   Effect.retry(call, RetrySchedule.fromStart(contract, start))
 * )
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const fromStart = (contract: Contract, startMillis: number): Schedule.Schedule<Duration.Duration, Failed> => {
  const spec = specOf(contract)
  const initial: State = { failures: 0, rateLimited: 0 }
  return Schedule.makeWithState(initial, (now, input: Failed, state) =>
    Effect.map(Random.next, (jitter) => {
      const next: State = {
        failures: state.failures + 1,
        rateLimited: state.rateLimited + (input.kind === "rate_limited" ? 1 : 0)
      }
      const decision = Planner.decide(spec, snapshotOf(contract, next, input, now - startMillis, jitter))
      if (decision._tag !== "Attempt") return [next, Duration.zero, ScheduleDecision.done] as const
      const delay = Duration.millis(decision.waitMillis)
      return [next, delay, ScheduleDecision.continueWith(Interval.after(now + decision.waitMillis))] as const
    }))
}

/**
 * The contract's retries on one endpoint as a `Schedule`, its deadline starting now.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Contract, RetrySchedule } from "@rein/core"
 *
 * const contract = Contract.make({ deadline: "10 seconds", candidates: ["a"] })
 * declare const call: Effect.Effect<string, RetrySchedule.Failed>
 * const retried = Effect.flatMap(RetrySchedule.make(contract), (schedule) => Effect.retry(call, schedule))
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const make = (contract: Contract): Effect.Effect<Schedule.Schedule<Duration.Duration, Failed>> =>
  Effect.map(Clock.currentTimeMillis, (start) => fromStart(contract, start))
