import { describe, expect, it } from "@effect/vitest"
import { Failure, Planner } from "@rein/core"
import { FastCheck } from "effect"

// The planner is the one decision site: these tests pin its answers (legal or not, why, which outcome)
// at the boundaries of every predicate, through its public `decide`, `reservationFor` and `backoffMillis`.

const candidate = (id: string, over: Partial<Planner.CandidateSpec> = {}): Planner.CandidateSpec => ({
  id,
  listed: true,
  known: true,
  hasProvider: true,
  scope: `scope-${id}`,
  contextWindow: 10_000,
  maxOutputTokens: 1_000,
  tools: true,
  structuredOutput: true,
  streaming: true,
  simulated: false,
  prices: { inputTokens: 0.001, outputTokens: 0.002, request: 0.01 },
  ...over
})

const spec = (over: Partial<Planner.Spec> = {}): Planner.Spec => ({
  candidates: [candidate("a"), candidate("b"), candidate("c")],
  requires: { tools: false, structuredOutput: false, streaming: false },
  mode: "read-only",
  allowSimulated: false,
  inputTokens: 100,
  maxOutputTokens: 200,
  attemptTimeoutMillis: 5_000,
  minAttemptMillis: 0,
  retry: { perEndpoint: 2, rateLimited: null, baseMillis: 100, factor: 2, maxMillis: 1_000, jitter: 0 },
  table: Failure.defaultTable,
  ...over
})

const snapshot = (over: Partial<Planner.Snapshot> = {}): Planner.Snapshot => ({
  elapsedMillis: 0,
  remainingMillis: 10_000,
  budget: { cost: null, tokens: null, calls: null },
  attempts: 0,
  current: null,
  triesOnCurrent: 0,
  rateLimitedOnCurrent: 0,
  last: null,
  health: {},
  retryTokens: { global: null, endpoints: {} },
  committed: false,
  jitter: null,
  ...over
})

/** A snapshot after `tries` attempts on `current`, the last of which failed with `kind`. */
const after = (
  current: string,
  kind: Failure.FailureKind,
  over: Partial<Planner.Snapshot> = {}
): Planner.Snapshot =>
  snapshot({
    attempts: 1,
    current,
    triesOnCurrent: 1,
    last: { kind, retryAfterMillis: null },
    ...over
  })

const verdictsOf = (decision: Planner.Decision, endpoint: string) =>
  decision.candidates.find((c) => c.endpoint === endpoint)!.verdicts

const attempt = (decision: Planner.Decision): Planner.Attempt => {
  if (decision._tag !== "Attempt") throw new Error(`expected an attempt, got ${JSON.stringify(decision)}`)
  return decision
}

const stopped = (decision: Planner.Decision): Planner.Stop => {
  if (decision._tag !== "Stop") throw new Error(`expected a stop, got ${JSON.stringify(decision)}`)
  return decision
}

describe("the worst case reserved for an attempt", () => {
  it("prices the input, the requested output and the request fee; unknown input reserves nothing", () => {
    const c = candidate("a")
    expect(Planner.reservationFor(spec(), c)).toEqual({ cost: 100 * 0.001 + 200 * 0.002 + 0.01, tokens: 300 })
    // Without a requested maximum, the endpoint's own output limit is the worst case.
    expect(Planner.reservationFor(spec({ maxOutputTokens: null }), c)).toEqual({
      cost: 100 * 0.001 + 1_000 * 0.002 + 0.01,
      tokens: 1_100
    })
    expect(Planner.reservationFor(spec({ inputTokens: null }), c)).toEqual({ cost: null, tokens: null })
  })
})

describe("backoff", () => {
  const retry = { perEndpoint: 5, rateLimited: null, baseMillis: 100, factor: 3, maxMillis: 2_000, jitter: 0 }

  it("grows from the base by the factor from the first retry, and is capped", () => {
    expect([0, 1, 2, 3, 4, 5].map((tries) => Planner.backoffMillis(retry, tries, 0.5))).toEqual([
      100,
      100,
      300,
      900,
      2_000,
      2_000
    ])
  })

  it("jitter spreads it by ±jitter around the exponential, from the draw, rounded and never above the cap", () => {
    const jittered = { ...retry, jitter: 0.5 }
    expect(Planner.backoffMillis(jittered, 2, 0)).toBe(150)
    expect(Planner.backoffMillis(jittered, 2, 0.5)).toBe(300)
    expect(Planner.backoffMillis(jittered, 2, 0.75)).toBe(375)
    expect(Planner.backoffMillis(jittered, 2, 0.999)).toBe(450)
    expect(Planner.backoffMillis({ ...jittered, baseMillis: 1 }, 1, 0.3)).toBe(1)
    expect(Planner.backoffMillis(jittered, 4, 0.99)).toBe(2_000)
    expect(Planner.backoffMillis({ ...jittered, jitter: 2 }, 1, 0)).toBe(0)
  })

  it("is always a whole number of milliseconds in [0, max]", () => {
    FastCheck.assert(
      FastCheck.property(
        FastCheck.integer({ min: 0, max: 10_000 }),
        FastCheck.double({ min: 1, max: 4, noNaN: true }),
        FastCheck.integer({ min: 0, max: 60_000 }),
        FastCheck.double({ min: 0, max: 1, noNaN: true }),
        FastCheck.integer({ min: 0, max: 20 }),
        FastCheck.double({ min: 0, max: 0.999999, noNaN: true }),
        (baseMillis, factor, maxMillis, jitter, tries, u) => {
          const ms = Planner.backoffMillis(
            { perEndpoint: 1, rateLimited: null, baseMillis, factor, maxMillis, jitter },
            tries,
            u
          )
          return Number.isInteger(ms) && ms >= 0 && ms <= maxMillis
        }
      )
    )
  })
})

