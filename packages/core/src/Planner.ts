/**
 * The one decision site. Before every attempt, one pure function decides — from a static `Spec` of the
 * request and a `Snapshot` of the state — to attempt (an endpoint, after an optional wait, with a timeout
 * and a reservation) or to stop (with a terminal outcome and why). Each candidate is checked against
 * eleven named legality predicates and every verdict is returned as data, so the journal can record it
 * and `replay` can reproduce it byte for byte.
 *
 * Retries and fallbacks are an ordered fold: the current endpoint is retried while its failure kind,
 * its retry count, the deadline and the budgets allow; otherwise the next legal candidate after it runs.
 * Nothing behind the current position is tried again. The fallback fold is `firstSuccessOf` over the
 * legal candidates, in the contract's order: each is tried (with its retries) until one succeeds, and a
 * candidate the predicates rule out is skipped, never run. One endpoint's retries are the `Schedule`
 * `RetrySchedule.make(contract)`, which asks `decide` at every step.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import { defaultTable, FailureKind, Rule } from "./Failure.js"
import { number as fmt } from "./Format.js"
import { OwnRecord } from "./internal/decode.js"
import { Reservation } from "./Outcome.js"

// The planner's inputs and answers are defined once, here, as Schemas: the journal records and decodes
// them with these, and the types below are derived from them (`replay` feeds decoded records straight back
// to `decide`).

/**
 * The predicates, in the order they are checked and recorded.
 *
 * @example
 * ```ts
 * import { Planner } from "@rein/core"
 *
 * Planner.predicates[0] // "listed"
 * ```
 * @category constants
 * @since 0.1.0
 */
export const predicates: ReadonlyArray<Predicate> = [
  "listed",
  "capable",
  "mode",
  "simulation",
  "deadline",
  "budget",
  "calls",
  "retryBudget",
  "health",
  "failureAllows",
  "uncommitted"
]

/**
 * A legality predicate: a field of `Verdicts`.
 *
 * @category models
 * @since 0.1.0
 */
export type Predicate = keyof Verdicts

const Num = Schema.Number
const NullNum = Schema.NullOr(Schema.Number)

/**
 * A candidate as the planner sees it: everything static it may consult. `listed`: in the contract's
 * candidate list; `known`: in the catalog; `hasProvider`: a provider is registered for it; `vendor`: whose
 * provider-defined tools it runs (absent in journals written before tools were checked).
 *
 * @example
 * ```ts
 * import { Schema } from "effect"
 * import { Planner } from "@rein/core"
 *
 * const isCandidate = Schema.is(Planner.CandidateSpec)
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const CandidateSpec = Schema.Struct({
  id: Schema.String,
  listed: Schema.Boolean,
  known: Schema.Boolean,
  hasProvider: Schema.Boolean,
  scope: Schema.String,
  contextWindow: Num,
  maxOutputTokens: Num,
  tools: Schema.Boolean,
  structuredOutput: Schema.Boolean,
  streaming: Schema.Boolean,
  simulated: Schema.Boolean,
  prices: Schema.Struct({ inputTokens: Num, outputTokens: Num, request: Num }),
  vendor: Schema.optional(Schema.String)
})

/**
 * @category models
 * @since 0.1.0
 */
export interface CandidateSpec extends Schema.Schema.Type<typeof CandidateSpec> {}

/** The failure table; journals of version 1 had no `truncated` row (read as the default one). */
const Table = Schema.extend(
  Schema.Record({ key: Schema.Literal(...FailureKind.literals.filter((k) => k !== "truncated")), value: Rule }),
  Schema.Struct({ truncated: Schema.optionalWith(Rule, { default: () => defaultTable.truncated }) })
)

