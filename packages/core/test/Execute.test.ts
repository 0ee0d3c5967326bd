import { describe, expect, it } from "@effect/vitest"
import { Budget, Fake, Journal, Rein } from "@rein/core"
import type { Outcome, Provider } from "@rein/core"
import { Duration, Effect, Either, Exit, Fiber, Layer, Logger, LogLevel, Ref, TestClock } from "effect"
import { catalog, contract, defaultCatalog, endpoint, layer } from "./fixtures.js"

const request = { prompt: "hello", inputTokens: 100, maxOutputTokens: 100 }

/** Runs a request to completion under the TestClock, advancing virtual time as far as needed. */
const runFor = <A, E>(effect: Effect.Effect<A, E>, advance: Duration.DurationInput = "10 minutes") =>
  Effect.gen(function*() {
    const fiber = yield* Effect.fork(effect)
    yield* TestClock.adjust(advance)
    return yield* Fiber.join(fiber)
  })

const failureOf = <A>(exit: Either.Either<A, Outcome.Terminal>) => {
  if (Either.isRight(exit)) throw new Error("expected a terminal failure")
  return exit.left
}

describe("Execute", () => {
  it.effect("a retried failure then success stays inside the deadline", () =>
    Effect.gen(function*() {
      const fake = Fake.make({ a: [Fake.fail("overloaded"), Fake.succeed({ text: "hi" })] })
      const result = yield* runFor(Rein.execute(request, contract()).pipe(Effect.provide(layer(fake))))
      expect(result.text).toBe("hi")
      expect(result.attempts.map((a) => [a.endpoint, a.status, a.failure])).toEqual([
        ["a", "failure", "overloaded"],
        ["a", "success", null]
      ])
      expect(result.attempts[0]!.backoffMillis).toBe(100)
      expect(result.attempts[1]!.startMillis).toBe(100)
    }))

  it.effect("the first attempt of a 120 s contract with a 90 s attempt timeout gets 90 s and sees 120 s left", () =>
    Effect.gen(function*() {
      const fake = Fake.make({ a: [Fake.succeed()] })
      const c = contract({ deadline: "120 seconds", attemptTimeout: "90 seconds" })
      const result = yield* runFor(Rein.execute(request, c).pipe(Effect.provide(layer(fake))))
      const [call] = yield* fake.calls
      expect(call).toMatchObject({ endpoint: "a", attempt: 1, timeoutMillis: 90_000, remainingMillis: 120_000 })
      expect(result.attempts[0]).toMatchObject({ timeoutMillis: 90_000, binding: "attempt" })
    }))

  it.effect("with 1 s remaining and a 2 s backoff the request fails after one call, without sleeping", () =>
    Effect.gen(function*() {
      const fake = Fake.make({ a: [Fake.fail("server_error", { latency: "9 seconds" })] })
      const c = contract({
        deadline: "10 seconds",
        candidates: ["a"],
        retry: { perEndpoint: 3, base: "2 seconds", factor: 2, max: "8 seconds", jitter: 0 }
      })
      const fiber = yield* Effect.fork(Effect.either(Rein.execute(request, c).pipe(Effect.provide(layer(fake)))))
      yield* TestClock.adjust("9 seconds")
      // No more virtual time passes: the outcome is already there.
      const error = failureOf(yield* Fiber.join(fiber))
      expect(error._tag).toBe("DeadlineExceeded")
      if (error._tag !== "DeadlineExceeded") return
      expect(error.phase).toBe("backoff")
      expect(error.lastFailure).toEqual({ kind: "server_error", code: "server_error", endpoint: "a" })
      expect(error.attempts).toHaveLength(1)
      expect(error.attempts[0]!.backoffMillis).toBe(0)
      expect((yield* fake.calls).length).toBe(1)
    }))

  it.effect("a call cap of 1 with a retryable failure makes exactly one provider call", () =>
    Effect.gen(function*() {
      const fake = Fake.make({ a: [Fake.fail("overloaded")], b: [Fake.succeed()] })
      const c = contract({ budget: { calls: 1 } })
      const error = failureOf(yield* runFor(Effect.either(Rein.execute(request, c).pipe(Effect.provide(layer(fake))))))
      expect(error._tag).toBe("BudgetExhausted")
      if (error._tag === "BudgetExhausted") expect(error.resource).toBe("calls")
      if (error._tag === "BudgetExhausted") expect(error.needed).toBe(1)
      expect((yield* fake.calls).length).toBe(1)
    }))

  it.effect("a refusal says what the refused reservation needed: the worst case, or what the store was asked", () =>
    Effect.gen(function*() {
      const fake = Fake.make({ a: [Fake.succeed()] })
      // 100 input tokens at $1e-6 and at most 100 output tokens at $2e-6: a worst case of $0.0003, 200 tokens.
      const cost = failureOf(
        yield* runFor(Effect.either(
          Rein.execute(request, contract({ budget: { cost: 0.0002 } })).pipe(
            Effect.provide(layer(fake))
          )
        ))
      )
      expect(cost).toMatchObject({ _tag: "BudgetExhausted", resource: "cost" })
      if (cost._tag === "BudgetExhausted") expect(cost.needed).toBeCloseTo(0.0003, 12)
      const tokens = failureOf(
        yield* runFor(Effect.either(
          Rein.execute(request, contract({ budget: { tokens: 150 } })).pipe(
            Effect.provide(layer(fake))
          )
        ))
      )
      expect(tokens).toMatchObject({ _tag: "BudgetExhausted", resource: "tokens", needed: 200 })
      // A shared budget whose store did not answer: what it was asked for.
      const inner = yield* Budget.make({})
      const down: Budget.Service = {
        limits: inner.limits,
        left: inner.left,
        reserve: () => Effect.fail({ resource: "cost", needed: 0.0003, left: 0, reason: "unavailable" }),
        settle: inner.settle,
        release: inner.release
      }
      const unavailable = failureOf(
        yield* runFor(Effect.either(
          Rein.execute(request, contract()).pipe(
            Effect.provide(layer(fake)),
            Effect.provideService(Budget.SharedBudget, down)
          )
        ))
      )
      expect(unavailable).toMatchObject({ _tag: "BudgetExhausted", unavailable: true, needed: 0.0003 })
      expect((yield* fake.calls).length).toBe(0)
    }))

  it.effect("an already-interrupted caller makes zero calls", () =>
    Effect.gen(function*() {
      const fake = Fake.make({ a: [Fake.succeed()] })
      const exit = yield* Effect.exit(
        Effect.zipRight(Effect.interrupt, Rein.execute(request, contract())).pipe(Effect.provide(layer(fake)))
      )
      expect(Exit.isInterrupted(exit)).toBe(true)
      expect((yield* fake.calls).length).toBe(0)
    }))

  it.effect("a → b fallback succeeds on b, and an unlisted endpoint never runs", () =>
    Effect.gen(function*() {
      const fake = Fake.make({ a: [Fake.fail("authentication")], b: [Fake.succeed({ text: "from b" })] })
      const cat = catalog(endpoint("a", { scope: "one" }), endpoint("b", { scope: "two" }), endpoint("c"))
      const result = yield* runFor(Rein.execute(request, contract()).pipe(Effect.provide(layer(fake, cat))))
      expect(result.endpoint).toBe("b")
      expect(result.text).toBe("from b")
      expect((yield* fake.calls).map((c) => c.endpoint)).toEqual(["a", "b"])
    }))

  it.effect("an authentication failure falls back only to another credential scope", () =>
    Effect.gen(function*() {
      const fake = Fake.make({ a: [Fake.fail("authentication")], b: [Fake.succeed()] })
      const cat = catalog(endpoint("a", { scope: "same" }), endpoint("b", { scope: "same" }))
      const error = failureOf(
        yield* runFor(Effect.either(Rein.execute(request, contract()).pipe(Effect.provide(layer(fake, cat)))))
      )
      expect(error._tag).toBe("PlanExhausted")
      expect((yield* fake.calls).map((c) => c.endpoint)).toEqual(["a"])
    }))

  it.effect("a context-length failure falls back only to a larger window", () =>
    Effect.gen(function*() {
      const fake = Fake.make({ a: [Fake.fail("context_length")] })
      const cat = catalog(
        endpoint("a", { contextWindow: 4_000 }),
        endpoint("b", { contextWindow: 4_000 }),
        endpoint("c", { contextWindow: 32_000 })
      )
      const result = yield* runFor(
        Rein.execute(request, contract({ candidates: ["a", "b", "c"] })).pipe(Effect.provide(layer(fake, cat)))
      )
      expect(result.endpoint).toBe("c")
      expect((yield* fake.calls).map((c) => c.endpoint)).toEqual(["a", "c"])
    }))

  it.effect("Retry-After 0.3 s beats a 0.1 s backoff", () =>
    Effect.gen(function*() {
      const fake = Fake.make({ a: [Fake.fail("rate_limited", { retryAfter: "300 millis" }), Fake.succeed()] })
      const result = yield* runFor(Rein.execute(request, contract()).pipe(Effect.provide(layer(fake))))
      expect(result.attempts[0]!.backoffMillis).toBe(300)
      expect(result.attempts[1]!.startMillis).toBe(300)
    }))

  for (
    const kind of [
      "malformed_response",
      "context_length",
      "content_filtered",
      "authentication",
      "permission_denied",
      "insufficient_balance",
      "quota_exhausted",
      "invalid_request",
      "unknown"
    ] as const
  ) {
    it.effect(`${kind} is never retried: exactly one call`, () =>
      Effect.gen(function*() {
        const fake = Fake.make({ a: [Fake.fail(kind), Fake.succeed()] })
        const result = yield* runFor(Effect.either(
          Rein.execute(request, contract({ candidates: ["a"] })).pipe(Effect.provide(layer(fake)))
        ))
        expect(Either.isLeft(result)).toBe(true)
        expect((yield* fake.calls).length).toBe(1)
      }))
  }

  it.effect("a contract may widen retry to malformed_response", () =>
    Effect.gen(function*() {
      const fake = Fake.make({ a: [Fake.fail("malformed_response"), Fake.succeed()] })
      const c = contract({ candidates: ["a"], failures: { alsoRetry: ["malformed_response"] } })
      const result = yield* runFor(Rein.execute(request, c).pipe(Effect.provide(layer(fake))))
      expect(result.attempts).toHaveLength(2)
    }))

  it.effect("a candidate whose worst case does not fit the budget is skipped and a cheaper one runs", () =>
    Effect.gen(function*() {
      const fake = Fake.make({})
      const cat = catalog(
        endpoint("a", { inPrice: 1e-3, outPrice: 1e-3 }),
        endpoint("b", { inPrice: 1e-6, outPrice: 1e-6 })
      )
      // a's worst case: 100 × 1e-3 + 100 × 1e-3 = 0.2 > 0.01; b's: 0.0002.
      const result = yield* runFor(
        Rein.execute(request, contract({ budget: { cost: 0.01 } })).pipe(Effect.provide(layer(fake, cat)))
      )
      expect(result.endpoint).toBe("b")
      expect((yield* fake.calls).map((c) => c.endpoint)).toEqual(["b"])
    }))

  it.effect("interrupting the caller mid-attempt runs the attempt's finalizer before the interruption completes", () =>
    Effect.gen(function*() {
      const finalized = yield* Ref.make(false)
      const fake = Fake.make({ a: [Fake.hang] })
      const provider = {
        ...fake.provider,
        call: (req: Parameters<typeof fake.provider.call>[0], ctx: Parameters<typeof fake.provider.call>[1]) =>
          fake.provider.call(req, ctx).pipe(Effect.onInterrupt(() => Ref.set(finalized, true)))
      }
      const fiber = yield* Effect.fork(
        Rein.execute(request, contract()).pipe(
          Effect.provide(Rein.layer({ catalog: defaultCatalog, providers: { fake: provider } }))
        )
      )
      yield* TestClock.adjust("1 second")
      yield* Fiber.interrupt(fiber)
      expect(yield* Ref.get(finalized)).toBe(true)
    }))

  it.effect("a provider that ignores interruption cannot hold the caller past deadline + grace", () =>
    Effect.gen(function*() {
      const fake = Fake.make({ a: [Fake.stubborn("1 hour")] })
      const c = contract({ deadline: "2 seconds", teardownGrace: "100 millis", candidates: ["a"] })
      const fiber = yield* Effect.fork(Effect.either(Rein.execute(request, c).pipe(Effect.provide(layer(fake)))))
      yield* TestClock.adjust("2100 millis")
      const error = failureOf(yield* Fiber.join(fiber))
      expect(error._tag).toBe("DeadlineExceeded")
      if (error._tag !== "DeadlineExceeded") return
      expect(error.phase).toBe("attempt")
      expect(error.teardownUnconfirmed).toBe(true)
      expect(error.attempts[0]).toMatchObject({ status: "deadline", teardownUnconfirmed: true })
    }))

  it.effect("an attempt timeout is retryable; the deadline is terminal", () =>
    Effect.gen(function*() {
      const fake = Fake.make({ a: [Fake.hang, Fake.succeed({ text: "second" })] })
      const c = contract({ deadline: "10 seconds", attemptTimeout: "1 second", candidates: ["a"] })
      const result = yield* runFor(Rein.execute(request, c).pipe(Effect.provide(layer(fake))))
      expect(result.attempts.map((a) => [a.status, a.failure])).toEqual([["timeout", "timeout"], ["success", null]])
    }))

  it.effect("a provider with internal retries is refused with zero calls", () =>
    Effect.gen(function*() {
      const fake = Fake.make({}, { internalMaxAttempts: 3 })
      const error = failureOf(yield* Effect.either(Rein.execute(request, contract()).pipe(Effect.provide(layer(fake)))))
      expect(error).toMatchObject({ _tag: "Refused", refusal: "nested_retries" })
      expect((yield* fake.calls).length).toBe(0)
    }))

  it.effect("effectful mode is refused with zero calls", () =>
    Effect.gen(function*() {
      const fake = Fake.make({})
      const error = failureOf(
        yield* Effect.either(Rein.execute(request, contract({ mode: "effectful" })).pipe(Effect.provide(layer(fake))))
      )
      expect(error).toMatchObject({ _tag: "Refused", refusal: "effectful_mode" })
      expect((yield* fake.calls).length).toBe(0)
    }))

  it.effect("a hard budget without an input-token bound fails closed", () =>
    Effect.gen(function*() {
      const fake = Fake.make({})
      const error = failureOf(
        yield* Effect.either(
          Rein.execute({ prompt: "x" }, contract({ budget: { cost: 1 } })).pipe(Effect.provide(layer(fake)))
        )
      )
      expect(error).toMatchObject({ _tag: "Refused", refusal: "no_input_bound" })
      expect((yield* fake.calls).length).toBe(0)
    }))

  it.effect("the no-input-bound refusal names the budget that needs the bound and the ways to give one", () =>
    Effect.gen(function*() {
      const reasonOf = (budget: { readonly cost?: number; readonly tokens?: number; readonly calls?: number }) =>
        Effect.map(
          Effect.flip(Rein.execute({ prompt: "x" }, contract({ budget })).pipe(Effect.provide(layer(Fake.make({}))))),
          (e) => e._tag === "Refused" ? e.reason : e._tag
        )
      const cost = yield* reasonOf({ cost: 1, calls: 3 })
      expect(cost).toContain("cost budget (budget.cost)")
      expect(cost).not.toContain("budget.tokens")
      for (const fix of ["`inputTokens`", "Rein.layer({ tokenizer })", "ReinLanguageModel.layer", "only `calls`"]) {
        expect(cost).toContain(fix)
      }
      expect(yield* reasonOf({ tokens: 100 })).toContain("token budget (budget.tokens)")
      expect(yield* reasonOf({ cost: 1, tokens: 100 })).toContain("cost and token budgets (budget.cost, budget.tokens)")
    }))

  it.effect("simulated endpoints are refused unless the contract allows them, and labelled when they run", () =>
    Effect.gen(function*() {
      const fake = Fake.make({})
      const refused = failureOf(
        yield* Effect.either(
          Rein.execute(request, contract({ allowSimulated: false })).pipe(Effect.provide(layer(fake)))
        )
      )
      expect(refused._tag).toBe("Refused")
      const ok = yield* Rein.execute(request, contract()).pipe(Effect.provide(layer(fake)))
      expect(ok.simulated).toBe(true)
      expect(ok.attempts[0]!.simulated).toBe(true)
    }))

  it.effect("unknown usage stays unknown: the full reservation is charged and the cost is unknown", () =>
    Effect.gen(function*() {
      const fake = Fake.make({ a: [Fake.succeed({ usage: "unknown" })] })
      const result = yield* Rein.execute(request, contract()).pipe(Effect.provide(layer(fake)))
      expect(result.usage).toBe("unknown")
      expect(result.cost).toBe("unknown")
      expect(result.attempts[0]!.charged).toEqual({ cost: 100 * 1e-6 + 100 * 2e-6, tokens: 200 })
    }))

  it.effect("a connect-phase failure releases its reservation", () =>
    Effect.gen(function*() {
      const fake = Fake.make({ a: [Fake.fail("transport")], b: [Fake.succeed()] })
      const result = yield* runFor(
        Rein.execute(request, contract({ retry: { perEndpoint: 0 } })).pipe(Effect.provide(layer(fake)))
      )
      expect(result.attempts[0]).toMatchObject({ dispatched: false, charged: { cost: 0, tokens: 0 } })
    }))

  it.effect("usage above the reservation is charged and flagged billingBoundViolation", () =>
    Effect.gen(function*() {
      const fake = Fake.make({ a: [Fake.succeed({ usage: { inputTokens: 100, outputTokens: 5_000 } })] })
      const result = yield* Rein.execute(request, contract()).pipe(Effect.provide(layer(fake)))
      expect(result.attempts[0]!.billingBoundViolation).toBe(true)
      expect(result.attempts[0]!.charged.tokens).toBe(5_100)
    }))

  it.effect("a canary planted in a provider error appears in no record, outcome or log", () =>
    Effect.gen(function*() {
      const canary = "CANARY-7f3a9c-secret"
      const logs = yield* Ref.make<Array<string>>([])
      const logger = Logger.make(({ annotations, message }) => {
        Effect.runSync(Ref.update(logs, (l) => [...l, JSON.stringify(message), JSON.stringify([...annotations])]))
      })
      const fake = Fake.make({
        a: [Fake.fail("overloaded", { rawMessage: canary })],
        b: [Fake.defect(`boom ${canary}`)]
      })
      const outcome = yield* runFor(Effect.either(
        Rein.execute({ ...request, prompt: `prompt ${canary}` }, contract()).pipe(
          Effect.provide(layer(fake)),
          Effect.provide(Logger.replace(Logger.defaultLogger, logger)),
          Logger.withMinimumLogLevel(LogLevel.All)
        )
      ))
      const error = failureOf(outcome)
      expect(error._tag).toBe("FailedSafe")
      expect(JSON.stringify(error)).not.toContain(canary)
      expect(JSON.stringify(error.attempts)).not.toContain(canary)
      const logged = (yield* Ref.get(logs)).join("\n")
      expect(logged).toContain("overloaded")
      expect(logged).not.toContain(canary)
    }))
  it.effect("a provider whose call throws synchronously fails safe like a defect inside the effect, and is journaled", () =>
    Effect.gen(function*() {
      const canary = "CANARY-sync-throw-51b2"
      const throwing: Provider.Provider = {
        internalMaxAttempts: 1,
        call: () => {
          throw new Error(`boom ${canary}`)
        }
      }
      const { error, records } = yield* Effect.gen(function*() {
        const error = failureOf(yield* Effect.either(Rein.execute(request, contract())))
        return { error, records: yield* Effect.flatMap(Journal.MemoryJournal, (j) => j.records) }
      }).pipe(
        Effect.provide(
          Layer.merge(Rein.layer({ catalog: defaultCatalog, providers: { fake: throwing } }), Journal.layerMemory)
        )
      )
      expect(error).toMatchObject({ _tag: "FailedSafe", lastFailure: { kind: "unknown", code: "provider_defect" } })
      // `unknown` is never fallen back from: b is not tried.
      expect(error.attempts.map((a) => [a.endpoint, a.status, a.failure])).toEqual([["a", "failure", "unknown"]])
      expect(records).toHaveLength(1)
      expect(records[0]!.outcome._tag).toBe("FailedSafe")
      expect(records[0]!.attempts).toHaveLength(1)
      expect(JSON.stringify(error)).not.toContain(canary)
      expect(Journal.encode(records[0]!)).not.toContain(canary)
    }))

  it.effect("a provider whose call returns something other than an Effect fails safe", () =>
    Effect.gen(function*() {
      const broken = {
        internalMaxAttempts: 1,
        call: () => Promise.resolve({ text: "not an effect", usage: "unknown" })
      } as unknown as Provider.Provider
      const error = failureOf(
        yield* Effect.either(
          Rein.execute(request, contract()).pipe(
            Effect.provide(Rein.layer({ catalog: defaultCatalog, providers: { fake: broken } }))
          )
        )
      )
      expect(error).toMatchObject({ _tag: "FailedSafe", lastFailure: { kind: "unknown", code: "provider_defect" } })
      expect(error.attempts).toHaveLength(1)
    }))
  it.effect("interrupting the caller mid-attempt journals the attempt as interrupted, charged its reservation", () =>
    Effect.gen(function*() {
      const fake = Fake.make({ a: [Fake.hang], b: [Fake.stubborn("1 hour")] })
      const run = (c: ReturnType<typeof contract>) =>
        Effect.gen(function*() {
          const fiber = yield* Effect.fork(Rein.execute(request, c))
          yield* TestClock.adjust("1 second")
          yield* Effect.fork(Fiber.interrupt(fiber))
          yield* TestClock.adjust("1 second")
          return yield* Fiber.await(fiber)
        })
      const [hung, stubborn, records] = yield* Effect.gen(function*() {
        const hung = yield* run(contract({ candidates: ["a"] }))
        const stubborn = yield* run(contract({ candidates: ["b"], teardownGrace: "100 millis" }))
        return [hung, stubborn, yield* Effect.flatMap(Journal.MemoryJournal, (j) => j.records)] as const
      }).pipe(Effect.provide(Layer.merge(layer(fake), Journal.layerMemory)))
      expect(Exit.isInterrupted(hung) && Exit.isInterrupted(stubborn)).toBe(true)
      expect(records.map((r) => r.outcome._tag)).toEqual(["Interrupted", "Interrupted"])
      const worstCase = { cost: 100 * 1e-6 + 100 * 2e-6, tokens: 200 }
      expect(records[0]!.attempts).toHaveLength(1)
      expect(records[0]!.attempts[0]).toMatchObject({
        endpoint: "a",
        status: "interrupted",
        failure: null,
        dispatched: true,
        usage: "unknown",
        startMillis: 0,
        endMillis: 1_000,
        charged: worstCase,
        teardownUnconfirmed: false
      })
      // A provider that ignores interruption: the caller gets its interruption after the grace, and the
      // record says teardown was not confirmed.
      expect(records[1]!.attempts[0]).toMatchObject({
        endpoint: "b",
        status: "interrupted",
        endMillis: 1_100,
        charged: worstCase,
        teardownUnconfirmed: true
      })
      expect(records.map((r) => Journal.replay(r))).toEqual([Either.right(1), Either.right(1)])
      expect(Journal.explain(records[0]!).text).toContain("a interrupted")
    }))
  it.effect("attempt numbers count only non-429 tries; call numbers count every physical call", () =>
    Effect.gen(function*() {
      const fake = Fake.make({
        a: [Fake.fail("rate_limited"), Fake.fail("rate_limited"), Fake.fail("overloaded"), Fake.succeed()]
      })
      const c = contract({
        candidates: ["a"],
        retry: { perEndpoint: 2, rateLimited: 3, base: "100 millis", factor: 2, max: "2 seconds", jitter: 0 }
      })
      const result = yield* runFor(Rein.execute(request, c).pipe(Effect.provide(layer(fake))))
      // The two 429s refused the call: the try after each is the same logical attempt again.
      expect(result.attempts.map((a) => [a.attempt, a.call, a.failure])).toEqual([
        [1, 1, "rate_limited"],
        [1, 2, "rate_limited"],
        [1, 3, "overloaded"],
        [2, 4, null]
      ])
      expect((yield* fake.calls).map((x) => [x.attempt, x.call])).toEqual([[1, 1], [1, 2], [1, 3], [2, 4]])
    }))

  for (const [name, count] of [["NaN", Number.NaN], ["-10", -10], ["2.5", 2.5]] as const) {
    it.effect(`a tokenizer counting ${name} is refused as an invalid request, journaled, the budget untouched`, () =>
      Effect.gen(function*() {
        const fake = Fake.make({ a: [Fake.succeed()] })
        const run = Budget.unsafeMake({ cost: 1 })
        const [result, records] = yield* Effect.zip(
          Effect.either(Rein.execute({ prompt: "hello" }, contract({ budget: { cost: 0.5 } }))),
          Effect.flatMap(Journal.MemoryJournal, (j) => j.records)
        ).pipe(
          Effect.provide(Layer.merge(
            Rein.layer({ catalog: defaultCatalog, providers: { fake: fake.provider }, tokenizer: () => count }),
            Journal.layerMemory
          )),
          Effect.provideService(Budget.SharedBudget, run)
        )
        expect(Either.isLeft(result) && result.left).toMatchObject({ _tag: "Refused", refusal: "invalid_request" })
        expect((yield* fake.calls).length).toBe(0)
        expect(run.unsafeLeft!().cost).toBe(1)
        expect(records.map((r) => r.spec.inputTokens)).toEqual([null])
        expect(() => Journal.encode(records[0]!)).not.toThrow()
      }))
  }
})
