/**
 * Endpoint health and storm control, shared by every request of a process.
 *
 * Per endpoint, a circuit breaker: closed → open after `consecutiveFailures` provider-attributed failures
 * in a row, or once the last `windowSize` outcomes hold at least `minimumVolume` and a failure ratio of
 * `failureRatio` or more → half-open after a cooldown → closed when a probe succeeds, open again (with the
 * cooldown grown by `cooldownGrowth`, up to `maxCooldown`) when a probe fails. Half-open admits at most
 * `probes` concurrent probes. A 429 counts as one failure like a 503: its Retry-After never opens a breaker by
 * itself (the request's retry on the same endpoint waits for it). When failures open the breaker, or it is
 * already open, a Retry-After may lengthen the cooldown, never shorten it.
 *
 * A retry budget in the style of gRPC retry throttling and Finagle's RetryBudget: a token bucket, global
 * and per endpoint. A request's first attempt deposits `depositRatio` tokens into the global bucket and into
 * the bucket of each of its candidates (every endpoint the request may run on); each retry or fallback
 * withdraws one from the global bucket and from the bucket of the endpoint it runs on, and none is
 * admitted without a whole token in both. So, whatever the interleaving, extra attempts are bounded by
 * `capacity + depositRatio × first attempts` globally, and the extra attempts on an endpoint by
 * `capacity + depositRatio × first attempts of the requests that list it`: a secondary endpoint that never
 * gets a first attempt is still funded by the requests that may fall back to it, and a stalling primary's
 * fallbacks keep flowing at that rate for as long as the stall lasts.
 *
 * Only provider-attributed failures (the failure table's `health` column: rate limits, overload, server
 * errors, malformed responses) count against an endpoint. Caller interruption, the caller's deadline,
 * attempt timeouts, transport failures and `unknown` never do: a stalling or refusing endpoint does not
 * trip its breaker; its fallbacks draw on the retry budget instead.
 *
 * `Service` is the shape any implementation has (effectful members that read Effect's `Clock`, an optional
 * synchronous fast path). `make` is the process-local one: every check-and-update is one synchronous step
 * (JavaScript runs one fiber at a time), so an acquisition (probe slot and retry token together) is atomic
 * without a transaction and costs no STM commit on the hot path. Its `unsafe*` members are those steps,
 * taking the monotonic reading (`atNanos`) the executor already has; the effectful members read the clock
 * and wrap them.
 *
 * @since 0.1.0
 */
import type { Clock } from "effect"
import { Context, Duration, Effect, Either, Layer, Metric, MetricLabel, Option, Schema } from "effect"
import type { FailureKind, Rule } from "./Failure.js"
import { formatParseError, numberWhere, PositiveInt } from "./internal/decode.js"
import { PositiveDuration, toMillis } from "./internal/duration.js"
import type { HealthView, Role } from "./Planner.js"
import { hasToken } from "./Planner.js"

/**
 * Breaker and retry-budget settings, with their defaults.
 *
 * @category models
 * @since 0.1.0
 */
export interface Config {
  /** Consecutive provider-attributed failures that open a closed breaker. Default 5. */
  readonly consecutiveFailures: number
  /** Outcomes kept in the sliding window (at most 30). Default 20. */
  readonly windowSize: number
  /** Outcomes needed in the window before the ratio may open the breaker. Default 10. */
  readonly minimumVolume: number
  /** Failure ratio in the window that opens the breaker. Default 0.5. */
  readonly failureRatio: number
  /** First cooldown of an open breaker. Default 5 s. */
  readonly cooldown: Duration.DurationInput
  /** Growth of the cooldown after a failed probe. Default 2. */
  readonly cooldownGrowth: number
  /** Longest cooldown. Default 60 s. */
  readonly maxCooldown: Duration.DurationInput
  /** Concurrent probes admitted while half-open. Default 1. */
  readonly probes: number
  /** Retry-budget bucket size, global and per endpoint; the bucket starts full. Default 10. */
  readonly capacity: number
  /** Tokens a first attempt deposits. Default 0.2 (one retry per five requests in steady state). */
  readonly depositRatio: number
}

/**
 * The defaults. They follow gRPC's retry throttling (a bucket of 10, a ratio of a tenth to a fifth) and
 * Finagle's 20% retry budget: enough to ride out a blip, never enough to multiply an outage's load.
 *
 * @category defaults
 * @since 0.1.0
 */
export const defaults: Config = {
  consecutiveFailures: 5,
  windowSize: 20,
  minimumVolume: 10,
  failureRatio: 0.5,
  cooldown: "5 seconds",
  cooldownGrowth: 2,
  maxCooldown: "60 seconds",
  probes: 1,
  capacity: 10,
  depositRatio: 0.2
}

