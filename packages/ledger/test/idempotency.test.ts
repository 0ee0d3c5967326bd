import { it } from "@effect/vitest"
import { Digest, LedgerStore } from "@rein/ledger"
import { Context, Effect, Layer } from "effect"
import { describe, expect } from "vitest"
import {
  authorise,
  confirmed,
  email,
  grant,
  ORG,
  ORIGIN,
  requestDigest,
  script,
  submission,
  tempDb,
  useLedger
} from "./helpers.js"

describe("idempotency", () => {
  it.scoped("concurrent submissions with the same key share one execution and one dispatch", () =>
    Effect.gen(function*() {
      const { filename } = yield* tempDb
      const s = script({ dispatch: (ctx) => Effect.as(Effect.yieldNow(), confirmed(ctx.executionId)) })
      const ledger = yield* useLedger(filename, s)
      const authorisation = authorise()
      const results = yield* Effect.all(
        Array.from({ length: 8 }, () => ledger.submit(ORG, submission({ authorisation }))),
        { concurrency: "unbounded" }
      )
      expect(s.dispatches).toBe(1)
      expect(new Set(results.map((r) => r.executionId)).size).toBe(1)
      expect(results.filter((r) => !r.joined)).toHaveLength(1)
    }))

  it.scoped("two ledgers on the same file (two connections) racing on one key make one dispatch", () =>
    Effect.gen(function*() {
      const { filename } = yield* tempDb
      const s = script({ dispatch: (ctx) => Effect.as(Effect.yieldNow(), confirmed(ctx.executionId)) })
      const a = yield* useLedger(filename, s)
      const b = yield* useLedger(filename, s)
      const authorisation = authorise()
      const results = yield* Effect.all(
        [a, b, a, b].map((ledger) => Effect.either(ledger.submit(ORG, submission({ authorisation })))),
        { concurrency: "unbounded" }
      )
      expect(s.dispatches).toBe(1)
      // Each one either shares the confirmed result or is told the execution is in flight elsewhere.
      for (const result of results) {
        if (result._tag === "Left") expect(result.left._tag).toBe("InFlight")
      }
      const settled = yield* a.submit(ORG, submission({ authorisation }))
      expect(settled.joined).toBe(true)
      expect(s.dispatches).toBe(1)
    }))

  it.scoped("the same key with a different request is a conflict and makes no dispatch", () =>
    Effect.gen(function*() {
      const { filename } = yield* tempDb
      const s = script()
      const ledger = yield* useLedger(filename, s)
      yield* ledger.submit(ORG, submission())
      const other = { ...email, body: "a different body" }
      const error = yield* Effect.flip(
        ledger.submit(
          ORG,
          submission({ request: other, authorisation: authorise(grant({ requestDigest: requestDigest(other) })) })
        )
      )
      expect(error._tag).toBe("IdempotencyConflict")
      expect(s.dispatches).toBe(1)
    }))

  it.scoped("idempotency keys are scoped by organisation", () =>
    Effect.gen(function*() {
      const { filename } = yield* tempDb
      const s = script()
      const ledger = yield* useLedger(filename, s)
      const mine = yield* ledger.submit(ORG, submission())
      const theirs = yield* ledger.submit(
        "globex",
        submission({ authorisation: authorise(grant({ organisation: "globex" })) })
      )
      expect(theirs.executionId).not.toBe(mine.executionId)
      expect(s.dispatches).toBe(2)
    }))
})

const storeOf = (filename: string) =>
  Effect.map(Layer.build(LedgerStore.layerSqlite({ filename })), Context.get(LedgerStore.LedgerStore))

describe("idempotency: the key names one effect on one connection", () => {
  const onMail2 = () => submission({ connection: "mail-2", authorisation: authorise(grant({ connection: "mail-2" })) })

  it.scoped("the same key and request on another connection is a conflict, not the first connection's result", () =>
    Effect.gen(function*() {
      const { filename } = yield* tempDb
      const s = script()
      const ledger = yield* useLedger(filename, s)
      const first = yield* ledger.submit(ORG, submission())
      const error = yield* Effect.flip(ledger.submit(ORG, onMail2()))
      expect(error).toMatchObject({ _tag: "IdempotencyConflict", executionId: first.executionId })
      expect(s.dispatches).toBe(1)
    }))

  it.scoped("a concurrent submission on another connection does not join the owner's result", () =>
    Effect.gen(function*() {
      const { filename } = yield* tempDb
      const s = script({ dispatch: (ctx) => Effect.as(Effect.yieldNow(), confirmed(ctx.executionId)) })
      const ledger = yield* useLedger(filename, s)
      const [a, b] = yield* Effect.all(
        [Effect.either(ledger.submit(ORG, submission())), Effect.either(ledger.submit(ORG, onMail2()))],
        { concurrency: "unbounded" }
      )
      expect(a._tag).toBe("Right")
      expect(b._tag === "Left" ? b.left._tag : "joined").toBe("IdempotencyConflict")
      expect(s.dispatches).toBe(1)
    }))

  it.scoped("an execution left before dispatch is not dispatched on another connection's grant", () =>
    Effect.gen(function*() {
      const { filename } = yield* tempDb
      const s = script()
      const ledger = yield* useLedger(filename, s)
      const store = yield* storeOf(filename)
      // What a process that died right after authorising leaves: the key's execution, `authorised`, on "mail".
      const begun = yield* store.begin({
        id: "left-behind",
        organisation: ORG,
        connection: "mail",
        operation: "send_email",
        origin: ORIGIN,
        idempotencyKey: "refund-42-email",
        requestDigest: requestDigest(),
        issuer: "approvals",
        nonce: "a-nonce-of-the-first-grant",
        authorisationDigest: Digest.sha256("grant"),
        at: 0
      })
      expect(begun._tag).toBe("Created")
      const error = yield* Effect.flip(ledger.submit(ORG, onMail2()))
      expect(error).toMatchObject({ _tag: "IdempotencyConflict", executionId: "left-behind" })
      expect(s.dispatches).toBe(0)
      expect((yield* ledger.execution(ORG, "left-behind")).state).toBe("authorised")
    }))
})
