import { it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { readFileSync } from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect } from "vitest"
import { confirmed, ledgerLayer, ORG, script, states, tempDb, useLedger, withRaw } from "./helpers.js"

const here = path.dirname(fileURLToPath(import.meta.url))

// A file written by the ledger before schema versioning, with one dispatch left in `dispatch_started` by a
// killed process (see the fixture's header). Restored statement by statement.
const restoreV1 = (filename: string) =>
  withRaw(filename, (sql) =>
    Effect.forEach(
      readFileSync(path.join(here, "fixtures", "ledger-v1.sql"), "utf8").split(/;\n/).map((s) => s.trim())
        .filter((s) => s.length > 0 && !s.split("\n").every((line) => line.startsWith("--"))),
      (statement) => sql.unsafe(statement),
      { discard: true }
    ))

const userVersion = (filename: string) =>
  withRaw(filename, (sql) => sql.unsafe<{ user_version: number }>("PRAGMA user_version")).pipe(
    Effect.map((rows) => rows[0]?.user_version)
  )

describe("schema migration", () => {
  it.scoped("a file written before leases opens, migrates forward, and its stranded dispatch is recovered", () =>
    Effect.gen(function*() {
      const { filename } = yield* tempDb
      yield* restoreV1(filename)
      expect(yield* userVersion(filename)).toBe(0)

      const s = script({ reconcile: (ctx) => Effect.succeed(confirmed(ctx.executionId)) })
      const ledger = yield* useLedger(filename, s)
      expect(yield* userVersion(filename)).toBe(2)
      // A dispatch started before leases existed has no live owner: recover takes it, as it always did.
      const recovered = yield* ledger.recover
      expect(recovered.map((r) => r.state)).toEqual(["succeeded"])
      const receipts = yield* ledger.receipts(ORG, recovered[0]!.executionId)
      expect(states(receipts)).toEqual([
        "created",
        "authorised",
        "prepared",
        "dispatch_started",
        "ambiguous",
        "succeeded"
      ])
      expect(s.dispatches).toBe(0)

      // Opening a current file again changes nothing.
      yield* useLedger(filename, script())
      expect(yield* userVersion(filename)).toBe(2)
    }))

  it.scoped("a file written by a newer ledger is refused with both versions named", () =>
    Effect.gen(function*() {
      const { filename } = yield* tempDb
      yield* withRaw(filename, (sql) => sql.unsafe("PRAGMA user_version = 99"))
      const error = yield* Effect.flip(Layer.build(ledgerLayer(filename, script())))
      expect(error._tag).toBe("LedgerStoreError")
      expect(error._tag === "LedgerStoreError" && error.operation).toBe("migrate")
      expect(String(error._tag === "LedgerStoreError" && error.cause)).toMatch(/schema version 99.*reads up to 2/)
    }))
})
