/**
 * Outcomes: the immutable record of every attempt, the success value and the terminal failures. Terminal
 * failures are `Schema.TaggedError`s, so they serialise into journals and artifacts and a caller can
 * `Effect.catchTag` exactly the outcome it cares about. No record holds prompts, provider text or
 * secrets: only kinds, normalised codes, numbers and ids.
 *
 * @since 0.1.0
 */
import { Inspectable, Schema } from "effect"
import { FailureKind } from "./Failure.js"
import { Usage } from "./Usage.js"

/**
 * Why a model stopped (the `@effect/ai` reasons). `length` is truncation at the output limit: the
 * contract's `truncation` makes it a failure of kind `truncated` (the default) or an annotated success.
 *
 * @example
 * ```ts
 * import { Outcome } from "@rein/core"
 *
 * const reason: Outcome.FinishReason = "tool-calls"
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const FinishReason = Schema.Literal(
  "stop",
  "length",
  "content-filter",
  "tool-calls",
  "error",
  "pause",
  "other",
  "unknown"
)

/**
 * @category models
 * @since 0.1.0
 */
export type FinishReason = typeof FinishReason.Type

/**
 * A tool call the model made. Handed to the caller on the completion; records and journals keep only
 * the names and counts (`ToolCallCount`), never the parameters.
 *
 * @example
 * ```ts
 * import type { Outcome } from "@rein/core"
 *
 * const call: Outcome.ToolCall = { id: "call_1", name: "weather", params: { city: "Oslo" } }
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const ToolCall = Schema.Struct({ id: Schema.String, name: Schema.String, params: Schema.Unknown })

/**
 * @category models
 * @since 0.1.0
 */
export interface ToolCall extends Schema.Schema.Type<typeof ToolCall> {}

/**
 * How many calls of one tool an answer made: all that records keep of tool calls.
 *
 * @category schemas
 * @since 0.1.0
 */
export const ToolCallCount = Schema.Struct({ name: Schema.String, count: Schema.Number })

/**
 * @category models
 * @since 0.1.0
 */
export type ToolCallCount = typeof ToolCallCount.Type

/**
 * Counts tool calls by name, in first-call order (`undefined` when there are none).
 *
 * @example
 * ```ts
 * import { Outcome } from "@rein/core"
 *
 * Outcome.countToolCalls([{ name: "a" }, { name: "a" }])
 * // [{ name: "a", count: 2 }]
 * ```
 * @category utils
 * @since 0.1.0
 */
export const countToolCalls = (
  calls: ReadonlyArray<{ readonly name: string }> | undefined
): ReadonlyArray<ToolCallCount> | undefined => {
  if (calls === undefined || calls.length === 0) return undefined
  // Built as it goes: `Array.from` of a `Map` with a mapping function took ≈ 10 µs per answer with tool calls
  // on bench 8's toolkit row (its generic iterator path); this well under one.
  const counts: Array<ToolCallCount> = []
  const at = new Map<string, number>()
  for (const { name } of calls) {
    const j = at.get(name)
    if (j === undefined) {
      at.set(name, counts.length)
      counts.push({ name, count: 1 })
    } else counts[j] = { name, count: counts[j]!.count + 1 }
  }
  return counts
}

/**
 * What an attempt reserved against the hard budget (`null`: that dimension is not limited / unknown).
 *
 * @category schemas
 * @since 0.1.0
 */
export const Reservation = Schema.Struct({
  cost: Schema.NullOr(Schema.Number),
  tokens: Schema.NullOr(Schema.Number)
})

/**
 * @category models
 * @since 0.1.0
 */
export type Reservation = typeof Reservation.Type

/**
 * How an attempt ended.
 *
 * - `success`: the provider answered;
 * - `failure`: the provider failed (see `failure`);
 * - `timeout`: the attempt timeout expired (retryable, kind `timeout`);
 * - `deadline`: the request's deadline expired during the attempt;
 * - `interrupted`: the caller interrupted.
 *
 * @category schemas
 * @since 0.1.0
 */
export const AttemptStatus = Schema.Literal("success", "failure", "timeout", "deadline", "interrupted")

/**
 * @category models
 * @since 0.1.0
 */
export type AttemptStatus = typeof AttemptStatus.Type

