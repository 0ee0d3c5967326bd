/**
 * A scenario: scripted endpoint behaviour over time, and the traffic to drive through it. `rein simulate`
 * plays it in virtual time; `rein batch` and `rein run` use its endpoint behaviour (in real time, from the
 * start of the command) for the built-in fake provider.
 *
 * Each endpoint has phases — `{ "from": "2 minutes", "until": "10 minutes", "behaviour": { … } }` — and
 * the first phase covering the moment of a call decides how the call goes; outside every phase the
 * scenario's `default` behaviour applies. Behaviours: `ok` (answer after a latency), `fail` (a failure
 * kind, optionally with Retry-After and a probability), `stall` (never answer), `drip` (answer very slowly)
 * and `flap` (alternate up and down). Price changes re-pin an endpoint's catalog prices from a moment on.
 *
 * @since 0.1.0
 */
import type { Health } from "@rein/core"
import { Failure, Input } from "@rein/core"
import type { Either } from "effect"
import { Schema } from "effect"
import { decodeWith, Fraction, Millis, NonNegative, NonNegativeInt, Offset, PositiveInt } from "./internal/schema.js"

const Ok = Schema.Struct({
  kind: Schema.Literal("ok"),
  latency: Schema.optionalWith(Offset, { default: () => 200 }),
  outputTokens: Schema.optionalWith(NonNegativeInt, { default: () => 100 })
})

const Fail = Schema.Struct({
  kind: Schema.Literal("fail"),
  failure: Failure.FailureKind,
  latency: Schema.optionalWith(Offset, { default: () => 50 }),
  retryAfter: Schema.optional(Millis),
  /** The share of calls that fail (drawn from the seeded generator); the others behave as `default`. */
  probability: Schema.optionalWith(Fraction, { default: () => 1 })
})

const Stall = Schema.Struct({ kind: Schema.Literal("stall") })

const Drip = Schema.Struct({
  kind: Schema.Literal("drip"),
  latency: Millis,
  outputTokens: Schema.optionalWith(NonNegativeInt, { default: () => 100 })
})

const Flap = Schema.Struct({
  kind: Schema.Literal("flap"),
  up: Millis,
  down: Millis,
  failure: Schema.optionalWith(Failure.FailureKind, { default: () => "server_error" as const }),
  latency: Schema.optionalWith(Offset, { default: () => 200 })
})

/**
 * How an endpoint answers a call.
 *
 * @example
 * ```ts
 * import { Schema } from "effect"
 * import { Scenario } from "@rein/cli"
 *
 * const busy = Schema.decodeUnknownSync(Scenario.Behaviour)({ kind: "fail", failure: "rate_limited", retryAfter: "2 seconds" })
 * ```
 * @since 0.1.0
 * @category schemas
 */
export const Behaviour = Schema.Union(Ok, Fail, Stall, Drip, Flap)

/**
 * @example
 * ```ts
 * import { Scenario } from "@rein/cli"
 *
 * const stall: Scenario.Behaviour = { kind: "stall" }
 * ```
 * @since 0.1.0
 * @category models
 */
export type Behaviour = typeof Behaviour.Type

/**
 * One phase of an endpoint's behaviour: from an offset (default 0) until an offset (default: the end).
 *
 * @example
 * ```ts
 * import { Schema } from "effect"
 * import { Scenario } from "@rein/cli"
 *
 * Schema.decodeUnknownSync(Scenario.Phase)({ from: "1 minute", until: "5 minutes", behaviour: { kind: "stall" } })
 * ```
 * @since 0.1.0
 * @category schemas
 */
export const Phase = Schema.Struct({
  from: Schema.optionalWith(Offset, { default: () => 0 }),
  until: Schema.optional(Offset),
  behaviour: Behaviour
})

/**
 * @example
 * ```ts
 * import { Scenario } from "@rein/cli"
 *
 * const phase: Scenario.Phase = { from: 0, until: 60_000, behaviour: { kind: "stall" } }
 * ```
 * @since 0.1.0
 * @category models
 */
export type Phase = typeof Phase.Type

/**
 * A price change: from `at` on, requests reserve against these prices for `endpoint`.
 *
 * @example
 * ```ts
 * import { Schema } from "effect"
 * import { Scenario } from "@rein/cli"
 *
 * Schema.decodeUnknownSync(Scenario.PriceChange)({ at: "30 minutes", endpoint: "fake/a", outputTokens: 0.00002 })
 * ```
 * @since 0.1.0
 * @category schemas
 */
export const PriceChange = Schema.Struct({
  at: Offset,
  endpoint: Schema.String,
  inputTokens: Schema.optional(NonNegative),
  outputTokens: Schema.optional(NonNegative),
  request: Schema.optional(NonNegative)
})

/**
 * @example
 * ```ts
 * import { Scenario } from "@rein/cli"
 *
 * const change: Scenario.PriceChange = { at: 1_800_000, endpoint: "fake/a", outputTokens: 0.0003 }
 * ```
 * @since 0.1.0
 * @category models
 */
export type PriceChange = typeof PriceChange.Type

/**
 * Breaker and retry-budget settings for the simulation (defaults: `Health.defaults` of `@rein/core`).
 *
 * @example
 * ```ts
 * import { Schema } from "effect"
 * import { Scenario } from "@rein/cli"
 *
 * Schema.decodeUnknownSync(Scenario.HealthSettings)({ consecutiveFailures: 3, cooldown: "5 seconds" })
 * ```
 * @since 0.1.0
 * @category schemas
 */
