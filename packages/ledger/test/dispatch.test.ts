import { it } from "@effect/vitest"
import { Operation } from "@rein/ledger"
import { Deferred, Effect, Fiber, TestClock } from "effect"
import { describe, expect } from "vitest"
import { confirmed, ORG, script, states, submission, tempDb, useLedger, withRaw } from "./helpers.js"

describe("dispatch exactly once", () => {
  it.scoped("dispatch_started is in the database before the dispatcher runs", () =>
    Effect.gen(function*() {
      const { filename } = yield* tempDb
      let seen: string | undefined
      const s = script({
        // Checked from inside the dispatcher, through a separate connection to the file.
        dispatch: (ctx) =>
          withRaw(filename, (sql) =>
            sql<{ state: string }>`SELECT state FROM ledger_executions WHERE id = ${ctx.executionId}`)
            .pipe(
              Effect.tap((rows) => {
                seen = rows[0]?.state
              }),
              Effect.as(confirmed(ctx.executionId))
            )
      })
      const ledger = yield* useLedger(filename, s)
      const settled = yield* ledger.submit(ORG, submission())
      expect(seen).toBe("dispatch_started")
      expect(s.dispatches).toBe(1)
      expect(settled.resolvedBy).toBe("dispatch")
      const receipts = yield* ledger.receipts(ORG, settled.executionId)
      expect(states(receipts)).toEqual(["created", "authorised", "prepared", "dispatch_started", "succeeded"])
      expect(receipts.at(-1)?.digest).toBe(settled.confirmation)
      expect((yield* ledger.execution(ORG, settled.executionId)).confirmation).toBe(settled.confirmation)
    }))

  it.scoped("a timeout after dispatch goes to reconciliation, never to a second dispatch", () =>
    Effect.gen(function*() {
      const { filename } = yield* tempDb
      const entered = yield* Deferred.make<void>()
      const s = script({
        dispatch: () => Effect.zipRight(Deferred.succeed(entered, undefined), Effect.never),
        reconcile: (ctx) => Effect.succeed(confirmed(ctx.executionId))
      })
      const ledger = yield* useLedger(filename, s)
      const fiber = yield* Effect.fork(ledger.submit(ORG, submission()))
      yield* Deferred.await(entered)
      yield* TestClock.adjust("10 seconds")
      const settled = yield* Fiber.join(fiber)
      expect(settled.resolvedBy).toBe("reconciliation")
      expect(s.dispatches).toBe(1)
      expect(s.reconciles).toBe(1)
      const receipts = yield* ledger.receipts(ORG, settled.executionId)
      expect(states(receipts).slice(-2)).toEqual(["ambiguous", "succeeded"])
      expect(receipts.at(-2)?.code).toBe("dispatch_timeout")
      expect(receipts.at(-1)?.refersTo).toBe(receipts.at(-2)?.seq)

      // Submitting the same call again is answered from the ledger.
      const again = yield* ledger.submit(ORG, submission())
      expect(again.executionId).toBe(settled.executionId)
      expect(again.joined).toBe(true)
      expect(s.dispatches).toBe(1)
    }))

  it.scoped("a dispatcher that throws is ambiguous; an unresolved reconciliation stays ambiguous with evidence", () =>
    Effect.gen(function*() {
      const { filename } = yield* tempDb
      let resolve = false
      const s = script({
        dispatch: () => Effect.die(new Error("socket hang up")),
        reconcile: (ctx) =>
          Effect.succeed(
            resolve
              ? confirmed(ctx.executionId)
              : Operation.Unresolved.make({ code: "provider_unreachable", evidence: null })
          )
      })
      const ledger = yield* useLedger(filename, s)
      const error = yield* Effect.flip(ledger.submit(ORG, submission()))
      expect(error._tag).toBe("Ambiguous")
      if (error._tag !== "Ambiguous") return
      expect(error.code).toBe("provider_unreachable")
      expect((yield* ledger.execution(ORG, error.executionId)).state).toBe("ambiguous")

      // A resubmission reconciles again; it never dispatches.
      const again = yield* Effect.flip(ledger.submit(ORG, submission()))
      expect(again._tag).toBe("Ambiguous")
      resolve = true
      const settled = yield* ledger.reconcile(ORG, error.executionId)
      expect(settled.resolvedBy).toBe("reconciliation")
      expect(s.dispatches).toBe(1)
      expect(s.reconciles).toBe(3)
      const receipts = yield* ledger.receipts(ORG, error.executionId)
      expect(states(receipts)).toEqual([
        "created",
        "authorised",
        "prepared",
        "dispatch_started",
        "ambiguous",
        "evidence",
        "evidence",
        "succeeded"
      ])
      expect(receipts[4]?.code).toBe("dispatch_defect")
    }))

  it.scoped("a proven no-effect result is failed_safe", () =>
    Effect.gen(function*() {
      const { filename } = yield* tempDb
      const s = script({
        dispatch: () =>
          Effect.succeed(
            Operation.NoEffect.make({
              code: "recipient_rejected",
              proof: "rejected_before_effect",
              evidence: "0".repeat(64) as Operation.NoEffect["evidence"]
            })
          )
      })
      const ledger = yield* useLedger(filename, s)
      const error = yield* Effect.flip(ledger.submit(ORG, submission()))
      expect(error._tag).toBe("FailedSafe")
      if (error._tag !== "FailedSafe") return
      expect(error.code).toBe("recipient_rejected")
      expect(s.reconciles).toBe(0)
      expect((yield* ledger.execution(ORG, error.executionId)).state).toBe("failed_safe")
    }))

  it.scoped("a result that does not decode (a confirmation without a SHA-256 digest) is ambiguous", () =>
    Effect.gen(function*() {
      const { filename } = yield* tempDb
      const s = script({ dispatch: () => Effect.succeed({ _tag: "Confirmed", confirmation: "msg_123" }) })
      const ledger = yield* useLedger(filename, s)
      const error = yield* Effect.flip(ledger.submit(ORG, submission()))
      expect(error._tag).toBe("Ambiguous")
      if (error._tag !== "Ambiguous") return
      const receipts = yield* ledger.receipts(ORG, error.executionId)
      expect(receipts[4]?.code).toBe("dispatch_result_invalid")
    }))

  it.scoped("interrupting the caller after dispatch records ambiguous before the interruption propagates", () =>
    Effect.gen(function*() {
      const { filename } = yield* tempDb
      const entered = yield* Deferred.make<string>()
      const s = script({ dispatch: (ctx) => Effect.zipRight(Deferred.succeed(entered, ctx.executionId), Effect.never) })
      const ledger = yield* useLedger(filename, s)
      const fiber = yield* Effect.fork(ledger.submit(ORG, submission()))
      const id = yield* Deferred.await(entered)
      yield* Fiber.interrupt(fiber)
      const execution = yield* ledger.execution(ORG, id)
      expect(execution.state).toBe("ambiguous")
      expect(execution.code).toBe("dispatch_interrupted")
      expect(s.dispatches).toBe(1)
    }))
})