describe("static legality", () => {
  it("listed: the first missing of contract, catalog, provider is the reason", () => {
    const reasons = [
      candidate("a", { listed: false, known: false, hasProvider: false }),
      candidate("a", { known: false, hasProvider: false }),
      candidate("a", { hasProvider: false }),
      candidate("a")
    ].map((c) => verdictsOf(Planner.decide(spec({ candidates: [c] }), snapshot()), "a").listed)
    expect(reasons).toEqual([
      "not in the contract's candidates",
      "not in the catalog",
      "no provider registered",
      true
    ])
  })

  it("capable: the requested output, then the context window, then tools, structured output, streaming, vendors", () => {
    const capable = (c: Planner.CandidateSpec, over: Partial<Planner.Spec> = {}) =>
      verdictsOf(Planner.decide(spec({ candidates: [c], ...over }), snapshot()), c.id).capable
    expect(capable(candidate("a", { known: false }))).toBe("unknown endpoint")
    expect(capable(candidate("a", { maxOutputTokens: 199 }))).toBe("max output 199 < 200 requested")
    expect(capable(candidate("a", { maxOutputTokens: 200, contextWindow: 300 }))).toBe(true)
    expect(capable(candidate("a", { contextWindow: 299 }))).toBe("context window 299 < 100 input + 200 output")
    expect(capable(candidate("a", { contextWindow: 299 }), { inputTokens: null })).toBe(true)
    // Without a requested maximum the endpoint's own limit is what must fit.
    expect(capable(candidate("a", { contextWindow: 1_100 }), { maxOutputTokens: null })).toBe(true)
    expect(capable(candidate("a", { contextWindow: 1_099 }), { maxOutputTokens: null })).toBe(
      "context window 1099 < 100 input + 1000 output"
    )
    const requires = (r: Partial<Planner.Spec["requires"]>) => ({
      requires: { tools: false, structuredOutput: false, streaming: false, ...r }
    })
    expect(capable(candidate("a", { tools: false }), requires({ tools: true }))).toBe("no tool support")
    expect(capable(candidate("a", { tools: false }), requires({}))).toBe(true)
    expect(capable(candidate("a", { structuredOutput: false }), requires({ structuredOutput: true }))).toBe(
      "no structured output"
    )
    expect(capable(candidate("a", { structuredOutput: false }), requires({}))).toBe(true)
    expect(capable(candidate("a", { streaming: false }), requires({ streaming: true }))).toBe("no streaming")
    expect(capable(candidate("a", { streaming: false }), requires({}))).toBe(true)
    expect(capable(candidate("a", { vendor: "openai" }), requires({ vendors: ["openai"] }))).toBe(true)
    expect(capable(candidate("a", { vendor: "openai" }), requires({ vendors: ["openai", "anthropic"] }))).toBe(
      "provider-defined tool of anthropic; endpoint of openai"
    )
    expect(capable(candidate("a"), requires({ vendors: ["openai"] }))).toBe(
      "provider-defined tool of openai; endpoint of unknown vendor"
    )
    expect(capable(candidate("a"), requires({ vendors: [] }))).toBe(true)
  })

  it("mode: only an effectful contract is refused; simulation only when the contract does not allow it", () => {
    const v = (over: Partial<Planner.Spec>, c = candidate("a")) =>
      verdictsOf(Planner.decide(spec({ candidates: [c], ...over }), snapshot()), "a")
    expect(v({ mode: "effectful" }).mode).toBe("effectful mode is not executed here")
    expect(v({ mode: "advisory" }).mode).toBe(true)
    expect(v({}, candidate("a", { simulated: true })).simulation).toBe(
      "simulated endpoint; the contract does not allow simulation"
    )
    expect(v({ allowSimulated: true }, candidate("a", { simulated: true })).simulation).toBe(true)
    expect(v({}).simulation).toBe(true)
  })

  it("the static verdicts of one spec are not those of another spec with the same candidate", () => {
    const c = candidate("a", { tools: false })
    const plain = spec({ candidates: [c] })
    const withTools = spec({ candidates: [c], requires: { tools: true, structuredOutput: false, streaming: false } })
    expect(verdictsOf(Planner.decide(plain, snapshot()), "a").capable).toBe(true)
    expect(verdictsOf(Planner.decide(withTools, snapshot()), "a").capable).toBe("no tool support")
    expect(verdictsOf(Planner.decide(plain, snapshot()), "a").capable).toBe(true)
  })
})

