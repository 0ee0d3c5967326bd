/**
 * An outcome Node prints (`console.log`, `util.inspect`) is bounded: its tag, message (the reason, the last
 * failure, the attempts summarised), request id and the number of attempt records, not every record.
 * Serialisation keeps every field of every record. (A `runPromise` rejection printed by the caller is Effect's
 * `FiberFailure`, already a few lines; Node prints an unhandled rejection without custom inspection,
 * `customInspect: false`: that print still lists every record.)
 */
import { describe, expect, it } from "@effect/vitest"
import { Outcome } from "@rein/core"
import { Effect } from "effect"
import { execFile } from "node:child_process"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { inspect } from "node:util"
import { bundle } from "../../../test/support/processes.js"

const here = path.dirname(fileURLToPath(import.meta.url))

const stderrOf = (script: string, attempts: number) =>
  Effect.async<{ readonly code: number | null; readonly stderr: string }>((resume) => {
    execFile(
      process.execPath,
      [script, String(attempts)],
      (error, _, stderr) =>
        resume(
          Effect.succeed({ code: error === null ? 0 : typeof error.code === "number" ? error.code : null, stderr })
        )
    )
  })

describe("an outcome as Node prints it", () => {
  it.effect("a PlanExhausted of 50 attempts printed with console.error is a few lines, not every record", () =>
    Effect.gen(function*() {
      const script = yield* bundle(here, "reject-outcome")
      const { code, stderr } = yield* stderrOf(script, 50)
      expect(code).toBe(1)
      expect(stderr).toContain(
        "PlanExhausted: every candidate failed; last failure overloaded (http_503) on a; 50 attempts: a overloaded ×50"
      )
      expect(stderr).toContain("requestId: \"req-1\"")
      expect(stderr).toContain("attempts: [50 attempt records]")
      expect(stderr).not.toContain("billingBoundViolation")
      expect(stderr.split("\n").length).toBeLessThan(40)
    }))

  it("serialisation keeps every record and field; the records stay on the object", () => {
    const record: Outcome.AttemptRecord = {
      attempt: 1,
      call: 1,
      endpoint: "a",
      role: "first",
      startMillis: 0,
      endMillis: 50,
      timeoutMillis: 4_000,
      binding: "attempt",
      dispatched: true,
      status: "failure",
      failure: "overloaded",
      code: "http_503",
      retryAfterMillis: null,
      backoffMillis: 0,
      reservation: { cost: 0.001, tokens: 900 },
      usage: "unknown",
      charged: { cost: 0.001, tokens: 900 },
      billingBoundViolation: false,
      teardownUnconfirmed: false,
      simulated: true
    }
    const error = new Outcome.PlanExhausted({
      reason: "every candidate failed",
      lastFailure: { kind: "overloaded", code: "http_503", endpoint: "a" },
      attempts: [record, { ...record, attempt: 2, call: 2 }]
    })
    expect(error.attempts).toHaveLength(2)
    const json = JSON.parse(JSON.stringify(error))
    expect(json.attempts).toEqual([record, { ...record, attempt: 2, call: 2 }])
    expect(json.cause).toEqual({ kind: "overloaded", code: "http_503", endpoint: "a" })
    expect(inspect(error)).toContain("attempts: [2 attempt records]")
  })
})