/**
 * Everything static about one request that the planner consults, fixed when execution starts: the
 * candidates in order, what the request requires (`vendors`: of its provider-defined tools, a candidate
 * must be each one's), the retry policy (`rateLimited`: a separate cap for 429 retries, null: they count
 * against `perEndpoint`) and the effective failure table.
 *
 * `contract` copies the contract fields no decision reads directly, so that a journal's replay can check
 * its copy of the contract against them: the deadline (with an attempt timeout, decisions see only the
 * time remaining), the teardown grace, and the contract's own requirements (`requires` is the contract's
 * joined with what the request uses, which would hide an edit of the contract's). Journals of versions 1
 * and 2 have none.
 *
 * @example
 * ```ts
 * import { Schema } from "effect"
 * import { Planner } from "@rein/core"
 *
 * declare const json: unknown
 * const spec: Planner.Spec = Schema.decodeUnknownSync(Planner.Spec)(json)
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const Spec = Schema.Struct({
  candidates: Schema.Array(CandidateSpec),
  requires: Schema.Struct({
    tools: Schema.Boolean,
    structuredOutput: Schema.Boolean,
    streaming: Schema.Boolean,
    vendors: Schema.optional(Schema.Array(Schema.String))
  }),
  mode: Schema.Literal("read-only", "advisory", "effectful"),
  allowSimulated: Schema.Boolean,
  inputTokens: NullNum,
  maxOutputTokens: NullNum,
  attemptTimeoutMillis: Num,
  minAttemptMillis: Num,
  retry: Schema.Struct({
    perEndpoint: Num,
    rateLimited: NullNum,
    baseMillis: Num,
    factor: Num,
    maxMillis: Num,
    jitter: Num
  }),
  table: Table,
  contract: Schema.optional(Schema.Struct({
    deadlineMillis: Num,
    teardownGraceMillis: Num,
    /** Absent in records written before it was copied (replay then has nothing to compare it with). */
    truncation: Schema.optional(Schema.Literal("fail", "accept")),
    maxRetryAfterMillis: Schema.optional(Num),
    requires: Schema.Struct({ tools: Schema.Boolean, structuredOutput: Schema.Boolean, streaming: Schema.Boolean })
  }))
})

/**
 * @category models
 * @since 0.1.0
 */
export interface Spec extends Schema.Schema.Type<typeof Spec> {}

/**
 * Breaker state of an endpoint as the planner sees it (absent: closed): probe slots free once half-open,
 * and for an open breaker the milliseconds until it half-opens (a wait at least this long may probe).
 *
 * @example
 * ```ts
 * import { Planner } from "@rein/core"
 *
 * const view: Planner.HealthView = { state: "open", probesFree: 1, opensInMillis: 2_000 }
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const HealthView = Schema.Struct({
  state: Schema.Literal("closed", "open", "half_open"),
  probesFree: Num,
  opensInMillis: Num
})

/**
 * @category models
 * @since 0.1.0
 */
export interface HealthView extends Schema.Schema.Type<typeof HealthView> {}

/**
 * The state a decision consumes: time, budgets, breakers (by endpoint, own entries only; absent: closed),
 * retry tokens (`null`: unlimited; an endpoint absent has a full bucket), progress so far (the endpoint of
 * the last attempt, its attempts and how many of them ended `rate_limited`), commit state, and the uniform
 * draw in [0, 1) from Effect's `Random` that backoff jitter consumes (null when none is needed).
 *
 * @example
 * ```ts
 * import { Schema } from "effect"
 * import { Planner } from "@rein/core"
 *
 * declare const json: unknown
 * const snapshot: Planner.Snapshot = Schema.decodeUnknownSync(Planner.Snapshot)(json)
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const Snapshot = Schema.Struct({
  elapsedMillis: Num,
  remainingMillis: Num,
  budget: Schema.Struct({ cost: NullNum, tokens: NullNum, calls: NullNum }),
  attempts: Num,
  current: Schema.NullOr(Schema.String),
  triesOnCurrent: Num,
  rateLimitedOnCurrent: Num,
  last: Schema.NullOr(Schema.Struct({ kind: FailureKind, retryAfterMillis: NullNum })),
  // Keyed by endpoint id, own keys only: `Schema.Record` would decode a `"__proto__"` entry into the result's
  // prototype (lost), and replay would see that endpoint's open breaker closed.
  health: OwnRecord(HealthView),
  retryTokens: Schema.Struct({ global: NullNum, endpoints: OwnRecord(Num) }),
  committed: Schema.Boolean,
  jitter: NullNum
})

/**
 * @category models
 * @since 0.1.0
 */
export interface Snapshot extends Schema.Schema.Type<typeof Snapshot> {}

const Verdict = Schema.Union(Schema.Literal(true), Schema.String)

