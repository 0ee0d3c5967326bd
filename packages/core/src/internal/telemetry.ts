/**
 * The standard telemetry writer: a request span opened at the start, an attempt span per attempt record
 * (with its exact start and end), span events for waits and skipped candidates, metrics as attempts end.
 * Fed synchronously by the loop's journal hooks; what it writes is only what records hold.
 *
 * @internal
 */
// By module path: the package index loads all of @effect/ai (≈ 250 ms of the binary's start-up), for one module.
import * as GenAI from "@effect/ai/Telemetry"
import type { Clock, Fiber, Tracer } from "effect"
import { Context, Effect, Exit, FiberId, FiberRef, MetricLabel, Option, String as Str, Tracer as T } from "effect"
import type { Endpoint } from "../Catalog.js"
import type { Contract } from "../Contract.js"
import type { Writer } from "../Journal.js"
import type * as Outcome from "../Outcome.js"
import * as Planner from "../Planner.js"
import { metrics } from "./metrics.js"

/** What telemetry learns when a request starts (documented as `Telemetry.Start`). @internal */
export interface Start {
  /**
   * The request's id, as its outcome's `requestId`: the caller's `request.id`, else the one the journal drew for
   * its record (telemetry opens once it is drawn), so that a span names the record `rein explain` reads.
   * `undefined`: neither (no id, no journal).
   */
  readonly requestId: string | undefined
  readonly contract: Contract
  readonly spec: Planner.Spec
  readonly endpoints: ReadonlyMap<string, Endpoint>
  readonly streaming: boolean
  readonly clock: Clock.Clock
  readonly originNanos: bigint
  readonly expiresNanos: bigint
  /** Whether a `Gate` admits the request's attempts (only then is a late start a wait at the gate). */
  readonly gated: boolean
  readonly tracer: Tracer.Tracer | undefined
  readonly parent: Option.Option<Tracer.AnySpan>
}

/** The service's shape (documented as `Telemetry.Service`). @internal */
export interface Service {
  readonly begin: (start: Start) => Writer
}

type Ended = Parameters<Writer["end"]>[0]

const rein = GenAI.addSpanAttributes("rein", Str.camelToSnake)
const reinAttempt = GenAI.addSpanAttributes("rein.attempt", Str.camelToSnake)
/**
 * Label sets, made once per combination: Effect caches a metric's hook by the identity of the label array,
 * so a fresh array per update would cost a registry lookup (hashing the whole key) every time.
 */
const labelSets = new Map<string, ReadonlyArray<MetricLabel.MetricLabel>>()
const LABEL_SETS = 4096
const labels = (...pairs: ReadonlyArray<string>): ReadonlyArray<MetricLabel.MetricLabel> => {
  const key = pairs.join("\u0000")
  let found = labelSets.get(key)
  if (found === undefined) {
    if (labelSets.size >= LABEL_SETS) labelSets.clear()
    const made: Array<MetricLabel.MetricLabel> = []
    for (let i = 0; i + 1 < pairs.length; i += 2) made.push(MetricLabel.make(pairs[i]!, pairs[i + 1]!))
    labelSets.set(key, found = made)
  }
  return found
}
const NO_LABELS: ReadonlyArray<MetricLabel.MetricLabel> = []
const NOOP_END = (): Effect.Effect<void> => Effect.void

const nanosAt = (start: Start, offsetMillis: number): bigint =>
  start.originNanos + BigInt(Math.round(offsetMillis * 1e6))

/** The first predicate a candidate failed, with its verdict (the planner's own words and numbers). */
const failing = (verdict: Planner.CandidateVerdict): readonly [Planner.Predicate, string] | undefined => {
  for (const p of Planner.predicates) {
    const v = verdict.verdicts[p]
    if (v !== true) return [p, v]
  }
  return undefined
}

/** Per-request state between the hooks. */
interface State {
  readonly start: Start
  readonly span: Tracer.Span | undefined
  readonly metrics: boolean
  /** When the attempt decided last should start (ms from the origin), to see a gate's wait. */
  expectedStart: number | null
  waits: number
  waitedMillis: number
  chargedCost: number
  chargedTokens: number
  last: Outcome.AttemptRecord | undefined
  /** How the attempt before ended (its failure kind or status), for the next one's reason. */
  lastEnd: string | null
}

