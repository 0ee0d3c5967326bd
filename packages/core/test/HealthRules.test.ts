import { describe, expect, it } from "@effect/vitest"
import { Failure, Fake, Health, Rein } from "@rein/core"
import { Duration, Effect, Either, FastCheck as fc, Layer, Metric, TestClock } from "effect"
import { catalog, contract, endpoint } from "./fixtures.js"

// Health's exact answers at its boundaries (issue #23): when a breaker trips, what a failure or a success that
// lands late does, what a Retry-After may change, what the planner's view says, and what is published. Each
// expectation is a value a wrong comparison, a wrong sign or a dropped branch in `Health.ts` would change.

const SUCCESS: Health.Result = { _tag: "success" }
const NEUTRAL: Health.Result = { _tag: "neutral" }
const failure = (
  kind: "server_error" | "overloaded" | "rate_limited" = "server_error",
  retryAfterMillis: number | null = null
): Health.Result => ({
  _tag: "failure",
  kind,
  retryAfterMillis
})

/** Runs `effect` with the test clock at `millis`. */
const at = <A, E>(millis: number, effect: Effect.Effect<A, E>): Effect.Effect<A, E> =>
  Effect.zipRight(TestClock.setTime(millis), effect)

const admitted = <E>(effect: Effect.Effect<Health.Permit, E>) => Effect.map(Effect.either(effect), Either.isRight)

describe("Health: when a breaker trips", () => {
  // A model of the rules: the last `windowSize` outcomes (the size clamped to 1 … 30 and whole), and the failures
  // in a row. A failure trips when the failures in a row reach `consecutiveFailures`, or when the window holds at
  // least `minimumVolume` outcomes and its failure ratio is `failureRatio` or more.
  // Over the pure transitions (`admit`, `settle`, `current`) that the in-process health and the shared stores
  // both apply: one synchronous step per outcome, so 300 cases cost milliseconds.
  it("the breaker opens exactly when k failures in a row, or the last windowSize outcomes (1 … 30), reach the bounds", () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.integer({ min: -2, max: 40 }), fc.constantFrom(2.5, 7.9, 30.5)),
        fc.integer({ min: 1, max: 32 }),
        fc.constantFrom(0.1, 0.25, 0.5, 0.75, 1),
        fc.integer({ min: 1, max: 40 }),
        fc.array(fc.boolean(), { maxLength: 80 }),
        (windowSize, minimumVolume, failureRatio, consecutiveFailures, outcomes) => {
          const settings = Health.settingsOf({
            ...Health.defaults,
            windowSize,
            minimumVolume,
            failureRatio,
            consecutiveFailures
          })
          const size = Math.max(1, Math.min(30, Math.floor(windowSize)))
          const window: Array<boolean> = []
          let inARow = 0
          let e = Health.freshState(settings)
          for (const [i, failed] of outcomes.entries()) {
            const admitted = Either.getOrThrow(Health.admit(settings, e, 0, "first", null))
            e = Health.settle(settings, admitted.next, 0, { probe: admitted.probe }, failed ? failure() : SUCCESS)
            window.push(failed)
            if (window.length > size) window.shift()
            inARow = failed ? inARow + 1 : 0
            const failures = window.filter((f) => f).length
            const trips = failed &&
              (inARow >= consecutiveFailures ||
                (window.length >= minimumVolume && failures / window.length >= failureRatio))
            expect({ i, state: Health.current(e, 0) }).toEqual({ i, state: trips ? "open" : "closed" })
            if (trips) return
          }
        }
      ),
      { numRuns: 300, seed: 23 }
    )
  })

  it.effect("a window of outcomes slides: old failures leave it, and a low ratio never trips however full", () =>
    Effect.gen(function*() {
      const health = yield* Health.make({
        windowSize: 4,
        minimumVolume: 4,
        failureRatio: 0.5,
        consecutiveFailures: 100
      })
      const outcome = (failed: boolean) =>
        Effect.flatMap(health.acquire("a", "first"), (p) => health.complete(p, failed ? failure() : SUCCESS))
      // F S S S: one failure in four.
      for (const failed of [true, false, false, false]) yield* outcome(failed)
      // S S S F: the first failure has left the window; one in four again.
      yield* outcome(true)
      expect(yield* health.breaker("a")).toBe("closed")
      // S S F F: two in four.
      yield* outcome(true)
      expect(yield* health.breaker("a")).toBe("open")
    }))
})

describe("Health: attribution", () => {
  it("a failure kind counts against an endpoint exactly when the table's health column says so", () => {
    expect(Health.attributed(Failure.defaultTable, "server_error")).toBe(true)
    expect(Health.attributed(Failure.defaultTable, "timeout")).toBe(false)
    const table = { ...Failure.defaultTable, timeout: { ...Failure.defaultTable.timeout, health: true } }
    expect(Health.attributed(table, "timeout")).toBe(true)
  })
})

