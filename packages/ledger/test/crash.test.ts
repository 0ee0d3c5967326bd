import { it } from "@effect/vitest"
import { Effect } from "effect"
import { build } from "esbuild"
import { spawn } from "node:child_process"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect } from "vitest"
import {
  AUDIENCE,
  authorise,
  confirmed,
  grant,
  issuer,
  ORG,
  ORIGIN,
  script,
  states,
  submission,
  tempDb,
  useLedger,
  withRaw
} from "./helpers.js"

const here = path.dirname(fileURLToPath(import.meta.url))

// The child must run plain JavaScript (Node 20 cannot run TypeScript). esbuild bundles the fixture together
// with the ledger's own src/ modules; packages stay external and resolve from packages/ledger/node_modules,
// which is why the bundle is written under packages/ledger/build/.
const bundle = Effect.promise(async () => {
  const outfile = path.join(here, "..", "build", "fixtures", "crash-child.mjs")
  await build({
    entryPoints: [path.join(here, "fixtures", "crash-child.ts")],
    outfile,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    packages: "external",
    logLevel: "silent"
  })
  return outfile
})

// Runs the child until its dispatcher announces itself, then kills it with SIGKILL.
const runAndKill = (script: string, input: unknown) =>
  Effect.async<{ readonly executionId: string; readonly signal: string | null }, Error>((resume) => {
    const child = spawn(process.execPath, [script, JSON.stringify(input)], { stdio: ["ignore", "pipe", "pipe"] })
    let stdout = ""
    let stderr = ""
    let executionId: string | undefined
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString()
      const match = /DISPATCHING (\S+)\n/.exec(stdout)
      if (match !== null && executionId === undefined) {
        executionId = match[1]
        child.kill("SIGKILL")
      }
    })
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString()
    })
    child.on("exit", (_code, signal) => {
      if (executionId === undefined) resume(Effect.fail(new Error(`child ended early: ${stdout} ${stderr}`)))
      else resume(Effect.succeed({ executionId, signal }))
    })
    return Effect.sync(() => child.kill("SIGKILL"))
  })

describe("crash between dispatch_started and the result", () => {
  it.live("after SIGKILL the execution is ambiguous on restart and goes to reconciliation, not dispatch", () =>
    Effect.scoped(Effect.gen(function*() {
      const { filename } = yield* tempDb
      const child = yield* bundle
      const authorisation = authorise(grant({ expiresAt: 4_102_444_800_000 }))
      const killed = yield* runAndKill(child, {
        filename,
        publicKey: issuer.publicKey.export({ type: "spki", format: "pem" }),
        audience: AUDIENCE,
        organisation: ORG,
        origin: ORIGIN,
        submission: submission({ authorisation })
      })
      expect(killed.signal).toBe("SIGKILL")

      // What the dead process left: dispatch_started, committed, with no result.
      const left = yield* withRaw(
        filename,
        (sql) => sql<{ state: string }>`SELECT state FROM ledger_executions WHERE id = ${killed.executionId}`
      )
      expect(left[0]?.state).toBe("dispatch_started")

      // Restart: a new process (here, a new ledger on the same file) with a reconciler that finds the effect.
      const s = script({ reconcile: (ctx) => Effect.succeed(confirmed(ctx.executionId)) })
      const ledger = yield* useLedger(filename, s)
      // A resubmission of the same call does not dispatch it again while its fate is unknown.
      const resubmitted = yield* Effect.flip(ledger.submit(ORG, submission({ authorisation })))
      expect(resubmitted._tag).toBe("InFlight")
      const recovered = yield* ledger.recover
      expect(recovered).toHaveLength(1)
      expect(recovered[0]?.state).toBe("succeeded")
      expect(s.dispatches).toBe(0)
      expect(s.reconciles).toBe(1)
      const receipts = yield* ledger.receipts(ORG, killed.executionId)
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

      // And afterwards the same call is answered from the ledger.
      const again = yield* ledger.submit(ORG, submission({ authorisation }))
      expect(again.executionId).toBe(killed.executionId)
      expect(s.dispatches).toBe(0)
    })))
})
