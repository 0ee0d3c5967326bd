import { it } from "@effect/vitest"
import { Authorisation, Ledger, Operation } from "@rein/ledger"
import { Effect, Either, Exit, Layer, Schema } from "effect"
import { describe, expect } from "vitest"
import {
  authorise,
  config,
  confirmed,
  EmailRequest,
  grant,
  issuer,
  ORG,
  ORIGIN,
  requestDigest,
  script,
  stranger,
  submission,
  tempDb,
  useLedger
} from "./helpers.js"

describe("authorisation before anything is written", () => {
  const refusals: ReadonlyArray<readonly [string, () => unknown]> = [
    ["issuer_untrusted", () => authorise(grant({ issuer: "someone-else" }))],
    ["signature_invalid", () => authorise(grant(), stranger.privateKey)],
    ["signature_invalid", () => {
      // A grant altered after signing.
      const signed = authorise()
      return { ...signed, grant: { ...signed.grant, expiresAt: signed.grant.expiresAt + 1 } }
    }],
    ["organisation_mismatch", () => authorise(grant({ organisation: "globex" }))],
    ["connection_mismatch", () => authorise(grant({ connection: "mail-2" }))],
    ["operation_mismatch", () => authorise(grant({ operation: "issue_refund" }))],
    ["audience_mismatch", () => authorise(grant({ audience: "another-ledger" }))],
    ["request_digest_mismatch", () => authorise(grant({ requestDigest: requestDigest({ ...emailOther }) }))],
    ["expired", () => authorise(grant({ expiresAt: 0 }))],
    ["malformed_authorisation", () => ({ grant: { issuer: "approvals" }, signature: "AAAA" })]
  ]
  const emailOther = { to: "ceo@example.com", subject: "x", body: "y" }

  for (const [reason, make] of refusals) {
    it.scoped(`${reason} is refused, recorded as refused, and makes zero dispatches`, () =>
      Effect.gen(function*() {
        const { filename } = yield* tempDb
        const s = script()
        const ledger = yield* useLedger(filename, s)
        const error = yield* Effect.flip(ledger.submit(ORG, submission({ authorisation: make() })))
        expect(error._tag).toBe("Refused")
        if (error._tag !== "Refused") return
        expect(error.reason).toBe(reason)
        expect(s.dispatches).toBe(0)
        expect(error.executionId).not.toBeNull()
        const execution = yield* ledger.execution(ORG, error.executionId!)
        expect(execution.state).toBe("refused")
        expect(execution.code).toBe(reason)
        expect(execution.idempotencyKey).toBeNull()
        expect((yield* ledger.receipts(ORG, execution.id)).map((r) => r.to)).toEqual(["created", "refused"])
      }))
  }

  it.scoped("a replayed nonce is refused and makes zero dispatches", () =>
    Effect.gen(function*() {
      const { filename } = yield* tempDb
      const s = script()
      const ledger = yield* useLedger(filename, s)
      const authorisation = authorise()
      yield* ledger.submit(ORG, submission({ authorisation }))
      expect(s.dispatches).toBe(1)
      // The same signed authorisation, presented for a new idempotency key.
      const error = yield* Effect.flip(ledger.submit(ORG, submission({ authorisation, idempotencyKey: "another" })))
      expect(error._tag === "Refused" && error.reason).toBe("nonce_replayed")
      expect(s.dispatches).toBe(1)
    }))

  it.scoped("an unknown operation, a connection of another organisation and a non-allowed origin are refused", () =>
    Effect.gen(function*() {
      const { filename } = yield* tempDb
      const s = script()
      const ledger = yield* useLedger(filename, s)
      const op = yield* Effect.flip(ledger.submit(ORG, submission({ operation: "issue_refund" })))
      expect(op._tag === "Refused" && op.reason).toBe("unknown_operation")
      const conn = yield* Effect.flip(ledger.submit("initech", submission()))
      expect(conn._tag === "Refused" && conn.reason).toBe("unknown_connection")
      const origin = yield* Effect.flip(
        ledger.submit(
          ORG,
          submission({ connection: "legacy", authorisation: authorise(grant({ connection: "legacy" })) })
        )
      )
      expect(origin._tag === "Refused" && origin.reason).toBe("origin_not_allowed")
      expect(s.dispatches).toBe(0)
    }))

  it.scoped("requests are decoded by a closed schema: an unknown field is rejected with its name", () =>
    Effect.gen(function*() {
      const { filename } = yield* tempDb
      const s = script()
      const ledger = yield* useLedger(filename, s)
      const error = yield* Effect.flip(
        ledger.submit(
          ORG,
          submission({ request: { to: "a@example.com", subject: "s", body: "b", bcc: "x@example.com" } })
        )
      )
      expect(error._tag).toBe("InvalidRequest")
      expect(error._tag === "InvalidRequest" && error.message).toContain("bcc")
      const envelope = yield* Effect.flip(ledger.submit(ORG, { ...submission(), url: "https://evil.example" }))
      expect(envelope._tag === "InvalidRequest" && envelope.message).toContain("url")
      expect(s.dispatches).toBe(0)
    }))

  it.scoped("a number JSON cannot write (1e400 parses as Infinity) is an InvalidRequest naming the field, not a defect", () =>
    Effect.gen(function*() {
      const { filename } = yield* tempDb
      const s = script()
      const refund = Operation.make({
        name: "refund",
        request: Schema.Struct({ order: Schema.String, amount: Schema.Number }),
        allowedOrigins: [ORIGIN],
        dispatchTimeout: "10 seconds",
        reconcileTimeout: "5 seconds",
        dispatch: () => Effect.sync(() => s.dispatches++).pipe(Effect.as(confirmed("refund"))),
        reconcile: () => Effect.succeed(Operation.Unresolved.make({ code: "not_found_yet", evidence: null }))
      })
      const ledger = yield* useLedger(filename, s, { operations: [refund] })
      // What a model's tool call can hold: JSON.parse gives Infinity for it, and Schema.Number takes it.
      const request = JSON.parse("{\"order\": \"o-1\", \"amount\": 1e400}") as unknown
      const digest = ledger.requestDigest("refund", request)
      expect(Either.isLeft(digest) && digest.left).toMatchObject({
        _tag: "InvalidRequest",
        message: "refund.request: amount: Expected a finite number, actual Infinity"
      })
      const error = yield* Effect.flip(ledger.submit(ORG, submission({ operation: "refund", request })))
      expect(error).toMatchObject({ _tag: "InvalidRequest", message: expect.stringContaining("amount") })
      expect(s.dispatches).toBe(0)
    }))

  it.effect("the verifier and trust roots are required; origins must be https and request fields data only", () =>
    Effect.gen(function*() {
      const s = script()
      const noVerifier = yield* Effect.scoped(
        Layer.build(Ledger.layerSqlite({ ...config(s), filename: ":memory:", verifier: undefined as never }))
      ).pipe(Effect.exit)
      expect(Exit.isFailure(noVerifier)).toBe(true)
      expect(() => Authorisation.trustRoots({})).toThrow(/at least one/)
      expect(() => Authorisation.trustRoots({ approvals: issuer.privateKey })).toThrow(/public key/)
      const http = yield* Effect.scoped(
        Layer.build(
          Ledger.layerSqlite({
            ...config(s),
            filename: ":memory:",
            connections: [Operation.Connection.make({ id: "mail", organisation: ORG, origin: "http://mail.example" })]
          })
        )
      ).pipe(Effect.exit)
      expect(Exit.isFailure(http)).toBe(true)

      const base = {
        name: "send_email",
        allowedOrigins: ["https://mail.example"],
        dispatchTimeout: "1 second",
        reconcileTimeout: "1 second",
        dispatch: () => Effect.die("unused"),
        reconcile: () => Effect.die("unused")
      } as const
      const withUrl = Operation.make({
        ...base,
        request: Schema.Struct({ to: Schema.String, callbackUrl: Schema.String })
      })
      expect(Either.isLeft(withUrl) && withUrl.left.message).toContain("callbackUrl")
      const open = Operation.make({ ...base, request: Schema.Record({ key: Schema.String, value: Schema.String }) })
      expect(Either.isLeft(open)).toBe(true)
      const plain = Operation.make({ ...base, request: EmailRequest, allowedOrigins: ["http://mail.example"] })
      expect(Either.isLeft(plain) && plain.left.message).toContain("allowedOrigins[0]")
      const zero = Operation.make({ ...base, request: EmailRequest, dispatchTimeout: 0 })
      expect(Either.isLeft(zero) && zero.left.message).toContain("dispatchTimeout")
      // Longer than the longest timer (2^31 - 1 ms, 24.8 days): it would never fire (Effect treats a longer timer
      // as infinite), so a hung dispatch or reconcile would never time out. Refused, naming the field.
      for (const field of ["dispatchTimeout", "reconcileTimeout"] as const) {
        for (const long of ["25 days", 2 ** 31, 1e300] as const) {
          const refused = Operation.make({ ...base, request: EmailRequest, [field]: long })
          expect(Either.isLeft(refused) && refused.left).toMatchObject({
            _tag: "LedgerConfigError",
            message: expect.stringMatching(
              new RegExp(`^send_email\\.${field}: Expected a positive finite duration of at most 2147483647 ms`)
            )
          })
        }
        expect(Either.isRight(Operation.make({ ...base, request: EmailRequest, [field]: 2 ** 31 - 1 }))).toBe(true)
      }
    }))
})