/**
 * An endpoint's breaker state.
 *
 * @category models
 * @since 0.1.0
 */
export type BreakerState = "closed" | "open" | "half_open"

/**
 * An endpoint's health as a value: its breaker and its retry bucket. Every transition below is a pure function
 * of it (and of the time, in milliseconds on whatever clock the implementation keeps: a monotonic reading in
 * process, the database's clock in a shared store), so an implementation shared by many processes applies
 * exactly the in-process rules to the row it reads and writes back by compare-and-set.
 *
 * @example
 * ```ts
 * import { Health } from "@rein/core"
 *
 * const settings = Health.settingsOf(Health.defaults)
 * const state: Health.EndpointState = Health.freshState(settings)
 * ```
 * @category transitions
 * @since 0.1.0
 */
export interface EndpointState {
  readonly state: BreakerState
  readonly consecutive: number
  /** Outcomes in the window as bits, newest lowest: 1 for a failure. */
  readonly window: number
  readonly windowLength: number
  /** When an open breaker may half-open (monotonic ms). */
  readonly openUntil: number
  readonly cooldownMillis: number
  readonly probesInFlight: number
  readonly tokens: number
  /** Attempts abandoned with teardown unconfirmed and still running. */
  readonly degraded: number
}

/**
 * What an admitted attempt holds until it completes. An implementation may carry more (a probe slot's id in
 * a shared store); the executor only hands it back.
 *
 * @category models
 * @since 0.1.0
 */
export interface Permit {
  readonly endpoint: string
  readonly probe: boolean
}

/**
 * How an attempt ended, as health sees it. `neutral`: not provider-attributed (timeout, transport,
 * unknown, the caller's deadline or interruption).
 *
 * @category models
 * @since 0.1.0
 */
export type Result =
  | { readonly _tag: "success" }
  | { readonly _tag: "failure"; readonly kind: FailureKind; readonly retryAfterMillis: number | null }
  | { readonly _tag: "neutral" }

/**
 * Why health refused an attempt.
 *
 * @category models
 * @since 0.1.0
 */
export type Refusal = "breaker_open" | "no_probe_slot" | "no_retry_token" | "degraded"

/**
 * What `acquire` may be told besides the endpoint and role.
 *
 * @category models
 * @since 0.1.0
 */
export interface AcquireOptions {
  /** Every endpoint the request may run on: a first attempt deposits into each one's bucket (default: the
   * endpoint alone). */
  readonly candidates?: ReadonlyArray<string> | undefined
  /** When the attempt will start, in milliseconds from now (its backoff): the breaker is judged then. */
  readonly afterMillis?: number | undefined
}

/**
 * The health service. The required members are effects that read time from Effect's `Clock` (monotonic
 * `Clock.currentTimeNanos`), so a shared store (breakers as database rows, probe slots counted fleet-wide,
 * retry buckets refilled from the database clock) can implement them. The `unsafe*` members are an optional
 * synchronous fast path for a process-local implementation; the executor takes them only when present,
 * handing them the monotonic reading it already has (`atNanos`, from the same `Clock`).
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Health } from "@rein/core"
 *
 * const states = Effect.flatMap(Health.Health, (health) => health.breaker("openai/mini"))
 * ```
 * @category services
 * @since 0.1.0
 */
export interface Service {
  readonly config: Config
  /** The planner's view: breaker states and retry tokens, now. */
  readonly view: (endpoints: ReadonlyArray<string>) => Effect.Effect<View>
  /**
   * Takes a probe slot on `endpoint` and, for a retry or fallback, a retry token from the global bucket and
   * from `endpoint`'s, or refuses, in one atomic step. A first attempt deposits into the global bucket and
   * into the bucket of each of the request's candidates.
   */
  readonly acquire: (endpoint: string, role: Role, options?: AcquireOptions) => Effect.Effect<Permit, Refusal>
  /** Records how an admitted attempt ended (its probe slot, if any, is given back). */
  readonly complete: (permit: Permit, result: Result) => Effect.Effect<void>
  /** Marks an endpoint degraded while an abandoned attempt is still tearing down; the effect undoes it. */
  readonly degrade: (endpoint: string) => Effect.Effect<Effect.Effect<void>>
  /** The breaker state of an endpoint, now (for observability and tests). */
  readonly breaker: (endpoint: string) => Effect.Effect<BreakerState>
  /** Optional fast path: `view` as one synchronous read, as of the monotonic reading `atNanos`. */
  readonly unsafeView?: (atNanos: bigint, endpoints: ReadonlyArray<string>) => View
  /** Optional fast path: `breaker` as one synchronous read, as of the monotonic reading `atNanos`. */
  readonly unsafeBreaker?: (atNanos: bigint, endpoint: string) => BreakerState
  /**
   * Optional fast path: `acquire` as one synchronous check-and-update, for an attempt starting at `atNanos`;
   * `undefined` when it cannot answer without the store (a probe slot or retry token held elsewhere): the
   * caller then takes `acquire`.
   */
  readonly unsafeAcquire?: (
    atNanos: bigint,
    endpoint: string,
    role: Role,
    candidates?: ReadonlyArray<string>
  ) => Either.Either<Permit, Refusal> | undefined
  /** Optional fast path: `complete` as one synchronous update at `atNanos`; the returned effect publishes the
   * metrics that changed. */
  readonly unsafeComplete?: (atNanos: bigint, permit: Permit, result: Result) => Effect.Effect<void>
}

