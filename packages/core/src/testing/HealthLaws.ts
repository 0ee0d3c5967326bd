/**
 * The laws of endpoint health (`Health.Service`), for every implementation: the process-local
 * `Health.make`, and any store shared by many processes (breakers as rows, probe slots counted fleet-wide).
 * Time moves only through `advance` (by default `TestClock.adjust`: run the checks under `it.effect`); an
 * implementation on another clock passes its own. Register them in a test file:
 *
 * ```ts
 * import { it } from "@effect/vitest"
 * import { Health } from "@rein/core"
 * import { HealthLaws } from "@rein/core/testing"
 *
 * for (const law of HealthLaws.laws(Health.make)) it.effect.prop(law.name, [law.cases], ([check]) => check)
 * ```
 *
 * @since 0.1.0
 */
import { Effect, Either, FastCheck as fc, TestClock } from "effect"
import type * as Health from "../Health.js"
import type { Law, LawBroken } from "./Laws.js"
import { expect } from "./Laws.js"

/**
 * Makes a fresh health over `config`: the implementation under test. The laws only give settings in range, so
 * a `ConfigError` is a defect of the implementation.
 *
 * @category models
 * @since 0.1.0
 */
export type Make = (config: Partial<Health.Config>) => Effect.Effect<Health.Service, Health.ConfigError>

/**
 * How the laws move time forward (milliseconds).
 *
 * @category models
 * @since 0.1.0
 */
export type Advance = (millis: number) => Effect.Effect<void>

const SERVER_ERROR: Health.Result = { _tag: "failure", kind: "server_error", retryAfterMillis: null }
const NEUTRAL: Health.Result = { _tag: "neutral" }
const SUCCESS: Health.Result = { _tag: "success" }

/** Settings where only consecutive failures trip (the window's ratio never reaches its volume). */
const consecutiveOnly = (config: Partial<Health.Config>): Partial<Health.Config> => ({
  windowSize: 30,
  minimumVolume: 31,
  ...config
})

/** One first attempt on `endpoint` that ends with `result` (`false`: it was refused). */
const attempt = (health: Health.Service, endpoint: string, result: Health.Result) =>
  Effect.flatMap(
    Effect.either(health.acquire(endpoint, "first")),
    (permit) => Either.isLeft(permit) ? Effect.succeed(false) : Effect.as(health.complete(permit.right, result), true)
  )

/** Opens `endpoint`'s breaker with one provider-attributed failure (under `consecutiveFailures: 1`). */
const open = (health: Health.Service, endpoint: string) => Effect.asVoid(attempt(health, endpoint, SERVER_ERROR))

const state = (
  law: string,
  health: Health.Service,
  endpoint: string,
  expected: Health.BreakerState,
  when: string
): Effect.Effect<void, LawBroken> =>
  Effect.flatMap(
    health.breaker(endpoint),
    (s) => expect(law, s === expected, () => `${when}: breaker ${s}, expected ${expected}`)
  )

const tripping = (make: Fresh): Law => {
  const name = "k consecutive provider-attributed failures open a closed breaker; fewer do not"
  return {
    name,
    cases: fc.tuple(fc.integer({ min: 1, max: 6 }), fc.integer({ min: 0, max: 8 })).map(([k, n]) =>
      Effect.gen(function*() {
        const health = yield* make(consecutiveOnly({ consecutiveFailures: k }))
        let admitted = 0
        for (let i = 0; i < n; i++) if (yield* attempt(health, "a", SERVER_ERROR)) admitted++
        yield* expect(name, admitted === Math.min(n, k), () => `${admitted} of ${n} failures admitted with k = ${k}`)
        yield* state(name, health, "a", n >= k ? "open" : "closed", `after ${n} failures, k = ${k}`)
      })
    )
  }
}