const recordFields = {
  /** The logical attempt: earlier attempts of the request that were not rate-limited, plus one. */
  attempt: Schema.Number,
  /** The physical call: every earlier call of the request, plus one. */
  call: Schema.Number,
  endpoint: Schema.String,
  role: Schema.Literal("first", "retry", "fallback"),
  startMillis: Schema.Number,
  endMillis: Schema.Number,
  timeoutMillis: Schema.Number,
  /** Which limit bounded the attempt: its own timeout or the request's remaining deadline. */
  binding: Schema.Literal("attempt", "deadline"),
  /** Whether the request may have reached the provider. */
  dispatched: Schema.Boolean,
  status: AttemptStatus,
  failure: Schema.NullOr(FailureKind),
  code: Schema.NullOr(Schema.String),
  retryAfterMillis: Schema.NullOr(Schema.Number),
  /** The wait Rein took before the next attempt (0 when none followed, or it could not fit). */
  backoffMillis: Schema.Number,
  reservation: Reservation,
  usage: Usage,
  /** What the budget was charged for this attempt. */
  charged: Schema.Struct({ cost: Schema.Number, tokens: Schema.Number }),
  /** Actual usage exceeded the reservation: the provider billed beyond what was admitted. */
  billingBoundViolation: Schema.Boolean,
  /**
   * Present when the provider reported usage that is not a count (NaN, ±Infinity, negative): `usage` is
   * `"unknown"` and the attempt is charged as unknown usage.
   */
  invalidUsage: Schema.optional(Schema.Literal(true)),
  /** Teardown was not confirmed within the grace: the endpoint may still be working on it. */
  teardownUnconfirmed: Schema.Boolean,
  simulated: Schema.Boolean,
  /** Why the model stopped, when the attempt got an answer that said. */
  finishReason: Schema.optional(FinishReason),
  /** Tool calls of the answer, by name (never their parameters). */
  toolCalls: Schema.optional(Schema.Array(ToolCallCount))
}

/**
 * One physical attempt. Offsets are milliseconds from the request's monotonic origin. `attempt` is the
 * logical attempt (a try after a 429 repeats the attempt it retries), `call` the physical call number (every
 * call, from 1, with no gap). A record written before `call` existed (journals and artifacts of 0.1.0,
 * whose `attempt` numbered every physical call) decodes with its call equal to its attempt.
 *
 * @example
 * ```ts
 * import { Outcome } from "@rein/core"
 *
 * const describe = (r: Outcome.AttemptRecord) => `#${r.attempt} ${r.endpoint} ${r.status} ${r.failure ?? ""}`
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const AttemptRecord = Schema.transform(
  Schema.Struct({ ...recordFields, call: Schema.optional(recordFields.call) }),
  Schema.typeSchema(Schema.Struct(recordFields)),
  { strict: true, decode: (r) => ({ ...r, call: r.call ?? r.attempt }), encode: (r) => r }
).annotations({ identifier: "AttemptRecord" })

/**
 * @category models
 * @since 0.1.0
 */
export type AttemptRecord = typeof AttemptRecord.Type

/**
 * The failure that ended the plan, as a kind and a normalised code (never provider text).
 *
 * @category schemas
 * @since 0.1.0
 */
export const Cause = Schema.Struct({ kind: FailureKind, code: Schema.String, endpoint: Schema.String })

/**
 * @category models
 * @since 0.1.0
 */
export type Cause = typeof Cause.Type

const attempts = Schema.Array(AttemptRecord)

/**
 * The id of the request an outcome ends: the caller's `request.id`, else the id the journal drew for its
 * record (`req-…`); absent when the caller named none and nothing was journaled. It is the journal record's
 * `requestId`, so `rein explain` and a journal search find the record of an outcome a caller holds.
 * Optional in the Schema: outcomes serialised before it existed decode without it.
 *
 * @example
 * ```ts
 * import { Schema } from "effect"
 * import { Outcome } from "@rein/core"
 *
 * Schema.decodeUnknownSync(Outcome.RequestId)("req-1x2y3z") // "req-1x2y3z"
 * const recordOf = (e: Outcome.Terminal) => e.requestId ?? "(not journaled: set request.id or provide a Journal)"
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const RequestId = Schema.String.annotations({ identifier: "RequestId" })

const requestId = Schema.optional(RequestId)

/**
 * The failure that ended the plan (`null`: none, e.g. nothing was called), on an outcome as `lastFailure` and
 * serialised under its 0.1.0 key `cause`: journals, records and artifacts keep the shape they had. In memory it
 * is not `cause`, the standard property of a nested *error* (ES2022): Node and Effect print an error's `cause`
 * as one, so an uncaught outcome printed `[cause]: Error: null` (or the struct's JSON dressed as an `Error`).
 */
const lastFailure = Schema.propertySignature(Schema.NullOr(Cause)).pipe(Schema.fromKey("cause"))

