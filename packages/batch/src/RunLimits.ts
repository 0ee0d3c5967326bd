/**
 * Run limits: the state a batch run shares between its workers — and, with a shared store, between
 * processes — behind one service: soft caps on tokens and cost, requests- and tokens-per-minute buckets,
 * provider capacity, the cooldown after a 429, the startup ramp, and the run's stop (first trigger wins).
 *
 * The shape is core's `Gate`'s: every required member is effectful, so a database can implement it; the
 * `unsafe*` members are optional synchronous fast paths that the run uses only when present (the in-memory
 * default has them all). Time comes from the implementation's own clock, never from the caller: the
 * in-memory limits read Effect's `Clock`, a shared store would read its database clock.
 *
 * What every implementation promises (the laws in `testing/RunLimitsLaws` check it):
 *
 * - soft caps: once the totals reach a cap, `charge` answers with the stop; what was charged before the run
 *   stopped exceeds a cap by at most what the attempts in flight at that moment charged;
 * - requests and tokens per minute are never exceeded in any window of a minute (a refilling bucket);
 * - an endpoint's cooldown admits nothing before it ends; a Retry-After can lengthen it, never shorten it;
 * - the stop is sticky and the first trigger wins: every later `stop` answers with the first one.
 *
 * @since 0.1.0
 */
import type { Clock } from "effect"
import { Context, Deferred, Duration, Effect, Exit, FiberId, Layer, Option } from "effect"
import type { Guardrails } from "./Guardrails.js"
import * as Limiter from "./internal/limiter.js"
import { addFinite, costCapReached, notACount, overflowed, tokenCapReached } from "./internal/totals.js"
import type { Stop } from "./Termination.js"

/**
 * The limits of one run, read from its guardrails (`configOf`).
 *
 * @example
 * ```ts
 * import type { RunLimits } from "@rein/batch"
 *
 * const config: RunLimits.Config = { concurrency: 8, requestsPerMinute: 600, capacity: { "openai/mini": 4 } }
 * ```
 * @category models
 * @since 0.1.0
 */
export interface Config extends Limiter.Config {
  /** Soft caps: reaching one (equality counts) stops the run. */
  readonly maxTotalTokens?: number | undefined
  readonly maxTotalCost?: number | undefined
}

/**
 * What an admitted attempt holds until it is released.
 *
 * @example
 * ```ts
 * import type { RunLimits } from "@rein/batch"
 *
 * const hold: RunLimits.Hold = { _tag: "Hold", endpoint: "openai/mini", tokens: 1_200 }
 * ```
 * @category models
 * @since 0.1.0
 */
export interface Hold extends Limiter.Hold {}

/**
 * Admission must wait: for `millis` at most (`Infinity`: until something is released).
 *
 * @example
 * ```ts
 * import type { RunLimits } from "@rein/batch"
 *
 * const wait: RunLimits.Wait = { _tag: "Wait", millis: 250 }
 * ```
 * @category models
 * @since 0.1.0
 */
export interface Wait {
  readonly _tag: "Wait"
  readonly millis: number
}

/**
 * The answer to an admission: a hold, or how long to wait before asking again.
 *
 * @example
 * ```ts
 * import type { RunLimits } from "@rein/batch"
 *
 * const admitted = (a: RunLimits.Admission) => a._tag === "Hold"
 * ```
 * @category models
 * @since 0.1.0
 */
export type Admission = Hold | Wait

/**
 * What a finished attempt used, counted against the soft caps.
 *
 * @example
 * ```ts
 * import type { RunLimits } from "@rein/batch"
 *
 * const usage: RunLimits.Usage = { tokens: 1_400, cost: 0.0021 }
 * ```
 * @category models
 * @since 0.1.0
 */
export interface Usage {
  readonly tokens: number
  readonly cost: number
}

/**
 * The run limits service. Required members are effectful; `unsafe*` members are optional synchronous fast
 * paths with the same meaning.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { RunLimits } from "@rein/batch"
 *
 * const admitted = Effect.flatMap(RunLimits.RunLimits, (limits) => limits.admit("openai/mini", 1_200))
 * ```
 * @category models
 * @since 0.1.0
 */
