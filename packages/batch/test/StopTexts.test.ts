import { describe, expect, it } from "@effect/vitest"
import { Batch, Events, Guardrails, RunLimits, Termination } from "@rein/batch"
import { Effect, Schema } from "effect"
import * as Totals from "../src/internal/totals.js"
import { contract, fail, hang, ok, prompts, runFor, scripted } from "./batch-helpers.js"

/** Each stop the run can end with (as the batch and the shared run build them), and a word its fix must say. */
const stops: ReadonlyArray<readonly [string, Termination.Stop, RegExp]> = [
  [
    "batch deadline",
    { _tag: "BatchTimeout", kind: "batch_timeout", reason: "the batch deadline of 60000 ms expired" },
    /--batch-deadline/
  ],
  [
    "fail-fast on authentication",
    {
      _tag: "FailFast",
      kind: "fail_fast",
      reason: "fail-fast: item \"7\" failed with authentication",
      itemId: "7",
      category: "authentication"
    },
    /credentials.*--abort-on/
  ],
  [
    "fail-fast on a category without its own hint",
    {
      _tag: "FailFast",
      kind: "fail_fast",
      reason: "fail-fast: item \"7\" failed with plan_exhausted",
      itemId: "7",
      category: "plan_exhausted"
    },
    /find why items fail with plan_exhausted, or let the run go on past plan_exhausted failures/
  ],
  [
    "token cap",
    Totals.tokenCapReached(100, 100),
    /raise the token limit \(guardrails maxTotalTokens, --max-total-tokens\)/
  ],
  ["cost cap", Totals.costCapReached(0.5, 0.5), /raise the cost limit \(guardrails maxTotalCost, --max-total-cost\)/],
  ["token total overflow", Totals.overflowed("tokens", 1e308, 1e308), /could not be counted/],
  ["a charge that is not a count", RunLimits.invalidCharge({ tokens: Number.NaN, cost: 0 })!, /could not be counted/],
  [
    "the shared cost budget",
    {
      _tag: "BudgetExceeded",
      kind: "budget_exceeded",
      resource: "cost",
      reason: "the run's cost budget is exhausted (item \"3\" refused: …)"
    },
    /--budget-cost, when the run starts/
  ],
  [
    "the shared call budget",
    {
      _tag: "BudgetExceeded",
      kind: "budget_exceeded",
      resource: "calls",
      reason: "the run's calls budget is exhausted"
    },
    /--budget-calls/
  ],
  [
    "a cost function that misbehaved",
    {
      _tag: "BudgetExceeded",
      kind: "budget_exceeded",
      resource: "cost_function",
      reason: "the cost function returned NaN, not a finite non-negative number"
    },
    /make the cost function return a finite number ≥ 0/
  ],
  [
    "an artifact that cannot be written",
    { _tag: "ArtifactFailure", kind: "artifact_error", reason: "disk full", itemId: "7" },
    /artifact writable/
  ]
]