/**
 * The health service tag.
 *
 * @example
 * ```ts
 * import { Effect, Layer } from "effect"
 * import { Health } from "@rein/core"
 *
 * // A process-wide health with a lower trip threshold and two probe slots.
 * const health = Health.layer({ consecutiveFailures: 3, probes: 2 })
 * ```
 * @category services
 * @since 0.1.0
 */
export class Health extends Context.Tag("@rein/core/Health")<Health, Service>() {}

/**
 * The planner's view of health. Both records have no prototype: an endpoint id such as `constructor` is
 * an entry like any other.
 *
 * @category models
 * @since 0.1.0
 */
export interface View {
  readonly health: { readonly [endpoint: string]: HealthView }
  readonly retryTokens: { readonly global: number | null; readonly endpoints: { readonly [endpoint: string]: number } }
}

/**
 * Whether a failure kind counts against an endpoint's health under a failure table.
 *
 * @category predicates
 * @since 0.1.0
 */
export const attributed = (table: { readonly [K in FailureKind]: Rule }, kind: FailureKind): boolean =>
  table[kind].health

const breakerGauge = Metric.gauge("rein_breaker_state", {
  description: "Breaker state per endpoint: 0 closed, 1 half-open, 2 open"
})
const transitions = Metric.counter("rein_breaker_transitions_total", {
  description: "Breaker transitions per endpoint and target state",
  incremental: true
})
const tokensGauge = Metric.gauge("rein_retry_tokens", { description: "Retry tokens left, global and per endpoint" })
const refusals = Metric.counter("rein_admissions_refused_total", {
  description: "Attempts refused by health, per reason",
  incremental: true
})

const GLOBAL = "\u0000global"
const globalTokensGauge = Metric.taggedWithLabels(tokensGauge, [MetricLabel.make("endpoint", "*")])
const metricCache = new Map<string, { readonly breaker: typeof breakerGauge; readonly tokens: typeof tokensGauge }>()
/** Tagged metrics per endpoint, made once (tagging allocates a new metric key). */
const metricsFor = (endpoint: string) => {
  let m = metricCache.get(endpoint)
  if (m === undefined) {
    const l = [MetricLabel.make("endpoint", endpoint)]
    m = { breaker: Metric.taggedWithLabels(breakerGauge, l), tokens: Metric.taggedWithLabels(tokensGauge, l) }
    metricCache.set(endpoint, m)
  }
  return m
}

const same = (a: EndpointState, b: EndpointState): boolean =>
  a === b || (a.state === b.state && a.consecutive === b.consecutive && a.window === b.window &&
    a.windowLength === b.windowLength && a.openUntil === b.openUntil && a.cooldownMillis === b.cooldownMillis &&
    a.probesInFlight === b.probesInFlight && a.tokens === b.tokens && a.degraded === b.degraded)

/**
 * Every endpoint state is made by this one object literal, its fields always in this order, so the code that
 * reads states (on every request) meets one hidden class. Object spreads (`{ ...e, tokens }`) made a class per
 * site, and each class an optimized function first met later (when a breaker opened) deoptimized it.
 */
const stateOf = (
  state: BreakerState,
  consecutive: number,
  window: number,
  windowLength: number,
  openUntil: number,
  cooldownMillis: number,
  probesInFlight: number,
  tokens: number,
  degraded: number
): EndpointState => ({
  state,
  consecutive,
  window,
  windowLength,
  openUntil,
  cooldownMillis,
  probesInFlight,
  tokens,
  degraded
})

