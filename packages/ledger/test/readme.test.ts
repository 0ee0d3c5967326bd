// The README's example, compiled and run: an agent's effectful tool call going through the ledger.
// `mailApi` and `approvals` are in-memory stand-ins for a mail provider and an approval service.
import { it } from "@effect/vitest"
import { Authorisation, Digest, Ledger, Operation } from "@rein/ledger"
import { Context, Effect, Layer, Schema } from "effect"
import { generateKeyPairSync, randomUUID } from "node:crypto"
import * as path from "node:path"
import { describe, expect } from "vitest"
import { tempDb } from "./helpers.js"

const sent = new Map<string, string>()
const mailApi = {
  send: (_origin: string, _request: unknown, options: { readonly idempotencyKey: string | null }) =>
    Effect.sync(() => {
      const messageId = `msg_${sent.size + 1}`
      sent.set(options.idempotencyKey ?? messageId, messageId)
      return { messageId }
    }),
  lookup: (_origin: string, idempotencyKey: string | null) =>
    Effect.sync(() => {
      const messageId = idempotencyKey === null ? undefined : sent.get(idempotencyKey)
      return messageId === undefined ? null : { messageId }
    })
}
const approvalsKeys = generateKeyPairSync("ed25519")
const approvalsPublicKey = approvalsKeys.publicKey
const approvals = {
  sign: (g: { readonly operation: string; readonly connection: string; readonly requestDigest: Digest.Sha256 }) =>
    Effect.map(
      Effect.clockWith((clock) => clock.currentTimeMillis),
      (now) =>
        Schema.encodeSync(Authorisation.Authorisation)(Authorisation.signEd25519(
          Authorisation.Grant.make({
            ...g,
            issuer: "approvals",
            organisation: "acme",
            audience: "agent-ledger",
            expiresAt: now + 60_000,
            nonce: randomUUID()
          }),
          approvalsKeys.privateKey
        ))
    )
}

// --- README example starts here ---
const sendEmail = Operation.make({
  name: "send_email",
  request: Schema.Struct({ to: Schema.String, subject: Schema.String, body: Schema.String }),
  allowedOrigins: ["https://mail.example"],
  dispatchTimeout: "10 seconds",
  reconcileTimeout: "10 seconds",
  // Called at most once, after `dispatch_started` is committed. Credentials live here, never in the ledger.
  dispatch: ({ idempotencyKey, origin, request }) =>
    mailApi.send(origin, request, { idempotencyKey }).pipe(
      Effect.map((r) => Operation.Confirmed.make({ confirmation: Digest.sha256(r.messageId) }))
    ),
  // Called instead of a second dispatch after a timeout, a crash or a lost reply.
  reconcile: ({ idempotencyKey, origin }) =>
    mailApi.lookup(origin, idempotencyKey).pipe(Effect.map((found) =>
      found === null
        ? Operation.Unresolved.make({ code: "not_found_yet", evidence: null })
        : Operation.Confirmed.make({ confirmation: Digest.sha256(found.messageId) })
    ))
})

// The agent's tool: the model proposes `args`, the approver signs exactly those, the ledger runs them once.
const sendEmailTool = (args: unknown, toolCallId: string) =>
  Effect.gen(function*() {
    const ledger = yield* Ledger.Ledger
    const requestDigest = yield* ledger.requestDigest("send_email", args) // closed schema: extra fields fail
    const authorisation = yield* approvals.sign({ operation: "send_email", connection: "mail", requestDigest })
    const done = yield* ledger.submit("acme", {
      connection: "mail",
      operation: "send_email",
      idempotencyKey: toolCallId, // the model retrying the same tool call joins the same execution
      request: args,
      authorisation
    })
    return { status: "sent", execution: done.executionId } as const
  }).pipe(Effect.catchTags({
    FailedSafe: (e) => Effect.succeed({ status: "not_sent", execution: e.executionId } as const),
    Ambiguous: (e) => Effect.succeed({ status: "unknown_reconciling", execution: e.executionId } as const)
  }))

const LedgerLive = (filename: string) =>
  Ledger.layerSqlite({
    filename, // created with mode 0600
    audience: "agent-ledger",
    verifier: Authorisation.ed25519, // required: there is no permissive default
    trustRoots: Authorisation.trustRoots({ approvals: approvalsPublicKey }),
    connections: [Operation.Connection.make({ id: "mail", organisation: "acme", origin: "https://mail.example" })],
    operations: [sendEmail]
  })
// --- README example ends here ---

describe("README", () => {
  it.scoped("an agent's effectful tool call goes through the ledger once", () =>
    Effect.gen(function*() {
      const { dir } = yield* tempDb
      const ledger = yield* Effect.map(
        Layer.build(LedgerLive(path.join(dir, "agent-ledger.db"))),
        Context.get(Ledger.Ledger)
      )
      const args = { to: "customer@example.com", subject: "Your refund", body: "Refund issued." }
      const run = sendEmailTool(args, "call_1").pipe(Effect.provideService(Ledger.Ledger, ledger))
      const first = yield* run
      const second = yield* run
      expect(first).toEqual({ status: "sent", execution: second.execution })
      expect(sent.size).toBe(1)
      const rejected = yield* Effect.flip(
        sendEmailTool({ ...args, url: "https://evil.example" }, "call_2").pipe(
          Effect.provideService(Ledger.Ledger, ledger)
        )
      )
      expect(rejected._tag).toBe("InvalidRequest")
    }))
})
