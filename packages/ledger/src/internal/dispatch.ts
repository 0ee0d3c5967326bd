/**
 * `authorised → prepared → dispatch_started → succeeded | failed_safe | ambiguous`. `dispatch_started` is
 * committed, with this dispatcher's lease, before any provider code runs; the dispatcher then runs once while
 * a heartbeat renews the lease. Any way of not getting a decodable result (failure, defect, timeout,
 * interruption) is recorded as `ambiguous` first, and only then reconciled.
 *
 * @internal
 */
import { Cause, Effect, Either, Exit, Option, Schema } from "effect"
import type { Sha256 } from "../Digest.js"
import type { Execution } from "../Execution.js"
import * as Lease from "../Lease.js"
import { FailedSafe, InFlight } from "../LedgerError.js"
import * as Operation from "../Operation.js"
import type { InProcess } from "./inProcess.js"
import { contextOf, type Deps, lostCode, now, type Outcome, recorded, type SubmitError } from "./outcome.js"
import { reconcileAmbiguous } from "./reconcile.js"

const decodeDispatchResult = Schema.decodeUnknownEither(Operation.DispatchResult)

// `prepared → dispatch_started`, granting this dispatcher's lease in the same transaction.
const start = (deps: Deps, execution: Execution) =>
  Effect.gen(function*() {
    const { at, lease } = yield* Lease.grant(deps.leases)
    const started = yield* deps.store.transition({
      organisation: execution.organisation,
      executionId: execution.id,
      from: "prepared",
      to: "dispatch_started",
      code: "dispatch_started",
      source: "ledger",
      digest: null,
      refersTo: null,
      confirmation: null,
      at,
      lease
    })
    const renew = (expiresAt: number) =>
      deps.store.renew({
        organisation: execution.organisation,
        executionId: execution.id,
        token: lease.token,
        expiresAt
      })
    return { lease, renew, started }
  })

// The result is written only while this dispatcher still holds its lease (`false` otherwise). If `recover`
// took the execution over (the lease expired), what the recovery recorded stands.
const settle =
  (deps: Deps, execution: Execution, token: string, refersTo: number) =>
  (to: "succeeded" | "failed_safe" | "ambiguous", code: string, digest: Sha256 | null) =>
    Effect.flatMap(now, (at) =>
      deps.store.leasedTransition({
        organisation: execution.organisation,
        executionId: execution.id,
        from: "dispatch_started",
        to,
        code,
        source: "dispatcher",
        digest,
        refersTo,
        confirmation: to === "succeeded" ? digest : null,
        at
      }, { _tag: "Holder", token })).pipe(
        Effect.as(true),
        Effect.catchTags({
          LeaseLost: () => Effect.succeed(false),
          LeaseHeld: () => Effect.succeed(false),
          StateConflict: () => Effect.succeed(false)
        })
      )

/** Dispatches a `prepared` execution once and records its result. @internal */
export const dispatchOnce = (
  deps: Deps,
  execution: Execution,
  operation: Operation.Operation,
  admitted: Operation.Admitted
) =>
  Effect.uninterruptibleMask((restore) =>
    Effect.gen(function*() {
      const { lease, renew, started } = yield* start(deps, execution)
      // From here on, any way of not getting a decodable result is `ambiguous`.
      const exit = yield* restore(
        Effect.timeoutOption(
          Effect.suspend(() => admitted.dispatch(contextOf(execution))),
          operation.dispatchTimeout
        )
      ).pipe(Lease.keep(deps.leases, renew), Effect.exit)
      const write = settle(deps, execution, lease.token, started.seq)
      const result = Exit.isSuccess(exit) && Option.isSome(exit.value)
        ? decodeDispatchResult(exit.value.value)
        : Either.left(null)
      if (Either.isRight(result)) {
        const value = result.right
        const written = value._tag === "Confirmed"
          ? yield* write("succeeded", "confirmed", value.confirmation)
          : yield* write("failed_safe", value.code, value.evidence)
        if (!written) return yield* recorded(deps.store, execution)
        if (value._tag === "NoEffect") return yield* new FailedSafe({ executionId: execution.id, code: value.code })
        const outcome: Outcome = {
          executionId: execution.id,
          confirmation: value.confirmation,
          resolvedBy: "dispatch",
          joined: false
        }
        return outcome
      }
      const code = Exit.isSuccess(exit) && Option.isNone(exit.value) ? "dispatch_timeout" : lostCode("dispatch", exit)
      // Persist the ambiguity first; only then reconcile.
      const written = yield* write("ambiguous", code, null)
      if (Exit.isFailure(exit) && Cause.isInterruptedOnly(exit.cause)) return yield* Effect.interrupt
      if (!written) return yield* recorded(deps.store, execution)
      return yield* restore(reconcileAmbiguous(deps)(execution))
    })
  )

/**
 * `authorised → prepared` (when not there yet), then the dispatch, marked as running in this process. A
 * compare-and-set lost to another submission reports where that one is.
 *
 * @internal
 */
export const proceed = (
  deps: Deps,
  local: InProcess,
  execution: Execution,
  operation: Operation.Operation,
  admitted: Operation.Admitted
): Effect.Effect<Outcome, SubmitError> =>
  local.markActive(
    execution.id,
    Effect.gen(function*() {
      if (execution.state === "authorised") {
        yield* deps.store.transition({
          organisation: execution.organisation,
          executionId: execution.id,
          from: "authorised",
          to: "prepared",
          code: "prepared",
          source: "ledger",
          digest: admitted.requestDigest,
          refersTo: null,
          confirmation: null,
          at: yield* now
        })
      }
      return yield* dispatchOnce(deps, execution, operation, admitted)
    })
  ).pipe(
    Effect.catchTags({
      StateConflict: (e) => Effect.fail(new InFlight({ executionId: e.executionId, state: e.actual })),
      IllegalTransition: (e) => Effect.fail(new InFlight({ executionId: e.executionId, state: e.from ?? "created" })),
      ExecutionNotFound: (e) => Effect.fail(new InFlight({ executionId: e.executionId, state: "created" }))
    })
  )
