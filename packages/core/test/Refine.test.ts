import { describe, expect, it } from "@effect/vitest"
import { Budget, Fake, Refine, Rein } from "@rein/core"
import type { Contract } from "@rein/core"
import { Deferred, Effect, Either, Exit, Fiber, Schema, TestClock } from "effect"
import * as fc from "effect/FastCheck"
import { catalog, contract, endpoint, layer } from "./fixtures.js"

// "a" writes drafts, "j" judges them, "i" prepares the input.
const cat = catalog(endpoint("a"), endpoint("j"), endpoint("i"))
const provide = (fake: Fake.Fake) => Effect.provide(layer(fake, cat))

const Answer = Schema.Struct({ title: Schema.String, score: Schema.Number })
const valid = JSON.stringify({ title: "ok", score: 1 })
const request = { prompt: "Rate it as JSON", inputTokens: 100, maxOutputTokens: 100 }
const judgeContract = contract({ candidates: ["j"] })

/** A model-backed check: asks "j" and reads PASS / STOP / anything else (revise). */
const judged = (name: string, judge: Contract.Contract = judgeContract) =>
  Refine.check<unknown>(name, (_candidate, ctx) =>
    Effect.map(
      ctx.execute({ prompt: "Is it good? PASS or FAIL", inputTokens: 50, maxOutputTokens: 5 }, judge),
      (
        r
      ) => (r.text === "PASS"
        ? Refine.pass
        : r.text === "STOP"
        ? Refine.stop("judge_stop")
        : Refine.revise("be better"))
    ))

/** Runs with the clock driven far enough for every backoff and the deadline. */
const drive = <A, E>(effect: Effect.Effect<A, E>) =>
  Effect.gen(function*() {
    const fiber = yield* Effect.fork(Effect.either(effect))
    yield* TestClock.adjust("2 minutes")
    return yield* Fiber.join(fiber)
  })

const summary = (history: ReadonlyArray<Refine.Event>) =>
  history.map((e) =>
    e._tag === "Draft"
      ? `draft ${e.draft} ${e.source} ${e.status} calls=${e.attempts.length}`
      : `check ${e.draft} ${e.check} ${e.verdict} calls=${e.attempts.length}`
  )