describe("the deadline predicate", () => {
  it("an attempt needs more than the minimum attempt left after its wait", () => {
    const s = spec({ minAttemptMillis: 1_000 })
    expect(verdictsOf(Planner.decide(s, snapshot({ remainingMillis: 1_001 })), "a").deadline).toBe(true)
    expect(verdictsOf(Planner.decide(s, snapshot({ remainingMillis: 1_000 })), "a").deadline).toBe(
      "1000 ms remaining, below the 1000 ms minimum attempt"
    )
    expect(verdictsOf(Planner.decide(spec(), snapshot({ remainingMillis: 1 })), "a").deadline).toBe(true)
  })

  it("a wait that uses up all the time left never leaves an attempt, even under a negative minimum", () => {
    // A spec decoded from a journal is not validated like a contract: the planner does not trust its minimum.
    const s = spec({ minAttemptMillis: -50 })
    expect(verdictsOf(Planner.decide(s, after("a", "overloaded", { remainingMillis: 100 })), "a").deadline).toBe(
      "backoff 100 ms does not fit the 100 ms remaining"
    )
    expect(verdictsOf(Planner.decide(s, after("a", "overloaded", { remainingMillis: 101 })), "a").deadline).toBe(true)
  })

  it("a backoff or a Retry-After that does not fit the remaining time is the reason, with the minimum if any", () => {
    // One failure on a: backoff 100 ms (jitter 0), the retry of a must fit it.
    const backoff = after("a", "overloaded", { remainingMillis: 100 })
    expect(verdictsOf(Planner.decide(spec(), backoff), "a").deadline).toBe(
      "backoff 100 ms does not fit the 100 ms remaining"
    )
    expect(verdictsOf(Planner.decide(spec(), { ...backoff, remainingMillis: 101 }), "a").deadline).toBe(true)
    const hinted = after("a", "rate_limited", {
      remainingMillis: 3_000,
      last: { kind: "rate_limited", retryAfterMillis: 2_500 }
    })
    expect(verdictsOf(Planner.decide(spec({ minAttemptMillis: 500 }), hinted), "a").deadline).toBe(
      "Retry-After 2500 ms does not fit the 3000 ms remaining with a 500 ms minimum attempt"
    )
    expect(verdictsOf(Planner.decide(spec({ minAttemptMillis: 499 }), hinted), "a").deadline).toBe(true)
    // A fallback does not wait: the same time fits it.
    expect(verdictsOf(Planner.decide(spec({ minAttemptMillis: 500 }), hinted), "b").deadline).toBe(true)
  })

  it("no time left stops with DeadlineExceeded at admission, whatever else is legal", () => {
    for (const remainingMillis of [0, -5]) {
      const decision = stopped(Planner.decide(spec(), snapshot({ remainingMillis })))
      expect(decision).toMatchObject({
        outcome: "DeadlineExceeded",
        phase: "admission",
        resource: null,
        reason: "no time left before the deadline"
      })
      expect(decision.candidates.map((c) => c.endpoint)).toEqual(["a", "b", "c"])
      // Each candidate's verdict says why, without a minimum attempt when the contract has none.
      expect(decision.candidates.map((c) => c.verdicts.deadline)).toEqual(
        Array(3).fill(`${remainingMillis} ms remaining`)
      )
    }
  })
})

describe("the wait before a retry", () => {
  it("is the larger of the backoff and the Retry-After, named after the larger; fallbacks never wait", () => {
    const retry = (retryAfterMillis: number | null, triesOnCurrent = 1) =>
      attempt(
        Planner.decide(
          spec(),
          after("a", "rate_limited", { triesOnCurrent, last: { kind: "rate_limited", retryAfterMillis } })
        )
      )
    expect(retry(null)).toMatchObject({ endpoint: "a", role: "retry", waitMillis: 100, waitReason: "backoff" })
    expect(retry(100)).toMatchObject({ waitMillis: 100, waitReason: "backoff" })
    expect(retry(101)).toMatchObject({ waitMillis: 101, waitReason: "retry_after" })
    expect(retry(null, 2)).toMatchObject({ waitMillis: 200, waitReason: "backoff" })
    const fallback = attempt(Planner.decide(spec(), after("a", "malformed_response")))
    expect(fallback).toMatchObject({ role: "fallback", waitMillis: 0, waitReason: "none" })
  })

  it("a retry with no recorded failure (the last attempt ended neutral) does not wait", () => {
    const d = attempt(Planner.decide(spec(), snapshot({ attempts: 1, current: "a", triesOnCurrent: 1, last: null })))
    expect(d).toMatchObject({ endpoint: "a", role: "retry", waitMillis: 0, waitReason: "none", attempt: 2 })
  })

  it("draws the jitter from the snapshot, and uses the middle of the range when there is no draw", () => {
    const s = spec({
      retry: { perEndpoint: 2, rateLimited: null, baseMillis: 100, factor: 2, maxMillis: 1_000, jitter: 0.5 }
    })
    expect(attempt(Planner.decide(s, after("a", "overloaded", { jitter: 0 }))).waitMillis).toBe(50)
    expect(attempt(Planner.decide(s, after("a", "overloaded", { jitter: null }))).waitMillis).toBe(100)
  })
})