const cooldowns = (make: Fresh, advance: Advance): Law => {
  const name = "an open breaker half-opens after its cooldown; a probe success closes it, a probe failure reopens it " +
    "with the cooldown grown (up to the maximum)"
  return {
    name,
    cases: fc.tuple(
      fc.integer({ min: 10, max: 5_000 }),
      fc.integer({ min: 1, max: 3 }),
      fc.integer({ min: 1, max: 8 }),
      fc.array(fc.boolean(), { minLength: 1, maxLength: 6 })
    ).map(([cooldown, growth, maxFactor, probes]) =>
      Effect.gen(function*() {
        const maxCooldown = cooldown * maxFactor
        const health = yield* make(
          consecutiveOnly({ consecutiveFailures: 1, cooldown, cooldownGrowth: growth, maxCooldown })
        )
        yield* open(health, "a")
        let current = cooldown
        for (const succeeds of probes) {
          if (current > 1) {
            yield* advance(current - 1)
            yield* state(name, health, "a", "open", `1 ms before a cooldown of ${current} ms`)
            yield* advance(1)
          } else yield* advance(current)
          yield* state(name, health, "a", "half_open", `after a cooldown of ${current} ms`)
          const probed = yield* attempt(health, "a", succeeds ? SUCCESS : SERVER_ERROR)
          yield* expect(name, probed, () => "the probe was refused")
          if (succeeds) {
            yield* state(name, health, "a", "closed", "after a probe success")
            yield* open(health, "a")
            current = cooldown
          } else {
            yield* state(name, health, "a", "open", "after a probe failure")
            current = Math.min(maxCooldown, current * growth)
          }
        }
      })
    )
  }
}

const probeSlots = (make: Fresh, advance: Advance): Law => {
  const name = "half-open admits at most `probes` probes at once; a completed probe frees its slot"
  return {
    name,
    cases: fc.tuple(fc.integer({ min: 1, max: 4 }), fc.integer({ min: 1, max: 10 })).map(([probes, tries]) =>
      Effect.gen(function*() {
        const health = yield* make(consecutiveOnly({ consecutiveFailures: 1, cooldown: 1_000, probes }))
        yield* open(health, "a")
        yield* advance(1_000)
        const permits: Array<Health.Permit> = []
        const refusals: Array<Health.Refusal> = []
        for (let i = 0; i < tries; i++) {
          const acquired = yield* Effect.either(health.acquire("a", "first"))
          if (Either.isRight(acquired)) permits.push(acquired.right)
          else refusals.push(acquired.left)
        }
        yield* expect(name, permits.length === Math.min(probes, tries), () => `${permits.length} probes admitted`)
        yield* expect(name, refusals.every((r) => r === "no_probe_slot"), () => `refused: ${refusals.join(", ")}`)
        if (permits.length === probes) {
          // A neutral end (not the provider's fault) gives the slot back without a transition.
          yield* health.complete(permits[0]!, NEUTRAL)
          yield* state(name, health, "a", "half_open", "after a neutral probe")
          const again = yield* Effect.either(health.acquire("a", "first"))
          yield* expect(name, Either.isRight(again), () => "a freed probe slot was refused")
        }
      })
    )
  }
}

const neutral = (make: Fresh): Law => {
  const name = "neutral outcomes (timeouts, transport, the caller's deadline) never move a breaker"
  return {
    name,
    cases: fc.tuple(fc.integer({ min: 1, max: 5 }), fc.integer({ min: 1, max: 40 })).map(([k, n]) =>
      Effect.gen(function*() {
        const health = yield* make({ consecutiveFailures: k, minimumVolume: 1, failureRatio: 0.01 })
        for (let i = 0; i < n; i++) yield* attempt(health, "a", NEUTRAL)
        yield* state(name, health, "a", "closed", `after ${n} neutral outcomes`)
      })
    )
  }
}

