/**
 * Rein's metrics, defined once (see `Telemetry.metrics`).
 *
 * @internal
 */
import { Metric, MetricBoundaries } from "effect"

const millis = MetricBoundaries.exponential({ start: 1, factor: 2, count: 20 })

/** @internal */
export const metrics = {
  /** Attempts, by `rein.endpoint`, `rein.attempt.role` and `rein.outcome` (the failure kind, or `success`). */
  attempts: Metric.counter("rein.attempts", { description: "Attempts by endpoint, role and outcome kind" }),
  /** Attempts that were retries of the endpoint before, by `rein.endpoint`. */
  retries: Metric.counter("rein.retries", { description: "Retries by endpoint" }),
  /** Attempts that fell back to another endpoint, by `rein.endpoint` (the one fallen back to). */
  fallbacks: Metric.counter("rein.fallbacks", { description: "Fallbacks by the endpoint fallen back to" }),
  /** Requests by `rein.outcome` (`Completion` or the terminal outcome's tag). */
  requests: Metric.counter("rein.requests", { description: "Requests by outcome" }),
  /** Worst-case cost reserved for attempts, by `rein.endpoint`. */
  reservedCost: Metric.counter("rein.budget.reserved.cost", { description: "Worst-case cost reserved" }),
  /** Cost charged for attempts (settled, or the full reservation when usage is unknown), by `rein.endpoint`. */
  chargedCost: Metric.counter("rein.budget.charged.cost", { description: "Cost charged" }),
  /** Tokens reserved (worst case), by `rein.endpoint`. */
  reservedTokens: Metric.counter("rein.budget.reserved.tokens", { description: "Tokens reserved" }),
  /** Tokens charged, by `rein.endpoint`. */
  chargedTokens: Metric.counter("rein.budget.charged.tokens", { description: "Tokens charged" }),
  /** How late an outcome came back after its deadline (ms; only outcomes that were late). */
  deadlineOvershoot: Metric.histogram(
    "rein.deadline.overshoot",
    millis,
    "Milliseconds an outcome came back after its deadline"
  ),
  /** Time spent waiting before attempts (ms), by `rein.wait.kind`: `backoff`, `retry_after`, `gate`. */
  waits: Metric.histogram("rein.wait.duration", millis, "Milliseconds waited before attempts, by kind"),
  /** Tokens used per attempt that reported usage, by `gen_ai.token.type` (`input`, `output`) and model. */
  tokenUsage: Metric.histogram(
    "gen_ai.client.token.usage",
    MetricBoundaries.exponential({ start: 1, factor: 4, count: 14 }),
    "Number of input and output tokens used"
  ),
  /** Duration of each attempt (seconds), by model, provider and `error.type`. */
  operationDuration: Metric.histogram(
    "gen_ai.client.operation.duration",
    MetricBoundaries.exponential({ start: 0.01, factor: 2, count: 14 }),
    "GenAI operation duration in seconds"
  ),
  /** Batch items accepted (pulled from the source). */
  batchAccepted: Metric.counter("rein.batch.items.accepted", {
    description: "Batch items accepted",
    incremental: true
  }),
  /** Batch items with a terminal result, by `rein.batch.item.result` (`Succeeded`, `Failed`, `Reused`, `Planned`). */
  batchDone: Metric.counter("rein.batch.items.done", { description: "Batch items done", incremental: true }),
  /** Batch items whose result is a failure, by `rein.batch.item.category`. */
  batchFailed: Metric.counter("rein.batch.items.failed", { description: "Batch items failed", incremental: true }),
  /** Batch items executing now (an up-down counter). */
  batchInFlight: Metric.counter("rein.batch.items.in_flight", { description: "Batch items in flight" })
} as const