describe("Health: every outcome is kept, even one that changes a single count", () => {
  /** Outcomes on endpoint `a` of `health`, in order (`true`: a provider-attributed failure). */
  const outcomes = (health: Health.Service, failed: ReadonlyArray<boolean>) =>
    Effect.forEach(
      failed,
      (f) => Effect.flatMap(health.acquire("a", "first"), (p) => health.complete(p, f ? failure() : SUCCESS)),
      {
        discard: true
      }
    )

  it.effect("a success that only slides a full window (F F S, then S) is kept: one failure in the window, not two", () =>
    Effect.gen(function*() {
      const health = yield* Health.make({
        windowSize: 3,
        minimumVolume: 3,
        failureRatio: 0.6,
        consecutiveFailures: 100
      })
      yield* outcomes(health, [true, true, false, false, true])
      expect(yield* health.breaker("a")).toBe("closed")
    }))

  it.effect("successes that only lengthen the window are kept: S S S F is one failure in four", () =>
    Effect.gen(function*() {
      const health = yield* Health.make({
        windowSize: 4,
        minimumVolume: 4,
        failureRatio: 0.25,
        consecutiveFailures: 100
      })
      yield* outcomes(health, [false, false, true])
      expect(yield* health.breaker("a")).toBe("closed")
      yield* outcomes(health, [true])
      expect(yield* health.breaker("a")).toBe("open")
    }))

  it.effect("a failure that only counts one more in a row (the window all failures) is kept", () =>
    Effect.gen(function*() {
      const health = yield* Health.make({ windowSize: 2, minimumVolume: 100, consecutiveFailures: 4 })
      yield* outcomes(health, [true, true, true])
      expect(yield* health.breaker("a")).toBe("closed")
      yield* outcomes(health, [true])
      expect(yield* health.breaker("a")).toBe("open")
    }))
})

describe("Health: outcomes that land late", () => {
  it.effect("a success that lands after another request opened the breaker leaves it open", () =>
    Effect.gen(function*() {
      const health = yield* Health.make({ consecutiveFailures: 1, cooldown: 1_000 })
      const first = yield* at(0, health.acquire("a", "first"))
      const second = yield* at(0, health.acquire("a", "first"))
      yield* at(10, health.complete(first, failure()))
      yield* at(20, health.complete(second, SUCCESS))
      expect(yield* at(999, health.breaker("a"))).toBe("open")
      expect(yield* at(1_010, health.breaker("a"))).toBe("half_open")
    }))

  it.effect("a failure that lands on an open breaker does not lengthen its cooldown; a longer Retry-After does", () =>
    Effect.gen(function*() {
      const health = yield* Health.make({ consecutiveFailures: 1, cooldown: 5_000 })
      const permits = (id: string) => Effect.all(Array.from({ length: 3 }, () => health.acquire(id, "first")))
      const [a0, a1, a2] = yield* at(0, permits("a"))
      const [b0, b1, b2] = yield* at(0, permits("b"))
      yield* at(0, Effect.all([health.complete(a0!, failure()), health.complete(b0!, failure())]))
      // On a, a failure with no Retry-After, then a shorter Retry-After: nothing changes.
      yield* at(4_000, health.complete(a1!, failure("overloaded")))
      yield* at(4_000, health.complete(a2!, failure("rate_limited", 500)))
      // On b, a longer Retry-After extends the open time to its end (a failure after it changes nothing).
      yield* at(4_000, health.complete(b1!, failure("rate_limited", 3_000)))
      yield* at(4_000, health.complete(b2!, failure("overloaded")))
      expect(yield* at(4_999, Effect.all([health.breaker("a"), health.breaker("b")]))).toEqual(["open", "open"])
      expect(yield* at(5_000, Effect.all([health.breaker("a"), health.breaker("b")]))).toEqual(["half_open", "open"])
      expect(yield* at(6_999, health.breaker("b"))).toBe("open")
      expect(yield* at(7_000, health.breaker("b"))).toBe("half_open")
    }))

  it.effect("a late success that is not a probe closes a half-open breaker but keeps its grown cooldown", () =>
    Effect.gen(function*() {
      const health = yield* Health.make({ consecutiveFailures: 1, cooldown: 1_000, cooldownGrowth: 2 })
      const early = yield* at(0, health.acquire("a", "first"))
      yield* at(0, health.complete(yield* at(0, health.acquire("a", "first")), failure()))
      yield* at(1_000, health.complete(yield* at(1_000, health.acquire("a", "first")), failure()))
      // Half-open again at 3 s with a 2 s cooldown; a probe is in flight when the early attempt succeeds.
      const probe = yield* at(3_000, health.acquire("a", "first"))
      yield* at(3_000, health.complete(early, SUCCESS))
      yield* at(3_000, health.complete(probe, NEUTRAL))
      expect(yield* at(3_000, health.breaker("a"))).toBe("closed")
      // Only a probe's success proves recovery: the next trip waits the grown 2 s, not the first 1 s.
      yield* at(3_000, health.complete(yield* at(3_000, health.acquire("a", "first")), failure()))
      expect(yield* at(4_999, health.breaker("a"))).toBe("open")
      expect(yield* at(5_000, health.breaker("a"))).toBe("half_open")
    }))

  it.effect("a failed probe keeps the longer Retry-After that reopened the breaker while it was in flight", () =>
    Effect.gen(function*() {
      const health = yield* Health.make({ consecutiveFailures: 1, cooldown: 1_000, cooldownGrowth: 2 })
      const early = yield* at(0, health.acquire("a", "first"))
      yield* at(0, health.complete(yield* at(0, health.acquire("a", "first")), failure()))
      const probe = yield* at(1_000, health.acquire("a", "first"))
      expect(probe.probe).toBe(true)
      // An attempt admitted before the breaker opened fails with a 60 s Retry-After, then the probe fails.
      yield* at(1_000, health.complete(early, failure("rate_limited", 60_000)))
      yield* at(1_000, health.complete(probe, failure()))
      expect(yield* at(60_999, health.breaker("a"))).toBe("open")
      expect(yield* at(61_000, health.breaker("a"))).toBe("half_open")
    }))

  it.effect("a probe's success ends the open time: a Retry-After that landed while it was in flight does not outlast it", () =>
    Effect.gen(function*() {
      const health = yield* Health.make({ consecutiveFailures: 1, cooldown: 1_000 })
      const early = yield* at(0, health.acquire("a", "first"))
      yield* at(0, health.complete(yield* at(0, health.acquire("a", "first")), failure()))
      const probe = yield* at(1_000, health.acquire("a", "first"))
      expect(probe.probe).toBe(true)
      // An attempt admitted before the breaker opened fails with a 60 s Retry-After, then the probe succeeds.
      yield* at(1_000, health.complete(early, failure("rate_limited", 60_000)))
      yield* at(1_000, health.complete(probe, SUCCESS))
      expect(yield* at(1_000, health.breaker("a"))).toBe("closed")
      expect((yield* at(1_000, health.view(["a"]))).health.a).toEqual({
        state: "closed",
        probesFree: 1,
        opensInMillis: 0
      })
      // The next trip opens for the cooldown from its own failure, not until the old Retry-After's end.
      yield* at(2_000, health.complete(yield* at(2_000, health.acquire("a", "first")), failure()))
      expect(yield* at(2_999, health.breaker("a"))).toBe("open")
      expect(yield* at(3_000, health.breaker("a"))).toBe("half_open")
    }))
})