/**
 * Each predicate's verdict: `true` when it holds, else the reason (with the numbers) it does not.
 *
 * @example
 * ```ts
 * import { Planner } from "@rein/core"
 *
 * declare const verdicts: Planner.Verdicts
 * const fits = verdicts.deadline === true
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const Verdicts = Schema.Struct({
  listed: Verdict,
  capable: Verdict,
  mode: Verdict,
  simulation: Verdict,
  deadline: Verdict,
  budget: Verdict,
  calls: Verdict,
  retryBudget: Verdict,
  health: Verdict,
  failureAllows: Verdict,
  uncommitted: Verdict
})

/**
 * @category models
 * @since 0.1.0
 */
export interface Verdicts extends Schema.Schema.Type<typeof Verdicts> {}

/**
 * @example
 * ```ts
 * import { Planner } from "@rein/core"
 *
 * const role: Planner.Role = "fallback"
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const Role = Schema.Literal("first", "retry", "fallback")

/**
 * @category models
 * @since 0.1.0
 */
export type Role = typeof Role.Type

/**
 * The planner's view of one candidate at one decision.
 *
 * @example
 * ```ts
 * import { Planner } from "@rein/core"
 *
 * declare const decision: Planner.Decision
 * const legal = decision.candidates.filter((c) => c.legal).map((c) => c.endpoint)
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const CandidateVerdict = Schema.Struct({
  endpoint: Schema.String,
  role: Role,
  legal: Schema.Boolean,
  verdicts: Verdicts
})

/**
 * @category models
 * @since 0.1.0
 */
export interface CandidateVerdict extends Schema.Schema.Type<typeof CandidateVerdict> {}

/**
 * The worst case of one attempt (the same type as `Outcome.Reservation`: one Schema).
 *
 * @example
 * ```ts
 * import { Planner } from "@rein/core"
 *
 * const unknown: Planner.Reservation = { cost: null, tokens: null }
 * ```
 * @since 0.1.0
 */
export { Reservation }

/**
 * Attempt `endpoint` after `waitMillis`, bounded by `timeoutMillis`.
 *
 * @example
 * ```ts
 * import { Planner } from "@rein/core"
 *
 * declare const decision: Planner.Decision
 * if (decision._tag === "Attempt") console.log(decision.endpoint, decision.waitMillis)
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const Attempt = Schema.Struct({
  _tag: Schema.Literal("Attempt"),
  endpoint: Schema.String,
  role: Role,
  attempt: Num,
  waitMillis: Num,
  waitReason: Schema.Literal("none", "backoff", "retry_after"),
  timeoutMillis: Num,
  binding: Schema.Literal("attempt", "deadline"),
  reservation: Reservation,
  candidates: Schema.Array(CandidateVerdict)
})

/**
 * @category models
 * @since 0.1.0
 */
export interface Attempt extends Schema.Schema.Type<typeof Attempt> {}

/**
 * Stop with a terminal outcome.
 *
 * @example
 * ```ts
 * import { Planner } from "@rein/core"
 *
 * declare const decision: Planner.Decision
 * if (decision._tag === "Stop") console.log(decision.outcome, decision.reason)
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const Stop = Schema.Struct({
  _tag: Schema.Literal("Stop"),
  outcome: Schema.Literal("DeadlineExceeded", "BudgetExhausted", "PlanExhausted", "FailedSafe", "Refused"),
  phase: Schema.NullOr(Schema.Literal("admission", "backoff")),
  resource: Schema.NullOr(Schema.Literal("cost", "tokens", "calls")),
  reason: Schema.String,
  candidates: Schema.Array(CandidateVerdict)
})

/**
 * @category models
 * @since 0.1.0
 */
export interface Stop extends Schema.Schema.Type<typeof Stop> {}

/**
 * A decision: attempt or stop.
 *
 * @example
 * ```ts
 * import { Schema } from "effect"
 * import { Planner } from "@rein/core"
 *
 * declare const json: unknown
 * const decision: Planner.Decision = Schema.decodeUnknownSync(Planner.Decision)(json)
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const Decision = Schema.Union(Attempt, Stop)

/**
 * @category models
 * @since 0.1.0
 */
export type Decision = Attempt | Stop

const EPSILON = 1e-12

/**
 * Whether a retry-token bucket holds a whole token. Deposits are fractions (ten deposits of 0.1 sum to
 * 0.999…), so a bucket within 1e-9 of a whole token holds it.
 *
 * @example
 * ```ts
 * import { Planner } from "@rein/core"
 *
 * Planner.hasToken(0.1 + 0.2 + 0.7) // true
 * ```
 * @category predicates
 * @since 0.1.0
 */
