/**
 * The typed outcomes a ledger call can fail with. They are data (`Schema.TaggedError`): a caller can
 * `Effect.catchTag` exactly the one it cares about, and each serialises without carrying provider text.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import { Code, State } from "./Execution.js"

/**
 * Why a submission was refused. Every refusal happens before dispatch, so a refused call made no effect.
 *
 * @example
 * ```ts
 * import { LedgerError } from "@rein/ledger"
 *
 * LedgerError.RefusalReason.literals.includes("nonce_replayed") // true
 * ```
 *
 * @category schemas
 * @since 0.1.0
 */
export const RefusalReason = Schema.Literal(
  "malformed_authorisation",
  "issuer_untrusted",
  "signature_invalid",
  "organisation_mismatch",
  "connection_mismatch",
  "operation_mismatch",
  "audience_mismatch",
  "request_digest_mismatch",
  "expired",
  "nonce_replayed",
  "unknown_operation",
  "unknown_connection",
  "origin_not_allowed"
)

/**
 * @example
 * ```ts
 * import type { LedgerError } from "@rein/ledger"
 *
 * const reason: LedgerError.RefusalReason = "expired"
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export type RefusalReason = typeof RefusalReason.Type

/**
 * The submission was refused before anything was dispatched. `executionId` names the recorded refusal
 * (`created → refused`), when one was recorded.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { LedgerError } from "@rein/ledger"
 *
 * const onRefused = (e: LedgerError.Refused) => Effect.logWarning(`refused: ${e.reason}`)
 * ```
 *
 * @category errors
 * @since 0.1.0
 */
export class Refused extends Schema.TaggedError<Refused>()("Refused", {
  reason: RefusalReason,
  executionId: Schema.NullOr(Schema.String)
}) {}

/**
 * The effect did not happen, and the dispatcher (or the reconciler) proved it. Safe to try again with a new
 * authorisation and idempotency key.
 *
 * @example
 * ```ts
 * import { LedgerError } from "@rein/ledger"
 *
 * const explain = (e: LedgerError.FailedSafe) => `no effect (${e.code})`
 * ```
 *
 * @category errors
 * @since 0.1.0
 */
export class FailedSafe extends Schema.TaggedError<FailedSafe>()("FailedSafe", {
  executionId: Schema.String,
  code: Code
}) {}

/**
 * The call was dispatched and its result is unknown: it may or may not have taken effect. The ledger has
 * recorded `ambiguous` and reconciliation did not (yet) resolve it. Never retry the effect; reconcile again.
 *
 * @example
 * ```ts
 * import { LedgerError } from "@rein/ledger"
 *
 * const explain = (e: LedgerError.Ambiguous) => `unknown outcome for ${e.executionId} (${e.code})`
 * ```
 *
 * @category errors
 * @since 0.1.0
 */
export class Ambiguous extends Schema.TaggedError<Ambiguous>()("Ambiguous", {
  executionId: Schema.String,
  code: Code
}) {}

/**
 * Another submission (in this process or another one) owns the execution for this idempotency key and has
 * not finished. If its process died, `Ledger.recover` turns it into `ambiguous` and reconciles it.
 *
 * @example
 * ```ts
 * import { LedgerError } from "@rein/ledger"
 *
 * const explain = (e: LedgerError.InFlight) => `${e.executionId} is ${e.state}`
 * ```
 *
 * @category errors
 * @since 0.1.0
 */
export class InFlight extends Schema.TaggedError<InFlight>()("InFlight", {
  executionId: Schema.String,
  state: State
}) {}

/**
 * The idempotency key is already bound to a different request, or to the same request on another connection.
 *
 * @example
 * ```ts
 * import { LedgerError } from "@rein/ledger"
 *
 * const explain = (e: LedgerError.IdempotencyConflict) => `key ${e.idempotencyKey} reused`
 * ```
 *
 * @category errors
 * @since 0.1.0
 */
export class IdempotencyConflict extends Schema.TaggedError<IdempotencyConflict>()("IdempotencyConflict", {
  idempotencyKey: Schema.String,
  executionId: Schema.NullOr(Schema.String)
}) {}