/** Opens the standard telemetry of one request (see `Telemetry.make`). @internal */
export const begin = (spans: boolean, withMetrics: boolean) => (start: Start): Writer => {
  const span = spans && start.tracer !== undefined ? requestSpan(start) : undefined
  if (span === undefined && !withMetrics) {
    return { decision: () => {}, attempt: () => {}, end: NOOP_END, unsafeEnd: NOOP_END }
  }
  const state: State = {
    start,
    span,
    metrics: withMetrics,
    expectedStart: null,
    waits: 0,
    waitedMillis: 0,
    chargedCost: 0,
    chargedTokens: 0,
    last: undefined,
    lastEnd: null
  }
  return {
    decision: (snapshot, decision) => onDecision(state, snapshot, decision),
    attempt: (record) => onAttempt(state, record),
    end: (outcome) => Effect.sync(() => onEnd(state, outcome)),
    // `end`'s work in the caller's step (see `tee`): the span and metrics need no effect.
    unsafeEnd: (outcome) => (onEnd(state, outcome), Effect.void)
  }
}

const requestSpan = (start: Start): Tracer.Span => {
  const span = start.tracer!.span("rein.request", start.parent, Context.empty(), [], start.originNanos, "internal")
  GenAI.addGenAIAnnotations(span, { operation: { name: "chat" } })
  rein(span, {
    requestId: start.requestId,
    // `@effect/opentelemetry` exports arrays as JSON: a plain list reads better.
    candidates: start.contract.candidates.join(","),
    streaming: start.streaming,
    deadlineMillis: Number(start.expiresNanos - start.originNanos) / 1e6,
    mode: start.contract.mode
  })
  return span
}

const onDecision = (state: State, snapshot: Planner.Snapshot, decision: Planner.Decision): void => {
  const span = state.span
  const at = nanosAt(state.start, snapshot.elapsedMillis)
  if (span !== undefined) {
    for (const verdict of decision.candidates) {
      if (decision._tag === "Attempt" && verdict.endpoint === decision.endpoint) break
      const failed = verdict.legal ? undefined : failing(verdict)
      if (failed === undefined) continue
      span.event("rein.candidate.skipped", at, {
        "rein.endpoint": verdict.endpoint,
        "rein.attempt.role": verdict.role,
        "rein.predicate": failed[0],
        "rein.reason": failed[1]
      })
    }
  }
  if (decision._tag === "Stop") {
    state.expectedStart = null
    return
  }
  state.expectedStart = snapshot.elapsedMillis + decision.waitMillis
  if (decision.waitMillis > 0) wait(state, decision.waitReason, decision.waitMillis, at, decision.endpoint)
}

const wait = (state: State, kind: string, millis: number, at: bigint, endpoint: string): void => {
  state.waits++
  state.waitedMillis += millis
  state.span?.event("rein.wait", at, { "rein.wait.kind": kind, "rein.wait.millis": millis, "rein.endpoint": endpoint })
  if (state.metrics) metrics.waits.unsafeUpdate(millis, labels("rein.wait.kind", kind))
}

/**
 * A wait at the gate (rate limits, capacity, a shared cooldown) shows as a start later than decided, when
 * there is a gate; below this it is the executor's own work between the decision and the call.
 */
const GATE_NOISE_MILLIS = 1

const onAttempt = (state: State, record: Outcome.AttemptRecord): void => {
  const expected = state.expectedStart
  if (state.start.gated && expected !== null && record.startMillis - expected >= GATE_NOISE_MILLIS) {
    wait(state, "gate", record.startMillis - expected, nanosAt(state.start, expected), record.endpoint)
  }
  state.expectedStart = null
  state.last = record
  state.chargedCost += record.charged.cost
  state.chargedTokens += record.charged.tokens
  const endpoint = state.start.endpoints.get(record.endpoint)
  if (state.span !== undefined && state.start.tracer !== undefined) attemptSpan(state, record, endpoint)
  if (state.metrics) attemptMetrics(record, endpoint)
  state.lastEnd = record.failure ?? record.status
}

