/**
 * The SQL of leases, run inside the store's transactions (see `Lease.ts` for what a lease promises).
 *
 * @internal
 */
import type { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { State } from "../Execution.js"
import type { Guard, Lease } from "../Lease.js"
import { LeaseHeld, LeaseLost } from "../LedgerError.js"

/** The part of a store transition that concerns its lease. @internal */
export interface Step {
  readonly executionId: string
  readonly from: State
  readonly to: State
  readonly at: number
  readonly lease?: Lease | undefined
}

/** @internal */
export const make = (sql: SqlClient.SqlClient) => {
  const acquire = (executionId: string, lease: Lease) =>
    sql`INSERT INTO ledger_leases (execution_id, owner, token, expires_at)
      VALUES (${executionId}, ${lease.owner}, ${lease.token}, ${lease.expiresAt})`

  // Any transition out of `dispatch_started` ends the lease.
  const release = (executionId: string) => sql`DELETE FROM ledger_leases WHERE execution_id = ${executionId}`

  // Checks the guard of a transition out of `dispatch_started` at time `at`, then ends the lease.
  const check = (executionId: string, guard: Guard, at: number) =>
    Effect.gen(function*() {
      const rows = yield* sql<{ readonly owner: string; readonly token: string; readonly expires_at: number }>`
        SELECT owner, token, expires_at FROM ledger_leases WHERE execution_id = ${executionId}`
      const held = rows[0]
      if (guard._tag === "Holder" && held?.token !== guard.token) return yield* new LeaseLost({ executionId })
      if (guard._tag === "Expired" && held !== undefined && held.expires_at > at) {
        return yield* new LeaseHeld({ executionId, owner: held.owner, expiresAt: held.expires_at })
      }
      yield* release(executionId)
    })

  // Extends the lease if `token` still holds it; never shortens it. One statement, so no transaction.
  const renew = (organisation: string, executionId: string, token: string, expiresAt: number) =>
    Effect.map(
      sql<{ readonly execution_id: string }>`UPDATE ledger_leases SET expires_at = MAX(expires_at, ${expiresAt})
        WHERE execution_id = ${executionId} AND token = ${token}
          AND execution_id IN (SELECT id FROM ledger_executions WHERE organisation = ${organisation})
        RETURNING execution_id`,
      (rows) => rows.length > 0
    )

  // The lease part of a transition: one into `dispatch_started` grants the lease it carries; one out of it
  // ends the lease, under `guard` when there is one.
  const step = (t: Step) =>
    t.from === "dispatch_started"
      ? release(t.executionId)
      : t.to === "dispatch_started" && t.lease !== undefined
      ? acquire(t.executionId, t.lease)
      : Effect.void
  const guardedStep = (guard: Guard) => (t: Step) =>
    t.from === "dispatch_started" ? check(t.executionId, guard, t.at) : step(t)

  return { guardedStep, renew, step }
}