export const hasToken = (tokens: number): boolean => tokens >= 1 - 1e-9

/** An own entry of a record (never one inherited from `Object.prototype`, such as `constructor`). */
const own = <A>(record: { readonly [key: string]: A }, key: string): A | undefined =>
  Object.prototype.hasOwnProperty.call(record, key) ? record[key] : undefined

/**
 * The worst case of one attempt on a candidate.
 *
 * @category planning
 * @since 0.1.0
 */
export const reservationFor = (spec: Spec, c: CandidateSpec): Reservation => {
  const maxOut = spec.maxOutputTokens ?? c.maxOutputTokens
  if (spec.inputTokens === null) return { cost: null, tokens: null }
  return {
    cost: spec.inputTokens * c.prices.inputTokens + maxOut * c.prices.outputTokens + c.prices.request,
    tokens: spec.inputTokens + maxOut
  }
}

/**
 * The backoff before retry number `tries` (1 after the first failure): exponential from `base` by
 * `factor`, capped at `max`, with ±`jitter` from the draw `u` ∈ [0, 1), rounded to whole milliseconds.
 *
 * @example
 * ```ts
 * import { Planner } from "@rein/core"
 *
 * Planner.backoffMillis({ perEndpoint: 2, rateLimited: null, baseMillis: 250, factor: 2, maxMillis: 4000, jitter: 0 }, 2, 0.5) // 500
 * ```
 * @category planning
 * @since 0.1.0
 */
export const backoffMillis = (retry: Spec["retry"], tries: number, u: number): number => {
  const exp = Math.min(retry.maxMillis, retry.baseMillis * Math.pow(retry.factor, Math.max(0, tries - 1)))
  const jittered = exp * (1 - retry.jitter + 2 * retry.jitter * u)
  return Math.round(Math.min(retry.maxMillis, Math.max(0, jittered)))
}

type StaticVerdicts = Pick<Verdicts, "listed" | "capable" | "mode" | "simulation">

/**
 * What a decision reads of one candidate that depends on the spec alone, computed once per spec and candidate:
 * its static verdicts, its reservation, and its verdict when every predicate holds, per role (made on first
 * use, then shared, like `ALL_TRUE`: nearly every decision finds its candidate legal, and this runs once per
 * candidate per attempt).
 */
interface PerCandidate {
  readonly s: StaticVerdicts
  readonly reservation: Reservation
  readonly legal: { first?: CandidateVerdict; retry?: CandidateVerdict; fallback?: CandidateVerdict }
}

const staticCache = new WeakMap<Spec, WeakMap<CandidateSpec, PerCandidate>>()

const perCandidate = (spec: Spec, c: CandidateSpec): PerCandidate => {
  let bySpec = staticCache.get(spec)
  if (bySpec === undefined) staticCache.set(spec, bySpec = new WeakMap())
  let found = bySpec.get(c)
  if (found === undefined) {
    bySpec.set(c, found = { s: computeStaticVerdicts(spec, c), reservation: reservationFor(spec, c), legal: {} })
  }
  return found
}

const computeStaticVerdicts = (spec: Spec, c: CandidateSpec): StaticVerdicts => {
  const listed: true | string = !c.listed
    ? "not in the contract's candidates"
    : !c.known
    ? "not in the catalog"
    : !c.hasProvider
    ? "no provider registered"
    : true
  let capable: true | string = true
  if (!c.known) capable = "unknown endpoint"
  else {
    const maxOut = spec.maxOutputTokens ?? c.maxOutputTokens
    if (maxOut > c.maxOutputTokens) capable = `max output ${c.maxOutputTokens} < ${maxOut} requested`
    else if (spec.inputTokens !== null && spec.inputTokens + maxOut > c.contextWindow) {
      capable = `context window ${c.contextWindow} < ${spec.inputTokens} input + ${maxOut} output`
    } else if (spec.requires.tools && !c.tools) capable = "no tool support"
    else if (spec.requires.structuredOutput && !c.structuredOutput) capable = "no structured output"
    else if (spec.requires.streaming && !c.streaming) capable = "no streaming"
    else if (spec.requires.vendors !== undefined) {
      const other = spec.requires.vendors.find((v) => v !== c.vendor)
      if (other !== undefined) {
        capable = `provider-defined tool of ${other}; endpoint of ${c.vendor ?? "unknown vendor"}`
      }
    }
  }
  const mode: true | string = spec.mode === "effectful" ? "effectful mode is not executed here" : true
  const simulation: true | string = c.simulated && !spec.allowSimulated
    ? "simulated endpoint; the contract does not allow simulation"
    : true
  return { listed, capable, mode, simulation }
}