describe("Health: Retry-After", () => {
  // DESIGN: `rate_limited` counts against endpoint health (as one failure); closed → open after N failures →
  // half-open after a cooldown (Retry-After can lengthen, never shorten it).
  it.effect("a Retry-After never opens a closed breaker by itself; when failures trip it, only a rate limit's lengthens the cooldown", () =>
    Effect.gen(function*() {
      const health = yield* Health.make({ consecutiveFailures: 2, cooldown: 5_000 })
      yield* at(0, health.complete(yield* health.acquire("a", "first"), failure("overloaded", 30_000)))
      expect(yield* at(0, health.breaker("a"))).toBe("closed")
      yield* at(0, health.complete(yield* health.acquire("a", "first"), failure("overloaded", 30_000)))
      expect(yield* at(4_999, health.breaker("a"))).toBe("open")
      expect(yield* at(5_000, health.breaker("a"))).toBe("half_open")
      yield* at(0, health.complete(yield* at(0, health.acquire("b", "first")), failure("rate_limited", 30_000)))
      expect(yield* at(0, health.breaker("b"))).toBe("closed")
      expect(yield* at(0, admitted(health.acquire("b", "first")))).toBe(true)
      yield* at(10, health.complete(yield* at(10, health.acquire("b", "first")), failure("rate_limited", 30_000)))
      expect(yield* at(30_009, health.breaker("b"))).toBe("open")
      expect(yield* at(30_010, health.breaker("b"))).toBe("half_open")
    }))

  it.effect("a Retry-After of 0 does not open the breaker: every concurrent attempt is still admitted", () =>
    Effect.gen(function*() {
      const health = yield* Health.make({ probes: 1 })
      yield* health.complete(yield* health.acquire("a", "first"), failure("rate_limited", 0))
      expect(yield* health.breaker("a")).toBe("closed")
      const both = yield* Effect.all([admitted(health.acquire("a", "first")), admitted(health.acquire("a", "first"))])
      expect(both).toEqual([true, true])
    }))

  it.effect("a rate limit that trips the breaker opens it for the longer of the cooldown and the Retry-After", () =>
    Effect.gen(function*() {
      const health = yield* Health.make({ consecutiveFailures: 1, cooldown: 5_000 })
      const [a, b] = yield* Effect.all([health.acquire("a", "first"), health.acquire("b", "first")])
      yield* at(100, health.complete(a, failure("rate_limited", 2_000)))
      yield* at(100, health.complete(b, failure("rate_limited", 8_000)))
      expect(yield* at(5_099, Effect.all([health.breaker("a"), health.breaker("b")]))).toEqual(["open", "open"])
      expect(yield* at(5_100, Effect.all([health.breaker("a"), health.breaker("b")]))).toEqual(["half_open", "open"])
      expect(yield* at(8_099, health.breaker("b"))).toBe("open")
      expect(yield* at(8_100, health.breaker("b"))).toBe("half_open")
    }))
})

