/**
 * The in-memory run limits: the limiter's buckets, capacity, cooldowns and ramp, the soft-cap totals and
 * the stop, as plain state mutated in one synchronous step per call (fibers interleave only at effect
 * boundaries, so each step is atomic with respect to every other worker). Time is the run's own: readings
 * of Effect's `Clock` from the moment the limits were made.
 *
 * @internal
 */
import type { Clock } from "effect"
import { Deferred, Effect, Exit, FiberId, Option } from "effect"
import type { Admission, Config, Hold, Service, Usage } from "../RunLimits.js"
import type { Stop } from "../Termination.js"
import * as Limiter from "./limiter.js"
import { addFinite, costCapReached, overflowed, tokenCapReached } from "./totals.js"

/** @internal */
export const makeMemory = (config: Config, clock: Clock.Clock): Service => {
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
    let trip: Stop | undefined
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