export interface Service {
  /** Whether an admission can ever wait (else `admit` always holds and nothing needs releasing). */
  readonly waits: boolean
  /** Takes what an attempt needs now (a request, its tokens, a capacity slot), or says how long to wait. */
  readonly admit: (endpoint: string, tokens: number) => Effect.Effect<Admission>
  /** Gives back what a hold took; `actualTokens` reconciles the tokens-per-minute reservation (unknown: kept). */
  readonly release: (hold: Hold, actualTokens: number | undefined) => Effect.Effect<void>
  /** Completes at the next release or ended cooldown, so that a waiting admission asks again. */
  readonly released: Effect.Effect<void>
  /** Adds a finished attempt's usage to the run's totals; the stop when a cap is reached or a total overflows. */
  readonly charge: (usage: Usage) => Effect.Effect<Option.Option<Stop>>
  /** The run's totals so far. */
  readonly totals: Effect.Effect<Usage>
  /** Starts or lengthens an endpoint's cooldown after a 429; the cooldown's length when a new one started. */
  readonly cool: (endpoint: string, retryAfterMillis: number | null) => Effect.Effect<Option.Option<number>>
  /** Time left in an endpoint's cooldown (none: not cooling); a cooldown whose time has passed ends here. */
  readonly cooldownLeft: (endpoint: string) => Effect.Effect<Option.Option<number>>
  /** Stops the run unless it already stopped; answers with the stop that won (the first). */
  readonly stop: (stop: Stop) => Effect.Effect<Stop>
  /** The stop, if the run stopped. */
  readonly stopped: Effect.Effect<Option.Option<Stop>>
  /** Completes (with the winning stop) when the run stops, wherever the stop came from. */
  readonly whenStopped: Effect.Effect<Stop>
  /** Optional: `admit` as one synchronous step. */
  readonly unsafeAdmit?: (endpoint: string, tokens: number) => Admission
  /** Optional: `release` as one synchronous step. */
  readonly unsafeRelease?: (hold: Hold, actualTokens: number | undefined) => void
  /** Optional: `charge` as one synchronous step (`undefined`: no stop). */
  readonly unsafeCharge?: (usage: Usage) => Stop | undefined
  /** Optional: `stop` as one synchronous step. */
  readonly unsafeStop?: (stop: Stop) => Stop
  /** Optional: `stopped` as one synchronous read (`undefined`: running). */
  readonly unsafeStopped?: () => Stop | undefined
}

/**
 * The run limits of a batch run. A run uses the one in its context when there is one (a store shared by
 * several processes), else fresh in-memory limits made from its guardrails.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { RunLimits } from "@rein/batch"
 *
 * const stopped = Effect.flatMap(RunLimits.RunLimits, (limits) => limits.stopped)
 * ```
 * @category tags
 * @since 0.1.0
 */
export class RunLimits extends Context.Tag("@rein/batch/RunLimits")<RunLimits, Service>() {}

/**
 * The limits a run's guardrails set.
 *
 * @example
 * ```ts
 * import { Guardrails, RunLimits } from "@rein/batch"
 *
 * const config = RunLimits.configOf(Guardrails.make({ concurrency: 4, requestsPerMinute: 60 }))
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const configOf = (g: Guardrails): Config => ({
  concurrency: g.concurrency,
  requestsPerMinute: g.requestsPerMinute,
  tokensPerMinute: g.tokensPerMinute,
  capacity: g.capacity,
  startupRampMillis: g.startupRamp === undefined ? undefined : Duration.toMillis(g.startupRamp),
  cooldownMillis: g.cooldown === undefined ? undefined : Duration.toMillis(g.cooldown),
  maxTotalTokens: g.maxTotalTokens,
  maxTotalCost: g.maxTotalCost
})

/**
 * The stop of a charge that is not a count (NaN, ±Infinity, negative tokens or cost), or `undefined` for one
 * that is. Every `RunLimits` implementation answers such a charge with this stop and leaves its totals as
 * they were: a NaN total would never reach a cap again, a negative one would give the cap back
 * (`RunLimitsLaws` holds every implementation to it).
 *
 * @example
 * ```ts
 * import { RunLimits } from "@rein/batch"
 *
 * const stop = RunLimits.invalidCharge({ tokens: Number.NaN, cost: 0 }) // budget_exceeded, resource "tokens"
 * const none = RunLimits.invalidCharge({ tokens: 120, cost: 0.01 }) // undefined
 * ```
 * @category guards
 * @since 0.1.0
 */
export const invalidCharge: (usage: Usage) => Stop | undefined = notACount

/**
 * Fresh in-memory limits for one run, its time origin now (on Effect's `Clock`). Every member has its
 * synchronous fast path; each step is atomic with respect to other fibers.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { RunLimits } from "@rein/batch"
 *
 * const program = Effect.gen(function*() {
 *   const limits = yield* RunLimits.memory({ concurrency: 2, maxTotalTokens: 100 })
 *   return yield* limits.charge({ tokens: 120, cost: 0 })
 * })
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const memory = (config: Config): Effect.Effect<Service> =>
  Effect.map(Effect.clock, (clock) => makeMemory(config, clock))

/**
 * In-memory limits as a layer (fresh for each build of the layer).
 *
 * @example
 * ```ts
 * import { RunLimits } from "@rein/batch"
 *
 * const layer = RunLimits.layerMemory({ concurrency: 4, requestsPerMinute: 60 })
 * ```
 * @category layers
 * @since 0.1.0
 */