describe("Health: probes", () => {
  it.effect("with two probe slots, a completed probe frees one slot, not both", () =>
    Effect.gen(function*() {
      const health = yield* Health.make({ consecutiveFailures: 1, cooldown: 1_000, probes: 2 })
      yield* health.complete(yield* health.acquire("a", "first"), failure())
      const [one] = yield* at(1_000, Effect.all([health.acquire("a", "first"), health.acquire("a", "first")]))
      yield* health.complete(one!, NEUTRAL)
      expect(yield* admitted(health.acquire("a", "first"))).toBe(true)
      expect(yield* Effect.flip(health.acquire("a", "first"))).toBe("no_probe_slot")
    }))

  it.effect("a probe admitted for a later start (its backoff) leaves the breaker open until then", () =>
    Effect.gen(function*() {
      const health = yield* Health.make({ consecutiveFailures: 1, cooldown: 1_000, probes: 2 })
      const early = yield* at(0, health.acquire("a", "first"))
      yield* at(0, health.complete(yield* at(0, health.acquire("a", "first")), failure("rate_limited", 30_000)))
      const later = yield* at(0, health.acquire("a", "first", { afterMillis: 30_000 }))
      expect(later.probe).toBe(true)
      expect(yield* at(10, health.breaker("a"))).toBe("open")
      expect(yield* at(10, Effect.flip(health.acquire("a", "first")))).toBe("breaker_open")
      expect((yield* at(10, health.view(["a"]))).health.a).toMatchObject({ state: "open", opensInMillis: 29_990 })
      // A failure landing meanwhile (an attempt admitted before the breaker opened) does not shorten the
      // server's Retry-After to a cooldown from now.
      yield* at(10, health.complete(early, failure()))
      expect(yield* at(29_999, health.breaker("a"))).toBe("open")
      expect(yield* at(30_000, health.breaker("a"))).toBe("half_open")
    }))

  it.effect("the shortest cooldown still half-opens the breaker: a millisecond after a trip only the probes are admitted", () =>
    Effect.gen(function*() {
      // A zero cooldown is refused (`Health.make` checks its settings as `Rein.layer` does): a millisecond is the
      // shortest a whole-millisecond clock can tell from none.
      const health = yield* Health.make({ consecutiveFailures: 1, cooldown: 1, probes: 1 })
      yield* at(0, health.complete(yield* at(0, health.acquire("a", "retry")), failure()))
      expect(yield* at(0, health.breaker("a"))).toBe("open")
      expect(yield* at(1, health.breaker("a"))).toBe("half_open")
      expect((yield* at(1, health.acquire("a", "first"))).probe).toBe(true)
      expect(yield* at(1, Effect.flip(health.acquire("a", "first")))).toBe("no_probe_slot")
    }))

  it("a probe failure with a half-open state stored reopens from the time of the failure", () => {
    const settings = Health.settingsOf({ ...Health.defaults, cooldown: 1_000, maxCooldown: 10_000 })
    const halfOpen: Health.EndpointState = {
      ...Health.freshState(settings),
      state: "half_open",
      openUntil: 1_000,
      probesInFlight: 1
    }
    const after = Health.settle(settings, halfOpen, 3_000, { probe: true }, failure())
    expect(after).toMatchObject({ state: "open", openUntil: 5_000, cooldownMillis: 2_000, probesInFlight: 0 })
    const open: Health.EndpointState = { ...halfOpen, state: "open", openUntil: 60_000 }
    expect(Health.settle(settings, open, 3_000, { probe: true }, failure())).toMatchObject({
      state: "open",
      openUntil: 60_000,
      cooldownMillis: 2_000
    })
  })

  it("a success that changes nothing keeps the very state; a probe's success on a closed breaker still resets its cooldown", () => {
    const settings = Health.settingsOf({ ...Health.defaults, cooldown: 1_000, maxCooldown: 10_000 })
    // Closed, no failure in a full window: what most successes find.
    const settled: Health.EndpointState = { ...Health.freshState(settings), windowLength: settings.windowSize }
    expect(Health.settle(settings, settled, 5_000, { probe: false }, SUCCESS)).toBe(settled)
    // A breaker a late non-probe success closed keeps its grown cooldown (see `settle`); a probe admitted while
    // it was half-open and still in flight then succeeds: the cooldown is back to the base.
    const closedLate: Health.EndpointState = { ...settled, cooldownMillis: 4_000, probesInFlight: 1 }
    expect(Health.settle(settings, closedLate, 5_000, { probe: true }, SUCCESS)).toEqual({
      ...settled,
      cooldownMillis: 1_000,
      probesInFlight: 0
    })
  })

  // `settle` is also applied to states read back from a shared store (PostgreSQL), written by any version: the
  // rule holds for every stored state, not only those the transitions here reach.
  it("a success that is not a probe, on a breaker not open at its time, closes it with no failure in a row, whatever was stored (property)", () => {
    const settings = Health.settingsOf({ ...Health.defaults, windowSize: 4, cooldown: 1_000 })
    const size = settings.windowSize
    const full = (1 << size) - 1
    const stored = (
      state: Health.BreakerState,
      consecutive: number,
      window: number,
      windowLength: number,
      openUntil: number
    ): Health.EndpointState => ({
      ...Health.freshState(settings),
      state,
      consecutive,
      window: window & ((1 << windowLength) - 1),
      windowLength,
      openUntil
    })
    fc.assert(
      fc.property(
        fc.constantFrom<Health.BreakerState>("closed", "open", "half_open"),
        fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 6 })),
        fc.oneof(fc.constant(0), fc.integer({ min: 1, max: full })),
        fc.oneof(fc.constant(size), fc.integer({ min: 0, max: size })),
        fc.integer({ min: 0, max: 3_000 }),
        fc.integer({ min: 0, max: 3_000 }),
        (state, consecutive, window, windowLength, openUntil, now) => {
          const e = stored(state, consecutive, window, windowLength, openUntil)
          const after = Health.settle(settings, e, now, { probe: false }, SUCCESS)
          if (Health.current(e, now) === "open") {
            expect(after).toBe(e)
            return
          }
          expect(after).toEqual({
            ...e,
            state: "closed",
            consecutive: 0,
            window: (e.window << 1) & full,
            windowLength: Math.min(size, e.windowLength + 1)
          })
          // Nothing to change: the very state, not a copy.
          if (state === "closed" && consecutive === 0 && e.window === 0 && windowLength === size) expect(after).toBe(e)
        }
      ),
      {
        numRuns: 300,
        seed: 23,
        // The states whose counts are those of a settled breaker but which are not closed (past their open time,
        // or a half-open state an older writer stored), and a closed one with failures in a row but none in the
        // window: each must still be closed and cleared.
        examples: [
          ["open", 0, 0, size, 1_000, 1_000],
          ["half_open", 0, 0, size, 0, 0],
          ["closed", 2, 0, size, 0, 0]
        ]
      }
    )
  })
})