describe("the budget and call predicates", () => {
  // Reservation on a: cost 0.51, 300 tokens.
  const cost = 100 * 0.001 + 200 * 0.002 + 0.01

  it("the worst-case cost must fit what is left (to within rounding), the tokens exactly", () => {
    const budget = (b: Partial<Planner.Snapshot["budget"]>) =>
      verdictsOf(Planner.decide(spec(), snapshot({ budget: { cost: null, tokens: null, calls: null, ...b } })), "a")
    expect(budget({ cost }).budget).toBe(true)
    expect(budget({ cost: cost - 1e-13 }).budget).toBe(true)
    // Exactly at the rounding allowance: (cost - 1e-12) + 1e-12 is the cost again, which fits.
    expect(budget({ cost: cost - 1e-12 }).budget).toBe(true)
    expect(budget({ cost: cost - 1e-6 }).budget).toBe("worst-case cost 0.51 > 0.509999 left")
    expect(budget({ tokens: 300 }).budget).toBe(true)
    expect(budget({ tokens: 299 }).budget).toBe("worst-case tokens 300 > 299 left")
    expect(budget({ cost: 0.1, tokens: 1 }).budget).toBe("worst-case cost 0.51 > 0.1 left")
    expect(budget({ calls: 1 }).calls).toBe(true)
    expect(budget({ calls: 0.5 }).calls).toBe("no call left under the cap")
    expect(budget({ calls: 0 }).calls).toBe("no call left under the cap")
  })

  it("an unknown reservation (no input estimate) fits any budget", () => {
    const s = spec({ inputTokens: null })
    const v = verdictsOf(Planner.decide(s, snapshot({ budget: { cost: 0, tokens: 0, calls: null } })), "a")
    expect(v.budget).toBe(true)
  })

  it("stops with BudgetExhausted naming the resource: cost first, then tokens, then calls", () => {
    const one = spec({ candidates: [candidate("a")] })
    const run = (budget: Planner.Snapshot["budget"]) => stopped(Planner.decide(one, snapshot({ budget })))
    expect(run({ cost: 0.1, tokens: 1, calls: 0 })).toMatchObject({
      outcome: "BudgetExhausted",
      resource: "cost",
      phase: null,
      reason: "a: worst-case cost 0.51 > 0.1 left"
    })
    expect(run({ cost: 1, tokens: 1, calls: 0 })).toMatchObject({
      outcome: "BudgetExhausted",
      resource: "tokens",
      reason: "a: worst-case tokens 300 > 1 left"
    })
    expect(run({ cost: cost - 1e-13, tokens: 1, calls: 5 })).toMatchObject({ resource: "tokens" })
    expect(run({ cost: cost - 1e-12, tokens: 1, calls: 5 })).toMatchObject({ resource: "tokens" })
    expect(run({ cost: null, tokens: 1, calls: null })).toMatchObject({
      outcome: "BudgetExhausted",
      resource: "tokens",
      reason: "a: worst-case tokens 300 > 1 left"
    })
    expect(run({ cost: null, tokens: null, calls: 0 })).toMatchObject({
      outcome: "BudgetExhausted",
      resource: "calls",
      reason: "a: no call left under the cap"
    })
  })
})

describe("retry tokens", () => {
  it("are not consulted for the first attempt; retries and fallbacks need a whole token, global then per endpoint", () => {
    const empty = { global: 0.5, endpoints: { a: 0.2, b: 0.2 } }
    expect(verdictsOf(Planner.decide(spec(), snapshot({ retryTokens: empty })), "a").retryBudget).toBe(true)
    const d = Planner.decide(spec(), after("a", "overloaded", { retryTokens: empty }))
    expect(verdictsOf(d, "a").retryBudget).toBe("global retry tokens 0.5 < 1")
    expect(verdictsOf(d, "b").retryBudget).toBe("global retry tokens 0.5 < 1")
    const perEndpoint = Planner.decide(
      spec(),
      after("a", "overloaded", { retryTokens: { global: 1, endpoints: { a: 0.2 } } })
    )
    expect(verdictsOf(perEndpoint, "a").retryBudget).toBe("retry tokens for a 0.2 < 1")
    expect(verdictsOf(perEndpoint, "b").retryBudget).toBe(true)
    expect(attempt(perEndpoint)).toMatchObject({ endpoint: "b", role: "fallback" })
  })

  it("a bucket holds a token from 1 - 1e-9 up", () => {
    expect(Planner.hasToken(1)).toBe(true)
    expect(Planner.hasToken(1 - 1e-9)).toBe(true)
    expect(Planner.hasToken(1 - 2e-9)).toBe(false)
    expect(Planner.hasToken(0.1 + 0.2 + 0.7)).toBe(true)
  })

  it("an inherited property name is not an endpoint's bucket", () => {
    const s = spec({ candidates: [candidate("constructor"), candidate("b")] })
    const d = Planner.decide(s, after("constructor", "overloaded"))
    expect(verdictsOf(d, "constructor").retryBudget).toBe(true)
    expect(verdictsOf(d, "constructor").health).toBe(true)
  })
})

