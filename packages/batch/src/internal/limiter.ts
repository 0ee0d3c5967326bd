/**
 * The run's admission state: requests- and tokens-per-minute buckets, provider capacity per endpoint, the
 * shared cooldown after a 429 and the startup ramp. Plain state over millisecond readings, mutated in one
 * synchronous step per decision, so a take is atomic with respect to every other fiber: nobody can see
 * the last unit twice.
 *
 * @internal
 */

/** The limits the limiter enforces (`RunLimits.Config` has them). @internal */
export interface Config {
  readonly concurrency: number
  readonly requestsPerMinute?: number | undefined
  readonly tokensPerMinute?: number | undefined
  /** At most this many attempts in flight per endpoint id. */
  readonly capacity?: Readonly<Record<string, number>> | undefined
  /** Startup ramp: the attempts allowed in flight grow from 1 to `concurrency` over this many ms. */
  readonly startupRampMillis?: number | undefined
  /** The cooldown after a 429 (absent: a 429 cools nothing). */
  readonly cooldownMillis?: number | undefined
}

/** What an admitted attempt holds (`RunLimits.Hold`). @internal */
export interface Hold {
  readonly _tag: "Hold"
  readonly endpoint: string
  /** Tokens reserved in the tokens-per-minute bucket (reconciled to the actual usage on release). */
  readonly tokens: number
}

interface Bucket {
  readonly capacity: number
  readonly perMillis: number
  level: number
  last: number
}

// At least one unit: an attempt takes a whole request and at least one token, so a bucket below one (a limit
// under one per minute, `--rpm 0.5`) would never fill enough to admit anything and every item would wait out
// its deadline. With one, `0.5` per minute admits one attempt every two minutes.
const bucket = (perMinute: number, now: number): Bucket => ({
  capacity: Math.max(1, perMinute),
  perMillis: perMinute / 60_000,
  level: Math.max(1, perMinute),
  last: now
})

const refill = (b: Bucket, now: number): void => {
  if (now > b.last) {
    b.level = Math.min(b.capacity, b.level + (now - b.last) * b.perMillis)
    b.last = now
  }
}

/** @internal */
export interface Limiter {
  /** Whether any limit may make an attempt wait (else admission is immediate). */
  readonly active: () => boolean
  /** Takes what an attempt needs, or says how long to wait (`Infinity`: until something is released). */
  readonly take: (now: number, endpoint: string, tokens: number) => Hold | number
  /** Gives back what a hold took; `actualTokens` reconciles the tokens-per-minute reservation. */
  readonly release: (hold: Hold, actualTokens: number | undefined) => void
  /** Starts or lengthens an endpoint's cooldown; `true` when a new cooldown started. */
  readonly cool: (endpoint: string, now: number, retryAfterMillis: number | null) => boolean
  /** The end of an endpoint's cooldown (`undefined`: none). */
  readonly coolingUntil: (endpoint: string) => number | undefined
  /** Ends a cooldown whose time has passed; `true` when it ended. */
  readonly endCooldown: (endpoint: string, now: number) => boolean
}

/** @internal */
export const make = (config: Config, origin: number): Limiter => {
  const rpm = config.requestsPerMinute === undefined ? undefined : bucket(config.requestsPerMinute, origin)
  const tpm = config.tokensPerMinute === undefined ? undefined : bucket(config.tokensPerMinute, origin)
  // By id in a Map: an endpoint called `constructor` has no capacity unless the guardrails give it one.
  const capacity = new Map(Object.entries(config.capacity ?? {}))
  const rampMillis = config.startupRampMillis
  const cooldownMillis = config.cooldownMillis ?? 0
  const hasCapacity = capacity.size > 0
  const byEndpoint = new Map<string, number>()
  const cooldowns = new Map<string, number>()
  let inFlight = 0
  const rampEnd = rampMillis === undefined ? origin : origin + rampMillis
  const static_ = rpm !== undefined || tpm !== undefined || hasCapacity || rampMillis !== undefined

  const take = (now: number, endpoint: string, tokens: number): Hold | number => {
    const until = cooldowns.get(endpoint)
    if (until !== undefined && now < until) return until - now
    if (rampMillis !== undefined && now < rampEnd) {
      const elapsed = now - origin
      const allowed = Math.max(1, Math.floor((config.concurrency * elapsed) / rampMillis))
      if (inFlight >= allowed) {
        // The ramp allows one more when concurrency × elapsed / ramp reaches inFlight + 1 (or on a release).
        return Math.max(1, ((inFlight + 1) * rampMillis) / config.concurrency - elapsed)
      }
    }
    const cap = hasCapacity ? capacity.get(endpoint) : undefined
    if (cap !== undefined && (byEndpoint.get(endpoint) ?? 0) >= cap) return Number.POSITIVE_INFINITY
    if (rpm !== undefined) {
      refill(rpm, now)
      if (rpm.level < 1) return (1 - rpm.level) / rpm.perMillis
    }
    let reserved = 0
    if (tpm !== undefined) {
      refill(tpm, now)
      reserved = Math.min(tokens, tpm.capacity)
      // A debt left by an attempt that used more than it reserved is paid off before anything new starts.
      const needed = Math.max(1, reserved)
      if (tpm.level < needed) return (needed - tpm.level) / tpm.perMillis
      tpm.level -= reserved
    }
    if (rpm !== undefined) rpm.level -= 1
    inFlight++
    if (cap !== undefined) byEndpoint.set(endpoint, (byEndpoint.get(endpoint) ?? 0) + 1)
    return { _tag: "Hold", endpoint, tokens: reserved }
  }

  const release = (ticket: Hold, actualTokens: number | undefined): void => {
    inFlight--
    if (hasCapacity && capacity.has(ticket.endpoint)) {
      byEndpoint.set(ticket.endpoint, (byEndpoint.get(ticket.endpoint) ?? 1) - 1)
    }
    // Reconcile to actual usage: refund what was reserved but not used, or charge the excess (a debt).
    // Unknown usage keeps the whole reservation.
    if (tpm !== undefined && actualTokens !== undefined) {
      tpm.level = Math.min(tpm.capacity, tpm.level + ticket.tokens - actualTokens)
    }
  }

  const cool = (endpoint: string, now: number, retryAfterMillis: number | null): boolean => {
    const current = cooldowns.get(endpoint)
    const until = now + Math.max(cooldownMillis, retryAfterMillis ?? 0)
    // Lengthen, never shorten.
    if (current !== undefined && current >= until) return false
    cooldowns.set(endpoint, until)
    return current === undefined
  }

  return {
    active: () => static_ || cooldowns.size > 0,
    take,
    release,
    cool,
    coolingUntil: (endpoint) => cooldowns.get(endpoint),
    endCooldown: (endpoint, now) => {
      const until = cooldowns.get(endpoint)
      if (until === undefined || now < until) return false
      cooldowns.delete(endpoint)
      return true
    }
  }
}
