import { SqlClient } from "@effect/sql"
import { it } from "@effect/vitest"
import { Digest, LedgerStore } from "@rein/ledger"
import { Context, type Duration, Effect, Layer } from "effect"
import { chmodSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs"
import * as path from "node:path"
import { describe, expect } from "vitest"
import { ORG, script, submission, tempDb, useLedger, withRaw } from "./helpers.js"

const useStore = (filename: string, busyTimeout?: Duration.DurationInput) =>
  Effect.map(Layer.build(LedgerStore.layerSqlite({ filename, busyTimeout })), Context.get(LedgerStore.LedgerStore))

// Runs `effect` as a caller of its own, outside any transaction the calling fiber has open.
const outside = <A, E>(effect: Effect.Effect<A, E>) =>
  Effect.mapInputContext(
    effect,
    (context: Context.Context<never>) => Context.omit(SqlClient.TransactionConnection)(context)
  )

const begin = (id: string, nonce: string, key = `key-${id}`): LedgerStore.Begin => ({
  id,
  organisation: ORG,
  connection: "mail",
  operation: "send_email",
  origin: "https://mail.example",
  idempotencyKey: key,
  requestDigest: Digest.sha256(id),
  issuer: "approvals",
  nonce,
  authorisationDigest: Digest.sha256(nonce),
  at: 1
})

const transition = (
  from: LedgerStore.Transition["from"],
  to: LedgerStore.Transition["to"]
): LedgerStore.Transition => ({
  organisation: ORG,
  executionId: "e1",
  from,
  to,
  code: to,
  source: "ledger",
  digest: null,
  refersTo: null,
  confirmation: null,
  at: 2
})

describe("store", () => {
  it.scoped("illegal transitions are rejected by the store and by the database itself", () =>
    Effect.gen(function*() {
      const { filename } = yield* tempDb
      const store = yield* useStore(filename)
      yield* store.begin(begin("e1", "nonce-0000000001"))
      // authorised → dispatch_started skips `prepared`.
      const skip = yield* Effect.flip(store.transition(transition("authorised", "dispatch_started")))
      expect(skip._tag).toBe("IllegalTransition")
      // A compare-and-set from a state the execution is not in.
      const stale = yield* Effect.flip(store.transition(transition("prepared", "dispatch_started")))
      expect(stale._tag).toBe("StateConflict")
      yield* store.transition(transition("authorised", "prepared"))
      yield* store.transition(transition("prepared", "dispatch_started"))
      // Refusal is only possible before dispatch.
      const late = yield* Effect.flip(store.transition(transition("dispatch_started", "refused")))
      expect(late._tag).toBe("IllegalTransition")

      // The triggers hold even against hand-written SQL.
      const raw = (statement: string) =>
        withRaw(filename, (sql) => Effect.either(sql.unsafe(statement))).pipe(Effect.map((r) => r._tag))
      expect(yield* raw(`UPDATE ledger_executions SET state = 'succeeded' WHERE id = 'e1'`)).toBe("Right")
      expect(yield* raw(`UPDATE ledger_executions SET state = 'dispatch_started' WHERE id = 'e1'`)).toBe("Left")
      expect(yield* raw(`UPDATE ledger_executions SET organisation = 'globex' WHERE id = 'e1'`)).toBe("Left")
      expect(
        yield* raw(`INSERT INTO ledger_executions VALUES ('e2', 'acme', 'mail', 'send_email', 'https://mail.example',
          NULL, '${"a".repeat(64)}', 'prepared', 'prepared', NULL, 1, 1)`)
      ).toBe("Left")
      expect(yield* raw(`UPDATE ledger_receipts SET code = 'x' WHERE execution_id = 'e1'`)).toBe("Left")
      expect(yield* raw(`DELETE FROM ledger_receipts WHERE execution_id = 'e1'`)).toBe("Left")
      expect(yield* raw(`DELETE FROM ledger_nonces`)).toBe("Left")
      const receipts = yield* store.receipts(ORG, "e1")
      expect(receipts.map((r) => r.to)).toEqual(["created", "authorised", "prepared", "dispatch_started"])
    }))

  it.scoped("a failed transaction rolls back and leaves no partial rows", () =>
    Effect.gen(function*() {
      const { filename } = yield* tempDb
      const store = yield* useStore(filename)
      yield* store.begin(begin("e1", "nonce-0000000001"))
      // The same execution id again, with a fresh nonce and key: the nonce row is written first, then the
      // execution insert fails on its primary key, and the whole transaction must go.
      const failed = yield* Effect.flip(store.begin(begin("e1", "nonce-0000000002", "another-key")))
      expect(failed._tag).toBe("LedgerStoreError")
      const counts = yield* withRaw(filename, (sql) =>
        Effect.all({
          nonces: sql<{ n: number }>`SELECT count(*) AS n FROM ledger_nonces`,
          executions: sql<{ n: number }>`SELECT count(*) AS n FROM ledger_executions`,
          receipts: sql<{ n: number }>`SELECT count(*) AS n FROM ledger_receipts`
        }))
      expect(counts.nonces[0]?.n).toBe(1)
      expect(counts.executions[0]?.n).toBe(1)
      expect(counts.receipts[0]?.n).toBe(2)
      // A transition whose confirmation violates the digest check is rolled back with its receipt.
      yield* store.transition(transition("authorised", "prepared"))
      yield* store.transition(transition("prepared", "dispatch_started"))
      const bad = yield* Effect.flip(
        store.transition({
          ...transition("dispatch_started", "succeeded"),
          confirmation: "NOT-A-DIGEST" as Digest.Sha256
        })
      )
      expect(bad._tag).toBe("LedgerStoreError")
      expect((yield* store.execution(ORG, "e1")).state).toBe("dispatch_started")
      expect((yield* store.receipts(ORG, "e1")).length).toBe(4)
    }))

  it.scoped("a write that cannot get the lock within the busy timeout fails typed, and the store goes on", () =>
    Effect.gen(function*() {
      const { filename } = yield* tempDb
      // SQLite's own wait, synchronous and in real time: 1 ms.
      const store = yield* useStore(filename, "1 millis")
      yield* store.begin(begin("e1", "nonce-0000000001"))
      // Another connection holds the write lock (what another process's transaction would do).
      const blocked = yield* withRaw(filename, (sql) =>
        sql.withTransaction(
          Effect.zipRight(
            sql`UPDATE ledger_executions SET updated_at = updated_at`,
            // Run as another connection's caller: outside this connection's transaction context.
            Effect.flip(outside(store.transition(transition("authorised", "prepared"))))
          )
        ))
      expect(blocked._tag).toBe("LedgerStoreError")
      expect(String((blocked.cause as { readonly cause?: unknown }).cause)).toMatch(/database is locked/)
      // Nothing was left open: the same transition goes through once the lock is free.
      yield* store.transition(transition("authorised", "prepared"))
      expect((yield* store.execution(ORG, "e1")).state).toBe("prepared")
    }))

  it.scoped("the database file is created with mode 0600, and an existing file is tightened to 0600", () =>
    Effect.gen(function*() {
      const { dir, filename } = yield* tempDb
      yield* useStore(filename)
      expect(statSync(filename).mode & 0o777).toBe(0o600)
      for (const file of readdirSync(dir)) expect(statSync(path.join(dir, file)).mode & 0o777).toBe(0o600)
      const loose = path.join(dir, "loose.db")
      writeFileSync(loose, "")
      chmodSync(loose, 0o644)
      yield* useStore(loose)
      expect(statSync(loose).mode & 0o777).toBe(0o600)
    }))

  it.scoped("reads are scoped by organisation", () =>
    Effect.gen(function*() {
      const { filename } = yield* tempDb
      const ledger = yield* useLedger(filename, script())
      const settled = yield* ledger.submit(ORG, submission())
      expect((yield* Effect.flip(ledger.execution("globex", settled.executionId)))._tag).toBe("ExecutionNotFound")
      expect((yield* Effect.flip(ledger.receipts("globex", settled.executionId)))._tag).toBe("ExecutionNotFound")
      expect((yield* Effect.flip(ledger.reconcile("globex", settled.executionId)))._tag).toBe("ExecutionNotFound")
    }))

  it.scoped("no raw response, provider text or secret reaches the database (canary)", () =>
    Effect.gen(function*() {
      const { dir, filename } = yield* tempDb
      const CANARY = "canary_7f3a9c_sk_live_SECRET"
      const s = script({
        dispatch: () => Effect.fail(new Error(`upstream said: ${CANARY}`)),
        reconcile: () => Effect.die({ body: CANARY, headers: { authorization: `Bearer ${CANARY}` } })
      })
      const ledger = yield* useLedger(filename, s)
      const error = yield* Effect.flip(ledger.submit(ORG, submission()))
      expect(error._tag).toBe("Ambiguous")
      expect(JSON.stringify(error)).not.toContain(CANARY)
      // A confirmed reply's text is only ever kept as a digest.
      const ok = yield* useLedger(
        path.join(dir, "ok.db"),
        script({ dispatch: () => Effect.succeed({ _tag: "Confirmed", confirmation: Digest.sha256(CANARY) }) })
      )
      const settled = yield* ok.submit(ORG, submission())
      expect(JSON.stringify(settled)).not.toContain(CANARY)
      const dumps = yield* Effect.forEach([filename, path.join(dir, "ok.db")], (file) =>
        withRaw(file, (sql) =>
          Effect.all([
            sql`SELECT * FROM ledger_executions`,
            sql`SELECT * FROM ledger_receipts`,
            sql`SELECT * FROM ledger_nonces`
          ])))
      expect(JSON.stringify(dumps)).not.toContain(CANARY)
      for (const file of readdirSync(dir)) {
        expect(readFileSync(path.join(dir, file)).includes(Buffer.from("canary_7f3a9c"))).toBe(false)
      }
    }))
})