const attemptSpan = (state: State, record: Outcome.AttemptRecord, endpoint: Endpoint | undefined): void => {
  const model = endpoint?.model ?? record.endpoint
  const span = state.start.tracer!.span(
    `chat ${model}`,
    Option.some(state.span!),
    Context.empty(),
    [],
    nanosAt(state.start, record.startMillis),
    "client"
  )
  GenAI.addGenAIAnnotations(span, {
    system: endpoint?.provider,
    operation: { name: "chat" },
    request: { model, maxTokens: state.start.spec.maxOutputTokens ?? endpoint?.capabilities.maxOutputTokens },
    response: { finishReasons: record.finishReason === undefined ? undefined : [record.finishReason] },
    usage: record.usage === "unknown"
      ? undefined
      : { inputTokens: record.usage.inputTokens, outputTokens: record.usage.outputTokens }
  })
  if (record.failure !== null) span.attribute("error.type", record.failure)
  rein(span, { endpoint: record.endpoint, retryAfterMillis: record.retryAfterMillis, simulated: record.simulated })
  reinAttempt(span, {
    number: record.attempt,
    call: record.call,
    role: record.role,
    reason: reasonOf(state, record),
    timeoutMillis: record.timeoutMillis,
    binding: record.binding,
    status: record.status,
    dispatched: record.dispatched,
    teardownUnconfirmed: record.teardownUnconfirmed,
    billingBoundViolation: record.billingBoundViolation
  })
  GenAI.addSpanAttributes("rein.failure", Str.camelToSnake)(span, { kind: record.failure, code: record.code })
  GenAI.addSpanAttributes("rein.reservation", Str.camelToSnake)(span, record.reservation)
  GenAI.addSpanAttributes("rein.charged", Str.camelToSnake)(span, record.charged)
  span.end(
    nanosAt(state.start, record.endMillis),
    record.status === "success" ? Exit.void : Exit.fail(record.failure ?? record.status)
  )
}

/** Why the planner chose this attempt, in its terms: the role, and after which failure. */
const reasonOf = (state: State, record: Outcome.AttemptRecord): string =>
  record.role === "first" || state.lastEnd === null ? record.role : `${record.role} after ${state.lastEnd}`

const attemptMetrics = (record: Outcome.AttemptRecord, endpoint: Endpoint | undefined): void => {
  const at = labels("rein.endpoint", record.endpoint)
  const outcome = record.failure ?? record.status
  metrics.attempts.unsafeUpdate(
    1,
    labels("rein.endpoint", record.endpoint, "rein.attempt.role", record.role, "rein.outcome", outcome)
  )
  if (record.role === "retry") metrics.retries.unsafeUpdate(1, at)
  else if (record.role === "fallback") metrics.fallbacks.unsafeUpdate(1, at)
  if (record.reservation.cost !== null) metrics.reservedCost.unsafeUpdate(record.reservation.cost, at)
  if (record.reservation.tokens !== null) metrics.reservedTokens.unsafeUpdate(record.reservation.tokens, at)
  metrics.chargedCost.unsafeUpdate(record.charged.cost, at)
  metrics.chargedTokens.unsafeUpdate(record.charged.tokens, at)
  const system = endpoint?.provider ?? "unknown"
  const model = endpoint?.model ?? record.endpoint
  const genAi = ["gen_ai.operation.name", "chat", "gen_ai.system", system, "gen_ai.request.model", model] as const
  metrics.operationDuration.unsafeUpdate(
    (record.endMillis - record.startMillis) / 1000,
    record.status === "success" ? labels(...genAi) : labels(...genAi, "error.type", outcome)
  )
  if (record.usage !== "unknown") {
    metrics.tokenUsage.unsafeUpdate(record.usage.inputTokens, labels(...genAi, "gen_ai.token.type", "input"))
    metrics.tokenUsage.unsafeUpdate(record.usage.outputTokens, labels(...genAi, "gen_ai.token.type", "output"))
  }
}