describe("the health predicate", () => {
  const health = (view: Planner.HealthView, snap: Partial<Planner.Snapshot> = {}, endpoint = "a") =>
    verdictsOf(Planner.decide(spec(), snapshot({ health: { a: view }, ...snap })), endpoint).health

  it("closed admits; open refuses until it half-opens; half-open admits while a probe slot is free", () => {
    expect(health({ state: "closed", probesFree: 0, opensInMillis: 9_000 })).toBe(true)
    expect(health({ state: "open", probesFree: 1, opensInMillis: 2_000 })).toBe("breaker open for 2000 ms more")
    expect(health({ state: "open", probesFree: 1, opensInMillis: 0 })).toBe(true)
    expect(health({ state: "open", probesFree: 0, opensInMillis: 0 })).toBe("half-open: no free probe slot")
    expect(health({ state: "half_open", probesFree: 1, opensInMillis: 0 })).toBe(true)
    expect(health({ state: "half_open", probesFree: 0, opensInMillis: 0 })).toBe("half-open: no free probe slot")
    // Only an open breaker's time to half-open counts; a half-open one is judged by its probe slots alone.
    expect(health({ state: "half_open", probesFree: 1, opensInMillis: 5_000 })).toBe(true)
  })

  it("a retry whose wait outlasts the open breaker may probe after it", () => {
    const view: Planner.HealthView = { state: "open", probesFree: 1, opensInMillis: 100 }
    const retry = (opensInMillis: number) =>
      verdictsOf(Planner.decide(spec(), after("a", "overloaded", { health: { a: { ...view, opensInMillis } } })), "a")
        .health
    expect(retry(100)).toBe(true)
    expect(retry(101)).toBe("breaker open for 101 ms more")
  })
})

describe("what a failure allows next", () => {
  it("a retry needs a retryable kind and attempts left on the endpoint", () => {
    expect(verdictsOf(Planner.decide(spec(), after("a", "invalid_request")), "a").failureAllows).toBe(
      "invalid_request is not retried"
    )
    const tries = (triesOnCurrent: number) =>
      verdictsOf(Planner.decide(spec(), after("a", "overloaded", { triesOnCurrent })), "a").failureAllows
    expect(tries(2)).toBe(true)
    expect(tries(3)).toBe("attempts used: 3 of 3")
  })

  it("with a separate rate-limit cap, 429 retries count against it and not against perEndpoint", () => {
    const s = spec({
      retry: { perEndpoint: 1, rateLimited: 2, baseMillis: 100, factor: 2, maxMillis: 1_000, jitter: 0 }
    })
    const rl = (rateLimitedOnCurrent: number, triesOnCurrent: number, kind: Failure.FailureKind = "rate_limited") =>
      verdictsOf(
        Planner.decide(s, after("a", kind, { triesOnCurrent, rateLimitedOnCurrent })),
        "a"
      ).failureAllows
    expect(rl(2, 5)).toBe(true)
    expect(rl(3, 5)).toBe("rate-limit retries used: 2 of 2")
    // Another kind: the tries that were 429s do not count against perEndpoint.
    expect(rl(3, 4, "overloaded")).toBe(true)
    expect(rl(3, 5, "overloaded")).toBe("attempts used: 2 of 2")
    // Without the separate cap, 429s count like any failure.
    const shared = (triesOnCurrent: number) =>
      verdictsOf(
        Planner.decide(spec(), after("a", "rate_limited", { triesOnCurrent, rateLimitedOnCurrent: triesOnCurrent })),
        "a"
      ).failureAllows
    expect(shared(2)).toBe(true)
    expect(shared(3)).toBe("attempts used: 3 of 3")
  })

  it("fallback rules: any, none, a strictly larger window, a strictly larger output, another credential scope", () => {
    const fallback = (kind: Failure.FailureKind, c: Planner.CandidateSpec, over: Partial<Planner.Spec> = {}) =>
      verdictsOf(Planner.decide(spec({ candidates: [candidate("a"), c], ...over }), after("a", kind)), c.id)
        .failureAllows
    expect(fallback("overloaded", candidate("b"))).toBe(true)
    expect(fallback("content_filtered", candidate("b"))).toBe("content_filtered forbids fallback")
    expect(fallback("context_length", candidate("b", { contextWindow: 10_001 }))).toBe(true)
    expect(fallback("context_length", candidate("b"))).toBe("context_length: window 10000 is not larger than 10000")
    const noMax = { maxOutputTokens: null }
    expect(fallback("truncated", candidate("b", { maxOutputTokens: 1_001 }), noMax)).toBe(true)
    expect(fallback("truncated", candidate("b"), noMax)).toBe("truncated: output limit 1000 is not larger than 1000")
    // A requested maximum is the limit on both sides: no fallback makes the answer longer.
    expect(fallback("truncated", candidate("b", { maxOutputTokens: 4_000 }))).toBe(
      "truncated: output limit 200 is not larger than 200"
    )
    expect(fallback("authentication", candidate("b"))).toBe(true)
    expect(fallback("authentication", candidate("b", { scope: "scope-a" }))).toBe(
      "authentication: same credential scope \"scope-a\""
    )
  })

  it("after a failure on an endpoint that is no longer a candidate, a comparative rule has nothing to compare with", () => {
    for (const kind of ["context_length", "truncated", "authentication"] as const) {
      const d = attempt(Planner.decide(spec(), after("gone", kind)))
      expect(d, kind).toMatchObject({ endpoint: "a", role: "fallback" })
      expect(d.candidates.map((c) => c.verdicts.failureAllows), kind).toEqual([true, true, true])
    }
  })

  it("once a stream has committed nothing may run", () => {
    const d = Planner.decide(spec(), after("a", "overloaded", { committed: true }))
    expect(d.candidates.map((c) => c.verdicts.uncommitted)).toEqual([
      "the stream has committed",
      "the stream has committed",
      "the stream has committed"
    ])
    expect(stopped(d)).toMatchObject({
      outcome: "FailedSafe",
      reason: "the stream has committed: no retry, no fallback"
    })
  })
})

