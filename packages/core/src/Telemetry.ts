/**
 * Telemetry: OpenTelemetry spans and metrics that follow the contract. With `Telemetry.layer` provided,
 * every request is a span (`rein.request`) with one child span per attempt (`chat {model}`, the GenAI
 * semantic conventions' name), a span event for each wait (`backoff`, `retry_after`, `gate`) and for each
 * candidate skipped with the predicate that failed; the metrics below are updated as attempts end. Spans go
 * to whatever `Tracer` the program runs with (`@effect/opentelemetry`'s `NodeSdk` or `Otlp` layers export
 * them); metrics are Effect `Metric`s, exported by the same layers.
 *
 * Without the layer nothing is recorded and nothing is paid for: the executor does not even open a span
 * (Effect always has a native tracer, and `Effect.withSpan` costs an allocation and a stack capture per
 * call even when no exporter listens). Telemetry is fed by the same synchronous hooks as the journal
 * (`Journal.Writer`): the decisions, the attempt records, the outcome. So a span carries what a record
 * carries — kinds, normalised codes, numbers, ids, the planner's own predicate verdicts — and never a
 * prompt, an answer, a secret or provider prose.
 *
 * @since 0.1.0
 */
import { Context, Layer } from "effect"
import { metrics as all } from "./internal/metrics.js"
import * as internal from "./internal/telemetry.js"

/**
 * What telemetry learns when a request starts: its contract and spec, the catalog entries it may run on,
 * its monotonic origin and deadline (nanos of `clock`), and where its span belongs.
 *
 * @example
 * ```ts
 * import type { Telemetry } from "@rein/core"
 *
 * const late = (start: Telemetry.Start, endNanos: bigint) => endNanos > start.expiresNanos
 * ```
 * @category models
 * @since 0.1.0
 */
export interface Start extends internal.Start {}

/**
 * The telemetry service: opens one request's telemetry as a `Journal.Writer` (decisions and attempt
 * records as they happen, the outcome at the end). `begin` is synchronous: it runs on the executor's hot
 * path, once per request.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Telemetry } from "@rein/core"
 *
 * // Count requests, and nothing else.
 * let requests = 0
 * const counting = Telemetry.Telemetry.of({
 *   begin: () => ({ decision: () => {}, attempt: () => {}, end: () => Effect.sync(() => void requests++) })
 * })
 * ```
 * @category services
 * @since 0.1.0
 */
export interface Service extends internal.Service {}

/**
 * The telemetry service tag. Absent (the default): nothing is recorded.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Telemetry } from "@rein/core"
 *
 * const on = Effect.map(Effect.serviceOption(Telemetry.Telemetry), (t) => t._tag === "Some")
 * ```
 * @category services
 * @since 0.1.0
 */
export class Telemetry extends Context.Tag("@rein/core/Telemetry")<Telemetry, Service>() {}

/**
 * Makes the standard telemetry: spans (unless `spans: false`) and metrics (unless `metrics: false`).
 *
 * @example
 * ```ts
 * import { Layer } from "effect"
 * import { Telemetry } from "@rein/core"
 *
 * // Metrics only (e.g. for `rein batch --metrics` without an exporter).
 * const MetricsOnly = Layer.succeed(Telemetry.Telemetry, Telemetry.make({ spans: false }))
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const make = (options: { readonly spans?: boolean; readonly metrics?: boolean } = {}): Service => ({
  begin: internal.begin(options.spans !== false, options.metrics !== false)
})

/**
 * Spans and metrics for every request under this layer. Pair it with an exporter from
 * `@effect/opentelemetry` (`Otlp.layerJson`, `NodeSdk.layer`).
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Rein, Telemetry } from "@rein/core"
 * import type { Contract } from "@rein/core"
 *
 * declare const contract: Contract.Contract
 * // With an exporter: Layer.merge(Telemetry.layer, Otlp.layerJson({ baseUrl: "http://localhost:4318" }))
 * const observed = Rein.execute({ prompt: "hi", inputTokens: 5 }, contract).pipe(Effect.provide(Telemetry.layer))
 * ```
 * @category layers
 * @since 0.1.0
 */
export const layer: Layer.Layer<Telemetry> = Layer.sync(Telemetry, () => make())

/**
 * Rein's metrics (Effect `Metric`s, exported by `@effect/opentelemetry` with the rest). Label keys are
 * OpenTelemetry attribute names. Breaker state and transitions and retry-budget tokens are `Health`'s own
 * (`rein_breaker_state`, `rein_breaker_transitions_total`, `rein_retry_tokens`).
 *
 * @example
 * ```ts
 * import { Metric, MetricLabel } from "effect"
 * import { Telemetry } from "@rein/core"
 *
 * const fallbacksToB = Metric.value(
 *   Metric.taggedWithLabels(Telemetry.metrics.fallbacks, [MetricLabel.make("rein.endpoint", "b")])
 * )
 * ```
 * @category metrics
 * @since 0.1.0
 */
export const metrics = all