// The fields that may hold fractions (a deposit's tokens, times and cooldowns in milliseconds) are doubles in the
// class from the start: one state made with fractions and dropped. Otherwise the first fraction (a first attempt's
// deposit after a retry, typically when an endpoint starts failing) moves every state to a new class, and the code
// compiled for the old one is deoptimized on the next request.
void stateOf("closed", 0, 0, 0, 0.5, 0.5, 0, 0.5, 0)

/** `e` with other tokens, probes in flight or degraded attempts. */
const withCounts = (e: EndpointState, probesInFlight: number, tokens: number, degraded: number): EndpointState =>
  stateOf(
    e.state,
    e.consecutive,
    e.window,
    e.windowLength,
    e.openUntil,
    e.cooldownMillis,
    probesInFlight,
    tokens,
    degraded
  )

const stateNumber = (s: BreakerState): number => (s === "closed" ? 0 : s === "half_open" ? 1 : 2)

/**
 * What the transitions need to know of the configuration, with its durations in milliseconds.
 *
 * @example
 * ```ts
 * import { Health } from "@rein/core"
 *
 * const settings: Health.Settings = Health.settingsOf({ ...Health.defaults, probes: 2 })
 * ```
 * @category transitions
 * @since 0.1.0
 */
export interface Settings {
  readonly config: Config
  /** The window's size, clamped to 1 … 30 (it is kept as bits). */
  readonly windowSize: number
  readonly baseCooldown: number
  readonly maxCooldown: number
}

/**
 * The settings of a configuration.
 *
 * @example
 * ```ts
 * import { Health } from "@rein/core"
 *
 * Health.settingsOf(Health.defaults).baseCooldown // 5000
 * ```
 * @category transitions
 * @since 0.1.0
 */
export const settingsOf = (config: Config): Settings => ({
  config,
  windowSize: Math.max(1, Math.min(30, Math.floor(config.windowSize))),
  baseCooldown: toMillis(config.cooldown),
  maxCooldown: toMillis(config.maxCooldown)
})

/**
 * The breaker's state at `now`: an open breaker whose cooldown has passed is half-open.
 *
 * @example
 * ```ts
 * import { Health } from "@rein/core"
 *
 * const state = Health.freshState(Health.settingsOf(Health.defaults))
 * Health.current(state, 0) // "closed"
 * ```
 * @category transitions
 * @since 0.1.0
 */
export const current = (e: EndpointState, now: number): BreakerState =>
  e.state === "open" && now >= e.openUntil ? "half_open" : e.state

/** The breaker opened at `now` for `cooldown` (or longer: a Retry-After `hint`). */
const open = (e: EndpointState, now: number, cooldown: number, hint: number | null): EndpointState => {
  const until = Math.max(now + cooldown, hint === null ? 0 : now + hint)
  // Retry-After may lengthen a cooldown, never shorten it.
  const openUntil = Math.max(e.state === "open" ? e.openUntil : 0, until)
  return stateOf("open", 0, 0, 0, openUntil, cooldown, e.probesInFlight, e.tokens, e.degraded)
}

/**
 * An endpoint's state after an admitted attempt ended with `result` at `now` (`permit.probe`: it held a probe
 * slot, given back here).
 *
 * @example
 * ```ts
 * import { Health } from "@rein/core"
 *
 * const settings = Health.settingsOf({ ...Health.defaults, consecutiveFailures: 1 })
 * const after = Health.settle(settings, Health.freshState(settings), 0, { probe: false }, {
 *   _tag: "failure", kind: "server_error", retryAfterMillis: null
 * })
 * after.state // "open"
 * ```
 * @category transitions
 * @since 0.1.0
 */
export const settle = (
  settings: Settings,
  e: EndpointState,
  now: number,
  permit: { readonly probe: boolean },
  result: Result
): EndpointState => {
  const { baseCooldown, config, maxCooldown, windowSize } = settings
  const released = permit.probe ? withCounts(e, Math.max(0, e.probesInFlight - 1), e.tokens, e.degraded) : e
  switch (result._tag) {
    case "neutral":
      // Not the provider's fault: no count, no transition; a probe slot is simply given back.
      return released
    case "success":
      // The common case changes nothing (closed, no failures in the full window): the same state, not a copy.
      if (!permit.probe && settled(released, windowSize)) return released
      return permit.probe || current(released, now) !== "open"
        ? closed(released, windowSize, permit.probe, baseCooldown)
        : released
    case "failure": {
      const hint = result.kind === "rate_limited" ? result.retryAfterMillis : null
      if (permit.probe) {
        return open(released, now, Math.min(maxCooldown, released.cooldownMillis * config.cooldownGrowth), hint)
      }
      if (released.state === "open") {
        // Already open (another request's failure landed first): a longer Retry-After still extends it.
        return hint === null ? released : reopened(released, Math.max(released.openUntil, now + hint))
      }
      const window = pushWindow(released, true, windowSize)
      const consecutive = released.consecutive + 1
      const failures = popcount(window.window)
      const trips = consecutive >= config.consecutiveFailures ||
        (window.windowLength >= config.minimumVolume && failures / window.windowLength >= config.failureRatio)
      // Failures trip the breaker; a Retry-After then lengthens the cooldown, never shortens it. A lone 429 is
      // one failure like a 503: the breaker stays closed and the request's retry waits for the Retry-After.
      if (trips) return open(released, now, released.cooldownMillis, hint)
      return stateOf(
        released.state,
        consecutive,
        window.window,
        window.windowLength,
        released.openUntil,
        released.cooldownMillis,
        released.probesInFlight,
        released.tokens,
        released.degraded
      )
    }
  }
}