describe("decide", () => {
  it("a first attempt runs on the first legal candidate, numbered after the attempts so far", () => {
    const s = spec({ candidates: [candidate("a", { listed: false }), candidate("b"), candidate("c")] })
    const d = attempt(Planner.decide(s, snapshot({ attempts: 0 })))
    expect(d).toMatchObject({
      _tag: "Attempt",
      endpoint: "b",
      role: "first",
      attempt: 1,
      waitMillis: 0,
      waitReason: "none",
      reservation: { cost: 100 * 0.001 + 200 * 0.002 + 0.01, tokens: 300 }
    })
    expect(d.candidates.map((c) => [c.endpoint, c.role, c.legal])).toEqual([
      ["a", "first", false],
      ["b", "first", true],
      ["c", "first", true]
    ])
  })

  it("after a failure only the current candidate and those after it are considered: retry, then fallbacks", () => {
    const d = attempt(Planner.decide(spec(), after("b", "overloaded", { attempts: 4 })))
    expect(d).toMatchObject({ endpoint: "b", role: "retry", attempt: 5 })
    expect(d.candidates.map((c) => [c.endpoint, c.role])).toEqual([["b", "retry"], ["c", "fallback"]])
    const onLast = Planner.decide(spec(), after("c", "invalid_request", { attempts: 2 }))
    expect(onLast.candidates.map((c) => [c.endpoint, c.role])).toEqual([["c", "retry"]])
  })

  it("a current endpoint that is not a candidate puts every candidate up as a fallback", () => {
    const d = attempt(Planner.decide(spec(), after("gone", "overloaded")))
    expect(d).toMatchObject({ endpoint: "a", role: "fallback" })
    expect(d.candidates.map((c) => c.role)).toEqual(["fallback", "fallback", "fallback"])
  })

  it("the timeout is the attempt timeout when it is shorter than the time left after the wait, else that time", () => {
    const timeout = (remainingMillis: number, snap: Partial<Planner.Snapshot> = {}) => {
      const d = attempt(Planner.decide(spec(), snapshot({ remainingMillis, ...snap })))
      return [d.timeoutMillis, d.binding]
    }
    expect(timeout(5_001)).toEqual([5_000, "attempt"])
    expect(timeout(5_000)).toEqual([5_000, "deadline"])
    expect(timeout(4_000)).toEqual([4_000, "deadline"])
    const retry = attempt(Planner.decide(spec(), after("a", "overloaded", { remainingMillis: 5_050 })))
    expect([retry.waitMillis, retry.timeoutMillis, retry.binding]).toEqual([100, 4_950, "deadline"])
  })

  it("a failure that forbids both retry and fallback fails safe", () => {
    expect(stopped(Planner.decide(spec(), after("a", "content_filtered")))).toMatchObject({
      outcome: "FailedSafe",
      reason: "content_filtered forbids retry and fallback",
      phase: null,
      resource: null
    })
  })

  it("a request no candidate may serve is Refused with the first policy reason; after attempts it is PlanExhausted", () => {
    const s = spec({ candidates: [candidate("a", { known: false }), candidate("b", { simulated: true })] })
    expect(stopped(Planner.decide(s, snapshot()))).toMatchObject({
      outcome: "Refused",
      reason: "a: listed: not in the catalog"
    })
    const incapable = spec({
      candidates: [candidate("a", { maxOutputTokens: 10 }), candidate("b", { simulated: true })]
    })
    expect(stopped(Planner.decide(incapable, snapshot()))).toMatchObject({
      outcome: "Refused",
      reason: "a: capable: max output 10 < 200 requested"
    })
    expect(stopped(Planner.decide(spec({ candidates: [] }), snapshot()))).toMatchObject({
      outcome: "Refused",
      reason: "no candidate"
    })
    const exhausted = spec({ candidates: [candidate("a"), candidate("b", { scope: "scope-a" })] })
    expect(stopped(Planner.decide(exhausted, after("a", "authentication", { attempts: 3 })))).toMatchObject({
      outcome: "PlanExhausted",
      reason: "no candidate left that the failures allow"
    })
  })

  it("when the policy allows a candidate but time, budget or health blocks it, the first blocker is the outcome", () => {
    // a: breaker open; b: over the token budget; c: legal but for the closed breaker → PlanExhausted with all.
    const open = { state: "open", probesFree: 1, opensInMillis: 5_000 } as const
    const blocked = Planner.decide(
      spec(),
      snapshot({ health: { a: open, b: open, c: open } })
    )
    expect(stopped(blocked)).toMatchObject({
      outcome: "PlanExhausted",
      phase: null,
      reason:
        "a: breaker open for 5000 ms more (also b: breaker open for 5000 ms more; c: breaker open for 5000 ms more)"
    })
    const one = spec({ candidates: [candidate("a")], minAttemptMillis: 200 })
    expect(stopped(Planner.decide(one, snapshot({ remainingMillis: 150 })))).toMatchObject({
      outcome: "DeadlineExceeded",
      phase: "admission",
      reason: "a: 150 ms remaining, below the 200 ms minimum attempt"
    })
    expect(stopped(Planner.decide(one, after("a", "overloaded", { remainingMillis: 250 })))).toMatchObject({
      outcome: "DeadlineExceeded",
      phase: "backoff",
      reason: "a: backoff 100 ms does not fit the 250 ms remaining with a 200 ms minimum attempt"
    })
  })

  it("the 'also' list names only the other candidates the policy allows, by their first blocker", () => {
    const s = spec({ candidates: [candidate("a"), candidate("b", { simulated: true }), candidate("c")] })
    const d = stopped(
      Planner.decide(s, snapshot({ remainingMillis: 10_000, budget: { cost: null, tokens: 10, calls: null } }))
    )
    expect(d.reason).toBe("a: worst-case tokens 300 > 10 left (also c: worst-case tokens 300 > 10 left)")
  })

  it("is pure: the same spec and snapshot give the same decision", () => {
    const s = spec()
    const snap = after("a", "rate_limited", { last: { kind: "rate_limited", retryAfterMillis: 700 }, jitter: 0.3 })
    expect(Planner.decide(s, snap)).toEqual(Planner.decide(s, snap))
  })
})

