/**
 * The laws every `RunLimits` implementation must pass, as property checks an implementation's own tests
 * run (the in-memory limits today; a shared store later). Each law is an `Effect` that checks its property
 * over random samples, every sample on a fresh `TestClock` and fresh limits from `make`, and fails with
 * `LawViolated` naming the law and the counterexample.
 *
 * - **soft caps**: a charge answers with a stop exactly when the totals reach a cap; with workers that stop
 *   admitting at the first stop, the totals exceed a cap by at most what the attempts in flight charged;
 * - **rates**: requests and tokens admitted in any interval of `w` ms never exceed a full bucket plus its
 *   refill over `w` (per minute: `limit + limit × w / 60 000`), and a `Wait` is long enough;
 * - **cooldown**: an endpoint admits nothing before its cooldown ends (a Retry-After lengthens it, never
 *   shortens it), and other endpoints are not held back;
 * - **stop**: sticky, the first trigger wins, and every caller (and `whenStopped`) sees the same stop.
 *
 * @since 0.1.0
 */
import type { Scope } from "effect"
import { Clock, Effect, FastCheck as fc, Option, Schema, TestClock, TestContext } from "effect"
import type { Config, Service } from "../RunLimits.js"
import type { Stop } from "../Termination.js"

/**
 * A law did not hold for a sample.
 *
 * @example
 * ```ts
 * import { RunLimitsLaws } from "@rein/batch/testing"
 *
 * const violated = new RunLimitsLaws.LawViolated({ law: "stop", message: "the second stop won" })
 * ```
 * @category errors
 * @since 0.1.0
 */
export class LawViolated extends Schema.TaggedError<LawViolated>()("LawViolated", {
  law: Schema.String,
  message: Schema.String
}) {}

/**
 * Fresh limits for a config, their time origin now (the sample's `TestClock`).
 *
 * @example
 * ```ts
 * import { RunLimits } from "@rein/batch"
 * import type { RunLimitsLaws } from "@rein/batch/testing"
 *
 * const make: RunLimitsLaws.Make = RunLimits.memory
 * ```
 * @category models
 * @since 0.1.0
 */
export type Make = (config: Config) => Effect.Effect<Service, unknown, Scope.Scope>

/**
 * One law: its name and the check over random samples.
 *
 * @example
 * ```ts
 * import type { RunLimitsLaws } from "@rein/batch/testing"
 *
 * const names = (laws: ReadonlyArray<RunLimitsLaws.Law>) => laws.map((law) => law.name)
 * ```
 * @category models
 * @since 0.1.0
 */
export interface Law {
  readonly name: string
  readonly check: Effect.Effect<void, LawViolated>
}