describe("Health: admission", () => {
  it("with no global bucket (null), a retry is judged on the endpoint's bucket alone", () => {
    const settings = Health.settingsOf(Health.defaults)
    const fresh = Health.freshState(settings)
    const retried = Health.admit(settings, fresh, 0, "retry", null)
    expect(Either.getOrThrow(retried).next.tokens).toBe(9)
    expect(Health.admit(settings, { ...fresh, tokens: 0.5 }, 0, "fallback", null)).toEqual(
      Either.left("no_retry_token")
    )
    expect(Health.admit(settings, fresh, 0, "retry", 0.5)).toEqual(Either.left("no_retry_token"))
    expect(Either.getOrThrow(Health.admit(settings, fresh, 0, "retry", 1)).next.tokens).toBe(9)
  })

  it.effect("a first attempt refills its endpoint's own bucket and the global one by depositRatio, up to capacity", () =>
    Effect.gen(function*() {
      const health = yield* Health.make({ capacity: 10, depositRatio: 0.25 })
      yield* health.acquire("a", "retry")
      yield* health.acquire("a", "fallback")
      expect((yield* health.view(["a"])).retryTokens).toEqual({ global: 8, endpoints: { a: 8 } })
      yield* health.acquire("a", "first")
      expect((yield* health.view(["a"])).retryTokens).toEqual({ global: 8.25, endpoints: { a: 8.25 } })
      for (let i = 0; i < 10; i++) yield* health.acquire("a", "first")
      expect((yield* health.view(["a"])).retryTokens).toEqual({ global: 10, endpoints: { a: 10 } })
    }))

  it.effect("a first attempt funds its other candidates; a retry funds nobody", () =>
    Effect.gen(function*() {
      const health = yield* Health.make({ capacity: 10, depositRatio: 0.5 })
      yield* health.acquire("b", "fallback")
      yield* health.acquire("c", "retry", { candidates: ["c", "b"] })
      expect((yield* health.view(["b", "c"])).retryTokens.endpoints).toEqual({ b: 9, c: 9 })
      yield* health.acquire("a", "first", { candidates: ["a", "b"] })
      expect((yield* health.view(["a", "b", "c"])).retryTokens.endpoints).toMatchObject({ b: 9.5, c: 9 })
    }))

  it.effect("an attempt that starts after its backoff is judged then; a negative wait is judged now", () =>
    Effect.gen(function*() {
      const health = yield* Health.make({ consecutiveFailures: 1, cooldown: 1_000 })
      yield* at(0, health.complete(yield* at(0, health.acquire("a", "first")), failure()))
      expect(yield* at(0, Effect.flip(health.acquire("a", "first", { afterMillis: 999 })))).toBe("breaker_open")
      const probe = yield* at(0, health.acquire("a", "first", { afterMillis: 1_000 }))
      expect(probe.probe).toBe(true)
      yield* at(0, health.complete(probe, NEUTRAL))
      expect((yield* at(5_000, health.acquire("a", "first", { afterMillis: -5_000 }))).probe).toBe(true)
    }))

  it.effect("a degradation undone twice counts no lower than zero: the next one still refuses", () =>
    Effect.gen(function*() {
      const health = yield* Health.make()
      const undo = yield* health.degrade("a")
      yield* undo
      yield* undo
      yield* health.degrade("a")
      expect(yield* Effect.flip(health.acquire("a", "first"))).toBe("degraded")
    }))
})