/** An outcome's JSON with `lastFailure` under its serialised key `cause`, in place: `JSON.stringify` as before. */
const withCauseKey = (json: unknown): unknown => {
  if (typeof json !== "object" || json === null) return json
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(json)) out[key === "lastFailure" ? "cause" : key] = value
  return out
}

/** At most this many runs of attempts are named in an outcome's message; the rest are counted. */
const NAMED_RUNS = 6

/**
 * One line for an outcome's `message`: its reason, the failure that ended it, and its attempts as runs
 * (`a overloaded ×2 → b success`). Kinds, codes and endpoint ids only: never provider text. (Without it,
 * the message was Schema's dump of every field: kilobytes of attempt records, shared objects shown as
 * `[Circular]`.)
 */
const messageOf = (
  outcome: {
    readonly reason: string
    readonly lastFailure?: Cause | null
    readonly attempts: ReadonlyArray<
      { readonly endpoint: string; readonly status: string; readonly failure: string | null }
    >
  }
): string => {
  const runs: Array<{ what: string; n: number }> = []
  for (const a of outcome.attempts) {
    const what = `${a.endpoint} ${a.failure ?? a.status}`
    const last = runs[runs.length - 1]
    if (last !== undefined && last.what === what) last.n++
    else runs.push({ what, n: 1 })
  }
  const named = runs.slice(0, NAMED_RUNS).map((r) => r.n > 1 ? `${r.what} ×${r.n}` : r.what)
  const rest = runs.slice(NAMED_RUNS).reduce((n, r) => n + r.n, 0)
  const last = outcome.lastFailure
  const cause = last === undefined || last === null
    ? ""
    : `; last failure ${last.kind} (${last.code}) on ${last.endpoint}`
  const count = outcome.attempts.length
  const tried = count === 0
    ? "; no attempt"
    : `; ${count} attempt${count === 1 ? "" : "s"}: ${named.join(" → ")}${rest > 0 ? ` → … ${rest} more` : ""}`
  return `${outcome.reason}${cause}${tried}`
}

/**
 * How Node prints an outcome (`util.inspect`: an unhandled `runPromise` rejection, `console.log`): its stack,
 * whose first line is the tag and the one-line message (the reason, the last failure, the attempts summarised),
 * then its fields, each as JSON, with the attempt records counted rather than listed: a request of many attempts
 * printed every field of every record. The records stay on the object (`attempts`), and journals, records and
 * artifacts serialise every one in full (`toJSON`, the schemas).
 */
const inspectOf = (error: Error & { readonly attempts: ReadonlyArray<unknown> }): string => {
  const fields: Array<string> = []
  for (const [key, value] of Object.entries(error)) {
    if (value === undefined) continue
    const n = error.attempts.length
    fields.push(
      key === "attempts" ? `attempts: [${n} attempt record${n === 1 ? "" : "s"}]` : `${key}: ${JSON.stringify(value)}`
    )
  }
  return `${error.stack ?? `${error.name}: ${error.message}`}\n  { ${fields.join(", ")} }`
}

/**
 * The deadline expired. `phase` says where: waiting for admission, during an attempt, a backoff that
 * could not fit (recorded with zero wait), or teardown.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Outcome } from "@rein/core"
 *
 * const onDeadline = (e: Outcome.DeadlineExceeded) => Effect.succeed(`gave up in ${e.phase} after ${e.attempts.length}`)
 * ```
 * @category errors
 * @since 0.1.0
 */
export class DeadlineExceeded extends Schema.TaggedError<DeadlineExceeded>()("DeadlineExceeded", {
  phase: Schema.Literal("admission", "attempt", "backoff", "teardown"),
  reason: Schema.String,
  lastFailure,
  teardownUnconfirmed: Schema.Boolean,
  attempts,
  /** The request's id (see `RequestId`): the journal record's, or the caller's `request.id`. */
  requestId
}) {
  /** One line: the reason, the last failure, the attempts (`a overloaded ×2 → b authentication`). */
  override get message(): string {
    return messageOf(this)
  }
  /** As Node prints it: bounded, the attempt records counted (see `inspectOf`). */
  override [Inspectable.NodeInspectSymbol](): string {
    return inspectOf(this)
  }
  /** As serialised: the last failure under `cause`. */
  override toJSON(): unknown {
    return withCauseKey(super.toJSON())
  }
}

