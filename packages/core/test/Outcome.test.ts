import { describe, expect, it } from "@effect/vitest"
import { Fake, Outcome, Rein } from "@rein/core"
import { Cause, Effect, Exit, FastCheck, Runtime, Schema } from "effect"
import { inspect } from "node:util"
import { contract, layer } from "./fixtures.js"

const record = (endpoint: string, failure: Outcome.AttemptRecord["failure"], n: number): Outcome.AttemptRecord => ({
  attempt: n,
  call: n,
  endpoint,
  role: n === 1 ? "first" : "retry",
  startMillis: 0,
  endMillis: 1,
  timeoutMillis: 1000,
  binding: "attempt",
  dispatched: true,
  status: failure === null ? "success" : "failure",
  failure,
  code: failure,
  retryAfterMillis: null,
  backoffMillis: 0,
  reservation: { cost: 0.001, tokens: 100 },
  usage: "unknown",
  charged: { cost: 0.001, tokens: 100 },
  billingBoundViolation: false,
  teardownUnconfirmed: false,
  simulated: true
})

describe("Outcome", () => {
  it("a terminal outcome's message is one line: reason, last failure, the attempts as runs", () => {
    const e = new Outcome.PlanExhausted({
      reason: "no candidate left that the failures allow",
      lastFailure: { kind: "authentication", code: "http_401", endpoint: "b" },
      attempts: [record("a", "overloaded", 1), record("a", "overloaded", 2), record("b", "authentication", 3)]
    })
    expect(e.message).toBe(
      "no candidate left that the failures allow; last failure authentication (http_401) on b; " +
        "3 attempts: a overloaded ×2 → b authentication"
    )
    expect(String(e)).toBe(`PlanExhausted: ${e.message}`)
  })

  it("a long history names its first runs and counts the rest; none says so", () => {
    const attempts = Array.from({ length: 9 }, (_, i) => record(i % 2 === 0 ? "a" : "b", "server_error", i + 1))
    const e = new Outcome.DeadlineExceeded({
      phase: "backoff",
      reason: "the backoff does not fit",
      lastFailure: null,
      teardownUnconfirmed: false,
      attempts
    })
    expect(e.message).toBe(
      "the backoff does not fit; 9 attempts: a server_error → b server_error → a server_error → b server_error → " +
        "a server_error → b server_error → … 3 more"
    )
    const h = new Outcome.Halted({ reason: "the batch stopped", lastFailure: null, attempts: [] })
    expect(h.message).toBe("the batch stopped; no attempt")
  })

  it("a refusal's message names the refusal and its reason", () => {
    const e = new Outcome.Refused({ refusal: "unknown_candidate", reason: "\"x\" is not in the catalog", attempts: [] })
    expect(e.message).toBe("unknown_candidate: \"x\" is not in the catalog")
  })

  it.effect("an uncaught outcome prints as that line, not a dump of its records", () =>
    Effect.gen(function*() {
      const fake = Fake.make({ a: [Fake.fail("authentication")] })
      const exit = yield* Effect.exit(
        Rein.execute({ prompt: "x", inputTokens: 10, maxOutputTokens: 10 }, contract({ candidates: ["a"] })).pipe(
          Effect.provide(layer(fake))
        )
      )
      expect(Exit.isFailure(exit)).toBe(true)
      const pretty = Exit.isFailure(exit) ? Cause.pretty(exit.cause) : ""
      expect(pretty.split("\n")[0]).toMatch(/^PlanExhausted: .*; 1 attempt: a authentication$/)
      expect(pretty).not.toContain("reservation")
    }))

  // The last failure was the field `cause`: the property Node and Effect print as a nested *error*, so an
  // uncaught outcome printed `[cause]: Error: null` (or the struct's JSON as an `Error`). Both printers as
  // `Effect.runPromise` / `NodeRuntime.runMain` use them: the FiberFailure's inspection and a logged cause.
  const printedForms = (e: Outcome.Terminal): ReadonlyArray<string> => [
    Cause.pretty(Cause.fail(e), { renderErrorCause: true }),
    inspect(Runtime.makeFiberFailure(Cause.fail(e)))
  ]

  it.effect("an executed outcome that reaches the runtime prints no nested error", () =>
    Effect.gen(function*() {
      const fake = Fake.make({ a: [Fake.fail("authentication")] })
      const e = yield* Effect.flip(
        Rein.execute({ prompt: "x", inputTokens: 10, maxOutputTokens: 10 }, contract({ candidates: ["a"] })).pipe(
          Effect.provide(layer(fake))
        )
      )
      for (const printed of printedForms(e)) {
        expect(printed).not.toContain("[cause]")
        expect(printed.split("\n")[0]).toMatch(
          /PlanExhausted: .*; last failure authentication .*; 1 attempt: a authentication$/
        )
      }
    }))

  it("an uncaught outcome prints its tag, reason and attempts, with no nested error, whatever its last failure", () => {
    const attempts = [record("a", "overloaded", 1), record("b", "authentication", 2)]
    const outcomes: ReadonlyArray<Outcome.Terminal> = [
      new Outcome.PlanExhausted({ reason: "every candidate tried", lastFailure: null, attempts: [] }),
      new Outcome.PlanExhausted({
        reason: "no candidate left that the failures allow",
        lastFailure: { kind: "authentication", code: "http_401", endpoint: "b" },
        attempts
      }),
      new Outcome.DeadlineExceeded({
        phase: "attempt",
        reason: "the deadline expired",
        lastFailure: null,
        teardownUnconfirmed: false,
        attempts
      }),
      new Outcome.BudgetExhausted({ resource: "cost", reason: "no room", lastFailure: null, attempts }),
      new Outcome.FailedSafe({
        reason: "unknown forbids retry and fallback",
        lastFailure: { kind: "unknown", code: "unknown", endpoint: "a" },
        attempts
      }),
      new Outcome.Halted({ reason: "the batch stopped", lastFailure: null, attempts: [] })
    ]
    for (const e of outcomes) {
      for (const printed of printedForms(e)) {
        expect(printed).not.toContain("Error: null")
        expect(printed).not.toContain("[cause]")
        expect(printed).toContain(`${e._tag}: ${e.message}`)
      }
      expect(e.message).toContain(e.reason)
      expect(e.message).toMatch(
        e.attempts.length === 0 ? /; no attempt$/ : /; 2 attempts: a overloaded → b authentication$/
      )
    }
  })

  it("the last failure is serialised under its key `cause`, as before: encoded, decoded, and as JSON", () => {
    const lastFailure = { kind: "overloaded", code: "http_529", endpoint: "a" } as const
    const e = new Outcome.PlanExhausted({ reason: "r", lastFailure, attempts: [record("a", "overloaded", 1)] })
    const encoded = Schema.encodeSync(Outcome.Terminal)(e)
    expect(Object.keys(encoded)).toEqual(["reason", "cause", "attempts", "_tag"])
    expect(encoded).toMatchObject({ cause: lastFailure })
    const json = JSON.stringify(encoded)
    expect(JSON.stringify(e)).toBe(json)
    expect(json).not.toContain("lastFailure")
    const decoded = Schema.decodeUnknownSync(Outcome.Terminal)(JSON.parse(json))
    expect(decoded).toMatchObject({ _tag: "PlanExhausted", lastFailure })
    const none = Schema.encodeSync(Outcome.Terminal)(
      new Outcome.Halted({ reason: "r", lastFailure: null, attempts: [] })
    )
    expect(JSON.stringify(none)).toBe("{\"reason\":\"r\",\"cause\":null,\"attempts\":[],\"_tag\":\"Halted\"}")
  })
})

describe("countToolCalls", () => {
  // The reference: a count per name, in first-call order (what the `Map`-based version answered).
  const reference = (calls: ReadonlyArray<{ readonly name: string }>) => {
    const counts = new Map<string, number>()
    for (const call of calls) counts.set(call.name, (counts.get(call.name) ?? 0) + 1)
    return Array.from(counts, ([name, count]) => ({ name, count }))
  }

  it("counts by name in first-call order, with many distinct names (property)", () => {
    // Up to 20 distinct names, `__proto__` and `constructor` among them.
    const name = FastCheck.oneof(
      FastCheck.integer({ min: 0, max: 19 }).map((i) => `tool${i}`),
      FastCheck.constantFrom("__proto__", "constructor", "")
    )
    FastCheck.assert(
      FastCheck.property(FastCheck.array(FastCheck.record({ name }), { maxLength: 60 }), (calls) => {
        const counted = Outcome.countToolCalls(calls)
        expect(counted).toEqual(calls.length === 0 ? undefined : reference(calls))
      }),
      { seed: 22, numRuns: 500 }
    )
  })
})