export const layerMemory = (config: Config): Layer.Layer<RunLimits> => Layer.effect(RunLimits, memory(config))

// The in-memory limits: the limiter's buckets, capacity, cooldowns and ramp, the soft-cap totals and the stop,
// as plain state mutated in one synchronous step per call (fibers interleave only at effect boundaries, so each
// step is atomic with respect to every other worker). Time is the run's own: readings of Effect's `Clock` from
// the moment the limits were made.
const makeMemory = (config: Config, clock: Clock.Clock): Service => {
  const origin = clock.unsafeCurrentTimeNanos()
  const now = (): number => Number(clock.unsafeCurrentTimeNanos() - origin) / 1e6
  const limiter = Limiter.make(config, 0)
  const waits = limiter.active() || config.cooldownMillis !== undefined

  // Waiting admissions wake on a release as well as on their timers. The signal exists only while someone
  // waits for it: a release with no waiter costs nothing.
  let changed: Deferred.Deferred<void> | undefined = undefined
  const notify = (): void => {
    const d = changed
    if (d === undefined) return
    changed = undefined
    Deferred.unsafeDone(d, Exit.void)
  }
  const released = Effect.suspend(() => Deferred.await(changed ??= Deferred.unsafeMake<void>(FiberId.none)))

  const unsafeAdmit = (endpoint: string, tokens: number): Admission => {
    const taken = limiter.take(now(), endpoint, tokens)
    return typeof taken === "number" ? { _tag: "Wait", millis: taken } : taken
  }
  const unsafeRelease = (hold: Hold, actualTokens: number | undefined): void => {
    limiter.release(hold, actualTokens)
    notify()
  }

  let tokensUsed = 0
  let costUsed = 0
  // A cost overflow is reported before a token overflow, and either before a cap.
  const unsafeCharge = (usage: Usage): Stop | undefined => {
    let trip = notACount(usage)
    if (trip !== undefined) return trip
    const tokens = addFinite(tokensUsed, usage.tokens)
    if (tokens === undefined) trip = overflowed("tokens", tokensUsed, usage.tokens)
    else tokensUsed = tokens
    const cost = addFinite(costUsed, usage.cost)
    if (cost === undefined) trip = overflowed("cost", costUsed, usage.cost)
    else costUsed = cost
    if (trip !== undefined) return trip
    if (config.maxTotalTokens !== undefined && tokensUsed >= config.maxTotalTokens) {
      return tokenCapReached(tokensUsed, config.maxTotalTokens)
    }
    if (config.maxTotalCost !== undefined && costUsed >= config.maxTotalCost) {
      return costCapReached(costUsed, config.maxTotalCost)
    }
    return undefined
  }

  let stopped: Stop | undefined
  const stopSignal = Deferred.unsafeMake<Stop>(FiberId.none)
  const unsafeStop = (stop: Stop): Stop => {
    if (stopped !== undefined) return stopped
    stopped = stop
    Deferred.unsafeDone(stopSignal, Exit.succeed(stop))
    return stop
  }

  const cooldownLeft = (endpoint: string): Option.Option<number> => {
    const until = limiter.coolingUntil(endpoint)
    if (until === undefined) return Option.none()
    const t = now()
    if (t < until) return Option.some(until - t)
    if (limiter.endCooldown(endpoint, t)) notify()
    return Option.some(0)
  }

  return {
    waits,
    admit: (endpoint, tokens) => Effect.sync(() => unsafeAdmit(endpoint, tokens)),
    release: (hold, actualTokens) => Effect.sync(() => unsafeRelease(hold, actualTokens)),
    released,
    charge: (usage) => Effect.sync(() => Option.fromNullable(unsafeCharge(usage))),
    totals: Effect.sync(() => ({ tokens: tokensUsed, cost: costUsed })),
    cool: (endpoint, retryAfterMillis) =>
      Effect.sync(() => {
        const t = now()
        if (!limiter.cool(endpoint, t, retryAfterMillis)) return Option.none()
        return Option.some(limiter.coolingUntil(endpoint)! - t)
      }),
    cooldownLeft: (endpoint) => Effect.sync(() => cooldownLeft(endpoint)),
    stop: (stop) => Effect.sync(() => unsafeStop(stop)),
    stopped: Effect.sync(() => Option.fromNullable(stopped)),
    whenStopped: Deferred.await(stopSignal),
    unsafeAdmit,
    unsafeRelease,
    unsafeCharge,
    unsafeStop,
    unsafeStopped: () => stopped
  }
}
