import { describe, expect, it } from "@effect/vitest"
import { Budget, Failure, Fake, Health, Rein } from "@rein/core"
import type { Outcome, Provider } from "@rein/core"
import { Clock, Effect, Either, FastCheck as fc, Fiber, Layer, Metric, MetricLabel, Ref, TestClock } from "effect"
import { catalog, contract, endpoint } from "./fixtures.js"

const cat = catalog(endpoint("a"), endpoint("b"))
const request = { prompt: "p", inputTokens: 10, maxOutputTokens: 10 }

/** Runs `effect` with the test clock at `millis` (health reads its time from the clock). */
const at = <A, E>(millis: number, effect: Effect.Effect<A, E>): Effect.Effect<A, E> =>
  Effect.zipRight(TestClock.setTime(millis), effect)

/**
 * Lets the other fibers run `turns` times over before going on: the interleavings of concurrent acquisitions,
 * drawn by the properties, without the test clock (each instant `TestClock.adjust` wakes costs a few real
 * milliseconds while it waits for the fibers to settle, so sleeps of many distinct lengths made these properties
 * take seconds of waiting).
 */
const pause = (turns: number): Effect.Effect<void> =>
  Effect.repeatN(Effect.yieldNow(), turns - 1).pipe(
    Effect.when(() => turns > 0),
    Effect.asVoid
  )

/** A Rein layer over a given Health instance, so the test can inspect it. */
const withHealth = (health: Health.Service, provider: Provider.Provider) =>
  Layer.merge(
    Rein.layer({ catalog: cat, providers: { fake: provider }, health: false }),
    Layer.succeed(Health.Health, health)
  )

