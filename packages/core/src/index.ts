/**
 * Rein core: one deadline, one budget and one attempt policy for every LLM call.
 *
 * @since 0.1.0
 */

/**
 * The per-request contract: deadline, attempt timeout, budget, attempt policy, requirements, mode.
 *
 * @since 0.1.0
 */
export * as Contract from "./Contract.js"

/**
 * Decoding at the edge: durations people write, timer clamping, errors naming each field.
 *
 * @since 0.1.0
 */
export * as Input from "./Input.js"

/**
 * Endpoints: id, provider, model, capabilities, prices, credential scope.
 *
 * @since 0.1.0
 */
export * as Catalog from "./Catalog.js"

/**
 * The monotonic deadline; nesting takes the minimum; bounded sleeps.
 *
 * @since 0.1.0
 */
export * as Deadline from "./Deadline.js"

/**
 * Hard admission budgets: reserve, settle, release; the call cap.
 *
 * @since 0.1.0
 */
export * as Budget from "./Budget.js"

/**
 * Usage and cost; unknown usage stays unknown.
 *
 * @since 0.1.0
 */
export * as Usage from "./Usage.js"

/**
 * The failure taxonomy, its table, classification and Retry-After parsing.
 *
 * @since 0.1.0
 */
export * as Failure from "./Failure.js"

/**
 * The one-shot provider service and its attempt context.
 *
 * @since 0.1.0
 */
export * as Provider from "./Provider.js"

/**
 * The one decision site: legality predicates → decision, a pure function.
 *
 * @since 0.1.0
 */
export * as Planner from "./Planner.js"

/**
 * A contract's retry policy as an Effect `Schedule`, every step decided by the planner itself.
 *
 * @since 0.1.0
 */
export * as RetrySchedule from "./RetrySchedule.js"

/**
 * The interpreter of planner decisions.
 *
 * @since 0.1.0
 */
export * as Execute from "./Execute.js"

/**
 * Streaming execution with commit-once.
 *
 * @since 0.1.0
 */
export * as Streaming from "./Streaming.js"

/**
 * Circuit breakers, probe slots and retry budgets, admitted atomically.
 *
 * @since 0.1.0
 */
export * as Health from "./Health.js"

/**
 * An admission gate for run-wide limits (rate limits, capacity, cooldowns, stops).
 *
 * @since 0.1.0
 */
export * as Gate from "./Gate.js"

/**
 * Decision records, replay and explain.
 *
 * @since 0.1.0
 */
export * as Journal from "./Journal.js"

/**
 * Terminal outcomes and attempt records.
 *
 * @since 0.1.0
 */
export * as Outcome from "./Outcome.js"

/**
 * Canonical JSON: sorted keys, no whitespace, non-finite numbers and other lossy values refused.
 *
 * @since 0.1.0
 */
export * as Canonical from "./Canonical.js"

/**
 * Numbers as Rein's messages write them (six significant digits).
 *
 * @since 0.1.0
 */
export * as Format from "./Format.js"

/**
 * Errors built without a stack trace, as Rein's executors build theirs.
 *
 * @since 0.1.0
 */
export * as Stackless from "./Stackless.js"

/**
 * Scripted providers for tests, examples and simulation.
 *
 * @since 0.1.0
 */
export * as Fake from "./Fake.js"

/**
 * The entry point: `Rein.layer`, `Rein.execute`.
 *
 * @since 0.1.0
 */
export * as Rein from "./Rein.js"

/**
 * Semantic revisions: bounded draft → check → revise under one deadline, call cap and budget, ending in
 * an accepted candidate or `NeedsReview`.
 *
 * @since 0.1.0
 */
export * as Refine from "./Refine.js"

/**
 * OpenTelemetry spans and metrics for every request: off (and free) unless `Telemetry.layer` is provided.
 *
 * @since 0.1.0
 */
export * as Telemetry from "./Telemetry.js"