describe("Health: the planner's view", () => {
  it.effect("a degraded endpoint is seen open, with no probe free, opening never", () =>
    Effect.gen(function*() {
      const health = yield* Health.make()
      yield* health.degrade("a")
      expect((yield* health.view(["a"])).health.a).toEqual({
        state: "open",
        probesFree: 0,
        opensInMillis: Number.MAX_SAFE_INTEGER
      })
    }))

  it.effect("asked again with the same endpoints, the view follows the clock while open and every change", () =>
    Effect.gen(function*() {
      const health = yield* Health.make({ consecutiveFailures: 1, cooldown: 1_000, probes: 2 })
      const ids = ["a"]
      yield* at(0, health.acquire("a", "retry"))
      expect(yield* at(0, health.view(ids))).toEqual({
        health: { a: { state: "closed", probesFree: 2, opensInMillis: 0 } },
        retryTokens: { global: 9, endpoints: { a: 9 } }
      })
      yield* at(0, health.complete(yield* at(0, health.acquire("a", "first")), failure()))
      expect((yield* at(0, health.view(ids))).health.a).toEqual({ state: "open", probesFree: 2, opensInMillis: 1_000 })
      expect((yield* at(400, health.view(ids))).health.a).toEqual({ state: "open", probesFree: 2, opensInMillis: 600 })
      expect((yield* at(1_000, health.view(ids))).health.a).toEqual({
        state: "half_open",
        probesFree: 2,
        opensInMillis: 0
      })
      yield* at(1_000, health.acquire("a", "first"))
      expect((yield* at(1_000, health.view(ids))).health.a).toEqual({
        state: "half_open",
        probesFree: 1,
        opensInMillis: 0
      })
    }))

  it.effect("a view asked again after a change only to a breaker, or only to the global bucket, shows the change", () =>
    Effect.gen(function*() {
      const health = yield* Health.make({ consecutiveFailures: 1, depositRatio: 0.5 })
      const ids = ["a", "b"]
      yield* health.acquire("b", "retry")
      const permit = yield* health.acquire("a", "first")
      expect(yield* health.view(["a"])).toEqual({ health: {}, retryTokens: { global: 9.5, endpoints: {} } })
      // Another list of endpoints is another view.
      expect(yield* health.view(ids)).toEqual({
        health: { b: { state: "closed", probesFree: 1, opensInMillis: 0 } },
        retryTokens: { global: 9.5, endpoints: { b: 9 } }
      })
      // A first attempt on an endpoint with nothing to change (closed, full) refills the global bucket alone.
      yield* health.acquire("c", "first")
      expect((yield* health.view(ids)).retryTokens.global).toBe(10)
      // The failure changes a's breaker and nothing else.
      yield* health.complete(permit, failure())
      expect((yield* health.view(ids)).health.a).toEqual({ state: "open", probesFree: 1, opensInMillis: 5_000 })
    }))

  it("probes free never go below zero, and an open breaker past its time shows 0 ms to go", () => {
    const settings = Health.settingsOf({ ...Health.defaults, probes: 1 })
    const e: Health.EndpointState = { ...Health.freshState(settings), state: "open", openUntil: 100, probesInFlight: 3 }
    expect(Health.viewOf(settings, e, 50)).toEqual({ state: "open", probesFree: 0, opensInMillis: 50 })
    expect(Health.viewOf(settings, e, 150)).toEqual({ state: "half_open", probesFree: 0, opensInMillis: 0 })
  })
})