const failureAllows = (
  spec: Spec,
  snap: Snapshot,
  c: CandidateSpec,
  role: Role,
  failed: CandidateSpec | undefined
): true | string => {
  const last = snap.last
  if (role === "first" || last === null) return true
  const rule = spec.table[last.kind]
  if (role === "retry") {
    if (!rule.retry) return `${last.kind} is not retried`
    const rateCap = spec.retry.rateLimited
    if (rateCap !== null && last.kind === "rate_limited") {
      return snap.rateLimitedOnCurrent > rateCap
        ? `rate-limit retries used: ${snap.rateLimitedOnCurrent - 1} of ${rateCap}`
        : true
    }
    const counted = rateCap === null ? snap.triesOnCurrent : snap.triesOnCurrent - snap.rateLimitedOnCurrent
    const allowed = 1 + spec.retry.perEndpoint
    return counted >= allowed ? `attempts used: ${counted} of ${allowed}` : true
  }
  switch (rule.fallback) {
    case "any":
      return true
    case "none":
      return `${last.kind} forbids fallback`
    case "larger_window":
      return failed !== undefined && c.contextWindow <= failed.contextWindow
        ? `${last.kind}: window ${c.contextWindow} is not larger than ${failed.contextWindow}`
        : true
    case "larger_output": {
      const limit = (x: CandidateSpec) => spec.maxOutputTokens ?? x.maxOutputTokens
      return failed !== undefined && limit(c) <= limit(failed)
        ? `${last.kind}: output limit ${limit(c)} is not larger than ${limit(failed)}`
        : true
    }
    case "other_scope":
      return failed !== undefined && c.scope === failed.scope
        ? `${last.kind}: same credential scope ${JSON.stringify(c.scope)}`
        : true
  }
}

const isLegal = (v: Verdicts): boolean => {
  for (const p of predicates) if (v[p] !== true) return false
  return true
}

interface Evaluated {
  readonly candidate: CandidateSpec
  readonly verdict: CandidateVerdict
  readonly waitMillis: number
  readonly waitReason: "none" | "backoff" | "retry_after"
  readonly reservation: Reservation
}