const retryTokens = (make: Fresh): Law => {
  const name = "retries and fallbacks are bounded by the retry budget: extra attempts ≤ capacity + depositRatio × " +
    "first attempts, globally and per endpoint"
  const step = fc.record({
    endpoint: fc.constantFrom("a", "b", "c"),
    role: fc.constantFrom("first" as const, "retry" as const, "fallback" as const)
  })
  return {
    name,
    cases: fc.tuple(
      fc.integer({ min: 0, max: 6 }),
      fc.constantFrom(0, 0.1, 0.5),
      fc.array(step, { maxLength: 40 })
    ).map(([capacity, depositRatio, steps]) =>
      Effect.gen(function*() {
        const health = yield* make({ capacity, depositRatio, consecutiveFailures: 1_000, minimumVolume: 1_000 })
        let firsts = 0
        let extras = 0
        const firstsOn = new Map<string, number>()
        const extrasOn = new Map<string, number>()
        for (const s of steps) {
          const acquired = yield* Effect.either(health.acquire(s.endpoint, s.role, { candidates: [s.endpoint] }))
          if (Either.isLeft(acquired)) continue
          if (s.role === "first") {
            firsts++
            firstsOn.set(s.endpoint, (firstsOn.get(s.endpoint) ?? 0) + 1)
          } else {
            extras++
            extrasOn.set(s.endpoint, (extrasOn.get(s.endpoint) ?? 0) + 1)
          }
          yield* health.complete(acquired.right, SUCCESS)
        }
        const bound = (f: number) => capacity + depositRatio * f + 1e-9
        yield* expect(name, extras <= bound(firsts), () => `${extras} extra attempts for ${firsts} first ones`)
        for (const [id, n] of extrasOn) {
          const f = firstsOn.get(id) ?? 0
          yield* expect(name, n <= bound(f), () => `${n} extra attempts on ${id} for ${f} first ones`)
        }
      })
    )
  }
}

const rateLimited = (retryAfterMillis: number): Health.Result => ({
  _tag: "failure",
  kind: "rate_limited",
  retryAfterMillis
})

const retryAfter = (make: Fresh, advance: Advance): Law => {
  const name = "a Retry-After never opens a closed breaker by itself; when k failures trip it, it stays open for " +
    "max(cooldown, Retry-After), and a shorter one later never shortens it"
  return {
    name,
    cases: fc.tuple(
      fc.integer({ min: 2, max: 5 }),
      fc.integer({ min: 10, max: 60_000 }),
      fc.integer({ min: 2, max: 60_000 }),
      fc.integer({ min: 1, max: 60_000 })
    ).map(([k, cooldown, first, second]) =>
      Effect.gen(function*() {
        const health = yield* make(consecutiveOnly({ consecutiveFailures: k, cooldown }))
        const permits = yield* Effect.orDie(
          Effect.all(Array.from({ length: k + 1 }, () => health.acquire("a", "first")))
        )
        for (let i = 0; i < k - 1; i++) {
          yield* health.complete(permits[i]!, rateLimited(first))
          yield* state(name, health, "a", "closed", `after ${i + 1} of ${k} 429s with a Retry-After of ${first} ms`)
        }
        yield* health.complete(permits[k - 1]!, rateLimited(first))
        yield* health.complete(permits[k]!, rateLimited(Math.min(second, first)))
        const open = Math.max(cooldown, first)
        yield* advance(open - 1)
        const when = `${k} 429s with a Retry-After of ${first} ms, a cooldown of ${cooldown} ms`
        yield* state(name, health, "a", "open", `1 ms before the end, ${when}`)
        yield* advance(1)
        yield* state(name, health, "a", "half_open", `at the end, ${when}`)
      })
    )
  }
}

/** One attempt of a sequence: how it ends (a Retry-After given to every failure, read only for a 429), after a
 * wait of `after` ms. */
interface Step {
  readonly kind: "success" | "neutral" | "server_error" | "overloaded" | "rate_limited"
  readonly retryAfter: number | null
  readonly after: number
}

