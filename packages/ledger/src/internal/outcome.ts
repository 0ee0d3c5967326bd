/**
 * What an execution's recorded state means to a caller, and what the ledger's steps share: the store, the
 * checked operations and lease settings, the clock and fresh ids.
 *
 * @internal
 */
import { Cause, Effect, Exit } from "effect"
import { randomUUID } from "node:crypto"
import type { Sha256 } from "../Digest.js"
import type { Execution } from "../Execution.js"
import type * as Lease from "../Lease.js"
import {
  Ambiguous,
  type ExecutionNotFound,
  FailedSafe,
  type IdempotencyConflict,
  InFlight,
  type InvalidRequest,
  type LedgerStoreError,
  type Refused
} from "../LedgerError.js"
import type * as LedgerStore from "../LedgerStore.js"
import type * as Operation from "../Operation.js"

/** A confirmed effect, as `Ledger.Settled` publishes it. @internal */
export interface Outcome {
  readonly executionId: string
  readonly confirmation: Sha256
  readonly resolvedBy: "dispatch" | "reconciliation"
  readonly joined: boolean
}

/** The errors of `submit` (`Ledger.SubmitError`). @internal */
export type SubmitError =
  | Refused
  | FailedSafe
  | Ambiguous
  | InFlight
  | IdempotencyConflict
  | InvalidRequest
  | LedgerStoreError

/** The errors of reconciling one execution. @internal */
export type ReconcileError = FailedSafe | Ambiguous | InFlight | ExecutionNotFound | LedgerStoreError

/** What every step of the ledger reads: fixed when the ledger is built. @internal */
export interface Deps {
  readonly store: LedgerStore.Service
  readonly operations: ReadonlyMap<string, Operation.Operation>
  readonly leases: Lease.Settings
}

/** @internal */
export const now = Effect.clockWith((clock) => clock.currentTimeMillis)

/** @internal */
export const newId = Effect.sync(() => randomUUID())

/** What a dispatcher or reconciler is told about the execution. @internal */
export const contextOf = (execution: Execution): Operation.ReconcileContext => ({
  executionId: execution.id,
  organisation: execution.organisation,
  connection: execution.connection,
  origin: execution.origin,
  idempotencyKey: execution.idempotencyKey,
  requestDigest: execution.requestDigest
})

/**
 * The code a lost result is recorded with. Only the shape of the exit is kept, never its content: a
 * dispatcher's error may carry provider text or secrets.
 *
 * @internal
 */
export const lostCode = (phase: "dispatch" | "reconcile", exit: Exit.Exit<unknown, unknown>): string => {
  if (Exit.isSuccess(exit)) return `${phase}_result_invalid`
  if (Cause.isInterruptedOnly(exit.cause)) return `${phase}_interrupted`
  if (Cause.isFailure(exit.cause)) return `${phase}_failed`
  return `${phase}_defect`
}

/** The current outcome of an execution someone else owns (or owned). @internal */
export const settledOf = (execution: Execution): Effect.Effect<Outcome, FailedSafe | Ambiguous | InFlight> => {
  switch (execution.state) {
    case "succeeded":
      // A succeeded execution always carries its confirmation: both paths to `succeeded` store one.
      return execution.confirmation === null
        ? Effect.fail(new InFlight({ executionId: execution.id, state: execution.state }))
        : Effect.succeed({
          executionId: execution.id,
          confirmation: execution.confirmation,
          resolvedBy: execution.code === "confirmed" ? "dispatch" : "reconciliation",
          joined: true
        })
    case "failed_safe":
      return Effect.fail(new FailedSafe({ executionId: execution.id, code: execution.code }))
    case "ambiguous":
      return Effect.fail(new Ambiguous({ executionId: execution.id, code: execution.code }))
    default:
      return Effect.fail(new InFlight({ executionId: execution.id, state: execution.state }))
  }
}

/** What the store holds for `execution` now, as an outcome: another writer got there first. @internal */
export const recorded = (store: LedgerStore.Service, execution: Execution) =>
  Effect.flatMap(store.execution(execution.organisation, execution.id), settledOf)