describe("Refine", () => {
  it.effect("a call cap of 3 spent on input, generation and one check: the quality check cannot start", () =>
    Effect.gen(function*() {
      const capped = contract({ candidates: ["a"], budget: { calls: 3 } })
      const fake = Fake.make({
        i: [Fake.succeed({ text: "facts" })],
        a: [Fake.succeed({ text: valid })],
        j: [Fake.succeed({ text: "PASS" })]
      })
      const program = Effect.gen(function*() {
        const input = yield* Rein.execute(
          { prompt: "extract", inputTokens: 50, maxOutputTokens: 50 },
          contract({ candidates: ["i"] })
        )
        return yield* Refine.refine({ ...request, prompt: `${request.prompt}: ${input.text}` }, capped, {
          schema: Answer,
          checks: [judged("semantic"), judged("quality")],
          maxDrafts: 2
        })
      }).pipe(Refine.sharing(capped))
      const result = yield* drive(program.pipe(provide(fake)))

      expect(Either.isLeft(result)).toBe(true)
      const review = Either.getLeft(result).pipe((o) => (o._tag === "Some" ? o.value : undefined))
      expect(review?._tag).toBe("NeedsReview")
      if (review?._tag !== "NeedsReview") return
      expect(review.reason).toBe("call_budget_exhausted")
      expect(summary(review.history)).toEqual([
        "draft 1 model completed calls=1",
        "check 1 schema pass calls=0",
        "check 1 semantic pass calls=1",
        "check 1 quality failed calls=0"
      ])
      const quality = review.history[3]
      expect(quality?._tag === "Check" && quality.failure).toEqual({
        outcome: "BudgetExhausted",
        resource: "calls",
        cause: null
      })
      expect((yield* fake.calls).map((c) => c.endpoint)).toEqual(["i", "a", "j"])
    }))

  it.effect("a transient failure then success within one draft counts two calls and one draft", () =>
    Effect.gen(function*() {
      const fake = Fake.make({ a: [Fake.fail("overloaded"), Fake.succeed({ text: valid })] })
      const result = yield* drive(
        Refine.refine(request, contract({ candidates: ["a"], budget: { calls: 5 } }), {
          schema: Answer,
          // The decoded value is typed from the schema.
          checks: [{
            name: "score",
            run: (c) => Effect.succeed(c.value.score >= 0 ? Refine.pass : Refine.revise("≥ 0"))
          }],
          maxDrafts: 3
        }).pipe(provide(fake))
      )
      const refined = Either.getOrThrow(result)
      expect(refined.value).toEqual({ title: "ok", score: 1 })
      expect(refined.source).toBe("model")
      expect(refined.drafts).toBe(1)
      expect(refined.calls).toBe(2)
      expect(summary(refined.history)).toEqual([
        "draft 1 model completed calls=2",
        "check 1 schema pass calls=0",
        "check 1 score pass calls=0"
      ])
      // The failed attempt reported no usage: the total stays unknown although the accepted draft's is known.
      expect(refined.completion?.usage).toEqual({ inputTokens: 10, outputTokens: 10 })
      expect(refined.cost).toBe("unknown")
      expect((yield* fake.calls).length).toBe(2)
    }))

  it.effect("revise then deterministic fallback: the fallback is labelled and its checks still draw calls", () =>
    Effect.gen(function*() {
      const canary = "CANARY-7f3a"
      const fake = Fake.make({
        a: [Fake.succeed({ text: JSON.stringify({ title: "x", score: canary }) })],
        j: [Fake.succeed({ text: "PASS" })]
      })
      const result = yield* drive(
        Refine.refine(request, contract({ candidates: ["a"], budget: { calls: 4 } }), {
          schema: Answer,
          checks: [judged("quality")],
          maxDrafts: 1,
          fallback: Effect.succeed(JSON.stringify({ title: "template", score: 0 }))
        }).pipe(provide(fake))
      )
      const refined = Either.getOrThrow(result)
      expect(refined.source).toBe("fallback")
      expect(refined.completion).toBeNull()
      expect(refined.value).toEqual({ title: "template", score: 0 })
      expect(summary(refined.history)).toEqual([
        "draft 1 model completed calls=1",
        "check 1 schema revise calls=0",
        "draft 2 fallback completed calls=0",
        "check 2 schema pass calls=0",
        "check 2 quality pass calls=1"
      ])
      const revised = refined.history[1]
      expect(revised?._tag === "Check" && revised.feedback).toEqual([{ path: "score", message: "Expected number" }])
      expect(refined.calls).toBe(2)
      expect((yield* fake.calls).map((c) => c.endpoint)).toEqual(["a", "j"])
      // Neither the provider's text nor the prompt reaches the history.
      const recorded = JSON.stringify(Schema.encodeSync(Schema.Array(Refine.Event))(refined.history))
      expect(recorded).not.toContain(canary)
      expect(recorded).not.toContain(request.prompt)
    }))

  it.effect("a fallback sent back for revision ends in review, not acceptance", () =>
    Effect.gen(function*() {
      const fake = Fake.make({ a: [Fake.succeed({ text: "not json" })] })
      const result = yield* drive(
        Refine.refine(request, contract({ candidates: ["a"] }), {
          schema: Answer,
          checks: [],
          maxDrafts: 2,
          fallback: Effect.succeed("{}")
        }).pipe(provide(fake))
      )
      const review = Either.getLeft(result).pipe((o) => (o._tag === "Some" ? o.value : undefined))
      expect(review?.reason).toBe("revision_budget_exhausted")
      expect(review?.drafts).toBe(2)
      const last = review?.history.at(-1)
      expect(last?._tag === "Check" && last.feedback).toEqual([
        { path: "title", message: "is missing" },
        { path: "score", message: "is missing" }
      ])
    }))

  it.effect("an enclosing shared budget (a run's) keeps binding inside a refinement", () =>
    Effect.gen(function*() {
      const fake = Fake.make({ a: [Fake.succeed({ text: "not json" })] })
      const run = yield* Budget.make({ calls: 1 })
      const result = yield* drive(
        Refine.refine(request, contract({ candidates: ["a"], budget: { calls: 5 } }), {
          schema: Answer,
          checks: [],
          maxDrafts: 3
        }).pipe(provide(fake), Effect.provideService(Budget.SharedBudget, run))
      )
      const review = Either.getLeft(result).pipe((o) => (o._tag === "Some" ? o.value : undefined))
      expect(review?.reason).toBe("call_budget_exhausted")
      expect(review?.drafts).toBe(2)
      expect((yield* fake.calls).length).toBe(1)
    }))

  it.effect("an already-interrupted caller makes zero calls", () =>
    Effect.gen(function*() {
      const fake = Fake.make({ a: [Fake.succeed({ text: valid })] })
      const gate = yield* Deferred.make<void>()
      const program = Refine.refine(request, contract({ candidates: ["a"] }), { checks: [], maxDrafts: 2 }).pipe(
        provide(fake)
      )
      // The interruption arrives while the caller cannot yet be interrupted; refine starts already interrupted.
      const fiber = yield* Effect.fork(
        Effect.uninterruptibleMask((restore) => Effect.zipRight(Deferred.await(gate), restore(program)))
      )
      // Delivered synchronously to the fiber's mailbox (not by a forked interrupter that could run late).
      yield* Fiber.interruptAsFork(fiber, yield* Effect.fiberId)
      yield* Deferred.succeed(gate, undefined)
      const exit = yield* Fiber.await(fiber)
      expect(Exit.isInterrupted(exit)).toBe(true)
      expect((yield* fake.calls).length).toBe(0)
    }))

  it.effect("a draft that outlives the shared deadline ends in review with reason deadline", () =>
    Effect.gen(function*() {
      const fake = Fake.make({ a: [Fake.hang] })
      const result = yield* drive(
        Refine.refine(request, contract({ candidates: ["a"], deadline: "2 seconds", retry: { perEndpoint: 0 } }), {
          checks: [],
          maxDrafts: 3
        }).pipe(provide(fake))
      )
      const review = Either.getLeft(result).pipe((o) => (o._tag === "Some" ? o.value : undefined))
      expect(review?.reason).toBe("deadline")
      expect(review?.drafts).toBe(1)
    }))

  it.effect("a check that hangs is cut at the deadline and its draft is not accepted", () =>
    Effect.gen(function*() {
      const fake = Fake.make({ a: [Fake.succeed({ text: valid })] })
      const result = yield* drive(
        Refine.refine(request, contract({ candidates: ["a"], deadline: "2 seconds" }), {
          checks: [Refine.check("stuck", () => Effect.never)],
          maxDrafts: 1
        }).pipe(provide(fake))
      )
      const review = Either.getLeft(result).pipe((o) => (o._tag === "Some" ? o.value : undefined))
      expect(review?.reason).toBe("deadline")
      expect(review && summary(review.history)).toEqual([
        "draft 1 model completed calls=1",
        "check 1 stuck failed calls=0"
      ])
    }))

  it.effect("a check's stop verdict ends in review as a permanent failure", () =>
    Effect.gen(function*() {
      const fake = Fake.make({ a: [Fake.succeed({ text: valid })], j: [Fake.succeed({ text: "STOP" })] })
      const result = yield* drive(
        Refine.refine(request, contract({ candidates: ["a"] }), { checks: [judged("policy")], maxDrafts: 3 }).pipe(
          provide(fake)
        )
      )
      const review = Either.getLeft(result).pipe((o) => (o._tag === "Some" ? o.value : undefined))
      expect(review?.reason).toBe("permanent_failure")
      const last = review?.history.at(-1)
      expect(last?._tag === "Check" && last.code).toBe("judge_stop")
    }))

  it("the default reviser appends the feedback and raises the input bound", () => {
    const next = Refine.appendFeedback(request, [{ path: "score", message: "Expected number" }], 2)
    expect(next.prompt.startsWith(request.prompt)).toBe(true)
    expect(next.prompt).toContain("- score: Expected number")
    expect(next.inputTokens).toBe(
      request.inputTokens + new TextEncoder().encode(next.prompt.slice(request.prompt.length)).length
    )
    expect(Refine.appendFeedback({ prompt: "p" }, [{ path: "", message: "m" }], 2).inputTokens).toBeUndefined()
  })

  const Step = fc.constantFrom("valid", "invalid", "transient", "permanent")
  const Judge = fc.constantFrom("PASS", "FAIL", "STOP")

  it.effect.prop(
    "drafts ≤ maxDrafts, calls ≤ cap, and an accepted result passed every check",
    {
      cap: fc.integer({ min: 1, max: 8 }),
      maxDrafts: fc.integer({ min: 0, max: 4 }),
      drafts: fc.array(Step, { minLength: 1, maxLength: 8 }),
      judge: fc.array(Judge, { minLength: 1, maxLength: 8 }),
      fallback: fc.boolean()
    },
    ({ cap, drafts, fallback, judge, maxDrafts }) =>
      Effect.gen(function*() {
        const fake = Fake.make({
          a: drafts.map((s) =>
            s === "valid"
              ? Fake.succeed({ text: valid })
              : s === "invalid"
              ? Fake.succeed({ text: "{\"title\": 1}" })
              : s === "transient"
              ? Fake.fail("overloaded")
              : Fake.fail("invalid_request")
          ),
          j: judge.map((text) => Fake.succeed({ text }))
        })
        const result = yield* drive(
          Refine.refine(request, contract({ candidates: ["a"], budget: { calls: cap } }), {
            schema: Answer,
            checks: [judged("quality")],
            maxDrafts,
            ...(fallback ? { fallback: Effect.succeed(valid) } : {})
          }).pipe(provide(fake))
        )
        const history = Either.isRight(result) ? result.right.history : result.left.history
        const calls = (yield* fake.calls).length
        expect(calls).toBeLessThanOrEqual(cap)
        // Every call taken is in the history.
        expect(history.reduce((n, e) => n + e.attempts.length, 0)).toBe(calls)
        const modelDrafts = history.filter((e) => e._tag === "Draft" && e.source === "model").length
        expect(modelDrafts).toBeLessThanOrEqual(maxDrafts)
        if (Either.isRight(result)) {
          const accepted = result.right
          const checks = history.filter((e): e is Refine.CheckEvent => e._tag === "Check" && e.draft === accepted.draft)
          expect(checks.map((e) => [e.check, e.verdict])).toEqual([["schema", "pass"], ["quality", "pass"]])
          expect(accepted.calls).toBe(calls)
        } else {
          expect(result.left._tag).toBe("NeedsReview")
        }
      }),
    { fastCheck: { numRuns: 60 } }
  )

  it.effect("a record key the provider chose never reaches the feedback or the history; the schema's own names do", () =>
    Effect.gen(function*() {
      const canary = "CANARY-key-91c2"
      const Scores = Schema.Struct({ scores: Schema.Record({ key: Schema.String, value: Schema.Number }) })
      const fake = Fake.make({
        a: [Fake.succeed({ text: JSON.stringify({ scores: { [canary]: "high", [`${canary}-2`]: "low" } }) })]
      })
      const result = yield* drive(
        Refine.refine(request, contract({ candidates: ["a"] }), { schema: Scores, checks: [], maxDrafts: 1 }).pipe(
          provide(fake)
        )
      )
      const review = Either.getLeft(result).pipe((o) => (o._tag === "Some" ? o.value : undefined))
      expect(review?._tag).toBe("NeedsReview")
      if (review?._tag !== "NeedsReview") return
      const revised = review.history[1]
      // One line for every key that failed, named by the field the schema declares.
      expect(revised?._tag === "Check" && revised.feedback).toEqual([{
        path: "scores.<key>",
        message: "Expected number"
      }])
      const recorded = JSON.stringify(Schema.encodeSync(Refine.NeedsReview)(review))
      expect(recorded).not.toContain(canary)
    }))
})
