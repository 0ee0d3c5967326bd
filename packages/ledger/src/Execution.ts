/**
 * The durable state machine of one effectful execution, and the receipts its transitions leave.
 *
 * ```
 * created → authorised → prepared → dispatch_started → succeeded | failed_safe | ambiguous
 * created | authorised | prepared → refused            (never after dispatch has started)
 * ambiguous → succeeded | failed_safe                   (only with reconciliation evidence)
 * ```
 *
 * The table below is the single source of truth: the store refuses any other move, and the SQLite schema
 * repeats it in triggers so that not even a hand-written statement can break it.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import { Sha256 } from "./Digest.js"

/**
 * Every state an execution can be in.
 *
 * @example
 * ```ts
 * import { Execution } from "@rein/ledger"
 *
 * Execution.states.includes("ambiguous") // true
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export const states = [
  "created",
  "authorised",
  "prepared",
  "dispatch_started",
  "succeeded",
  "failed_safe",
  "ambiguous",
  "refused"
] as const

/**
 * @example
 * ```ts
 * import { Schema } from "effect"
 * import { Execution } from "@rein/ledger"
 *
 * Schema.decodeUnknownSync(Execution.State)("prepared")
 * ```
 *
 * @category schemas
 * @since 0.1.0
 */
export const State = Schema.Literal(...states)

/**
 * @example
 * ```ts
 * import type { Execution } from "@rein/ledger"
 *
 * const done = (s: Execution.State) => s === "succeeded" || s === "failed_safe"
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export type State = typeof State.Type

/**
 * The legal transitions, as `[from, to]` pairs. The first state of every execution is `created`.
 *
 * @example
 * ```ts
 * import { Execution } from "@rein/ledger"
 *
 * Execution.transitions.length
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export const transitions: ReadonlyArray<readonly [State, State]> = [
  ["created", "authorised"],
  ["authorised", "prepared"],
  ["prepared", "dispatch_started"],
  ["dispatch_started", "succeeded"],
  ["dispatch_started", "failed_safe"],
  ["dispatch_started", "ambiguous"],
  ["created", "refused"],
  ["authorised", "refused"],
  ["prepared", "refused"],
  ["ambiguous", "succeeded"],
  ["ambiguous", "failed_safe"]
]

/**
 * Whether `from → to` is a legal transition.
 *
 * @example
 * ```ts
 * import { Execution } from "@rein/ledger"
 *
 * Execution.isLegal("dispatch_started", "refused") // false: refusal is only possible before dispatch
 * ```
 *
 * @category predicates
 * @since 0.1.0
 */
export const isLegal = (from: State, to: State): boolean => transitions.some(([f, t]) => f === from && t === to)

/**
 * States no transition leaves.
 *
 * @example
 * ```ts
 * import { Execution } from "@rein/ledger"
 *
 * Execution.isTerminal("succeeded") // true
 * ```
 *
 * @category predicates
 * @since 0.1.0
 */
export const isTerminal = (state: State): boolean =>
  state === "succeeded" || state === "failed_safe" || state === "refused"

/**
 * A normalised machine code: lowercase snake case, at most 64 characters. Free text never reaches the ledger.
 *
 * @example
 * ```ts
 * import { Schema } from "effect"
 * import { Execution } from "@rein/ledger"
 *
 * Schema.decodeUnknownSync(Execution.Code)("dispatch_timeout")
 * ```
 *
 * @category schemas
 * @since 0.1.0
 */
export const Code = Schema.String.pipe(
  Schema.pattern(/^[a-z][a-z0-9_]{0,63}$/, {
    message: () => "Expected a normalised code (lowercase snake case, at most 64 characters)"
  })
)

/**
 * Where a receipt's evidence came from.
 *
 * @example
 * ```ts
 * import { Execution } from "@rein/ledger"
 *
 * Execution.Source.literals
 * ```
 *
 * @category schemas
 * @since 0.1.0
 */
export const Source = Schema.Literal("ledger", "authorisation", "dispatcher", "reconciler", "recovery")

/**
 * An immutable, append-only record of one transition (or, for `evidence` receipts, of a reconciliation
 * attempt that did not resolve an ambiguity: `from` and `to` are then both `ambiguous`).
 *
 * @example
 * ```ts
 * import { Schema } from "effect"
 * import { Execution } from "@rein/ledger"
 *
 * const show = (r: Execution.Receipt) => `${r.seq}: ${r.from ?? "∅"} → ${r.to} (${r.code})`
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export class Receipt extends Schema.Class<Receipt>("@rein/ledger/Receipt")({
  executionId: Schema.String,
  seq: Schema.Int,
  kind: Schema.Literal("transition", "evidence"),
  from: Schema.NullOr(State),
  to: State,
  code: Code,
  source: Source,
  digest: Schema.NullOr(Sha256),
  refersTo: Schema.NullOr(Schema.Int),
  at: Schema.Int
}) {}

/**
 * The current view of one execution. It holds identities, digests and codes — never the request body,
 * the response or any credential.
 *
 * @example
 * ```ts
 * import { Execution } from "@rein/ledger"
 *
 * const summary = (e: Execution.Execution) => `${e.operation}@${e.connection}: ${e.state}`
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export class Execution extends Schema.Class<Execution>("@rein/ledger/Execution")({
  id: Schema.String,
  organisation: Schema.String,
  connection: Schema.String,
  operation: Schema.String,
  origin: Schema.String,
  idempotencyKey: Schema.NullOr(Schema.String),
  requestDigest: Sha256,
  state: State,
  code: Code,
  confirmation: Schema.NullOr(Sha256),
  createdAt: Schema.Int,
  updatedAt: Schema.Int
}) {}