describe("decide, after a failure on a later candidate", () => {
  it("a stop weighs only the current candidate and those after it, and names the first the policy allows", () => {
    // From b on (a is not considered): both over the token budget, so the stop names b, then c.
    const budget = { cost: null, tokens: 10, calls: null }
    const d = stopped(Planner.decide(spec(), after("b", "overloaded", { budget })))
    expect(d).toMatchObject({
      outcome: "BudgetExhausted",
      resource: "tokens",
      reason: "b: worst-case tokens 300 > 10 left (also c: worst-case tokens 300 > 10 left)"
    })
    expect(d.candidates.map((c) => [c.endpoint, c.role])).toEqual([["b", "retry"], ["c", "fallback"]])
    // And when no candidate from c on is allowed: the failures leave nothing.
    const exhausted = stopped(Planner.decide(spec(), after("c", "authentication", { attempts: 3 })))
    expect(exhausted).toMatchObject({ outcome: "PlanExhausted", reason: "no candidate left that the failures allow" })
    expect(exhausted.candidates.map((c) => c.endpoint)).toEqual(["c"])
  })
})

describe("the verdict of a candidate legal on every predicate", () => {
  // #22: nearly every decision finds its candidate legal; its verdict is then one frozen value per spec,
  // candidate and role, made on first use, instead of a new object per candidate per decision.
  it("is one frozen value per spec, candidate and role, shared by every decision; any other verdict is its own", () => {
    const s = spec()
    const first = Planner.decide(s, snapshot())
    const later = Planner.decide(s, snapshot({ elapsedMillis: 40, remainingMillis: 6_000, attempts: 0 }))
    expect(first.candidates.every((c) => c.legal && Object.isFrozen(c))).toBe(true)
    first.candidates.forEach((c, i) => expect(later.candidates[i]).toBe(c))
    // Another role is another verdict, shared in turn.
    const retry = Planner.decide(s, after("a", "overloaded"))
    expect(retry.candidates[0]).toMatchObject({ endpoint: "a", role: "retry", legal: true })
    expect(retry.candidates[0]).not.toBe(first.candidates[0])
    expect(Planner.decide(s, after("a", "overloaded")).candidates[0]).toBe(retry.candidates[0])
    // Another spec with the same candidate objects has its own.
    expect(Planner.decide({ ...s }, snapshot()).candidates[0]).not.toBe(first.candidates[0])
    // A verdict with a predicate that does not hold is made for its decision, and not frozen.
    const blocked = snapshot({ budget: { cost: null, tokens: 10, calls: null } })
    const one = Planner.decide(s, blocked).candidates[0]!
    expect(one.legal).toBe(false)
    expect(Object.isFrozen(one)).toBe(false)
    expect(Planner.decide(s, blocked).candidates[0]).not.toBe(one)
  })
})