/** After a success that closes the breaker (or a probe's): nothing consecutive, a success in the window. */
const closed = (e: EndpointState, windowSize: number, probe: boolean, baseCooldown: number): EndpointState => {
  const { window, windowLength } = pushWindow(e, false, windowSize)
  const cooldown = probe ? baseCooldown : e.cooldownMillis
  return stateOf("closed", 0, window, windowLength, e.openUntil, cooldown, e.probesInFlight, e.tokens, e.degraded)
}

/** An open breaker kept open until `openUntil`. */
const reopened = (e: EndpointState, openUntil: number): EndpointState =>
  stateOf(
    e.state,
    e.consecutive,
    e.window,
    e.windowLength,
    openUntil,
    e.cooldownMillis,
    e.probesInFlight,
    e.tokens,
    e.degraded
  )

/** The gauge values last published, and the buckets changed since (filled by another endpoint's first attempt). */
interface Gauges {
  readonly reported: Map<string, number>
  readonly unreported: Set<string>
}

/**
 * The metric updates after a completion on `endpoint` (its breaker went `from` → `to`). Gauges are set only
 * when their value changed: a healthy endpoint with a full bucket costs nothing.
 */
const publish = (
  gauges: Gauges,
  endpoint: string,
  from: BreakerState,
  to: BreakerState,
  get: (id: string) => EndpointState,
  globalTokens: number
): Effect.Effect<void> => {
  const { reported, unreported } = gauges
  const updates: Array<Effect.Effect<void>> = []
  const m = metricsFor(endpoint)
  if (from !== to) {
    updates.push(
      Metric.set(m.breaker, stateNumber(to)),
      Metric.increment(Metric.taggedWithLabels(transitions, [label("endpoint", endpoint), label("to", to)]))
    )
  }
  const tokens = get(endpoint).tokens
  if (reported.get(endpoint) !== tokens) {
    reported.set(endpoint, tokens)
    updates.push(Metric.set(m.tokens, tokens))
  }
  if (unreported.size > 0) {
    for (const id of unreported) {
      const t = get(id).tokens
      if (reported.get(id) !== t) {
        reported.set(id, t)
        updates.push(Metric.set(metricsFor(id).tokens, t))
      }
    }
    unreported.clear()
  }
  if (reported.get(GLOBAL) !== globalTokens) {
    reported.set(GLOBAL, globalTokens)
    updates.push(Metric.set(globalTokensGauge, globalTokens))
  }
  return updates.length === 0 ? Effect.void : Effect.all(updates, { discard: true })
}

/**
 * An endpoint nothing has happened to: closed, with a full bucket.
 *
 * @example
 * ```ts
 * import { Health } from "@rein/core"
 *
 * Health.freshState(Health.settingsOf(Health.defaults)).tokens // 10
 * ```
 * @category transitions
 * @since 0.1.0
 */
export const freshState = (settings: Settings): EndpointState =>
  stateOf("closed", 0, 0, 0, 0, settings.baseCooldown, 0, settings.config.capacity, 0)

/**
 * A bucket's tokens after a first attempt's deposit (capped at the capacity).
 *
 * @example
 * ```ts
 * import { Health } from "@rein/core"
 *
 * Health.deposit(Health.defaults, 9.9) // 10
 * ```
 * @category transitions
 * @since 0.1.0
 */
export const deposit = (config: Config, tokens: number): number =>
  Math.min(config.capacity, tokens + config.depositRatio)