describe("Health: breakers", () => {
  it.effect.prop(
    "at most K probes are ever in flight against a half-open endpoint",
    [fc.integer({ min: 1, max: 4 }), fc.array(fc.integer({ min: 0, max: 50 }), { minLength: 5, maxLength: 30 })],
    ([k, delays]) =>
      Effect.gen(function*() {
        const health = yield* Health.make({ consecutiveFailures: 1, probes: k, cooldown: 1_000 })
        // Open the breaker, then let its cooldown pass: half-open.
        const opener = yield* health.acquire("a", "first")
        yield* health.complete(opener, { _tag: "failure", kind: "overloaded", retryAfterMillis: null })
        yield* TestClock.adjust(1_000)
        const inFlight = yield* Ref.make(0)
        const peak = yield* Ref.make(0)
        const probe = (delay: number) =>
          Effect.gen(function*() {
            yield* pause(delay)
            const permit = yield* Effect.either(health.acquire("a", "first"))
            if (Either.isLeft(permit)) return
            const n = yield* Ref.updateAndGet(inFlight, (x) => x + 1)
            yield* Ref.update(peak, (p) => Math.max(p, n))
            yield* pause(delay % 7 + 1)
            yield* Ref.update(inFlight, (x) => x - 1)
            // Neutral outcomes give the slot back without a transition, so probing goes on.
            yield* health.complete(permit.right, { _tag: "neutral" })
          })
        const fibers = yield* Effect.forEach(delays, (d) => Effect.fork(probe(d)))
        yield* Effect.forEach(fibers, Fiber.join)
        expect(yield* Ref.get(peak)).toBeLessThanOrEqual(k)
        expect(yield* Ref.get(peak)).toBeGreaterThan(0)
      })
  )

  it.effect.prop(
    "unsafeBreaker reads what breaker reads, at any time after any results (also while degraded)",
    [
      fc.array(fc.tuple(fc.integer({ min: 0, max: 3_000 }), fc.constantFrom("success", "overloaded", "degrade")), {
        minLength: 1,
        maxLength: 25
      })
    ],
    ([steps]) =>
      Effect.gen(function*() {
        const health = yield* Health.make({ consecutiveFailures: 2, cooldown: 1_000 })
        let now = 0
        for (const [dt, step] of steps) {
          now += dt
          yield* TestClock.setTime(now)
          if (step === "degrade") yield* health.degrade("a")
          else {
            const permit = yield* Effect.either(health.acquire("a", "first"))
            if (Either.isRight(permit)) {
              yield* health.complete(
                permit.right,
                step === "success"
                  ? { _tag: "success" }
                  : { _tag: "failure", kind: "overloaded", retryAfterMillis: null }
              )
            }
          }
          const nanos = yield* Clock.currentTimeNanos
          for (const id of ["a", "b"]) expect(health.unsafeBreaker?.(nanos, id)).toBe(yield* health.breaker(id))
        }
      }),
    // Each instant set on the test clock costs real milliseconds: fewer runs, each of up to 25 instants.
    { fastCheck: { numRuns: 30 } }
  )

  // DESIGN, the failure table: `rate_limited` is retried on the same endpoint after max(backoff, Retry-After) and
  // counts against endpoint health (as one failure); Health: closed → open after N provider-attributed failures.
  it.effect("a lone 429 with Retry-After 30 s leaves the breaker closed; the retry waits 30 s on the same endpoint", () =>
    Effect.gen(function*() {
      const health = yield* Health.make()
      const fake = Fake.make({ a: [Fake.fail("rate_limited", { retryAfter: "30 seconds" }), Fake.succeed()] })
      const c = contract({ candidates: ["a"], deadline: "60 seconds", retry: { base: "100 millis", jitter: 0 } })
      const fiber = yield* Effect.fork(Rein.execute(request, c).pipe(Effect.provide(withHealth(health, fake.provider))))
      yield* TestClock.adjust("1 millis")
      // The 429 has landed: one failure, the breaker still closed, so another request may start on `a` meanwhile.
      expect((yield* fake.calls).length).toBe(1)
      expect(yield* health.breaker("a")).toBe("closed")
      yield* TestClock.adjust("29998 millis")
      expect((yield* fake.calls).length).toBe(1)
      yield* TestClock.adjust("1 millis")
      const answer = yield* Fiber.join(fiber)
      expect(answer.endpoint).toBe("a")
      expect(answer.attempts.map((a) => [a.endpoint, a.role])).toEqual([["a", "first"], ["a", "retry"]])
      expect(answer.attempts[1]!.startMillis - answer.attempts[0]!.endMillis).toBe(30_000)
      expect(yield* health.breaker("a")).toBe("closed")
    }))

  // DESIGN, Health and storm control: open after N provider-attributed failures → half-open after a cooldown
  // (Retry-After can lengthen, never shorten it).
  it.effect("5 consecutive 429s open the breaker for max(cooldown, Retry-After); a later 1 s Retry-After does not shorten it", () =>
    Effect.gen(function*() {
      const health = yield* Health.make()
      const rateLimited = (retryAfterMillis: number) =>
        ({ _tag: "failure", kind: "rate_limited", retryAfterMillis }) as const
      const permits = yield* at(0, Effect.all(Array.from({ length: 6 }, () => health.acquire("a", "first"))))
      for (const p of permits.slice(0, 4)) {
        yield* at(0, health.complete(p, rateLimited(30_000)))
        expect(yield* at(0, health.breaker("a"))).toBe("closed")
      }
      yield* at(0, health.complete(permits[4]!, rateLimited(30_000)))
      expect(yield* at(0, health.breaker("a"))).toBe("open")
      yield* at(1_000, health.complete(permits[5]!, rateLimited(1_000)))
      expect(yield* at(2_001, health.breaker("a"))).toBe("open")
      expect(yield* at(29_999, health.breaker("a"))).toBe("open")
      expect(yield* at(30_000, health.breaker("a"))).toBe("half_open")
      const view = yield* at(10_000, health.view(["a"]))
      expect(view.health.a).toMatchObject({ state: "open", opensInMillis: 20_000 })
    }))

  it.effect.each(
    [
      ["retry-after-ms", { "retry-after-ms": "1000000000000000" }],
      ["retry-after seconds", { "retry-after": "1000000000000" }],
      ["retry-after seconds beyond a double", { "retry-after": "9".repeat(400) }],
      ["an HTTP date a year away", { "retry-after": "Fri, 01 Jan 2027 00:00:00 GMT" }]
    ] as const
  )(
    "a 429 whose %s is huge and trips the breaker keeps it open for the contract's maxRetryAfter (10 minutes), no longer",
    ([, headers]) =>
      Effect.gen(function*() {
        // One failure trips here (consecutiveFailures: 1): the Retry-After lengthens the 5 s cooldown.
        const health = yield* Health.make({ consecutiveFailures: 1 })
        const retryAfterMillis = Failure.parseRetryAfter(headers, Date.UTC(2026, 0, 1))
        const provider: Provider.Provider = {
          internalMaxAttempts: 1,
          call: (_req, ctx) =>
            ctx.endpoint.id === "a"
              ? Effect.fail(Failure.fromEvidence({ status: 429 }, { dispatched: true, retryAfterMillis }))
              : Effect.succeed({ text: "ok", usage: { inputTokens: 1, outputTokens: 1 } })
        }
        const c = contract({ deadline: "10 seconds", retry: { perEndpoint: 0 } })
        const answer = yield* Rein.execute(request, c).pipe(Effect.provide(withHealth(health, provider)))
        expect(answer.endpoint).toBe("b")
        expect(answer.attempts[0]!.retryAfterMillis).toBe(600_000)
        expect(yield* at(599_999, health.breaker("a"))).toBe("open")
        expect(yield* at(600_000, health.breaker("a"))).toBe("half_open")
      })
  )

  it.effect("the contract's retry.maxRetryAfter is the one bound on every provider's Retry-After", () =>
    Effect.gen(function*() {
      const health = yield* Health.make({ consecutiveFailures: 1 })
      const fake = Fake.make({ a: [Fake.fail("rate_limited", { retryAfter: "1000 days" })], b: [Fake.succeed()] })
      const c = contract({ deadline: "10 seconds", retry: { perEndpoint: 0, maxRetryAfter: "1 minute" } })
      const answer = yield* Rein.execute(request, c).pipe(Effect.provide(withHealth(health, fake.provider)))
      expect(answer.attempts[0]!.retryAfterMillis).toBe(60_000)
      expect(yield* at(59_999, health.breaker("a"))).toBe("open")
      expect(yield* at(60_000, health.breaker("a"))).toBe("half_open")
    }))

  it.effect("a probe failure reopens with a grown cooldown; a probe success closes", () =>
    Effect.gen(function*() {
      const health = yield* Health.make({
        consecutiveFailures: 1,
        cooldown: 1_000,
        cooldownGrowth: 2,
        maxCooldown: 3_000
      })
      const fail = { _tag: "failure", kind: "server_error", retryAfterMillis: null } as const
      yield* at(0, health.complete(yield* at(0, health.acquire("a", "first")), fail))
      const probe1 = yield* at(1_000, health.acquire("a", "first"))
      expect(probe1.probe).toBe(true)
      yield* at(1_000, health.complete(probe1, fail))
      expect(yield* at(2_999, health.breaker("a"))).toBe("open")
      const probe2 = yield* at(3_000, health.acquire("a", "first"))
      yield* at(3_000, health.complete(probe2, fail))
      // Grown to 4 s but bounded by the 3 s maximum.
      expect(yield* at(5_999, health.breaker("a"))).toBe("open")
      const probe3 = yield* at(6_000, health.acquire("a", "first"))
      yield* at(6_000, health.complete(probe3, { _tag: "success" }))
      expect(yield* at(6_000, health.breaker("a"))).toBe("closed")
    }))

  it.effect("the failure ratio over the window opens the breaker once the minimum volume is reached", () =>
    Effect.gen(function*() {
      const health = yield* Health.make({
        consecutiveFailures: 100,
        windowSize: 10,
        minimumVolume: 10,
        failureRatio: 0.5
      })
      const outcome = (ok: boolean) =>
        Effect.flatMap(
          at(0, health.acquire("a", "first")),
          (p) =>
            at(
              0,
              health.complete(
                p,
                ok ? { _tag: "success" } : { _tag: "failure", kind: "overloaded", retryAfterMillis: null }
              )
            )
        )
      for (const ok of [true, false, true, false, true, false, true, false, true]) yield* outcome(ok)
      expect(yield* at(0, health.breaker("a"))).toBe("closed")
      yield* outcome(false)
      expect(yield* at(0, health.breaker("a"))).toBe("open")
    }))
})