describe("what a budget stop needed (neededFor)", () => {
  // a is refused by the policy (not in the contract); b, priced twice a's, is the one the budget refuses.
  const twice = { inputTokens: 0.002, outputTokens: 0.004, request: 0.02 }
  const s = spec({ candidates: [candidate("a", { listed: false }), candidate("b", { prices: twice })] })
  const budgetStop = (budget: Planner.Snapshot["budget"]) => stopped(Planner.decide(s, snapshot({ budget })))

  it("is the worst case of the candidate the budget refused, in the stop's resource; one call for the call cap", () => {
    const cost = budgetStop({ cost: 0.5, tokens: null, calls: null })
    expect(cost).toMatchObject({ outcome: "BudgetExhausted", resource: "cost" })
    expect(Planner.neededFor(s, cost)).toBeCloseTo(100 * 0.002 + 200 * 0.004 + 0.02, 12)
    expect(Planner.neededFor(s, budgetStop({ cost: null, tokens: 299, calls: null }))).toBe(300)
    expect(Planner.neededFor(s, budgetStop({ cost: null, tokens: null, calls: 0 }))).toBe(1)
  })

  it("is undefined for any other stop, a stop with no candidate the policy allows, or one this spec does not know", () => {
    const cost = budgetStop({ cost: 0.5, tokens: null, calls: null })
    const deadline = stopped(Planner.decide(s, snapshot({ remainingMillis: 0 })))
    expect(deadline.outcome).toBe("DeadlineExceeded")
    expect(Planner.neededFor(s, deadline)).toBeUndefined()
    // The schema lets any stop carry a resource (a decoded journal): only a budget stop's is read.
    expect(Planner.neededFor(s, { ...cost, outcome: "PlanExhausted" })).toBeUndefined()
    expect(Planner.neededFor(s, { ...cost, candidates: cost.candidates.filter((c) => c.endpoint === "a") }))
      .toBeUndefined()
    expect(Planner.neededFor(s, { ...cost, candidates: [] })).toBeUndefined()
    const elsewhere = { ...cost, candidates: cost.candidates.map((c) => ({ ...c, endpoint: `${c.endpoint}-gone` })) }
    expect(Planner.neededFor(s, elsewhere)).toBeUndefined()
  })

  it("exceeds what was left of its resource whenever decide stops on the budget (property)", () => {
    FastCheck.assert(
      FastCheck.property(
        FastCheck.array(
          FastCheck.record({
            listed: FastCheck.boolean(),
            price: FastCheck.integer({ min: 0, max: 1_000 }),
            maxOutputTokens: FastCheck.integer({ min: 1, max: 5_000 })
          }),
          { minLength: 1, maxLength: 5 }
        ),
        FastCheck.option(FastCheck.integer({ min: 0, max: 3_000 }), { nil: null }),
        FastCheck.option(FastCheck.integer({ min: 0, max: 8_000 }), { nil: null }),
        FastCheck.option(FastCheck.integer({ min: 0, max: 2 }), { nil: null }),
        (cands, cost, tokens, calls) => {
          const candidates = cands.map((c, i) =>
            candidate(`e${i}`, {
              listed: c.listed,
              maxOutputTokens: c.maxOutputTokens,
              prices: { inputTokens: c.price / 1_000, outputTokens: c.price / 500, request: c.price / 100 }
            })
          )
          const sp = spec({ candidates, maxOutputTokens: null })
          const d = Planner.decide(sp, snapshot({ budget: { cost, tokens, calls } }))
          if (d._tag !== "Stop" || d.outcome !== "BudgetExhausted" || d.resource === null) return
          const needed = Planner.neededFor(sp, d)
          if (d.resource === "calls") {
            expect(needed).toBe(1)
            return
          }
          // The first candidate the policy allows is the one refused: its worst case, over what was left.
          const refused = candidates.find((c) => c.listed)!
          expect(needed).toBe(Planner.reservationFor(sp, refused)[d.resource])
          expect(needed).toBeGreaterThan(d.resource === "cost" ? cost! : tokens!)
        }
      ),
      { numRuns: 300, seed: 23 }
    )
  })
})

describe("found by the whole run of 2026-12-03", () => {
  it("with no input estimate the context window is not checked; the output limit still is", () => {
    // 200 output tokens fit the endpoint's 1000, and would not fit its context window of 150 with any input.
    const small = candidate("a", { contextWindow: 150 })
    expect(verdictsOf(Planner.decide(spec({ candidates: [small], inputTokens: null }), snapshot()), "a").capable)
      .toBe(true)
    expect(verdictsOf(Planner.decide(spec({ candidates: [small] }), snapshot()), "a").capable)
      .toBe("context window 150 < 100 input + 200 output")
  })

  it("a first attempt (no current endpoint) is not judged by a recorded failure", () => {
    const d = attempt(Planner.decide(spec(), snapshot({ last: { kind: "content_filtered", retryAfterMillis: null } })))
    expect(d).toMatchObject({ endpoint: "a", role: "first" })
    expect(d.candidates.map((c) => c.verdicts.failureAllows)).toEqual([true, true, true])
  })

  it("a candidate is legal exactly when every predicate holds, even when none does", () => {
    // a: the current endpoint, every one of its eleven predicates refusing.
    const a = candidate("a", { listed: false, simulated: true, maxOutputTokens: 10 })
    const s = spec({ candidates: [a], mode: "effectful", minAttemptMillis: 500 })
    const d = Planner.decide(
      s,
      after("a", "content_filtered", {
        remainingMillis: 100,
        budget: { cost: 0, tokens: 0, calls: 0 },
        retryTokens: { global: 0, endpoints: {} },
        health: { a: { state: "open", probesFree: 0, opensInMillis: 5_000 } },
        committed: true
      })
    )
    const [verdict] = d.candidates
    expect(Object.values(verdict!.verdicts).filter((v) => v === true)).toEqual([])
    expect(verdict!.legal).toBe(false)
    expect(stopped(d).outcome).toBe("FailedSafe")
  })
})