/**
 * The next attempt cannot be afforded: its worst-case cost, tokens, or a call would exceed the budget. With
 * `unavailable: true`, the budget could not be consulted (a shared budget whose store did not answer) and
 * refused beyond what it could vouch for: no budget was known to be spent.
 *
 * @category errors
 * @since 0.1.0
 */
export class BudgetExhausted extends Schema.TaggedError<BudgetExhausted>()("BudgetExhausted", {
  resource: Schema.Literal("cost", "tokens", "calls"),
  reason: Schema.String,
  lastFailure,
  attempts,
  /** `true`: refused because the budget's store was unavailable, not because the budget is spent. */
  unavailable: Schema.optional(Schema.Boolean),
  /**
   * What the refused reservation needed of `resource`, in its public measure (dollars for cost; one call for
   * calls). Absent when unknown (a worst case of unknown size; records written before it existed).
   */
  needed: Schema.optional(Schema.Number),
  /** The request's id (see `RequestId`): the journal record's, or the caller's `request.id`. */
  requestId
}) {
  /** One line: the reason, the last failure, the attempts (`a overloaded ×2 → b authentication`). */
  override get message(): string {
    return messageOf(this)
  }
  /** As Node prints it: bounded, the attempt records counted (see `inspectOf`). */
  override [Inspectable.NodeInspectSymbol](): string {
    return inspectOf(this)
  }
  /** As serialised: the last failure under `cause`. */
  override toJSON(): unknown {
    return withCauseKey(super.toJSON())
  }
}

/**
 * A candidate an endpoint's breaker refused when the plan ended: which endpoint, whether its breaker was open
 * or half-open with every probe slot taken, and in how many milliseconds (from the outcome) it may half-open
 * and admit a probe (`0`: it is half-open now, its probes busy).
 *
 * @example
 * ```ts
 * import { Outcome } from "@rein/core"
 *
 * const refused: Outcome.BreakerRefusal = { endpoint: "openai/mini", state: "open", halfOpensInMillis: 30_000 }
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const BreakerRefusal = Schema.Struct({
  endpoint: Schema.String,
  state: Schema.Literal("open", "half_open"),
  halfOpensInMillis: Schema.Number
}).annotations({ identifier: "BreakerRefusal" })

/**
 * @category models
 * @since 0.1.0
 */
export interface BreakerRefusal extends Schema.Schema.Type<typeof BreakerRefusal> {}

/**
 * Every candidate was tried or excluded and none succeeded. When breakers refused the candidates the failures
 * still allowed (an open breaker on the only candidate), `breakers` names each, with when it may half-open.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Outcome } from "@rein/core"
 *
 * const onExhausted = (e: Outcome.PlanExhausted) =>
 *   e.breakers === undefined
 *     ? Effect.fail(e)
 *     : Effect.succeed(e.breakers.map((b) => `${b.endpoint}: retry in ${b.halfOpensInMillis} ms`))
 * ```
 * @category errors
 * @since 0.1.0
 */
export class PlanExhausted extends Schema.TaggedError<PlanExhausted>()("PlanExhausted", {
  reason: Schema.String,
  lastFailure,
  attempts,
  /** The breakers that refused the candidates the failures allowed (absent: no breaker refused one). */
  breakers: Schema.optional(Schema.Array(BreakerRefusal)),
  /** The request's id (see `RequestId`): the journal record's, or the caller's `request.id`. */
  requestId
}) {
  /** One line: the reason, the last failure, the attempts (`a overloaded ×2 → b authentication`). */
  override get message(): string {
    return messageOf(this)
  }
  /** As Node prints it: bounded, the attempt records counted (see `inspectOf`). */
  override [Inspectable.NodeInspectSymbol](): string {
    return inspectOf(this)
  }
  /** As serialised: the last failure under `cause`. */
  override toJSON(): unknown {
    return withCauseKey(super.toJSON())
  }
}

/**
 * A failure whose kind forbids both retry and fallback (`unknown`, `invalid_request`, `content_filtered`
 * by default, or one the contract narrowed): Rein stops rather than guess.
 *
 * @category errors
 * @since 0.1.0
 */
export class FailedSafe extends Schema.TaggedError<FailedSafe>()("FailedSafe", {
  reason: Schema.String,
  lastFailure: Schema.propertySignature(Cause).pipe(Schema.fromKey("cause")),
  attempts,
  /** The request's id (see `RequestId`): the journal record's, or the caller's `request.id`. */
  requestId
}) {
  /** One line: the reason, the last failure, the attempts (`a overloaded ×2 → b authentication`). */
  override get message(): string {
    return messageOf(this)
  }
  /** As Node prints it: bounded, the attempt records counted (see `inspectOf`). */
  override [Inspectable.NodeInspectSymbol](): string {
    return inspectOf(this)
  }
  /** As serialised: the last failure under `cause`. */
  override toJSON(): unknown {
    return withCauseKey(super.toJSON())
  }
}