describe("Health: a fast path that declines", () => {
  it.effect("an unsafeAcquire that cannot answer (undefined) sends the executor to acquire, for every role", () =>
    Effect.gen(function*() {
      const inner = yield* Health.make()
      const roles: Array<string> = []
      // A shared store's shape: first attempts answered here, retries and fallbacks only through the effect.
      const declining: Health.Service = {
        ...inner,
        acquire: (endpoint, role, options) => {
          roles.push(role)
          return inner.acquire(endpoint, role, options)
        },
        unsafeAcquire: (atNanos, endpoint, role, candidates) =>
          role === "first" ? inner.unsafeAcquire!(atNanos, endpoint, role, candidates) : undefined
      }
      const fake = Fake.make({ a: [Fake.fail("overloaded")], b: [Fake.succeed()] })
      const c = contract({ retry: { perEndpoint: 0, base: 10, jitter: 0 } })
      const answer = yield* Rein.execute(request, c).pipe(Effect.provide(withHealth(declining, fake.provider)))
      expect(answer.endpoint).toBe("b")
      expect(roles).toEqual(["fallback"])
    }))
})

describe("Health: retry budgets", () => {
  it.effect.prop(
    "with B retry tokens, at most B retries and fallbacks are admitted, whatever the interleaving",
    [fc.integer({ min: 1, max: 10 }), fc.array(fc.integer({ min: 0, max: 20 }), { minLength: 1, maxLength: 60 })],
    ([b, delays]) =>
      Effect.gen(function*() {
        const health = yield* Health.make({ capacity: b, depositRatio: 0 })
        const admitted = yield* Ref.make(0)
        const fibers = yield* Effect.forEach(delays, (d, i) =>
          Effect.fork(Effect.gen(function*() {
            yield* pause(d)
            const role = i % 2 === 0 ? "retry" : "fallback"
            const permit = yield* Effect.either(at(0, health.acquire(i % 3 === 0 ? "a" : "b", role)))
            if (Either.isRight(permit)) yield* Ref.update(admitted, (n) => n + 1)
          })))
        yield* Effect.forEach(fibers, Fiber.join)
        expect(yield* Ref.get(admitted)).toBeLessThanOrEqual(b)
      })
  )
})