describe("Health: metrics", () => {
  /** The value of a metric for the given labels, from the global registry (`undefined`: never published). */
  const valueOf = (name: string, labels: Record<string, string>) =>
    Effect.map(Metric.snapshot, (pairs) => {
      const pair = pairs.find((p) =>
        p.metricKey.name === name && p.metricKey.tags.length === Object.keys(labels).length &&
        p.metricKey.tags.every((t) => labels[t.key] === t.value)
      )
      if (pair === undefined) return undefined
      const state = pair.metricState as unknown as { readonly value?: number; readonly count?: number }
      return state.value ?? state.count
    })

  it.effect("breaker states, transitions and retry tokens are published per endpoint as they change", () =>
    Effect.gen(function*() {
      const health = yield* Health.make({ consecutiveFailures: 1, cooldown: 1_000, capacity: 10, depositRatio: 0.5 })
      const a = "metrics/a"
      const b = "metrics/b"
      yield* at(0, health.complete(yield* at(0, health.acquire(a, "first")), failure()))
      expect(yield* valueOf("rein_breaker_state", { endpoint: a })).toBe(2)
      expect(yield* valueOf("rein_breaker_transitions_total", { endpoint: a, to: "open" })).toBe(1)
      expect(yield* valueOf("rein_retry_tokens", { endpoint: a })).toBe(10)
      expect(yield* valueOf("rein_retry_tokens", { endpoint: "*" })).toBe(10)
      const probe = yield* at(1_000, health.acquire(a, "first"))
      yield* at(1_000, health.complete(probe, SUCCESS))
      expect(yield* valueOf("rein_breaker_state", { endpoint: a })).toBe(0)
      expect(yield* valueOf("rein_breaker_transitions_total", { endpoint: a, to: "closed" })).toBe(1)
      // A retry on b takes a token from b and from the global bucket; a first attempt on a that lists b funds
      // b, which is published with a's completion.
      yield* at(1_000, health.complete(yield* at(1_000, health.acquire(b, "retry")), SUCCESS))
      expect(yield* valueOf("rein_retry_tokens", { endpoint: b })).toBe(9)
      expect(yield* valueOf("rein_retry_tokens", { endpoint: "*" })).toBe(9)
      yield* at(1_000, health.complete(yield* at(1_000, health.acquire(a, "first", { candidates: [a, b] })), SUCCESS))
      expect(yield* valueOf("rein_retry_tokens", { endpoint: b })).toBe(9.5)
      expect(yield* valueOf("rein_retry_tokens", { endpoint: "*" })).toBe(9.5)
      expect(yield* valueOf("rein_breaker_transitions_total", { endpoint: a, to: "half_open" })).toBeUndefined()
      // Completions that move no breaker count no transition.
      expect(yield* valueOf("rein_breaker_transitions_total", { endpoint: a, to: "closed" })).toBe(1)
      expect(yield* valueOf("rein_breaker_transitions_total", { endpoint: b, to: "closed" })).toBeUndefined()
    }))

  it.effect("a completion reads the breaker at its own time: a failed probe after the cooldown is a new transition to open", () =>
    Effect.gen(function*() {
      // A zero cooldown (a trip straight to half-open) is refused by `Health.make`: the states a completion
      // compares are those at the clock's time, so half-open → open counts though the stored state was open.
      const health = yield* Health.make({ consecutiveFailures: 1, cooldown: 1 })
      const c = "metrics/c"
      yield* at(0, health.complete(yield* at(0, health.acquire(c, "first")), failure()))
      expect(yield* valueOf("rein_breaker_transitions_total", { endpoint: c, to: "open" })).toBe(1)
      expect(yield* at(1, health.breaker(c))).toBe("half_open")
      yield* at(1, health.complete(yield* at(1, health.acquire(c, "first")), failure()))
      expect(yield* health.breaker(c)).toBe("open")
      expect(yield* valueOf("rein_breaker_state", { endpoint: c })).toBe(2)
      expect(yield* valueOf("rein_breaker_transitions_total", { endpoint: c, to: "open" })).toBe(2)
    }))

  it.effect("a successful probe after the cooldown is published closed: one transition, from half-open", () =>
    Effect.gen(function*() {
      const health = yield* Health.make({ consecutiveFailures: 1, cooldown: 1 })
      const c = "metrics/c2"
      yield* at(0, health.complete(yield* at(0, health.acquire(c, "first")), failure()))
      yield* at(1, health.complete(yield* at(1, health.acquire(c, "first")), SUCCESS))
      expect(yield* valueOf("rein_breaker_state", { endpoint: c })).toBe(0)
      expect(yield* valueOf("rein_breaker_transitions_total", { endpoint: c, to: "closed" })).toBe(1)
      expect(yield* valueOf("rein_breaker_transitions_total", { endpoint: c, to: "half_open" })).toBeUndefined()
    }))

  it.effect("a trip whose cooldown the clock cannot tell from none is published half-open: 1, one transition", () =>
    Effect.gen(function*() {
      // At 2^41 ms (2039) the clock's step (a double's last bit) is 2^-11 ms: a cooldown of 1 ns ends the open
      // period at its start, so the completion that trips the breaker already reads it half-open. The only way
      // `Health.make` (which refuses a zero cooldown) publishes the gauge's half-open value, 1.
      const now = 2 ** 41
      const health = yield* Health.make({ consecutiveFailures: 1, cooldown: Duration.nanos(1n) })
      const c = "metrics/sub-ulp"
      yield* at(now, health.complete(yield* at(now, health.acquire(c, "first")), failure()))
      expect(yield* at(now, health.breaker(c))).toBe("half_open")
      expect(yield* valueOf("rein_breaker_state", { endpoint: c })).toBe(1)
      expect(yield* valueOf("rein_breaker_transitions_total", { endpoint: c, to: "half_open" })).toBe(1)
      expect(yield* valueOf("rein_breaker_transitions_total", { endpoint: c, to: "open" })).toBeUndefined()
    }))

  it.effect("a refusal is counted per reason", () =>
    Effect.gen(function*() {
      const before = (yield* valueOf("rein_admissions_refused_total", { reason: "no_probe_slot" })) ?? 0
      yield* Health.countRefusal("no_probe_slot")
      yield* Health.countRefusal("no_probe_slot")
      expect(yield* valueOf("rein_admissions_refused_total", { reason: "no_probe_slot" })).toBe(before + 2)
    }))
})