/**
 * Why a request was refused before any call.
 *
 * @category schemas
 * @since 0.1.0
 */
export const RefusalReason = Schema.Literal(
  "effectful_mode",
  "nested_retries",
  "no_input_bound",
  "no_legal_candidate",
  "invalid_request",
  /** A contract candidate the catalog does not know (a likely typo): refused before any call. */
  "unknown_candidate"
)

/**
 * Refused before any provider call: nothing was spent.
 *
 * @category errors
 * @since 0.1.0
 */
export class Refused extends Schema.TaggedError<Refused>()("Refused", {
  refusal: RefusalReason,
  reason: Schema.String,
  attempts,
  /** The request's id (see `RequestId`): the journal record's, or the caller's `request.id`. */
  requestId
}) {
  /** One line: the refusal and its reason (nothing was called). */
  override get message(): string {
    return `${this.refusal}: ${this.reason}`
  }
  /** As Node prints it: bounded, the attempt records counted (see `inspectOf`). */
  override [Inspectable.NodeInspectSymbol](): string {
    return inspectOf(this)
  }
}

/**
 * The run this request belongs to stopped admitting attempts (a batch's deadline, fail-fast or budget
 * cap, through a `Gate`). Only requests executed under a gate can end this way.
 *
 * @category errors
 * @since 0.1.0
 */
export class Halted extends Schema.TaggedError<Halted>()("Halted", {
  reason: Schema.String,
  lastFailure,
  attempts,
  /** The request's id (see `RequestId`): the journal record's, or the caller's `request.id`. */
  requestId
}) {
  /** One line: the reason, the last failure, the attempts (`a overloaded ×2 → b authentication`). */
  override get message(): string {
    return messageOf(this)
  }
  /** As Node prints it: bounded, the attempt records counted (see `inspectOf`). */
  override [Inspectable.NodeInspectSymbol](): string {
    return inspectOf(this)
  }
  /** As serialised: the last failure under `cause`. */
  override toJSON(): unknown {
    return withCauseKey(super.toJSON())
  }
}

/**
 * Any terminal failure of a request.
 *
 * @category models
 * @since 0.1.0
 */
export type Terminal = DeadlineExceeded | BudgetExhausted | PlanExhausted | FailedSafe | Refused | Halted

/**
 * The terminal failures as one Schema (for journals and artifacts).
 *
 * @category schemas
 * @since 0.1.0
 */
export const Terminal = Schema.Union(DeadlineExceeded, BudgetExhausted, PlanExhausted, FailedSafe, Refused, Halted)

/**
 * A successful request: the provider's answer with where it came from, what it used and cost, and every
 * attempt it took. `cost` is `"unknown"` when any attempt's usage was unknown. `requestId` links it to its
 * journal record, as on every terminal failure (see `RequestId`).
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Rein } from "@rein/core"
 * import type { Contract, Outcome } from "@rein/core"
 *
 * declare const contract: Contract.Contract
 * // The caller's id is the outcome's (and its journal record's), whichever way the request ends.
 * const id = Rein.execute({ prompt: "hi", inputTokens: 5, id: "order-42" }, contract).pipe(
 *   Effect.map((c: Outcome.Completion) => c.requestId), // "order-42"
 *   Effect.catchAll((e: Outcome.Terminal) => Effect.succeed(e.requestId)) // "order-42"
 * )
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const Completion = Schema.Struct({
  text: Schema.String,
  endpoint: Schema.String,
  provider: Schema.String,
  model: Schema.String,
  usage: Usage,
  cost: Schema.Union(Schema.Number, Schema.Literal("unknown")),
  simulated: Schema.Boolean,
  attempts,
  /** Why the model stopped (absent when the provider did not say). */
  finishReason: Schema.optional(FinishReason),
  toolCalls: Schema.optional(Schema.Array(ToolCall)),
  reasoning: Schema.optional(Schema.Array(Schema.String)),
  /** The provider's opaque payload (for an `@effect/ai` model: its response parts). Never recorded. */
  payload: Schema.optional(Schema.Unknown),
  /** The request's id (see `RequestId`): the journal record's, or the caller's `request.id`. */
  requestId
}).annotations({ identifier: "Completion" })

/**
 * @category models
 * @since 0.1.0
 */
export type Completion = typeof Completion.Type