describe("Health: retry budgets per endpoint", () => {
  const op = fc.oneof(
    fc.record({ first: fc.constantFrom("a", "b", "c"), candidates: fc.subarray(["a", "b", "c"]) }),
    fc.record({ extra: fc.constantFrom("a", "b", "c"), role: fc.constantFrom("retry" as const, "fallback" as const) })
  )
  it.effect.prop(
    "extra attempts on an endpoint ≤ capacity + ratio × first attempts of the requests listing it; globally ≤ capacity + ratio × first attempts",
    [fc.integer({ min: 1, max: 5 }), fc.constantFrom(0.1, 0.2, 0.5), fc.array(op, { maxLength: 200 })],
    ([capacity, depositRatio, ops]) =>
      Effect.gen(function*() {
        const health = yield* Health.make({ capacity, depositRatio })
        const listed: Record<string, number> = { a: 0, b: 0, c: 0 }
        const extras: Record<string, number> = { a: 0, b: 0, c: 0 }
        let firsts = 0
        let total = 0
        for (const o of ops) {
          if ("first" in o) {
            const candidates = [o.first, ...o.candidates.filter((c) => c !== o.first)]
            yield* at(0, health.acquire(o.first, "first", { candidates }))
            firsts++
            for (const c of candidates) listed[c]!++
          } else {
            const permit = yield* Effect.either(at(0, health.acquire(o.extra, o.role)))
            if (Either.isRight(permit)) {
              extras[o.extra]!++
              total++
            }
          }
        }
        expect(total).toBeLessThanOrEqual(capacity + depositRatio * firsts + 1e-9)
        for (const id of ["a", "b", "c"]) {
          expect(extras[id]).toBeLessThanOrEqual(capacity + depositRatio * listed[id]! + 1e-9)
        }
      })
  )
})