const evaluate = (spec: Spec, snap: Snapshot, c: CandidateSpec, role: Role, failed: CandidateSpec | undefined) => {
  const per = perCandidate(spec, c)
  const s = per.s
  let waitMillis = 0
  let waitReason: Evaluated["waitReason"] = "none"
  if (role === "retry" && snap.last !== null) {
    const backoff = backoffMillis(spec.retry, snap.triesOnCurrent, snap.jitter ?? 0.5)
    const hint = snap.last.retryAfterMillis ?? 0
    waitMillis = Math.max(backoff, hint)
    waitReason = hint > backoff ? "retry_after" : "backoff"
  }
  const remainingAfterWait = snap.remainingMillis - waitMillis
  const deadline: true | string = remainingAfterWait > spec.minAttemptMillis && remainingAfterWait > 0
    ? true
    : waitMillis > 0
    ? `${waitReason === "retry_after" ? "Retry-After" : "backoff"} ${fmt(waitMillis)} ms does not fit the ${
      fmt(snap.remainingMillis)
    } ms remaining${spec.minAttemptMillis > 0 ? ` with a ${fmt(spec.minAttemptMillis)} ms minimum attempt` : ""}`
    : `${fmt(snap.remainingMillis)} ms remaining${
      spec.minAttemptMillis > 0 ? `, below the ${fmt(spec.minAttemptMillis)} ms minimum attempt` : ""
    }`
  const reservation = per.reservation
  const b = snap.budget
  const budget: true | string = b.cost !== null && reservation.cost !== null && reservation.cost > b.cost + EPSILON
    ? `worst-case cost ${fmt(reservation.cost)} > ${fmt(b.cost)} left`
    : b.tokens !== null && reservation.tokens !== null && reservation.tokens > b.tokens
    ? `worst-case tokens ${reservation.tokens} > ${b.tokens} left`
    : true
  const calls: true | string = b.calls !== null && b.calls < 1 ? "no call left under the cap" : true
  let retryBudget: true | string = true
  if (role !== "first") {
    const g = snap.retryTokens.global
    const e = own(snap.retryTokens.endpoints, c.id)
    if (g !== null && !hasToken(g)) retryBudget = `global retry tokens ${fmt(g)} < 1`
    else if (e !== undefined && !hasToken(e)) retryBudget = `retry tokens for ${c.id} ${fmt(e)} < 1`
  }
  const h = own(snap.health, c.id)
  const health: true | string = h === undefined || h.state === "closed"
    ? true
    : h.state === "open" && h.opensInMillis > waitMillis
    ? `breaker open for ${fmt(h.opensInMillis)} ms more`
    : h.probesFree > 0
    ? true
    : "half-open: no free probe slot"
  const failure = failureAllows(spec, snap, c, role, failed)
  // Nearly every decision finds its candidate legal on every predicate: those share one frozen value
  // instead of an eleven-field object per candidate per decision.
  const verdicts: Verdicts = deadline === true && budget === true && calls === true && retryBudget === true &&
      health === true && failure === true && !snap.committed && s.listed === true && s.capable === true &&
      s.mode === true && s.simulation === true
    ? ALL_TRUE
    : {
      listed: s.listed,
      capable: s.capable,
      mode: s.mode,
      simulation: s.simulation,
      deadline,
      budget,
      calls,
      retryBudget,
      health,
      failureAllows: failure,
      uncommitted: snap.committed ? "the stream has committed" : true
    }
  const verdict = verdicts === ALL_TRUE
    ? per.legal[role] ??= Object.freeze({ endpoint: c.id, role, legal: true, verdicts })
    : { endpoint: c.id, role, legal: isLegal(verdicts), verdicts }
  return {
    candidate: c,
    verdict,
    waitMillis,
    waitReason,
    reservation
  } satisfies Evaluated
}

const ALL_TRUE: Verdicts = Object.freeze({
  listed: true,
  capable: true,
  mode: true,
  simulation: true,
  deadline: true,
  budget: true,
  calls: true,
  retryBudget: true,
  health: true,
  failureAllows: true,
  uncommitted: true
})

const POLICY: ReadonlyArray<Predicate> = ["listed", "capable", "mode", "simulation", "failureAllows", "uncommitted"]
const DYNAMIC: ReadonlyArray<Predicate> = ["deadline", "budget", "calls", "health", "retryBudget"]

/** Whether the policy (every predicate but the dynamic ones) allows this candidate. */
const policyAllows = (v: CandidateVerdict): boolean => POLICY.every((p) => v.verdicts[p] === true)

const stop = (
  outcome: Stop["outcome"],
  reason: string,
  candidates: ReadonlyArray<CandidateVerdict>,
  phase: Stop["phase"] = null,
  resource: Stop["resource"] = null
): Stop => ({ _tag: "Stop", outcome, phase, resource, reason, candidates })

/**
 * Decides the next step. Pure: the same spec and snapshot always give the same decision.
 *
 * @example
 * ```ts
 * import { Planner } from "@rein/core"
 *
 * declare const spec: Planner.Spec
 * declare const snapshot: Planner.Snapshot
 * const decision = Planner.decide(spec, snapshot)
 * if (decision._tag === "Stop") console.log(decision.outcome, decision.reason)
 * ```
 * @category planning
 * @since 0.1.0
 */
