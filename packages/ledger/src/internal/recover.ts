/**
 * Recovery of what a previous process left behind: `dispatch_started → ambiguous` for a dispatch whose lease
 * expired (its owner stopped renewing, so its result is lost), then reconciliation of every ambiguous
 * execution. Dispatches whose owner still renews its lease, in this process or another, are left alone.
 *
 * @internal
 */
import { Effect, Either } from "effect"
import type { State } from "../Execution.js"
import type { LedgerStoreError } from "../LedgerError.js"
import type * as LedgerStore from "../LedgerStore.js"
import type { InProcess } from "./inProcess.js"
import { type Deps, now, type Outcome, type ReconcileError, settledOf } from "./outcome.js"
import { reconcileAmbiguous } from "./reconcile.js"

/** What `recover` did with one execution (`Ledger.Recovered`). @internal */
export interface Recovery {
  readonly organisation: string
  readonly executionId: string
  readonly state: Extract<State, "succeeded" | "failed_safe" | "ambiguous">
  readonly code: string
}

/** Reconciles an ambiguous execution that is not running in this process; otherwise reports its state. @internal */
export const reconcile =
  (deps: Deps, local: InProcess) =>
  (organisation: string, executionId: string): Effect.Effect<Outcome, ReconcileError> =>
    Effect.gen(function*() {
      const execution = yield* deps.store.execution(organisation, executionId)
      if ((yield* local.active).has(execution.id) || execution.state !== "ambiguous") {
        return yield* settledOf(execution)
      }
      return yield* reconcileAmbiguous(deps)(execution)
    })

// `dispatch_started → ambiguous` once the lease expired; `false` while its owner is alive and dispatching.
const takeOver = (deps: Deps, entry: LedgerStore.Stranded) =>
  Effect.flatMap(now, (at) =>
    deps.store.leasedTransition({
      organisation: entry.organisation,
      executionId: entry.id,
      from: "dispatch_started",
      to: "ambiguous",
      code: "dispatch_lost",
      source: "recovery",
      digest: null,
      refersTo: null,
      confirmation: null,
      at
    }, { _tag: "Expired" })).pipe(
      Effect.as(true),
      Effect.catchTags({
        // Its owner is alive and dispatching: leave it alone.
        LeaseHeld: () => Effect.succeed(false),
        // Another process moved it first; reconciliation reads whatever it recorded.
        LeaseLost: () => Effect.succeed(true),
        StateConflict: () => Effect.succeed(true),
        IllegalTransition: () => Effect.succeed(true),
        ExecutionNotFound: () => Effect.succeed(true)
      })
    )

const recoverOne = (deps: Deps, local: InProcess, entry: LedgerStore.Stranded) =>
  Effect.gen(function*() {
    if (entry.state === "dispatch_started" && !(yield* takeOver(deps, entry))) return null
    const outcome = yield* Effect.either(reconcile(deps, local)(entry.organisation, entry.id))
    const execution = yield* Effect.catchTag(
      deps.store.execution(entry.organisation, entry.id),
      "ExecutionNotFound",
      () => Effect.succeed(null)
    )
    if (execution === null) return null
    const state = execution.state === "succeeded" || execution.state === "failed_safe"
      ? execution.state
      : "ambiguous"
    const code = Either.isLeft(outcome) && outcome.left._tag === "Ambiguous" ? outcome.left.code : execution.code
    const recovery: Recovery = { organisation: entry.organisation, executionId: entry.id, state, code }
    return recovery
  })

/** Recovers every stranded execution not running in this process, one after another. @internal */
export const recover = (
  deps: Deps,
  local: InProcess
): Effect.Effect<ReadonlyArray<Recovery>, LedgerStoreError> =>
  Effect.gen(function*() {
    const stranded = yield* deps.store.stranded
    const running = yield* local.active
    const recovered: Array<Recovery> = []
    for (const entry of stranded) {
      if (running.has(entry.id)) continue
      const recovery = yield* recoverOne(deps, local, entry)
      if (recovery !== null) recovered.push(recovery)
    }
    return recovered
  })