const step: fc.Arbitrary<Step> = fc.record({
  kind: fc.constantFrom("success", "neutral", "server_error", "overloaded", "rate_limited", "rate_limited"),
  retryAfter: fc.option(fc.integer({ min: 0, max: 60_000 }), { nil: null }),
  after: fc.integer({ min: 0, max: 2_000 })
})

const resultOf = (s: Step): Health.Result =>
  s.kind === "success"
    ? SUCCESS
    : s.kind === "neutral"
    ? NEUTRAL
    : { _tag: "failure", kind: s.kind, retryAfterMillis: s.retryAfter }

const sequences = (make: Fresh, advance: Advance): Law => {
  const name = "for any sequence of results a closed breaker opens only when k failures in a row or the window's " +
    "failure ratio trip it, and then for max(cooldown, a 429's Retry-After)"
  return {
    name,
    cases: fc.record({
      k: fc.integer({ min: 1, max: 6 }),
      windowSize: fc.integer({ min: 1, max: 10 }),
      minimumVolume: fc.integer({ min: 1, max: 12 }),
      failureRatio: fc.constantFrom(0.25, 0.5, 0.75, 1),
      cooldown: fc.integer({ min: 10, max: 10_000 }),
      steps: fc.array(step, { maxLength: 30 })
    }).map(({ cooldown, failureRatio, k, minimumVolume, steps, windowSize }) =>
      Effect.gen(function*() {
        const health = yield* make({ consecutiveFailures: k, windowSize, minimumVolume, failureRatio, cooldown })
        // The model: failures in a row, and the last `windowSize` provider-attributed outcomes (true: a failure).
        let consecutive = 0
        const window: Array<boolean> = []
        for (const [i, s] of steps.entries()) {
          yield* advance(s.after)
          const when = `step ${i} (${s.kind}, Retry-After ${s.retryAfter})`
          const acquired = yield* Effect.either(health.acquire("a", "first"))
          yield* expect(name, Either.isRight(acquired), () => `${when}: refused while the breaker is closed`)
          if (Either.isLeft(acquired)) return
          yield* health.complete(acquired.right, resultOf(s))
          if (s.kind === "neutral") {
            yield* state(name, health, "a", "closed", when)
            continue
          }
          const failed = s.kind !== "success"
          consecutive = failed ? consecutive + 1 : 0
          window.push(failed)
          if (window.length > windowSize) window.shift()
          const failures = window.filter((f) => f).length
          const trips = failed &&
            (consecutive >= k || (window.length >= minimumVolume && failures / window.length >= failureRatio))
          if (!trips) {
            yield* state(name, health, "a", "closed", `${when}, ${consecutive} in a row, ${failures}/${window.length}`)
            continue
          }
          const hint = s.kind === "rate_limited" ? s.retryAfter ?? 0 : 0
          const opens = (yield* health.view(["a"])).health.a
          const expected = Math.max(cooldown, hint)
          yield* expect(
            name,
            opens?.state === "open" && opens.opensInMillis === expected,
            () => `${when}: tripped; the view says ${JSON.stringify(opens)}, expected open for ${expected} ms`
          )
          return
        }
      })
    )
  }
}

