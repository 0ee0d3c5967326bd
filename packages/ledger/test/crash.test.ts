import { it } from "@effect/vitest"
import { Clock, Effect } from "effect"
import { describe, expect } from "vitest"
import {
  AUDIENCE,
  authorise,
  confirmed,
  grant,
  issuer,
  leases,
  ORG,
  ORIGIN,
  script,
  states,
  submission,
  tempDb,
  useLedger,
  withRaw
} from "./helpers.js"
import { bundle, spawnChild } from "./processes.js"

// Real time, because the lease is held by another process: the child's lease lasts LEASE ms and its
// heartbeat renews it every LEASE / 3 ms (slack for a loaded machine).
const LEASE = 1_500

const leaseOf = (filename: string, executionId: string) =>
  Effect.map(leases(filename), (rows) => rows.find((row) => row.execution_id === executionId))

const stateOf = (filename: string, executionId: string) =>
  withRaw(filename, (sql) => sql<{ state: string }>`SELECT state FROM ledger_executions WHERE id = ${executionId}`)
    .pipe(Effect.map((rows) => rows[0]?.state))

const sleepUntil = (epochMillis: number) =>
  Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.sleep(Math.max(0, epochMillis - now)))

// A child process that submits one call and dispatches it; returns the child and the execution id.
const dispatching = (filename: string, authorisation: unknown, options: { readonly finishOnStdin?: boolean } = {}) =>
  Effect.gen(function*() {
    const child = yield* spawnChild(yield* bundle("crash-child"), {
      filename,
      publicKey: issuer.publicKey.export({ type: "spki", format: "pem" }),
      audience: AUDIENCE,
      organisation: ORG,
      origin: ORIGIN,
      submission: submission({ authorisation }),
      leaseMillis: LEASE,
      ...options
    })
    const executionId = (yield* child.waitFor(/DISPATCHING (\S+)\n/))[1]!
    return { child, executionId }
  })

describe("a dispatch in another process: alive, stalled, killed", () => {
  it.live("recover leaves a renewed lease alone; after SIGKILL and expiry the dispatch is ambiguous and reconciled", () =>
    Effect.scoped(Effect.gen(function*() {
      const { filename } = yield* tempDb
      const authorisation = authorise(grant({ expiresAt: 4_102_444_800_000 }))
      const { child, executionId } = yield* dispatching(filename, authorisation)
      const first = (yield* leaseOf(filename, executionId))!
      expect(first.owner).toBe("crash-child")

      // Another process (this one) with a reconciler that finds the effect.
      const s = script({ reconcile: (ctx) => Effect.succeed(confirmed(ctx.executionId)) })
      const ledger = yield* useLedger(filename, s)
      // Past the first lease's expiry: only the child's renewals keep it alive.
      yield* sleepUntil(first.expires_at + 200)
      expect(yield* ledger.recover).toEqual([])
      expect(yield* stateOf(filename, executionId)).toBe("dispatch_started")
      expect((yield* leaseOf(filename, executionId))!.expires_at).toBeGreaterThan(first.expires_at)
      // A resubmission of the same call does not dispatch it again while it is in flight.
      expect((yield* Effect.flip(ledger.submit(ORG, submission({ authorisation }))))._tag).toBe("InFlight")

      yield* child.kill("SIGKILL")
      expect((yield* child.exited).signal).toBe("SIGKILL")
      // What the dead process left: dispatch_started, committed, with no result, and a lease nobody renews.
      const last = (yield* leaseOf(filename, executionId))!
      expect(yield* stateOf(filename, executionId)).toBe("dispatch_started")
      yield* sleepUntil(last.expires_at + 50)

      const recovered = yield* ledger.recover
      expect(recovered).toHaveLength(1)
      expect(recovered[0]?.state).toBe("succeeded")
      expect(s.dispatches).toBe(0)
      expect(s.reconciles).toBe(1)
      const receipts = yield* ledger.receipts(ORG, executionId)
      expect(states(receipts)).toEqual([
        "created",
        "authorised",
        "prepared",
        "dispatch_started",
        "ambiguous",
        "succeeded"
      ])
      expect(receipts[4]?.code).toBe("dispatch_lost")
      expect(receipts[4]?.source).toBe("recovery")
      expect(yield* leaseOf(filename, executionId)).toBeUndefined()

      // And afterwards the same call is answered from the ledger.
      const again = yield* ledger.submit(ORG, submission({ authorisation }))
      expect(again.executionId).toBe(executionId)
      expect(s.dispatches).toBe(0)
    })))

  it.live("a stalled owner's expired lease is taken over; when it resumes, its confirmation does not overwrite", () =>
    Effect.scoped(Effect.gen(function*() {
      const { filename } = yield* tempDb
      const authorisation = authorise(grant({ expiresAt: 4_102_444_800_000 }))
      const { child, executionId } = yield* dispatching(filename, authorisation, { finishOnStdin: true })
      // The owner stalls (SIGSTOP) for longer than its lease; another process recovers meanwhile and its
      // reconciler cannot find the effect yet.
      yield* child.kill("SIGSTOP")
      yield* sleepUntil((yield* leaseOf(filename, executionId))!.expires_at + 50)
      const s = script()
      const ledger = yield* useLedger(filename, s)
      const recovered = yield* ledger.recover
      expect(recovered.map((r) => [r.state, r.code])).toEqual([["ambiguous", "not_found_yet"]])

      // The owner resumes and its dispatcher confirms: the recovery's record stands, and its caller is told so.
      yield* child.send("FINISH")
      yield* child.kill("SIGCONT")
      expect((yield* child.waitFor(/RESULT (\S+)\n/))[1]).toBe("Ambiguous")
      const receipts = yield* ledger.receipts(ORG, executionId)
      expect(states(receipts)).toEqual([
        "created",
        "authorised",
        "prepared",
        "dispatch_started",
        "ambiguous",
        "evidence"
      ])
      expect(receipts.filter((r) => r.source === "dispatcher")).toEqual([])
      expect(yield* leaseOf(filename, executionId)).toBeUndefined()
      expect(s.dispatches).toBe(0)
    })))
})