/**
 * The laws for one implementation; `numRuns` samples each (default 100).
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { RunLimits } from "@rein/batch"
 * import { RunLimitsLaws } from "@rein/batch/testing"
 *
 * const all = Effect.forEach(RunLimitsLaws.laws(RunLimits.memory), (law) => law.check, { discard: true })
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const laws = (make: Make, options?: { readonly numRuns?: number | undefined }): ReadonlyArray<Law> => {
  const numRuns = options?.numRuns ?? 100
  const law = <A>(
    name: string,
    arbitrary: fc.Arbitrary<A>,
    check: (make: Make, a: A) => Effect.Effect<void, unknown, Scope.Scope>
  ): Law => ({
    name,
    check: Effect.tryPromise({
      try: () =>
        fc.assert(
          fc.asyncProperty(arbitrary, (a) =>
            Effect.runPromise(Effect.scoped(check(make, a)).pipe(Effect.provide(TestContext.TestContext)))),
          { numRuns }
        ),
      catch: (e) => new LawViolated({ law: name, message: e instanceof Error ? e.message : String(e) })
    })
  })
  return [
    law("a charge stops the run exactly when the totals reach a cap", capsArbitrary, capsSequential),
    law(
      "with workers that stop at the first stop, caps are exceeded by at most the attempts in flight",
      workersArbitrary,
      capsConcurrent
    ),
    law(
      "a charge that is not a count (NaN, ±Infinity, negative) stops the run and leaves the totals as they were",
      invalidChargeArbitrary,
      invalidCharge
    ),
    law("requests and tokens per minute are never exceeded in any interval", ratesArbitrary, rates),
    law(
      "a cooldown admits nothing on its endpoint before it ends, and Retry-After never shortens it",
      cooldownArbitrary,
      cooldown
    ),
    law("the stop is sticky and the first trigger wins", stopsArbitrary, stops)
  ]
}

type Sample<T> = T extends fc.Arbitrary<infer A> ? A : never

/**
 * The same limits answered through their synchronous fast paths (each effectful member replaced by its
 * `unsafe*` counterpart, where there is one), so that the laws check the fast paths too.
 *
 * @example
 * ```ts
 * import { RunLimits } from "@rein/batch"
 * import { RunLimitsLaws } from "@rein/batch/testing"
 *
 * const fast = RunLimitsLaws.laws(RunLimitsLaws.viaFastPaths(RunLimits.memory))
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const viaFastPaths = (make: Make): Make => (config) =>
  Effect.map(make(config), (limits): Service => {
    const { unsafeAdmit, unsafeCharge, unsafeRelease, unsafeStop, unsafeStopped } = limits
    return {
      ...limits,
      ...(unsafeAdmit === undefined ? {} : { admit: (e, t) => Effect.sync(() => unsafeAdmit(e, t)) }),
      ...(unsafeRelease === undefined ? {} : { release: (h, t) => Effect.sync(() => unsafeRelease(h, t)) }),
      ...(unsafeCharge === undefined ? {} : { charge: (u) => Effect.sync(() => Option.fromNullable(unsafeCharge(u))) }),
      ...(unsafeStop === undefined ? {} : { stop: (s) => Effect.sync(() => unsafeStop(s)) }),
      ...(unsafeStopped === undefined ? {} : { stopped: Effect.sync(() => Option.fromNullable(unsafeStopped())) })
    }
  })

const violated = (law: string, message: string) => Effect.fail(new LawViolated({ law, message }))

const ensure = (ok: boolean, law: string, message: () => string): Effect.Effect<void, LawViolated> =>
  ok ? Effect.void : Effect.suspend(() => violated(law, message()))

// ---- soft caps ------------------------------------------------------------------------------------------

const capsArbitrary = fc.record({
  // Small caps and quarter costs (exact in binary), so that totals often land exactly on a cap.
  maxTotalTokens: fc.option(fc.integer({ min: 1, max: 200 }), { nil: undefined }),
  maxTotalCost: fc.option(fc.integer({ min: 1, max: 40 }).map((n) => n / 4), { nil: undefined }),
  charges: fc.array(
    fc.record({ tokens: fc.integer({ min: 0, max: 40 }), cost: fc.integer({ min: 0, max: 4 }).map((n) => n / 4) }),
    { maxLength: 30 }
  )
})

const capsSequential = (make: Make, s: Sample<typeof capsArbitrary>) =>
  Effect.gen(function*() {
    const limits = yield* make({ concurrency: 1, maxTotalTokens: s.maxTotalTokens, maxTotalCost: s.maxTotalCost })
    let tokens = 0
    let cost = 0
    for (const usage of s.charges) {
      const trip = yield* limits.charge(usage)
      tokens += usage.tokens
      cost += usage.cost
      const reached = (s.maxTotalTokens !== undefined && tokens >= s.maxTotalTokens) ||
        (s.maxTotalCost !== undefined && cost >= s.maxTotalCost)
      yield* ensure(Option.isSome(trip) === reached, "caps", () =>
        `after charging ${tokens} tokens and cost ${cost}, charge answered ${
          Option.isSome(trip) ? "a stop" : "no stop"
        } (caps: ${s.maxTotalTokens} tokens, cost ${s.maxTotalCost})`)
      if (Option.isSome(trip)) {
        yield* ensure(trip.value.kind === "budget_exceeded", "caps", () =>
          `a cap's stop is ${trip.value.kind}`)
      }
    }
    const totals = yield* limits.totals
    yield* ensure(totals.tokens === tokens && Math.abs(totals.cost - cost) <= 1e-9 * Math.max(1, cost), "caps", () =>
      `totals ${JSON.stringify(totals)}, charged ${tokens} tokens and cost ${cost}`)
  })

const invalidChargeArbitrary = fc.record({
  maxTotalTokens: fc.option(fc.integer({ min: 1_000, max: 2_000 }), { nil: undefined }),
  before: fc.array(fc.record({ tokens: fc.integer({ min: 0, max: 40 }), cost: fc.constant(0.25) }), { maxLength: 5 }),
  bad: fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, -1, -1e-9),
  resource: fc.constantFrom("tokens" as const, "cost" as const)
})

const invalidCharge = (make: Make, s: Sample<typeof invalidChargeArbitrary>) =>
  Effect.gen(function*() {
    const limits = yield* make({ concurrency: 1, maxTotalTokens: s.maxTotalTokens })
    for (const usage of s.before) yield* limits.charge(usage)
    const before = yield* limits.totals
    const usage = s.resource === "tokens" ? { tokens: s.bad, cost: 0 } : { tokens: 1, cost: s.bad }
    const trip = yield* limits.charge(usage)
    yield* ensure(Option.isSome(trip) && trip.value.kind === "budget_exceeded", "invalid charge", () =>
      `charging ${String(usage.tokens)} tokens and cost ${String(usage.cost)} answered ${
        Option.isSome(trip) ? trip.value.kind : "no stop"
      }`)
    const after = yield* limits.totals
    yield* ensure(after.tokens === before.tokens && after.cost === before.cost, "invalid charge", () =>
      `totals ${JSON.stringify(before)} became ${String(after.tokens)} tokens and cost ${String(after.cost)}`)
  })

const workersArbitrary = fc.record({
  maxTotalTokens: fc.integer({ min: 1, max: 1_000 }),
  concurrency: fc.integer({ min: 1, max: 6 }),
  attempts: fc.array(
    fc.record({ tokens: fc.integer({ min: 0, max: 100 }), latency: fc.integer({ min: 0, max: 50 }) }),
    { minLength: 1, maxLength: 40 }
  )
})

// Each worker takes the next attempt unless the run stopped, admits it, "runs" it for its latency, charges
// it, and stops the run when the charge says so: what a batch run's gate does.
const capsConcurrent = (make: Make, s: Sample<typeof workersArbitrary>) =>
  Effect.gen(function*() {
    const limits = yield* make({ concurrency: s.concurrency, maxTotalTokens: s.maxTotalTokens })
    let next = 0
    const worker: Effect.Effect<void> = Effect.gen(function*() {
      while (next < s.attempts.length) {
        if (Option.isSome(yield* limits.stopped)) return
        const attempt = s.attempts[next++]!
        const admission = yield* limits.admit("e", attempt.tokens)
        yield* Effect.sleep(attempt.latency)
        const trip = yield* limits.charge({ tokens: attempt.tokens, cost: 0 })
        if (Option.isSome(trip)) yield* limits.stop(trip.value)
        if (admission._tag === "Hold") yield* limits.release(admission, attempt.tokens)
      }
    })
    const fiber = yield* Effect.fork(Effect.all(Array.from({ length: s.concurrency }, () => worker), {
      concurrency: "unbounded",
      discard: true
    }))
    for (let i = 0; i < 1_000 && fiber.unsafePoll() === null; i++) yield* TestClock.adjust(10)
    yield* Effect.fromFiber(fiber)
    const total = (yield* limits.totals).tokens
    const bound = s.maxTotalTokens - 1 + s.concurrency * 100
    yield* ensure(total <= bound, "caps", () =>
      `charged ${total} tokens with a cap of ${s.maxTotalTokens} and ${s.concurrency} workers (bound ${bound})`)
  })

// ---- rates ----------------------------------------------------------------------------------------------

const ratesArbitrary = fc.record({
  requestsPerMinute: fc.option(fc.integer({ min: 1, max: 20 }), { nil: undefined }),
  tokensPerMinute: fc.option(fc.integer({ min: 100, max: 2_000 }), { nil: undefined }),
  asks: fc.array(
    fc.record({ gap: fc.integer({ min: 0, max: 20_000 }), tokens: fc.integer({ min: 0, max: 100 }) }),
    { minLength: 1, maxLength: 40 }
  )
})

const rates = (make: Make, s: Sample<typeof ratesArbitrary>) =>
  Effect.gen(function*() {
    const limits = yield* make({
      concurrency: 1,
      requestsPerMinute: s.requestsPerMinute,
      tokensPerMinute: s.tokensPerMinute
    })
    const admitted: Array<{ readonly at: number; readonly tokens: number }> = []
    for (const ask of s.asks) {
      yield* TestClock.adjust(ask.gap)
      let tries = 0
      while (true) {
        const a = yield* limits.admit("e", ask.tokens)
        if (a._tag === "Hold") {
          admitted.push({ at: yield* Clock.currentTimeMillis, tokens: a.tokens })
          // Used exactly what it reserved: nothing comes back to the bucket.
          yield* limits.release(a, a.tokens)
          break
        }
        yield* ensure(Number.isFinite(a.millis) && a.millis > 0, "rates", () => `a rate wait of ${a.millis} ms`)
        // A wait is long enough: after it (and a millisecond of rounding), the admission goes through.
        yield* ensure(tries++ < 3, "rates", () => `still waiting after ${tries} waits (${ask.tokens} tokens)`)
        yield* TestClock.adjust(Math.ceil(a.millis))
      }
    }
    for (let i = 0; i < admitted.length; i++) {
      let requests = 0
      let tokens = 0
      for (let j = i; j < admitted.length; j++) {
        requests++
        tokens += admitted[j]!.tokens
        const w = admitted[j]!.at - admitted[i]!.at
        if (s.requestsPerMinute !== undefined) {
          const bound = s.requestsPerMinute + (s.requestsPerMinute * w) / 60_000 + 1e-9
          yield* ensure(
            requests <= bound,
            "rates",
            () => `${requests} requests in ${w} ms at ${s.requestsPerMinute}/min`
          )
        }
        if (s.tokensPerMinute !== undefined) {
          const bound = s.tokensPerMinute + (s.tokensPerMinute * w) / 60_000 + 1e-6
          yield* ensure(tokens <= bound, "rates", () => `${tokens} tokens in ${w} ms at ${s.tokensPerMinute}/min`)
        }
      }
    }
  })

// ---- cooldown -------------------------------------------------------------------------------------------

const cooldownArbitrary = fc.record({
  cooldownMillis: fc.integer({ min: 1, max: 5_000 }),
  steps: fc.array(
    fc.record({
      gap: fc.integer({ min: 0, max: 3_000 }),
      op: fc.oneof(
        fc.record({ _tag: fc.constant("cool" as const), retryAfter: fc.option(fc.integer({ min: 0, max: 8_000 })) }),
        fc.record({ _tag: fc.constant("admit" as const), endpoint: fc.constantFrom("hot", "other") })
      )
    }),
    { minLength: 1, maxLength: 30 }
  )
})

const cooldown = (make: Make, s: Sample<typeof cooldownArbitrary>) =>
  Effect.gen(function*() {
    const limits = yield* make({ concurrency: 1, cooldownMillis: s.cooldownMillis })
    const origin = yield* Clock.currentTimeMillis
    let end = Number.NEGATIVE_INFINITY
    for (const step of s.steps) {
      yield* TestClock.adjust(step.gap)
      const now = (yield* Clock.currentTimeMillis) - origin
      if (step.op._tag === "cool") {
        const started = yield* limits.cool("hot", step.op.retryAfter)
        const length = Math.max(s.cooldownMillis, step.op.retryAfter ?? 0)
        if (Option.isSome(started)) {
          yield* ensure(started.value === length, "cooldown", () => `a cooldown of ${started.value} ms, not ${length}`)
        }
        end = Math.max(end, now + length)
        continue
      }
      const a = yield* limits.admit(step.op.endpoint, 0)
      const cooling = step.op.endpoint === "hot" && now < end
      const endpoint = step.op.endpoint
      yield* ensure((a._tag === "Wait") === cooling, "cooldown", () =>
        `admitting on ${endpoint} at ${now} ms answered ${a._tag} (hot cools until ${end} ms)`)
      if (a._tag === "Wait") {
        yield* ensure(Math.abs(a.millis - (end - now)) < 1e-6, "cooldown", () =>
          `told to wait ${a.millis} ms at ${now} ms for a cooldown until ${end} ms`)
      } else {
        yield* limits.release(a, 0)
      }
    }
  })

// ---- stop -----------------------------------------------------------------------------------------------

const stopArbitrary: fc.Arbitrary<Stop> = fc.oneof(
  fc.string().map((reason): Stop => ({ _tag: "BatchTimeout", kind: "batch_timeout", reason })),
  fc.record({ reason: fc.string(), itemId: fc.string() }).map(({ itemId, reason }): Stop => ({
    _tag: "FailFast",
    kind: "fail_fast",
    reason,
    itemId,
    category: "authentication"
  })),
  fc.string().map((reason): Stop => ({ _tag: "BudgetExceeded", kind: "budget_exceeded", resource: "tokens", reason }))
)

const stopsArbitrary = fc.record({
  sequential: fc.array(stopArbitrary, { minLength: 1, maxLength: 6 }),
  concurrent: fc.array(stopArbitrary, { minLength: 1, maxLength: 6 })
})

const stops = (make: Make, s: Sample<typeof stopsArbitrary>) =>
  Effect.gen(function*() {
    const first = yield* make({ concurrency: 1 })
    yield* ensure(Option.isNone(yield* first.stopped), "stop", () => "fresh limits are already stopped")
    for (const stop of s.sequential) {
      const winner = yield* first.stop(stop)
      yield* ensure(winner === s.sequential[0], "stop", () => `stop answered ${JSON.stringify(winner)}, not the first`)
    }
    const seen = yield* first.stopped
    yield* ensure(Option.isSome(seen) && seen.value === s.sequential[0], "stop", () => "stopped is not the first stop")
    yield* ensure((yield* first.whenStopped) === s.sequential[0], "stop", () => "whenStopped is not the first stop")

    const raced = yield* make({ concurrency: 1 })
    const waiting = yield* Effect.fork(raced.whenStopped)
    const winners = yield* Effect.forEach(s.concurrent, (stop) => raced.stop(stop), { concurrency: "unbounded" })
    const winner = winners[0]!
    yield* ensure(s.concurrent.includes(winner), "stop", () => "the winner is none of the stops")
    yield* ensure(winners.every((w) => w === winner), "stop", () => "concurrent stops answered different winners")
    yield* ensure((yield* Effect.fromFiber(waiting)) === winner, "stop", () => "whenStopped saw another stop")
  })