const laterProbe = (make: Fresh, advance: Advance): Law => {
  const name = "a probe admitted for a later start (its backoff) leaves the breaker open until its cooldown ends: " +
    "no half-open, no attempt without a wait, and a failure landing meanwhile does not shorten a Retry-After"
  return {
    name,
    cases: fc.tuple(
      fc.integer({ min: 10, max: 5_000 }),
      fc.integer({ min: 0, max: 55_000 }),
      fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
      fc.integer({ min: 0, max: 5_000 }),
      fc.integer({ min: 2, max: 4 })
    ).map(([cooldown, longer, elapsed, beyond, probes]) =>
      Effect.gen(function*() {
        // Open with a Retry-After at least the cooldown: the breaker opens for exactly `retryAfter`.
        const retryAfter = cooldown + longer
        const health = yield* make(consecutiveOnly({ consecutiveFailures: 1, cooldown, probes }))
        const early = yield* Effect.orDie(health.acquire("a", "first"))
        const opener = yield* Effect.orDie(health.acquire("a", "first"))
        yield* health.complete(opener, { _tag: "failure", kind: "rate_limited", retryAfterMillis: retryAfter })
        const waited = Math.floor(elapsed * retryAfter)
        yield* advance(waited)
        const wait = retryAfter - waited + beyond
        const later = yield* Effect.either(health.acquire("a", "first", { afterMillis: wait }))
        yield* expect(
          name,
          Either.isRight(later) && later.right.probe,
          () => `an attempt ${wait} ms from now (at the end of the Retry-After or later) was not admitted as a probe`
        )
        const when = `${waited} ms into a Retry-After of ${retryAfter} ms, a probe admitted for ${wait} ms later`
        yield* state(name, health, "a", "open", when)
        const now = yield* Effect.either(health.acquire("a", "first"))
        yield* expect(
          name,
          Either.isLeft(now) && now.left === "breaker_open",
          () => `${when}: an attempt without a wait was ${Either.isLeft(now) ? `refused ${now.left}` : "admitted"}`
        )
        const seen = (yield* health.view(["a"])).health.a
        yield* expect(name, seen?.state === "open", () => `${when}: the view says ${seen?.state}`)
        // A failure of an attempt admitted before the breaker opened lands now.
        yield* health.complete(early, SERVER_ERROR)
        if (retryAfter - waited > 1) {
          yield* advance(retryAfter - waited - 1)
          yield* state(name, health, "a", "open", `1 ms before the Retry-After of ${retryAfter} ms ends`)
          yield* advance(1)
        } else yield* advance(retryAfter - waited)
        yield* state(name, health, "a", "half_open", `at the end of the Retry-After of ${retryAfter} ms`)
      })
    )
  }
}

const degraded = (make: Fresh): Law => {
  const name = "a degraded endpoint refuses every attempt until each degradation is undone"
  return {
    name,
    cases: fc.integer({ min: 1, max: 4 }).map((n) =>
      Effect.gen(function*() {
        const health = yield* make({})
        const undo = yield* Effect.all(Array.from({ length: n }, () => health.degrade("a")))
        for (const u of undo) {
          const refused = yield* Effect.either(health.acquire("a", "first"))
          yield* expect(name, Either.isLeft(refused) && refused.left === "degraded", () => "admitted while degraded")
          yield* u
        }
        const admitted = yield* Effect.either(health.acquire("a", "first"))
        yield* expect(name, Either.isRight(admitted), () => "refused after every degradation was undone")
      })
    )
  }
}

/**
 * Every health law, for the implementation `make` builds.
 *
 * @example
 * ```ts
 * import { Health } from "@rein/core"
 * import { HealthLaws } from "@rein/core/testing"
 *
 * const laws = HealthLaws.laws(Health.make)
 * laws.map((law) => law.name)
 * ```
 * @category laws
 * @since 0.1.0
 */
export const laws = (given: Make, advance: Advance = (millis) => TestClock.adjust(millis)): ReadonlyArray<Law> => {
  const make: Fresh = (config) => Effect.orDie(given(config))
  return lawsOf(make, advance)
}

/** The implementation under test, its `ConfigError` a defect. */
type Fresh = (config: Partial<Health.Config>) => Effect.Effect<Health.Service>

const lawsOf = (make: Fresh, advance: Advance): ReadonlyArray<Law> => [
  tripping(make),
  cooldowns(make, advance),
  probeSlots(make, advance),
  neutral(make),
  retryTokens(make),
  retryAfter(make, advance),
  sequences(make, advance),
  laterProbe(make, advance),
  degraded(make)
]