export const HealthSettings = Schema.Struct({
  consecutiveFailures: Schema.optional(PositiveInt),
  cooldown: Schema.optional(Millis),
  maxCooldown: Schema.optional(Millis),
  probes: Schema.optional(PositiveInt),
  capacity: Schema.optional(NonNegative),
  depositRatio: Schema.optional(Fraction)
})

/**
 * A scenario file.
 *
 * @example
 * ```ts
 * import { Scenario } from "@rein/cli"
 *
 * const scenario = Scenario.decode({
 *   duration: "1 hour",
 *   rate: 2,
 *   endpoints: { "fake/a": [{ from: "10 minutes", until: "20 minutes", behaviour: { kind: "fail", failure: "overloaded" } }] }
 * })
 * ```
 * @since 0.1.0
 * @category schemas
 */
export const ScenarioSchema = Schema.Struct({
  description: Schema.optional(Schema.String),
  /** How long traffic arrives (virtual time in `simulate`). */
  duration: Schema.optionalWith(Millis, { default: () => 600_000 }),
  /** Requests per second. */
  rate: Schema.optionalWith(Input.numberWhere("a rate > 0", (n) => Number.isFinite(n) && n > 0), { default: () => 1 }),
  /** `poisson`: exponential gaps drawn from the seeded generator; `steady`: evenly spaced. */
  arrivals: Schema.optionalWith(Schema.Literal("poisson", "steady"), { default: () => "poisson" as const }),
  /** The shape of each simulated request. */
  request: Schema.optionalWith(
    Schema.Struct({
      inputTokens: Schema.optionalWith(PositiveInt, { default: () => 500 }),
      maxOutputTokens: Schema.optional(PositiveInt)
    }),
    { default: () => ({ inputTokens: 500 }) }
  ),
  endpoints: Schema.optionalWith(Input.OwnRecord(Schema.Array(Phase)), {
    default: () => ({})
  }),
  default: Schema.optionalWith(Behaviour, {
    default: () => ({ kind: "ok" as const, latency: 200, outputTokens: 100 })
  }),
  prices: Schema.optionalWith(Schema.Array(PriceChange), { default: () => [] }),
  health: Schema.optional(HealthSettings)
})

/**
 * A decoded scenario (durations in milliseconds).
 *
 * @example
 * ```ts
 * import { Scenario } from "@rein/cli"
 *
 * const minutes = (s: Scenario.Scenario) => s.duration / 60_000
 * ```
 * @since 0.1.0
 * @category models
 */
export type Scenario = typeof ScenarioSchema.Type

const decodeScenario = decodeWith(ScenarioSchema)

/**
 * Decodes a scenario from parsed JSON; the error names each bad field.
 *
 * @example
 * ```ts
 * import { Scenario } from "@rein/cli"
 *
 * Scenario.decode({ rate: -1 }) // Left("rate: Expected a rate > 0, actual -1")
 * ```
 * @since 0.1.0
 * @category decoding
 */
export const decode: (input: unknown) => Either.Either<Scenario, string> = decodeScenario

/**
 * The behaviour of `endpoint` at `offsetMillis` after the start.
 *
 * @example
 * ```ts
 * import { Scenario } from "@rein/cli"
 *
 * declare const scenario: Scenario.Scenario
 * Scenario.behaviourAt(scenario, "fake/a", 90_000)
 * ```
 * @since 0.1.0
 * @category utils
 */
export const behaviourAt = (scenario: Scenario, endpoint: string, offsetMillis: number): Behaviour => {
  // An own entry only: an endpoint named "constructor" or "toString" must not find Object.prototype's.
  const phases = Object.hasOwn(scenario.endpoints, endpoint) ? scenario.endpoints[endpoint] : undefined
  if (phases !== undefined) {
    for (const phase of phases) {
      if (offsetMillis >= phase.from && (phase.until === undefined || offsetMillis < phase.until)) {
        return phase.behaviour
      }
    }
  }
  return scenario.default
}

/**
 * The offsets at which prices change, in order (the epochs of the catalog).
 *
 * @example
 * ```ts
 * import { Scenario } from "@rein/cli"
 *
 * declare const scenario: Scenario.Scenario
 * Scenario.priceEpochs(scenario) // e.g. [0, 1_800_000]
 * ```
 * @since 0.1.0
 * @category utils
 */
export const priceEpochs = (scenario: Scenario): ReadonlyArray<number> =>
  [...new Set([0, ...scenario.prices.map((p) => p.at)])].sort((a, b) => a - b)

/**
 * The scenario's breaker and retry-budget settings as `Health` options (empty: the defaults).
 *
 * @example
 * ```ts
 * import { Scenario } from "@rein/cli"
 *
 * declare const scenario: Scenario.Scenario
 * Scenario.healthConfig(scenario) // e.g. { consecutiveFailures: 3 }
 * ```
 * @since 0.1.0
 * @category utils
 */
export const healthConfig = (scenario: Scenario): Partial<Health.Config> => {
  const h = scenario.health
  if (h === undefined) return {}
  return {
    ...(h.consecutiveFailures === undefined ? {} : { consecutiveFailures: h.consecutiveFailures }),
    ...(h.cooldown === undefined ? {} : { cooldown: h.cooldown }),
    ...(h.maxCooldown === undefined ? {} : { maxCooldown: h.maxCooldown }),
    ...(h.probes === undefined ? {} : { probes: h.probes }),
    ...(h.capacity === undefined ? {} : { capacity: h.capacity }),
    ...(h.depositRatio === undefined ? {} : { depositRatio: h.depositRatio })
  }
}