/**
 * Whether an attempt in `role` may start on an endpoint in state `e` at `now`, with `globalTokens` in the
 * global bucket (`null`: no global bucket to check): the refusal, or the endpoint's state once it is admitted
 * (its probe slot taken when half-open, its retry token withdrawn for a retry or fallback, its deposit made
 * for a first attempt) and whether the attempt is a probe. The global bucket is the caller's to change.
 *
 * @example
 * ```ts
 * import { Either } from "effect"
 * import { Health } from "@rein/core"
 *
 * const settings = Health.settingsOf(Health.defaults)
 * const admitted = Health.admit(settings, Health.freshState(settings), 0, "retry", 0)
 * Either.isLeft(admitted) // true: no global retry token
 * ```
 * @category transitions
 * @since 0.1.0
 */
export const admit = (
  settings: Settings,
  e: EndpointState,
  now: number,
  role: Role,
  globalTokens: number | null
): Either.Either<{ readonly next: EndpointState; readonly probe: boolean }, Refusal> => {
  const { config } = settings
  if (e.degraded > 0) return Either.left("degraded")
  const breaker = current(e, now)
  if (breaker === "open") return Either.left("breaker_open")
  if (breaker === "half_open" && e.probesInFlight >= config.probes) return Either.left("no_probe_slot")
  const extra = role !== "first"
  if (extra && ((globalTokens !== null && !hasToken(globalTokens)) || !hasToken(e.tokens))) {
    return Either.left("no_retry_token")
  }
  const probe = breaker === "half_open"
  return Either.right({
    // The state is kept: an open breaker admitting a probe for a later start (its backoff) stays open till then.
    next: withCounts(
      e,
      e.probesInFlight + (probe ? 1 : 0),
      extra ? e.tokens - 1 : deposit(config, e.tokens),
      e.degraded
    ),
    probe
  })
}

/**
 * What the planner sees of an endpoint in state `e` at `now`.
 *
 * @example
 * ```ts
 * import { Health } from "@rein/core"
 *
 * const settings = Health.settingsOf(Health.defaults)
 * Health.viewOf(settings, Health.freshState(settings), 0) // { state: "closed", probesFree: 1, opensInMillis: 0 }
 * ```
 * @category transitions
 * @since 0.1.0
 */
export const viewOf = (settings: Settings, e: EndpointState, now: number): HealthView => {
  if (e.degraded > 0) return { state: "open", probesFree: 0, opensInMillis: Number.MAX_SAFE_INTEGER }
  const state = current(e, now)
  return {
    state,
    probesFree: Math.max(0, settings.config.probes - e.probesInFlight),
    opensInMillis: state === "open" ? Math.max(0, e.openUntil - now) : 0
  }
}

