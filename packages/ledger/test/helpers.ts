// Shared fixtures: a temp SQLite file per test, an Ed25519 issuer, a "send_email" operation whose dispatcher
// and reconciler are scripted and counted.
import { SqlClient } from "@effect/sql"
import { Authorisation, Digest, Ledger, Operation } from "@rein/ledger"
import { Context, type Duration, Effect, Layer, Schema } from "effect"
import { generateKeyPairSync, randomUUID } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import * as Sqlite from "../src/internal/sqlite.js"

export const ORG = "acme"
export const AUDIENCE = "rein-ledger-test"
export const ORIGIN = "https://mail.example"

export const issuer = generateKeyPairSync("ed25519")
export const stranger = generateKeyPairSync("ed25519")

export const EmailRequest = Schema.Struct({ to: Schema.String, subject: Schema.String, body: Schema.String })
export const email = { to: "ops@example.com", subject: "refund issued", body: "Your refund is on its way." }

/** A temp directory removed when the scope closes. */
export const tempDb = Effect.acquireRelease(
  Effect.sync(() => {
    const dir = mkdtempSync(path.join(tmpdir(), "rein-ledger-"))
    return { dir, filename: path.join(dir, "ledger.db") }
  }),
  ({ dir }) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
)

export interface Script {
  dispatches: number
  reconciles: number
  dispatch: (ctx: Operation.DispatchContext<typeof EmailRequest.Type>) => Effect.Effect<unknown, unknown>
  reconcile: (ctx: Operation.ReconcileContext) => Effect.Effect<unknown, unknown>
}

export const confirmed = (id: string) => Operation.Confirmed.make({ confirmation: Digest.sha256(`msg:${id}`) })

export const script = (overrides: Partial<Pick<Script, "dispatch" | "reconcile">> = {}): Script => ({
  dispatches: 0,
  reconciles: 0,
  dispatch: (ctx) => Effect.succeed(confirmed(ctx.executionId)),
  reconcile: () => Effect.succeed(Operation.Unresolved.make({ code: "not_found_yet", evidence: null })),
  ...overrides
})

export const sendEmail = (s: Script) =>
  Operation.make({
    name: "send_email",
    request: EmailRequest,
    allowedOrigins: [ORIGIN],
    dispatchTimeout: "10 seconds",
    reconcileTimeout: "5 seconds",
    dispatch: (ctx) =>
      Effect.suspend(() => {
        s.dispatches++
        return s.dispatch(ctx)
      }) as Effect.Effect<Operation.DispatchResult, unknown>,
    reconcile: (ctx) =>
      Effect.suspend(() => {
        s.reconciles++
        return s.reconcile(ctx)
      }) as Effect.Effect<Operation.ReconcileResult, unknown>
  })

export const config = (s: Script, overrides: Partial<Ledger.Config> = {}): Ledger.Config => ({
  audience: AUDIENCE,
  verifier: Authorisation.ed25519,
  trustRoots: Authorisation.trustRoots({ approvals: issuer.publicKey }),
  connections: [
    Operation.Connection.make({ id: "mail", organisation: ORG, origin: ORIGIN }),
    Operation.Connection.make({ id: "mail", organisation: "globex", origin: ORIGIN }),
    Operation.Connection.make({ id: "mail-2", organisation: ORG, origin: ORIGIN }),
    Operation.Connection.make({ id: "legacy", organisation: ORG, origin: "https://legacy.example" })
  ],
  operations: [sendEmail(s)],
  ...overrides
})

export type Overrides = Partial<Ledger.Config & { readonly busyTimeout: Duration.DurationInput }>

export const ledgerLayer = (filename: string, s: Script, overrides: Overrides = {}) =>
  Ledger.layerSqlite({ ...config(s, overrides), filename })

export const requestDigest = (request: unknown = email) => Digest.ofJson({ operation: "send_email", request })

export const grant = (overrides: Partial<Authorisation.Grant> = {}) =>
  Authorisation.Grant.make({
    issuer: "approvals",
    organisation: ORG,
    connection: "mail",
    operation: "send_email",
    audience: AUDIENCE,
    requestDigest: requestDigest(),
    expiresAt: 60_000,
    nonce: randomUUID(),
    ...overrides
  })

export const authorise = (g: Authorisation.Grant = grant(), key = issuer.privateKey) =>
  Schema.encodeSync(Authorisation.Authorisation)(Authorisation.signEd25519(g, key))

export const submission = (overrides: Record<string, unknown> = {}) => ({
  connection: "mail",
  operation: "send_email",
  idempotencyKey: "refund-42-email",
  request: email,
  authorisation: authorise(),
  ...overrides
})

/** A second, independent connection to the same file (what another process would see). */
export const rawSql = (filename: string) => Sqlite.layer({ filename, busyTimeoutMillis: 5_000 })

export const withRaw = <A, E>(filename: string, f: (sql: SqlClient.SqlClient) => Effect.Effect<A, E>) =>
  Effect.flatMap(SqlClient.SqlClient, f).pipe(Effect.provide(rawSql(filename)))

export const states = (receipts: ReadonlyArray<{ readonly to: string; readonly kind: string }>) =>
  receipts.map((r) => r.kind === "evidence" ? "evidence" : r.to)

/** A ledger on `filename` that lives as long as the enclosing scope. */
export const useLedger = (filename: string, s: Script, overrides: Overrides = {}) =>
  Effect.map(Layer.build(ledgerLayer(filename, s, overrides)), Context.get(Ledger.Ledger))

/** The leases on `filename` (what another process would read). */
export const leases = (filename: string) =>
  withRaw(
    filename,
    (sql) => sql<{ execution_id: string; owner: string; expires_at: number }>`SELECT * FROM ledger_leases ORDER BY 1`
  ).pipe(Effect.map((rows) => rows.map(({ execution_id, expires_at, owner }) => ({ execution_id, owner, expires_at }))))