/**
 * The submission did not decode: an unknown field, a missing one, a wrong type. The message names the path.
 * Nothing was written and nothing was dispatched.
 *
 * @example
 * ```ts
 * import { LedgerError } from "@rein/ledger"
 *
 * const explain = (e: LedgerError.InvalidRequest) => e.message
 * ```
 *
 * @category errors
 * @since 0.1.0
 */
export class InvalidRequest extends Schema.TaggedError<InvalidRequest>()("InvalidRequest", {
  message: Schema.String
}) {}

/**
 * The store refused a transition that the state machine does not allow.
 *
 * @example
 * ```ts
 * import { LedgerError } from "@rein/ledger"
 *
 * const explain = (e: LedgerError.IllegalTransition) => `${e.from} → ${e.to} is not allowed`
 * ```
 *
 * @category errors
 * @since 0.1.0
 */
export class IllegalTransition extends Schema.TaggedError<IllegalTransition>()("IllegalTransition", {
  executionId: Schema.String,
  from: Schema.NullOr(State),
  to: State
}) {}

/**
 * A compare-and-set transition lost: the execution was not in the expected state any more.
 *
 * @example
 * ```ts
 * import { LedgerError } from "@rein/ledger"
 *
 * const explain = (e: LedgerError.StateConflict) => `expected ${e.expected}, found ${e.actual}`
 * ```
 *
 * @category errors
 * @since 0.1.0
 */
export class StateConflict extends Schema.TaggedError<StateConflict>()("StateConflict", {
  executionId: Schema.String,
  expected: State,
  actual: State
}) {}

/**
 * No execution with this id is visible to this organisation.
 *
 * @example
 * ```ts
 * import { LedgerError } from "@rein/ledger"
 *
 * const explain = (e: LedgerError.ExecutionNotFound) => `no ${e.executionId}`
 * ```
 *
 * @category errors
 * @since 0.1.0
 */
export class ExecutionNotFound extends Schema.TaggedError<ExecutionNotFound>()("ExecutionNotFound", {
  executionId: Schema.String
}) {}

/**
 * Another process's dispatcher still holds the lease on this execution (it renewed it in time), so its
 * dispatch is not lost and was left alone.
 *
 * @example
 * ```ts
 * import { LedgerError } from "@rein/ledger"
 *
 * const explain = (e: LedgerError.LeaseHeld) => `${e.owner} holds ${e.executionId} until ${e.expiresAt}`
 * ```
 *
 * @category errors
 * @since 0.1.0
 */
export class LeaseHeld extends Schema.TaggedError<LeaseHeld>()("LeaseHeld", {
  executionId: Schema.String,
  owner: Schema.String,
  expiresAt: Schema.Int
}) {}

/**
 * A dispatcher's lease is no longer its own: it expired and `recover` took the execution over. The
 * dispatcher's own result is not written over what the recovery recorded.
 *
 * @example
 * ```ts
 * import { LedgerError } from "@rein/ledger"
 *
 * const explain = (e: LedgerError.LeaseLost) => `${e.executionId} was recovered by another process`
 * ```
 *
 * @category errors
 * @since 0.1.0
 */
export class LeaseLost extends Schema.TaggedError<LeaseLost>()("LeaseLost", {
  executionId: Schema.String
}) {}

/**
 * The database failed (I/O, constraint, lock). The transaction was rolled back.
 *
 * @example
 * ```ts
 * import { LedgerError } from "@rein/ledger"
 *
 * const explain = (e: LedgerError.LedgerStoreError) => `store failed during ${e.operation}`
 * ```
 *
 * @category errors
 * @since 0.1.0
 */
export class LedgerStoreError extends Schema.TaggedError<LedgerStoreError>()("LedgerStoreError", {
  operation: Schema.String,
  cause: Schema.Defect
}) {}

/**
 * The ledger's configuration is unsafe or malformed (a non-HTTPS origin, an open request schema, a
 * duration that is not finite and positive). The message names the field.
 *
 * @example
 * ```ts
 * import { LedgerError } from "@rein/ledger"
 *
 * const explain = (e: LedgerError.LedgerConfigError) => e.message
 * ```
 *
 * @category errors
 * @since 0.1.0
 */
export class LedgerConfigError extends Schema.TaggedError<LedgerConfigError>()("LedgerConfigError", {
  message: Schema.String
}) {}