export const decide = (spec: Spec, snap: Snapshot): Decision => {
  const start = snap.current === null ? 0 : spec.candidates.findIndex((c) => c.id === snap.current)
  const failed = start >= 0 && snap.current !== null ? spec.candidates[start] : undefined
  // Both lists sized once (an empty array grows to 17 slots on its first push; this runs once per attempt).
  const from = Math.max(0, start)
  const evaluated: Array<Evaluated> = new Array(spec.candidates.length - from)
  const verdicts: Array<CandidateVerdict> = new Array(evaluated.length)
  // The first legal candidate, found in the same pass (no closures: this runs once per attempt).
  let chosen: Evaluated | undefined
  for (let i = from; i < spec.candidates.length; i++) {
    const c = spec.candidates[i]!
    const role: Role = snap.current === null ? "first" : i === start ? "retry" : "fallback"
    const e = evaluate(spec, snap, c, role, failed)
    evaluated[i - from] = e
    verdicts[i - from] = e.verdict
    if (chosen === undefined && e.verdict.legal) chosen = e
  }
  if (snap.remainingMillis <= 0) {
    return stop("DeadlineExceeded", "no time left before the deadline", verdicts, "admission")
  }
  if (chosen !== undefined) {
    const available = snap.remainingMillis - chosen.waitMillis
    const binding = spec.attemptTimeoutMillis < available ? "attempt" : "deadline"
    return {
      _tag: "Attempt",
      endpoint: chosen.candidate.id,
      role: chosen.verdict.role,
      attempt: snap.attempts + 1,
      waitMillis: chosen.waitMillis,
      waitReason: chosen.waitReason,
      timeoutMillis: binding === "attempt" ? spec.attemptTimeoutMillis : available,
      binding,
      reservation: chosen.reservation,
      candidates: verdicts
    }
  }
  if (snap.last !== null) {
    const rule = spec.table[snap.last.kind]
    if (!rule.retry && rule.fallback === "none") {
      return stop("FailedSafe", `${snap.last.kind} forbids retry and fallback`, verdicts)
    }
    if (snap.committed) return stop("FailedSafe", "the stream has committed: no retry, no fallback", verdicts)
  }
  const allowed = evaluated.find((e) => policyAllows(e.verdict))
  if (allowed === undefined) {
    return snap.attempts === 0
      ? stop("Refused", firstReason(evaluated) ?? "no candidate", verdicts)
      : stop("PlanExhausted", "no candidate left that the failures allow", verdicts)
  }
  const blocking = DYNAMIC.find((p) => allowed.verdict.verdicts[p] !== true)!
  const others = evaluated
    .filter((e) => e !== allowed && policyAllows(e.verdict))
    .map((e) => {
      const p = DYNAMIC.find((d) => e.verdict.verdicts[d] !== true)
      return p === undefined ? undefined : `${e.candidate.id}: ${e.verdict.verdicts[p] as string}`
    })
    .filter((r) => r !== undefined)
  const why = `${allowed.candidate.id}: ${allowed.verdict.verdicts[blocking] as string}${
    others.length === 0 ? "" : ` (also ${others.join("; ")})`
  }`
  switch (blocking) {
    case "deadline":
      return stop("DeadlineExceeded", why, verdicts, allowed.waitMillis > 0 ? "backoff" : "admission")
    case "budget": {
      const b = snap.budget
      const r = allowed.reservation
      const resource = b.cost !== null && r.cost !== null && r.cost > b.cost + EPSILON ? "cost" : "tokens"
      return stop("BudgetExhausted", why, verdicts, null, resource)
    }
    case "calls":
      return stop("BudgetExhausted", why, verdicts, null, "calls")
    default:
      return stop("PlanExhausted", why, verdicts)
  }
}

/**
 * What the attempt a `BudgetExhausted` stop refused needed of the stop's resource, in its public measure: one
 * call, or the worst-case cost (dollars) or tokens of the candidate the budget refused (the first the policy
 * allows, as `decide` picks it). `undefined` for any other stop, or a worst case of unknown size.
 *
 * @example
 * ```ts
 * import { Planner } from "@rein/core"
 *
 * declare const spec: Planner.Spec
 * declare const snapshot: Planner.Snapshot
 * const decision = Planner.decide(spec, snapshot)
 * if (decision._tag === "Stop") console.log(Planner.neededFor(spec, decision))
 * ```
 * @category planning
 * @since 0.1.0
 */
export const neededFor = (spec: Spec, stop: Stop): number | undefined => {
  if (stop.outcome !== "BudgetExhausted" || stop.resource === null) return undefined
  if (stop.resource === "calls") return 1
  const allowed = stop.candidates.find(policyAllows)
  const candidate = allowed === undefined ? undefined : spec.candidates.find((c) => c.id === allowed.endpoint)
  if (candidate === undefined) return undefined
  return perCandidate(spec, candidate).reservation[stop.resource] ?? undefined
}

const firstReason = (evaluated: ReadonlyArray<Evaluated>): string | undefined => {
  for (const e of evaluated) {
    for (const p of POLICY) {
      const v = e.verdict.verdicts[p]
      if (v !== true) return `${e.candidate.id}: ${p}: ${v}`
    }
  }
  return undefined
}
