/**
 * `ambiguous → succeeded | failed_safe`: the reconciler's answer for an execution already recorded as
 * ambiguous. An unresolved attempt is appended as evidence and the execution stays ambiguous. The dispatcher
 * is not reachable from here: an ambiguous effect is never dispatched again.
 *
 * @internal
 */
import { Cause, Effect, Either, Exit, Option, Schema } from "effect"
import type { Sha256 } from "../Digest.js"
import type { Execution } from "../Execution.js"
import { Ambiguous, FailedSafe } from "../LedgerError.js"
import * as Operation from "../Operation.js"
import { contextOf, type Deps, lostCode, now, type Outcome, type ReconcileError, recorded } from "./outcome.js"

const decodeReconcileResult = Schema.decodeUnknownEither(Operation.ReconcileResult)

// The transition that made the execution ambiguous: what evidence and the resolution refer to.
const ambiguitySeq = (deps: Deps, execution: Execution) =>
  Effect.map(
    deps.store.receipts(execution.organisation, execution.id),
    (receipts) => [...receipts].reverse().find((r) => r.kind === "transition" && r.to === "ambiguous")?.seq ?? null
  )

// Evidence of an unresolved attempt; the caller gets `Ambiguous`. If the execution is not ambiguous any more,
// someone else resolved it meanwhile: report what they recorded.
const evidence = (deps: Deps, execution: Execution, refersTo: number | null) => (code: string, digest: Sha256 | null) =>
  now.pipe(
    Effect.flatMap((at) =>
      deps.store.evidence({
        organisation: execution.organisation,
        executionId: execution.id,
        code,
        source: "reconciler",
        digest,
        refersTo,
        at
      })
    ),
    Effect.zipRight(Effect.fail(new Ambiguous({ executionId: execution.id, code }))),
    Effect.catchTag("StateConflict", () => recorded(deps.store, execution))
  )

// A definite answer: `ambiguous → succeeded` (confirmed) or `ambiguous → failed_safe` (no effect).
const resolve = (
  deps: Deps,
  execution: Execution,
  refersTo: number | null,
  value: Operation.Confirmed | Operation.NoEffect
): Effect.Effect<Outcome, ReconcileError> =>
  Effect.gen(function*() {
    const confirmed = value._tag === "Confirmed"
    const resolved = yield* deps.store.transition({
      organisation: execution.organisation,
      executionId: execution.id,
      from: "ambiguous",
      to: confirmed ? "succeeded" : "failed_safe",
      code: confirmed ? "reconciled" : value.code,
      source: "reconciler",
      digest: confirmed ? value.confirmation : value.evidence,
      refersTo,
      confirmation: confirmed ? value.confirmation : null,
      at: yield* now
    }).pipe(
      Effect.as(true),
      Effect.catchTags({
        StateConflict: () => Effect.succeed(false),
        IllegalTransition: () => Effect.succeed(false)
      })
    )
    // Someone else resolved it first: report what they recorded.
    if (!resolved) return yield* recorded(deps.store, execution)
    if (value._tag === "NoEffect") return yield* new FailedSafe({ executionId: execution.id, code: value.code })
    return {
      executionId: execution.id,
      confirmation: value.confirmation,
      resolvedBy: "reconciliation",
      joined: false
    } as const
  })

/** Runs the operation's reconciler once for an `ambiguous` execution and records what it found. @internal */
export const reconcileAmbiguous = (deps: Deps) => (execution: Execution): Effect.Effect<Outcome, ReconcileError> =>
  Effect.uninterruptibleMask((restore) =>
    Effect.gen(function*() {
      const refersTo = yield* ambiguitySeq(deps, execution)
      const unresolved = evidence(deps, execution, refersTo)
      const operation = deps.operations.get(execution.operation)
      if (operation === undefined) return yield* unresolved("operation_unknown", null)

      const exit = yield* restore(
        Effect.timeoutOption(
          Effect.suspend(() => operation.reconcile(contextOf(execution))),
          operation.reconcileTimeout
        )
      ).pipe(Effect.exit)
      if (Exit.isFailure(exit) || Option.isNone(exit.value)) {
        const code = Exit.isSuccess(exit) ? "reconcile_timeout" : lostCode("reconcile", exit)
        const written = yield* Effect.exit(unresolved(code, null))
        if (Exit.isFailure(exit) && Cause.isInterruptedOnly(exit.cause)) return yield* Effect.interrupt
        return yield* written
      }
      const result = decodeReconcileResult(exit.value.value)
      if (Either.isLeft(result)) return yield* unresolved("reconcile_result_invalid", null)
      const value = result.right
      if (value._tag === "Unresolved") return yield* unresolved(value.code, value.evidence)
      return yield* resolve(deps, execution, refersTo, value)
    })
  )