describe("Termination: a stop says what to change", () => {
  it.each(stops)("%s: the reason as recorded, then its fix", (_, stop, word) => {
    const text = Termination.describe(stop)
    // The recorded reason is kept byte for byte (a shared run's store and the artifacts hold it), then the fix.
    expect(text).toBe(`${stop.reason}; ${Termination.fix(stop)}`)
    expect(Termination.fix(stop)).toMatch(word)
    expect(Termination.fix(stop)).toMatch(/rein batch --resume reuses the items already done$/)
    // The stop itself is unchanged: it encodes as before (no field added).
    expect(Object.keys(Schema.encodeSync(Termination.Termination)(stop)).sort()).toEqual(Object.keys(stop).sort())
  })

  it("a completed run is described by its reason alone", () => {
    expect(Termination.describe({ _tag: "Completed", kind: "completed", reason: "all 3 accepted items finished" }))
      .toBe("all 3 accepted items finished")
  })

  it.effect("a run stopped by its cost cap keeps the reason; its description names --max-total-cost", () =>
    Effect.gen(function*() {
      const fake = scripted(() => ok(100))
      const summary = yield* runFor(
        Batch.run(prompts(6), {
          contract: contract(),
          guardrails: Guardrails.make({ concurrency: 1, maxTotalCost: 0.5 }),
          costFunction: () => 0.25
        }).pipe(Effect.provide(fake.layer))
      )
      expect(summary.termination.reason).toBe("cost cap reached: 0.5 of 0.5")
      expect(Termination.describe(summary.termination)).toMatch(
        /^cost cap reached: 0\.5 of 0\.5; if this spend is expected, raise the cost limit \(guardrails maxTotalCost, --max-total-cost\)/
      )
    }))

  it.effect("a run stopped by its deadline and by fail-fast: each description names its own guardrail", () =>
    Effect.gen(function*() {
      const late = yield* runFor(
        Batch.run(prompts(3), {
          contract: contract(),
          guardrails: Guardrails.make({ concurrency: 1, batchDeadline: "5 seconds" })
        }).pipe(Effect.provide(scripted(() => hang).layer))
      )
      expect(late.termination.kind).toBe("batch_timeout")
      expect(Termination.describe(late.termination)).toMatch(/expired; give the run more time .*--batch-deadline/)
      const failing = yield* runFor(
        Batch.run(prompts(3), {
          contract: contract(),
          guardrails: Guardrails.make({ concurrency: 1, abortOn: ["authentication"] })
        }).pipe(Effect.provide(scripted(() => fail("authentication")).layer))
      )
      expect(failing.termination.kind).toBe("fail_fast")
      expect(Termination.describe(failing.termination)).toMatch(
        /failed with authentication; check the endpoint's credentials .*remove it from guardrails abortOn, --abort-on/
      )
    }))

  it.effect("the RunAborted event carries the stop's fix, as the summary prints it, for each stop a run makes", () =>
    Effect.gen(function*() {
      const runs = [
        { guardrails: Guardrails.make({ concurrency: 1, batchDeadline: "5 seconds" }), fake: scripted(() => hang) },
        {
          guardrails: Guardrails.make({ concurrency: 1, abortOn: ["authentication"] }),
          fake: scripted(() => fail("authentication"))
        },
        { guardrails: Guardrails.make({ concurrency: 1, maxTotalCost: 0.5 }), fake: scripted(() => ok(100)) }
      ]
      for (const { fake, guardrails } of runs) {
        const events: Array<Events.Event> = []
        const summary = yield* runFor(
          Batch.run(prompts(6), {
            contract: contract(),
            guardrails,
            costFunction: () => 0.25,
            onEvent: (e) => Effect.sync(() => void events.push(e))
          }).pipe(Effect.provide(fake.layer))
        )
        const aborted = events.filter((e): e is typeof Events.RunAborted.Type => e._tag === "RunAborted")
        expect(aborted).toHaveLength(1)
        const stop = summary.termination
        expect(stop.kind).not.toBe("completed")
        expect(aborted[0]!.termination).toEqual(stop)
        if (stop.kind !== "completed") expect(aborted[0]!.fix).toBe(Termination.fix(stop))
        // As JSON (a logged event stream), the fix is there to read without the library.
        const json = Schema.encodeSync(Events.Event)(aborted[0]!)
        expect(JSON.parse(JSON.stringify(json))).toMatchObject({ _tag: "RunAborted", fix: aborted[0]!.fix })
        expect(Schema.decodeUnknownSync(Events.Event)(json)).toEqual(aborted[0])
      }
    }))

  it("a RunAborted event logged before the fix was added still decodes (and describes itself the same)", () => {
    const termination: Termination.Stop = {
      _tag: "BatchTimeout",
      kind: "batch_timeout",
      reason: "the batch deadline of 60000 ms expired"
    }
    const old = Schema.decodeUnknownSync(Events.Event)({ _tag: "RunAborted", at: 12, termination })
    expect(old).toEqual({ _tag: "RunAborted", at: 12, termination })
    expect("fix" in old).toBe(false)
    expect(Termination.describe(termination)).toBe(`${termination.reason}; ${Termination.fix(termination)}`)
  })
})