/**
 * Makes a health service. The settings are checked first: one out of range (`probes: 0`, `failureRatio: 2`, a
 * cooldown of zero) fails with a `ConfigError` naming the field, before any state exists.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Health } from "@rein/core"
 *
 * const program = Effect.gen(function*() {
 *   const health = yield* Health.make({ probes: 2 })
 *   return yield* health.breaker("openai/mini") // "closed"
 * })
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const make = (options: Partial<Config> = {}): Effect.Effect<Service, ConfigError> =>
  Either.match(decodeConfig(options), { onLeft: Effect.fail, onRight: build })

/** The service over settings already checked. */
const build = (options: Partial<Config>): Effect.Effect<Service> =>
  Effect.sync(() => {
    const config: Config = { ...defaults, ...options }
    // The state: endpoint states by id (immutable values, replaced on change) and the global bucket.
    // `version` counts changes, so that a view can be reused while nothing changed.
    const endpoints = new Map<string, EndpointState>()
    let globalTokens = config.capacity
    let version = 0
    const gauges: Gauges = { reported: new Map(), unreported: new Set() }
    const { unreported } = gauges
    const settings = settingsOf(config)
    const fresh = freshState(settings)
    const get = (id: string): EndpointState => endpoints.get(id) ?? fresh
    const put = (id: string, before: EndpointState, after: EndpointState): void => {
      if (endpoints.get(id) === before && same(before, after)) return
      endpoints.set(id, after)
      version++
    }

    // The last view of each list of endpoints (by identity), reused while the state is the same and no breaker in
    // it is open (an open breaker's view changes with the clock). One per list: callers that ask for two lists in
    // turn (the planner its candidates, the simulator every endpoint) each find theirs, not the other's.
    const viewed = new WeakMap<ReadonlyArray<string>, { readonly version: number; readonly view: View }>()
    const viewAt = (now: number, ids: ReadonlyArray<string>): View => {
      const last = viewed.get(ids)
      if (last !== undefined && last.version === version) return last.view
      const health: Record<string, HealthView> = Object.create(null)
      const tokens: Record<string, number> = Object.create(null)
      let timeless = true
      for (const id of ids) {
        const e = endpoints.get(id)
        if (e === undefined) continue
        if (e.state === "open") timeless = false
        health[id] = viewOf(settings, e, now)
        tokens[id] = e.tokens
      }
      const view: View = { health, retryTokens: { global: globalTokens, endpoints: tokens } }
      if (timeless) viewed.set(ids, { version, view })
      else if (last !== undefined) viewed.delete(ids)
      return view
    }

    const permits = new Map<string, Permit>()
    /** Non-probe permits carry nothing but the endpoint: one per endpoint, reused. */
    const permitOf = (endpoint: string): Permit => {
      let p = permits.get(endpoint)
      if (p === undefined) permits.set(endpoint, p = { endpoint, probe: false })
      return p
    }

    /** A first attempt's deposit into the buckets of the request's other candidates (only those not full). */
    const fund = (endpoint: string, candidates: ReadonlyArray<string>): void => {
      for (const id of candidates) {
        if (id === endpoint) continue
        // An endpoint without state has a full bucket: most deposits change nothing and cost one lookup.
        const c = endpoints.get(id)
        if (c === undefined || c.tokens >= config.capacity) continue
        put(id, c, withCounts(c, c.probesInFlight, deposit(config, c.tokens), c.degraded))
        unreported.add(id)
      }
    }

    const acquireAt = (
      now: number,
      endpoint: string,
      role: Role,
      candidates?: ReadonlyArray<string>
    ): Either.Either<Permit, Refusal> => {
      const e = get(endpoint)
      const extra = role !== "first"
      // A first attempt on a closed endpoint with full buckets changes nothing: the state (and its view) stays.
      const unchanged = !extra && e.degraded === 0 && e.state === "closed" && e.tokens >= config.capacity
      const admitted = unchanged ? undefined : admit(settings, e, now, role, globalTokens)
      if (admitted !== undefined && Either.isLeft(admitted)) return Either.left(admitted.left)
      const next = extra ? globalTokens - 1 : deposit(config, globalTokens)
      if (next !== globalTokens) {
        globalTokens = next
        version++
      }
      if (!extra && candidates !== undefined) fund(endpoint, candidates)
      if (admitted === undefined) return Either.right(permitOf(endpoint))
      const { probe } = admitted.right
      put(endpoint, e, admitted.right.next)
      return Either.right(probe ? { endpoint, probe } : permitOf(endpoint))
    }

    const completeAt = (now: number, permit: Permit, result: Result): Effect.Effect<void> => {
      const before = get(permit.endpoint)
      const after = settle(settings, before, now, permit, result)
      put(permit.endpoint, before, after)
      const from = current(before, now)
      const to = current(after, now)
      return publish(gauges, permit.endpoint, from, to, get, globalTokens)
    }

    const degrade = (endpoint: string) =>
      Effect.sync(() => {
        const e = get(endpoint)
        put(endpoint, e, withCounts(e, e.probesInFlight, e.tokens, e.degraded + 1))
        return Effect.sync(() => {
          const e = get(endpoint)
          put(endpoint, e, withCounts(e, e.probesInFlight, e.tokens, Math.max(0, e.degraded - 1)))
        })
      })

    const unsafeAcquire = (
      atNanos: bigint,
      endpoint: string,
      role: Role,
      candidates?: ReadonlyArray<string>
    ): Either.Either<Permit, Refusal> => acquireAt(millisOf(atNanos), endpoint, role, candidates)
    return Health.of({
      config,
      view: (ids) => Effect.clockWith((clock) => Effect.sync(() => viewAt(nowOf(clock), ids))),
      acquire: (endpoint, role, options) =>
        Effect.clockWith((clock) =>
          Effect.suspend(() =>
            acquireAt(nowOf(clock) + Math.max(0, options?.afterMillis ?? 0), endpoint, role, options?.candidates)
          )
        ),
      complete: (permit, result) =>
        Effect.clockWith((clock) => Effect.suspend(() => completeAt(nowOf(clock), permit, result))),
      degrade,
      breaker: (endpoint) => Effect.clockWith((clock) => Effect.sync(() => current(get(endpoint), nowOf(clock)))),
      unsafeView: (atNanos, ids) => viewAt(millisOf(atNanos), ids),
      unsafeBreaker: (atNanos, endpoint) => current(get(endpoint), millisOf(atNanos)),
      unsafeAcquire,
      unsafeComplete: (atNanos, permit, result) => completeAt(millisOf(atNanos), permit, result)
    })
  })

/** A monotonic reading in nanoseconds, as the milliseconds the state is kept in. */
const millisOf = (nanos: bigint): number => Number(nanos) / 1e6

const nowOf = (clock: Clock.Clock): number => millisOf(clock.unsafeCurrentTimeNanos())