describe("Health: attribution under traffic", () => {
  it.effect(
    "an outage: a opens, traffic falls back to b, a is probed each cooldown and closes after recovery",
    () =>
      Effect.gen(function*() {
        const health = yield* Health.make({ cooldown: 5_000, cooldownGrowth: 2, maxCooldown: 20_000, probes: 1 })
        const fake = Fake.make({
          a: [
            Fake.dynamic((now) =>
              now < 300_000 ? Fake.fail("overloaded", { latency: 50 }) : Fake.succeed({ latency: 50 })
            )
          ],
          b: [Fake.succeed({ latency: 50 })]
        })
        const probesInFlight = yield* Ref.make(0)
        const peakProbes = yield* Ref.make(0)
        const callsToA = yield* Ref.make<Array<number>>([])
        const provider: Provider.Provider = {
          ...fake.provider,
          call: (req, ctx) =>
            Effect.gen(function*() {
              const now = yield* Clock.currentTimeMillis
              if (ctx.endpoint.id !== "a") return yield* fake.provider.call(req, ctx)
              yield* Ref.update(callsToA, (xs) => [...xs, now])
              const probing = (yield* health.breaker("a")) === "half_open"
              if (!probing) return yield* fake.provider.call(req, ctx)
              const n = yield* Ref.updateAndGet(probesInFlight, (x) => x + 1)
              yield* Ref.update(peakProbes, (p) => Math.max(p, n))
              return yield* fake.provider.call(req, ctx).pipe(Effect.ensuring(Ref.update(probesInFlight, (x) => x - 1)))
            })
        }
        const c = contract({ deadline: "5 seconds", retry: { perEndpoint: 1, base: 100, max: 1_000, jitter: 0 } })
        // Steady traffic: a request every second for ten virtual minutes.
        const outcomes: Array<Fiber.RuntimeFiber<Either.Either<Outcome.Completion, Outcome.Terminal>>> = []
        const traffic = Effect.gen(function*() {
          for (let t = 0; t < 600_000; t += 1_000) {
            outcomes.push(
              yield* Effect.fork(
                Effect.either(Rein.execute(request, c).pipe(Effect.provide(withHealth(health, provider))))
              )
            )
            yield* Effect.sleep(1_000)
          }
        })
        const driver = yield* Effect.fork(traffic)
        yield* TestClock.adjust(610_000)
        yield* Fiber.join(driver)
        const results = yield* Effect.forEach(outcomes, Fiber.join)
        const completions = results.filter(Either.isRight).map((r) => r.right)
        expect(completions.length).toBe(results.length)
        expect(yield* Ref.get(peakProbes)).toBe(1)
        const aCalls = yield* Ref.get(callsToA)
        const during = aCalls.filter((t) => t > 10_000 && t < 300_000)
        // Open for most of the outage: a handful of probes, not thousands of calls.
        expect(during.length).toBeLessThan(40)
        expect(during.length).toBeGreaterThan(5)
        expect(yield* at(600_000, health.breaker("a"))).toBe("closed")
        // After recovery, traffic is back on a.
        expect(completions.slice(-20).every((c) => c.endpoint === "a")).toBe(true)
        // Extra attempts (retries and fallbacks) stay inside the retry budget: capacity + ratio × first attempts.
        const attempts = completions.flatMap((c) => c.attempts)
        const first = attempts.filter((a) => a.role === "first").length
        const extra = attempts.filter((a) => a.role !== "first").length
        expect(extra).toBeLessThanOrEqual(10 + 0.2 * first)
      }),
    { timeout: 120_000 }
  )

  it.effect.prop(
    "a stalling endpoint never opens its breaker; its fallbacks track capacity + depositRatio × first attempts",
    [
      fc.integer({ min: 1, max: 10 }),
      fc.constantFrom(0.1, 0.2, 0.25, 0.5),
      fc.integer({ min: 20, max: 120 })
    ],
    ([capacity, depositRatio, n]) =>
      Effect.gen(function*() {
        const health = yield* Health.make({ capacity, depositRatio })
        const fake = Fake.make({ a: [Fake.hang], b: [Fake.succeed()] })
        const c = contract({ deadline: "10 seconds", attemptTimeout: "1 second", retry: { perEndpoint: 0 } })
        let fallbacks = 0
        for (let k = 1; k <= n; k++) {
          const fiber = yield* Effect.fork(
            Effect.either(Rein.execute(request, c).pipe(Effect.provide(withHealth(health, fake.provider))))
          )
          yield* TestClock.adjust("2 seconds")
          const result = yield* Fiber.join(fiber)
          if (Either.isRight(result)) fallbacks++
          else expect(result.left._tag).toBe("PlanExhausted")
          // Every request's first attempt is on a: the bound after k of them is capacity + ratio × k. The
          // fallbacks never exceed it, and (one per request at most) never fall more than a token plus the
          // first deposit (lost to the full bucket) behind it: one fallback per 1 / ratio requests, for good.
          const bound = capacity + depositRatio * k
          expect(fallbacks).toBeLessThanOrEqual(bound + 1e-9)
          expect(fallbacks).toBeGreaterThanOrEqual(Math.min(k, bound - depositRatio - 1 - 1e-9))
        }
        expect(yield* at(4 * n * 1_000, health.breaker("a"))).toBe("closed")
        expect((yield* fake.calls).filter((x) => x.endpoint === "a").length).toBe(n)
      }),
    { timeout: 120_000, fastCheck: { numRuns: 10 } }
  )

  it.effect("an impatient caller (50 ms deadline) never opens a healthy 100 ms endpoint's breaker", () =>
    Effect.gen(function*() {
      const health = yield* Health.make()
      const fake = Fake.make({ a: [Fake.succeed({ latency: 100 })] })
      const c = contract({ deadline: "50 millis", candidates: ["a"] })
      for (let i = 0; i < 100; i++) {
        const fiber = yield* Effect.fork(
          Effect.either(Rein.execute(request, c).pipe(Effect.provide(withHealth(health, fake.provider))))
        )
        yield* TestClock.adjust("100 millis")
        const result = yield* Fiber.join(fiber)
        expect(Either.isLeft(result) && result.left._tag).toBe("DeadlineExceeded")
      }
      expect(yield* at(10_000, health.breaker("a"))).toBe("closed")
    }))
})