const onEnd = (state: State, outcome: Ended): void => {
  const start = state.start
  const now = start.clock.unsafeCurrentTimeNanos()
  const tag = "_tag" in outcome ? outcome._tag : "Completion"
  if (state.metrics) {
    metrics.requests.unsafeUpdate(1, labels("rein.outcome", tag))
    if (now > start.expiresNanos) {
      metrics.deadlineOvershoot.unsafeUpdate(Number(now - start.expiresNanos) / 1e6, NO_LABELS)
    }
  }
  const span = state.span
  if (span === undefined) return
  const endpoint = state.last === undefined ? undefined : start.endpoints.get(state.last.endpoint)
  const last = state.last
  if (tag === "Completion" && endpoint !== undefined && last !== undefined) {
    // The answer's model, finish reason and usage (the request's charges over all attempts are `rein.charged.*`).
    GenAI.addGenAIAnnotations(span, {
      system: endpoint.provider,
      request: { model: endpoint.model },
      response: { finishReasons: last.finishReason === undefined ? undefined : [last.finishReason] },
      usage: last.usage === "unknown"
        ? undefined
        : { inputTokens: last.usage.inputTokens, outputTokens: last.usage.outputTokens }
    })
  }
  if (tag !== "Completion" && tag !== "Interrupted") span.attribute("error.type", tag)
  rein(span, {
    outcome: tag,
    phase: "phase" in outcome ? outcome.phase : undefined,
    endpoint: tag === "Completion" ? state.last?.endpoint : undefined,
    attempts: "attempts" in outcome ? outcome.attempts.length : undefined,
    waits: state.waits,
    waitedMillis: state.waitedMillis,
    teardownUnconfirmed: "teardownUnconfirmed" in outcome ? outcome.teardownUnconfirmed : undefined
  })
  GenAI.addSpanAttributes("rein.charged", Str.camelToSnake)(span, {
    cost: state.chargedCost,
    tokens: state.chargedTokens
  })
  span.end(
    now,
    tag === "Completion" ? Exit.void : tag === "Interrupted" ? Exit.interrupt(FiberId.none) : Exit.fail(tag)
  )
}

/** What a request's telemetry starts from, but for its id and where its span belongs. @internal */
export type Opened = Omit<Start, "requestId" | "tracer" | "parent">

/**
 * Opens a request's telemetry with the `Telemetry` service (the caller looks it up: without it, a request
 * pays that one context lookup and nothing else). The span's parent and tracer are the running fiber's.
 *
 * @internal
 */
export const open = (
  fiber: Fiber.RuntimeFiber<unknown, unknown>,
  service: Service,
  start: Opened,
  requestId: string | undefined
): Writer => {
  const context = fiber.currentContext
  const tracer = fiber.getFiberRef(FiberRef.currentTracerEnabled)
    ? Context.get(fiber.currentDefaultServices, T.Tracer)
    : undefined
  return service.begin({ ...start, requestId, tracer, parent: Context.getOption(context, T.ParentSpan) })
}

/**
 * A request's telemetry, to open once its id is known: a journaled request without an id of its own opens it
 * with the journal's writer, after the draw (its span starts at the request's origin all the same).
 *
 * @internal
 */
export class Opening {
  constructor(
    readonly fiber: Fiber.RuntimeFiber<unknown, unknown>,
    readonly service: Service,
    readonly start: Opened
  ) {}
  open(requestId: string | undefined): Writer {
    return open(this.fiber, this.service, this.start, requestId)
  }
}

/**
 * Both writers, or the one there is. Its end is `a`'s, then `b`'s (`b`'s does not run when `a`'s failed); when
 * either has `unsafeEnd`, so does the pair, with the same order and the same failures: `a`'s work done now, then,
 * when what it left to run is an `Exit` (a sink that kept the record, as `Journal.layerMemory`'s), `b`'s too, so
 * that a journaled request under telemetry still closes its entry without an effect step; else `b`'s end runs
 * after `a`'s effect. A throw of either is the end's defect (the executor's, as for any `unsafeEnd`).
 *
 * @internal
 */
export const tee = (a: Writer | undefined, b: Writer | undefined): Writer | undefined =>
  a === undefined ? b : b === undefined ? a : {
    decision: (snapshot, decision) => {
      a.decision(snapshot, decision)
      b.decision(snapshot, decision)
    },
    attempt: (record) => {
      a.attempt(record)
      b.attempt(record)
    },
    end: (outcome) => Effect.zipRight(a.end(outcome), b.end(outcome)),
    unsafeEnd: a.unsafeEnd === undefined && b.unsafeEnd === undefined ? undefined : (outcome) => {
      const first = endNow(a, outcome)
      if (!Exit.isExit(first)) return Effect.zipRight(first, b.end(outcome))
      return Exit.isFailure(first) ? first : endNow(b, outcome)
    }
  }

/** A writer's end, its work done now when it can (`unsafeEnd`). */
const endNow = (writer: Writer, outcome: Ended): Effect.Effect<void> =>
  writer.unsafeEnd === undefined ? writer.end(outcome) : writer.unsafeEnd(outcome)