describe("Health: through the executor's fast path", () => {
  it.effect("unsafeBreaker reads the breaker as breaker does, at the time it is given", () =>
    Effect.gen(function*() {
      const health = yield* Health.make({ consecutiveFailures: 1, cooldown: 1_000 })
      const read = (millis: number, endpoint = "a") => health.unsafeBreaker?.(BigInt(millis) * 1_000_000n, endpoint)
      expect(read(0)).toBe("closed")
      yield* health.complete(yield* health.acquire("a", "first"), failure())
      expect([read(0), read(999), read(1_000), read(1_000, "b")]).toEqual(["open", "open", "half_open", "closed"])
      expect([yield* at(999, health.breaker("a")), yield* at(1_000, health.breaker("a"))]).toEqual([
        "open",
        "half_open"
      ])
    }))

  it.effect("a request's failure is recorded, and the next request's plan reads it, through the synchronous members", () =>
    Effect.gen(function*() {
      const health = yield* Health.make({ consecutiveFailures: 1 })
      const fake = Fake.make({ a: [Fake.fail("overloaded")], b: [Fake.succeed()] })
      const layer = Layer.merge(
        Rein.layer({
          catalog: catalog(endpoint("a"), endpoint("b")),
          providers: { fake: fake.provider },
          health: false
        }),
        Layer.succeed(Health.Health, health)
      )
      const request = { prompt: "p", inputTokens: 10, maxOutputTokens: 10 }
      const answer = yield* Rein.execute(request, contract({ retry: { perEndpoint: 0 } })).pipe(Effect.provide(layer))
      expect(answer.endpoint).toBe("b")
      expect(yield* health.breaker("a")).toBe("open")
      expect((yield* health.view(["a", "b"])).retryTokens).toEqual({ global: 9, endpoints: { a: 10, b: 9 } })
      // The next request's plan sees a's open breaker (the synchronous view): it starts on b, with no refusal.
      const next = yield* Rein.execute(request, contract({ retry: { perEndpoint: 0 } })).pipe(Effect.provide(layer))
      expect(next.attempts.map((a) => [a.endpoint, a.role])).toEqual([["b", "first"]])
    }))
})

describe("Health: a breaker closed while its probes are in flight", () => {
  it.effect("a late success that closes the breaker with every probe slot taken still admits new attempts", () =>
    Effect.gen(function*() {
      const health = yield* Health.make({ consecutiveFailures: 1, cooldown: 1_000, probes: 1 })
      const early = yield* at(0, health.acquire("a", "first"))
      yield* at(0, health.complete(yield* at(0, health.acquire("a", "first")), failure()))
      const probe = yield* at(1_000, health.acquire("a", "first"))
      expect(probe.probe).toBe(true)
      yield* at(1_000, health.complete(early, SUCCESS))
      expect(yield* at(1_000, health.breaker("a"))).toBe("closed")
      // A retry is judged by `admit` (a first attempt on a closed, full endpoint changes nothing and skips it).
      expect((yield* at(1_000, health.acquire("a", "retry"))).probe).toBe(false)
    }))
})