describe("Health: a refusal after the budget reservation", () => {
  /** A health that refuses the first acquisition (as if another request took the slot since the snapshot). */
  const refusingOnce = (inner: Health.Service, fast: boolean): Health.Service => {
    let refused = false
    const { unsafeAcquire, unsafeComplete, unsafeView } = inner
    return {
      config: inner.config,
      view: inner.view,
      complete: inner.complete,
      degrade: inner.degrade,
      breaker: inner.breaker,
      acquire: (endpoint, role, options) => {
        if (refused) return inner.acquire(endpoint, role, options)
        refused = true
        return Effect.fail("no_probe_slot")
      },
      ...(fast && unsafeAcquire !== undefined && unsafeComplete !== undefined && unsafeView !== undefined
        ? {
          unsafeView,
          unsafeComplete,
          unsafeAcquire: (atNanos, endpoint, role, candidates) => {
            if (refused) return unsafeAcquire(atNanos, endpoint, role, candidates)
            refused = true
            return Either.left("no_probe_slot")
          }
        }
        : {})
    }
  }

  for (const fast of [false, true]) {
    it.effect(
      `gives the call back with the rest: a one-call cap still makes its call (${fast ? "fast path" : "effects"})`,
      () =>
        Effect.gen(function*() {
          const fake = Fake.make({ a: [Fake.succeed({ text: "ok" })] })
          const health = refusingOnce(yield* Health.make(), fast)
          const run = Budget.unsafeMake({ calls: 5 })
          const answer = yield* Rein.execute(request, contract({ candidates: ["a"], budget: { calls: 1 } })).pipe(
            Effect.provide(withHealth(health, fake.provider)),
            Effect.provideService(Budget.SharedBudget, run)
          )
          expect(answer.text).toBe("ok")
          expect((yield* fake.calls).length).toBe(1)
          // One call made, one call taken from the run's cap.
          expect(run.unsafeLeft!().calls).toBe(4)
        })
    )

    it.effect(`a refused admission is counted in rein_admissions_refused_total by its reason (${fast ? "fast path" : "effects"})`, () =>
      Effect.gen(function*() {
        const refused = Metric.taggedWithLabels(
          Metric.counter("rein_admissions_refused_total", {
            description: "Attempts refused by health, per reason",
            incremental: true
          }),
          [MetricLabel.make("reason", "no_probe_slot")]
        )
        const before = (yield* Metric.value(refused)).count
        const fake = Fake.make({ a: [Fake.succeed({ text: "ok" })] })
        const health = refusingOnce(yield* Health.make(), fast)
        const answer = yield* Rein.execute(request, contract({ candidates: ["a"] })).pipe(
          Effect.provide(withHealth(health, fake.provider))
        )
        expect(answer.text).toBe("ok")
        expect((yield* Metric.value(refused)).count).toBe(before + 1)
      }))
  }
})