const label = (key: string, value: string) => MetricLabel.make(key, value)

/**
 * Counts a refused admission in the metrics (the executor calls it after a refused acquire).
 *
 * @category metrics
 * @since 0.1.0
 */
export const countRefusal = (reason: Refusal): Effect.Effect<void> =>
  Metric.increment(Metric.taggedWithLabels(refusals, [label("reason", reason)]))

const pushWindow = (
  e: { readonly window: number; readonly windowLength: number },
  failure: boolean,
  size: number
): { readonly window: number; readonly windowLength: number } => ({
  window: ((e.window << 1) | (failure ? 1 : 0)) & ((1 << size) - 1),
  windowLength: Math.min(size, e.windowLength + 1)
})

/** A non-probe success leaves `e` as it is: closed, no consecutive failures, and a full window of successes. */
const settled = (e: EndpointState, size: number): boolean =>
  e.state === "closed" && e.consecutive === 0 && e.window === 0 && e.windowLength === size

const popcount = (n: number): number => {
  let count = 0
  for (let x = n; x !== 0; x &= x - 1) count++
  return count
}

/**
 * Health settings that could not be decoded: the message names each field (`probes: Expected a positive
 * integer, actual 0`).
 *
 * @example
 * ```ts
 * import { Health } from "@rein/core"
 *
 * const error = new Health.ConfigError({ message: "probes: Expected a positive integer, actual 0" })
 * ```
 * @category errors
 * @since 0.1.0
 */
export class ConfigError extends Schema.TaggedError<ConfigError>()("HealthConfigError", {
  message: Schema.String
}) {}

const positive = (d: Duration.DurationInput) =>
  Option.exists(Duration.decodeUnknown(d), (d) => Duration.greaterThan(d, Duration.zero)) ||
  "Expected a positive duration"

/** Every `DurationInput`: a `Duration`, bigint nanoseconds or `[seconds, nanos]` (positive), or a config's form. */
const AnyDuration = Schema.Union(
  Schema.DurationFromSelf.pipe(Schema.filter(positive)),
  Schema.BigIntFromSelf.pipe(Schema.filter(positive)),
  Schema.Tuple(Schema.Number, Schema.Number).pipe(Schema.filter(positive)),
  PositiveDuration
)
const finite = (what: string, ok: (n: number) => boolean) => numberWhere(what, (n) => Number.isFinite(n) && ok(n))

const ConfigInput = Schema.Struct({
  consecutiveFailures: Schema.optionalWith(PositiveInt, { exact: true }),
  windowSize: Schema.optionalWith(
    numberWhere("an integer from 1 to 30", (n) => Number.isInteger(n) && n >= 1 && n <= 30),
    { exact: true }
  ),
  minimumVolume: Schema.optionalWith(PositiveInt, { exact: true }),
  failureRatio: Schema.optionalWith(finite("a number above 0, at most 1", (n) => n > 0 && n <= 1), { exact: true }),
  cooldown: Schema.optionalWith(AnyDuration, { exact: true }),
  cooldownGrowth: Schema.optionalWith(finite("a finite number of at least 1", (n) => n >= 1), { exact: true }),
  maxCooldown: Schema.optionalWith(AnyDuration, { exact: true }),
  probes: Schema.optionalWith(PositiveInt, { exact: true }),
  capacity: Schema.optionalWith(finite("a non-negative finite number", (n) => n >= 0), { exact: true }),
  depositRatio: Schema.optionalWith(finite("a non-negative finite number", (n) => n >= 0), { exact: true })
})

/**
 * Decodes health settings given at the edge (to `Rein.layer`): every field optional, each checked, a bad one
 * refused with a `ConfigError` naming it.
 *
 * @example
 * ```ts
 * import { Health } from "@rein/core"
 *
 * const config = Health.decodeConfig({ consecutiveFailures: 3, cooldown: "10 seconds" }) // Either.right(…)
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const decodeConfig = (input: unknown): Either.Either<Partial<Config>, ConfigError> =>
  Either.mapLeft(
    Schema.decodeUnknownEither(ConfigInput)(input, { onExcessProperty: "error" }),
    (e) => new ConfigError({ message: formatParseError(e) })
  )

/**
 * A process-wide health layer. Settings out of range fail the layer with a `ConfigError` naming the field.
 *
 * @example
 * ```ts
 * import { Health } from "@rein/core"
 *
 * const HealthLive = Health.layer({ consecutiveFailures: 3 })
 * ```
 * @category layers
 * @since 0.1.0
 */
export const layer = (options: Partial<Config> = {}): Layer.Layer<Health, ConfigError> =>
  Layer.effect(Health, make(options))
