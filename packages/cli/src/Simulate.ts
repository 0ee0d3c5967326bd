/**
 * `rein simulate`: drives a scenario's traffic through scripted endpoints in virtual time — an hour of
 * traffic in seconds — and reports what Rein did: outcomes, attempts per request, retries and fallbacks,
 * breaker transitions, retry tokens, budget used and latency percentiles. The same seed gives the same
 * report, byte for byte: arrivals, jitter and failure probabilities all draw from one seeded `Random`,
 * and the virtual scheduler orders everything deterministically (see `internal/virtual.ts`).
 *
 * Every request runs the real executor (`Rein.execute`) with one process-wide `Health`, so breakers,
 * probe slots and retry budgets behave as they would in a service. Breaker states are observed before and
 * after every attempt.
 *
 * @since 0.1.0
 */
import { Command, Options } from "@effect/cli"
import type { FileSystem } from "@effect/platform"
import type { Outcome, Provider } from "@rein/core"
import type { Catalog } from "@rein/core"
import { Health, Rein } from "@rein/core"
import type { Contract } from "@rein/core"
import {
  Cause,
  Console,
  Context,
  Deferred,
  Duration,
  Effect,
  Either,
  Exit,
  Fiber,
  FiberRef,
  FiberRefs,
  Random,
  Runtime
} from "effect"
import { quantile } from "./BatchCommand.js"
import * as ExitCode from "./ExitCode.js"
import { InputError } from "./InputError.js"
import { readScenario, repriced } from "./internal/againstCatalog.js"
import { scripted } from "./internal/fake.js"
import { loadCatalogAndContract } from "./internal/files.js"
import { json, millis, num, table } from "./internal/format.js"
import * as Shared from "./internal/options.js"
import type { ExitStatus } from "./internal/status.js"
import { exitWith } from "./internal/status.js"
import * as Virtual from "./internal/virtual.js"
import * as Scenario from "./Scenario.js"

/**
 * A breaker state change, as observed around attempts.
 *
 * @example
 * ```ts
 * import { Simulate } from "@rein/cli"
 *
 * const t: Simulate.Transition = { atMillis: 2_300, endpoint: "fake/a", from: "closed", to: "open" }
 * ```
 * @since 0.1.0
 * @category models
 */
export interface Transition {
  readonly atMillis: number
  readonly endpoint: string
  readonly from: Health.BreakerState
  readonly to: Health.BreakerState
}

/**
 * What `rein simulate` reports. Times are virtual milliseconds from the start.
 *
 * @example
 * ```ts
 * import { Simulate } from "@rein/cli"
 *
 * const failedShare = (r: Simulate.SimulationReport) => 1 - (r.outcomes["success"] ?? 0) / r.requests
 * ```
 * @since 0.1.0
 * @category models
 */
export interface SimulationReport {
  readonly scenario: string
  readonly seed: number
  readonly trafficMillis: number
  readonly virtualMillis: number
  readonly requests: number
  readonly outcomes: Readonly<Record<string, number>>
  readonly stopReasons: ReadonlyArray<{ readonly outcome: string; readonly reason: string; readonly count: number }>
  readonly attemptsPerRequest: {
    readonly mean: number
    readonly max: number
    readonly histogram: Readonly<Record<string, number>>
  }
  readonly attempts: number
  readonly retries: number
  readonly fallbacks: number
  readonly requestsWithFallback: number
  readonly endpoints: Readonly<
    Record<string, {
      readonly attempts: number
      readonly answered: number
      readonly failures: Readonly<Record<string, number>>
      readonly transitions: number
    }>
  >
  readonly breakerTransitions: ReadonlyArray<Transition>
  readonly retryTokens: { readonly drawn: number; readonly minGlobal: number | null; readonly endGlobal: number | null }
  readonly budget: {
    readonly cost: number
    readonly tokens: number
    readonly calls: number
    readonly maxRequestCost: number
    readonly unknownUsageAttempts: number
  }
  readonly latency: { readonly p50: number; readonly p90: number; readonly p99: number; readonly max: number }
}

interface Finished {
  readonly latency: number
  readonly result: Either.Either<Outcome.Completion, Outcome.Terminal>
}

/**
 * What every request runs with, per price epoch: its catalog and providers, and the one `Health` (one context,
 * provided in one step). The arrivals of an epoch run with its services, and each request's fiber inherits them:
 * a request provided its own until then (two context updates per request, each a copy of the fiber's references).
 */
const epochsOf = (
  catalog: Catalog.Catalog,
  scenario: Scenario.Scenario,
  providers: ReadonlyMap<string, Provider.Provider>,
  health: Health.Service
) =>
  Scenario.priceEpochs(scenario).map((at) => ({
    at,
    context: Context.make(Rein.Rein, { catalog: repriced(catalog, scenario, at), providers }).pipe(
      Context.add(Health.Health, health)
    )
  }))

/** The `i`th simulated request (from 0). */
const requestOf = (scenario: Scenario.Scenario, i: number) => ({
  id: `sim-${i + 1}`,
  prompt: "simulated request",
  inputTokens: scenario.request.inputTokens,
  maxOutputTokens: scenario.request.maxOutputTokens
})

/** How a simulated request ends (`Effect.matchCauseEffect`'s handlers), and its fiber once started. */
interface Handlers {
  fiber: Fiber.RuntimeFiber<void> | undefined
  readonly onFailure: (cause: Cause.Cause<Outcome.Terminal>) => Effect.Effect<void>
  readonly onSuccess: (completion: Outcome.Completion) => Effect.Effect<void>
}

/** A request's fiber starts as a fork's does: its first step queued on the simulation's scheduler. */
const QUEUED: Runtime.RunForkOptions = { immediate: false }

/** No references: a request's fiber is given its epoch's (see `forksIn`), not a copy of them. */
const NO_REFS = FiberRefs.empty()

/**
 * Each price epoch's fork: the simulation's fiber's references (virtual clock and scheduler, seeded `Random`) with
 * that epoch's services. A request arriving at `now` runs with the last epoch that began by then.
 *
 * Every request of an epoch starts on one set of references, forked once (a `FiberRefs` is never changed in place:
 * a fiber that sets a reference makes itself a new one), as core's attempts are (`internal/fork.ts`):
 * `Runtime.runFork` forked the epoch's references again for each request (`FiberRefs.updateManyAs`: a new `Map`, a
 * new stack per reference), objects that V8 pretenures once the epoch's own copy survived its first
 * young-generation collections, and then every request's copy went to the old generation. A request sees the
 * same values; only the fiber ids inside the stacks are the first request's, read when a fiber is joined, and a
 * request's fiber is never joined (its end is its `matchCauseEffect`; `stop` interrupts and awaits it).
 */
const forksIn = (
  epochs: ReadonlyArray<{ readonly context: Context.Context<Rein.Rein | Health.Health> }>
): Effect.Effect<ReadonlyArray<(request: Effect.Effect<void, never, Rein.Rein>) => Fiber.RuntimeFiber<void>>> =>
  Effect.forEach(
    epochs,
    ({ context }) =>
      Effect.map(Effect.provide(Effect.runtime<Rein.Rein>(), context), (runtime) => {
        const bare = Runtime.make({ context: runtime.context, fiberRefs: NO_REFS, runtimeFlags: runtime.runtimeFlags })
        let forked: FiberRefs.FiberRefs | undefined = undefined
        // What `Runtime.runFork(runtime)` gives a fiber (`unsafeFork`: the runtime's context set, then forked), made
        // for the first request and given to every other.
        const options: Runtime.RunForkOptions = {
          ...QUEUED,
          updateRefs: (_, id) =>
            forked ??= FiberRefs.updateManyAs(runtime.fiberRefs, {
              entries: [[FiberRef.currentContext, [[id, runtime.context]]]],
              forkAs: id
            })
        }
        const fork = Runtime.runFork(bare)
        return (request: Effect.Effect<void, never, Rein.Rein>) => fork(request, options)
      })
  )

/**
 * The wait after an arrival: steady arrivals wait the same gap every time, Poisson arrivals draw theirs from the
 * simulation's `Random` (the draw made where the simulation's fiber made it: after the request's fork, before the
 * request's first step).
 */
const gapOf = (scenario: Scenario.Scenario, random: Random.Random): () => Duration.Duration => {
  if (scenario.arrivals === "steady") {
    const steady = Duration.millis(1_000 / scenario.rate)
    return () => steady
  }
  return () => Duration.millis((-Math.log(1 - Effect.runSync(random.next)) * 1_000) / scenario.rate)
}

const bump = (record: Record<string, number>, key: string, by = 1) => {
  record[key] = (record[key] ?? 0) + by
}

/** The most requests one `rein simulate` runs (950,000 took 45 s of CPU on a loaded 2-core machine). */
const MAX_REQUESTS = 1_000_000

// The simulation runs synchronously, so Ctrl-C cannot stop it part-way: a scenario whose traffic would take
// hours of CPU (and hold rate × latency requests in memory at once) is refused before it starts.
const checkSize = (file: string, scenario: Scenario.Scenario): Effect.Effect<void, InputError> => {
  const expected = (scenario.duration / 1_000) * scenario.rate
  return expected <= MAX_REQUESTS ? Effect.void : Effect.fail(
    new InputError({
      message: `${file}: rate, duration: ${scenario.rate} requests a second for ${
        Duration.format(Duration.millis(scenario.duration))
      } is about ${
        expected.toPrecision(3)
      } requests; a simulation runs at most ${MAX_REQUESTS} (lower the rate or the duration)`
    })
  )
}

/**
 * Simulates a scenario in virtual time (the effect itself takes real time only to compute).
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Simulate } from "@rein/cli"
 * import type { Catalog, Contract } from "@rein/core"
 * import type { Scenario } from "@rein/cli"
 *
 * declare const catalog: Catalog.Catalog
 * declare const contract: Contract.Contract
 * declare const scenario: Scenario.Scenario
 * const report = Simulate.simulate(catalog, contract, scenario, 42) // same seed, same report
 * ```
 * @since 0.1.0
 * @category running
 */
export const simulate = (
  catalog: Catalog.Catalog,
  contract: Contract.Contract,
  scenario: Scenario.Scenario,
  seed: number
): Effect.Effect<SimulationReport> =>
  Effect.gen(function*() {
    const ids = catalog.endpoints.map((e) => e.id)
    const transitions: Array<Transition> = []
    const tally = emptyTally()
    const random = Random.make(seed)

    const program = Effect.gen(function*() {
      const health = yield* Health.make(Scenario.healthConfig(scenario))
      const { unsafeBreaker, unsafeView } = health
      if (unsafeBreaker === undefined || unsafeView === undefined) {
        return yield* Effect.dieMessage("simulate: the health service has no synchronous reads")
      }
      const clock = yield* Effect.clock
      // The arrivals are the virtual clock's callbacks (see `Traffic.arrive`).
      const timers = clock instanceof Virtual.VirtualClock
        ? clock
        : yield* Effect.dieMessage("simulate: not on the virtual clock")
      const watch = new Watch(ids, timers, unsafeBreaker, unsafeView, transitions)
      const fake = scripted(scenario, 0)
      const observed: Provider.Provider = {
        ...fake,
        call: (request, context) =>
          Effect.suspend(() => {
            watch.observe()
            return fake.call(request, context)
          })
      }
      // Every provider name runs on the scripted fake: a simulation never calls out.
      const providers = new Map(catalog.endpoints.map((e) => [e.provider, observed]))
      const epochs = epochsOf(catalog, scenario, providers, health)
      const allDone = yield* Deferred.make<void>()
      const starts = yield* forksIn(epochs)
      const traffic = new Traffic(
        scenario,
        contract,
        timers,
        watch,
        tally,
        allDone,
        epochs.map((e) => e.at),
        starts,
        gapOf(scenario, random)
      )
      traffic.arrive()
      yield* Effect.onExit(
        Deferred.await(allDone),
        (exit) => Exit.isSuccess(exit) ? Effect.void : Effect.suspend(() => traffic.stop())
      )
      return traffic
    }).pipe(Effect.withRandom(random))

    const { exit, virtualMillis } = yield* Virtual.run(program)
    const traffic = Exit.isSuccess(exit) ? exit.value : yield* Effect.dieMessage(
      `simulation failed: ${Cause.pretty(exit.cause).split("\n")[0] ?? "unknown"}`
    )
    return summarise(scenario, seed, traffic.now, virtualMillis, tally, transitions, traffic.watch)
  })

/**
 * Reads every breaker (at every provider call and after every request) and the retry tokens (after every request),
 * each in one synchronous step: the clock is virtual, so nothing moves between the reads.
 *
 * This and `Traffic` are classes made once per run, not closures made per run: V8 keeps the optimized code of a
 * closure's site only while a closure made there holds it, so after a full collection between two runs (bench 6's
 * in-process row collects before every run) the run's closures ran unoptimized and were compiled again; a class's
 * methods are the same functions in every run.
 */
class Watch {
  readonly states: Map<string, Health.BreakerState>
  minGlobal: number | null = null
  endGlobal: number | null = null
  constructor(
    readonly ids: ReadonlyArray<string>,
    readonly clock: Virtual.VirtualClock,
    readonly unsafeBreaker: NonNullable<Health.Service["unsafeBreaker"]>,
    readonly unsafeView: NonNullable<Health.Service["unsafeView"]>,
    readonly transitions: Array<Transition>
  ) {
    this.states = new Map<string, Health.BreakerState>(ids.map((id) => [id, "closed"]))
  }

  observe(): void {
    const now = this.clock.unsafeCurrentTimeMillis()
    const nanos = this.clock.unsafeCurrentTimeNanos()
    for (const id of this.ids) {
      const state = this.unsafeBreaker(nanos, id)
      const before = this.states.get(id) ?? "closed"
      if (state !== before) {
        this.transitions.push({ atMillis: now, endpoint: id, from: before, to: state })
        this.states.set(id, state)
      }
    }
  }

  tokens(): void {
    const g = this.unsafeView(this.clock.unsafeCurrentTimeNanos(), this.ids).retryTokens.global
    this.endGlobal = g
    if (g !== null) {
      this.minGlobal = this.minGlobal === null ? g : Math.min(this.minGlobal, g)
    }
  }
}

/**
 * One run's traffic: its arrivals and the requests in flight (see `Watch` for why a class).
 *
 * The requests in flight are counted, and their fibers kept only while they run: an hour's 10,000 ended fibers held
 * until the end made most of the simulation's CPU garbage collection. The first request that dies ends the
 * simulation. A request's fiber is started by an arrival (a clock callback), not forked by the simulation's fiber: it
 * is not its child. When the simulation is interrupted or a request dies, the requests still in flight are
 * interrupted and awaited (see `stop`); they were left asleep on the run's virtual clock, never ended.
 */
class Traffic {
  pending = 0
  arriving = true
  stopped = false
  epoch = 0
  /** The time of the last arrival (the one that found the traffic over: the run's traffic time). */
  now = 0
  i = 0
  readonly inFlight = new Set<Fiber.RuntimeFiber<void>>()
  /** `arrive`, as the virtual clock's callback. */
  readonly next = (): void => this.arrive()

  constructor(
    readonly scenario: Scenario.Scenario,
    readonly contract: Contract.Contract,
    readonly clock: Virtual.VirtualClock,
    readonly watch: Watch,
    readonly tally: Tally,
    readonly allDone: Deferred.Deferred<void>,
    /** When each price epoch begins, in order. */
    readonly epochs: ReadonlyArray<number>,
    readonly starts: ReadonlyArray<(request: Effect.Effect<void, never, Rein.Rein>) => Fiber.RuntimeFiber<void>>,
    readonly gap: () => Duration.Duration
  ) {}

  /**
   * One arrival, at the clock's time: fork the request (its first step queued on the simulation's scheduler, as a
   * fork's is), then arm the next arrival on the virtual clock. The arrivals are the clock's callbacks, not a fiber's
   * sleeps: a fiber woken, a sleep (an `Effect.async` and its interruption handler) and three steps per arrival were
   * a fifth of a simulated request's operations. The callbacks run at the same points of the virtual run as the
   * simulation's fiber did (the next arrival's timer armed before the request runs), so every report is the same.
   */
  arrive(): void {
    if (this.stopped) return
    const now = this.now = this.clock.unsafeCurrentTimeMillis()
    if (!(now < this.scenario.duration)) {
      this.arriving = false
      if (this.pending === 0) Deferred.unsafeDone(this.allDone, Exit.void)
      return
    }
    while (this.epoch + 1 < this.epochs.length && this.epochs[this.epoch + 1]! <= now) this.epoch++
    this.pending++
    const k = this.finished(now)
    const fiber = this.starts[this.epoch]!(
      Effect.matchCauseEffect(Rein.execute(requestOf(this.scenario, this.i++), this.contract), k)
    )
    k.fiber = fiber
    this.inFlight.add(fiber)
    this.clock.unsafeSchedule(this.next, this.gap())
  }

  /**
   * How a request ends. What `Effect.either` then `matchCauseEffect` did, in one step: a request's failure alone (a
   * `Fail` cause: no defect beside it) is its result; any other cause goes through `Effect.either` as before (a
   * defect's failures elected, an interruption kept) and ends the run. The request's fiber is set once it is started
   * (before its first step: it starts queued).
   */
  finished(start: number): Handlers {
    const k: Handlers = {
      fiber: undefined,
      onFailure: (cause) =>
        Cause.isFailType(cause)
          ? this.ended(k, start, Either.left(cause.error))
          : Effect.matchCauseEffect(Effect.either(Effect.failCause(cause)), {
            onFailure: (cause) => this.died(k, cause),
            onSuccess: (result) => this.ended(k, start, result)
          }),
      onSuccess: (completion) => this.ended(k, start, Either.right(completion))
    }
    return k
  }

  /**
   * After a request, in one step: the clock, the breakers, the retry tokens, its tally (in that order), then the
   * count of requests in flight. (Not `onExit`: only `stop` interrupts a request's fiber.)
   */
  ended(k: Handlers, start: number, result: Finished["result"]): Effect.Effect<void> {
    this.pending--
    this.inFlight.delete(k.fiber!)
    const end = this.clock.unsafeCurrentTimeMillis()
    this.watch.observe()
    this.watch.tokens()
    tallyRequest(this.tally, { latency: end - start, result })
    if (!this.arriving && this.pending === 0) Deferred.unsafeDone(this.allDone, Exit.void)
    return Effect.void
  }

  /** A request that died ends the simulation with its cause. */
  died(k: Handlers, cause: Cause.Cause<never>): Effect.Effect<void> {
    this.pending--
    this.inFlight.delete(k.fiber!)
    Deferred.unsafeDone(this.allDone, Exit.failCause(cause))
    return Effect.void
  }

  /** Interrupted, or a request died: no more arrivals, and the requests in flight end with the simulation. */
  stop(): Effect.Effect<void> {
    this.stopped = true
    return this.inFlight.size === 0 ? Effect.void : Fiber.interruptAll(Array.from(this.inFlight))
  }
}

/**
 * What the report counts, tallied as each request finishes (in that order, the order the report's keys
 * follow): a request's outcome and attempts are not kept, only its latency.
 */
interface Tally {
  readonly outcomes: Record<string, number>
  readonly reasons: Record<string, number>
  readonly histogram: Record<string, number>
  readonly endpoints: Record<
    string,
    { attempts: number; answered: number; failures: Record<string, number>; transitions: number }
  >
  readonly latencies: Array<number>
  attempts: number
  retries: number
  fallbacks: number
  withFallback: number
  maxAttempts: number
  cost: number
  spentTokens: number
  maxRequestCost: number
  unknownUsage: number
}

const emptyTally = (): Tally => ({
  outcomes: {},
  reasons: {},
  histogram: {},
  // No prototype: an endpoint called `constructor` is counted like any other.
  endpoints: Object.create(null),
  latencies: [],
  attempts: 0,
  retries: 0,
  fallbacks: 0,
  withFallback: 0,
  maxAttempts: 0,
  cost: 0,
  spentTokens: 0,
  maxRequestCost: 0,
  unknownUsage: 0
})

const endpointOf = (
  t: Tally,
  id: string
) => (t.endpoints[id] ??= { attempts: 0, answered: 0, failures: {}, transitions: 0 })

/** Counts one finished request. */
const tallyRequest = (t: Tally, f: Finished): void => {
  t.latencies.push(f.latency)
  const records = Either.isRight(f.result) ? f.result.right.attempts : f.result.left.attempts
  if (Either.isRight(f.result)) {
    bump(t.outcomes, "success")
    endpointOf(t, f.result.right.endpoint).answered++
  } else {
    const e = f.result.left
    bump(t.outcomes, e._tag)
    bump(t.reasons, `${e._tag}\u0000${e.reason.replace(/\d+(?:\.\d+)?/g, "N")}`)
  }
  bump(t.histogram, String(records.length))
  t.maxAttempts = Math.max(t.maxAttempts, records.length)
  t.attempts += records.length
  let requestCost = 0
  let fellBack = false
  for (const a of records) {
    const endpoint = endpointOf(t, a.endpoint)
    endpoint.attempts++
    if (a.failure !== null) bump(endpoint.failures, a.failure)
    if (a.role === "retry") t.retries++
    if (a.role === "fallback") {
      t.fallbacks++
      fellBack = true
    }
    if (a.usage === "unknown" && a.dispatched) t.unknownUsage++
    requestCost += a.charged.cost
    t.spentTokens += a.charged.tokens
  }
  if (fellBack) t.withFallback++
  t.cost += requestCost
  t.maxRequestCost = Math.max(t.maxRequestCost, requestCost)
}

const summarise = (
  scenario: Scenario.Scenario,
  seed: number,
  trafficMillis: number,
  virtualMillis: number,
  tally: Tally,
  transitions: ReadonlyArray<Transition>,
  tokens: { readonly minGlobal: number | null; readonly endGlobal: number | null }
): SimulationReport => {
  const {
    attempts,
    cost,
    endpoints,
    fallbacks,
    histogram,
    latencies,
    maxAttempts,
    maxRequestCost,
    outcomes,
    reasons,
    retries,
    spentTokens,
    unknownUsage,
    withFallback
  } = tally
  const endpoint = (id: string) => endpointOf(tally, id)
  for (const t of transitions) endpoint(t.endpoint).transitions++
  const requests = latencies.length
  const round = (n: number) => Math.round(n * 1e9) / 1e9
  return {
    scenario: scenario.description ?? "",
    seed,
    trafficMillis: Math.round(trafficMillis),
    virtualMillis: Math.round(virtualMillis),
    requests,
    outcomes,
    stopReasons: Object.entries(reasons)
      .map(([key, count]) => {
        const [outcome, reason] = key.split("\u0000") as [string, string]
        return { outcome, reason, count }
      })
      .sort((a, b) => b.count - a.count || a.reason.localeCompare(b.reason))
      .slice(0, 5),
    attemptsPerRequest: {
      mean: requests === 0 ? 0 : round(attempts / requests),
      max: maxAttempts,
      histogram
    },
    attempts,
    retries,
    fallbacks,
    requestsWithFallback: withFallback,
    endpoints,
    breakerTransitions: transitions.map((t) => ({ ...t, atMillis: Math.round(t.atMillis) })),
    retryTokens: {
      drawn: retries + fallbacks,
      minGlobal: tokens.minGlobal === null ? null : round(tokens.minGlobal),
      endGlobal: tokens.endGlobal === null ? null : round(tokens.endGlobal)
    },
    budget: {
      cost: round(cost),
      tokens: spentTokens,
      calls: attempts,
      maxRequestCost: round(maxRequestCost),
      unknownUsageAttempts: unknownUsage
    },
    latency: {
      p50: round(quantile(latencies, 0.5)),
      p90: round(quantile(latencies, 0.9)),
      p99: round(quantile(latencies, 0.99)),
      max: round(quantile(latencies, 1))
    }
  }
}

const SHOWN_TRANSITIONS = 12

/**
 * Renders a simulation report for people.
 *
 * @example
 * ```ts
 * import { Simulate } from "@rein/cli"
 *
 * declare const report: Simulate.SimulationReport
 * console.log(Simulate.render(report))
 * ```
 * @since 0.1.0
 * @category rendering
 */
export const render = (r: SimulationReport): string => {
  const pct = (n: number) => (r.requests === 0 ? "0%" : `${num(Math.round((n / r.requests) * 1000) / 10)}%`)
  const outcomes = Object.entries(r.outcomes).sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${v} (${pct(v)})`)
  const histogram = Object.entries(r.attemptsPerRequest.histogram)
    .sort((a, b) => Number(a[0]) - Number(b[0]))
    .map(([k, v]) => `${k}: ${v}`)
  const lines: Array<string> = [
    `simulated ${millis(r.trafficMillis)} of traffic (seed ${r.seed})${r.scenario === "" ? "" : `: ${r.scenario}`}`,
    table([
      ["requests", String(r.requests)],
      ["outcomes", outcomes.join(", ")],
      [
        "attempts",
        `${r.attempts} — per request mean ${num(r.attemptsPerRequest.mean)}, max ${r.attemptsPerRequest.max} (${
          histogram.join(", ")
        })`
      ],
      ["retries", String(r.retries)],
      ["fallbacks", `${r.fallbacks} (${r.requestsWithFallback} requests fell back)`],
      [
        "retry tokens",
        `${r.retryTokens.drawn} drawn; global bucket min ${r.retryTokens.minGlobal ?? "unlimited"}, at the end ${
          r.retryTokens.endGlobal ?? "unlimited"
        }`
      ],
      [
        "budget used",
        `cost ${num(r.budget.cost)} (max ${
          num(r.budget.maxRequestCost)
        } per request), ${r.budget.tokens} tokens, ${r.budget.calls} calls, ${r.budget.unknownUsageAttempts} with unknown usage (charged in full)`
      ],
      [
        "latency",
        `p50 ${millis(r.latency.p50)}, p90 ${millis(r.latency.p90)}, p99 ${millis(r.latency.p99)}, max ${
          millis(r.latency.max)
        }`
      ]
    ], "  "),
    "endpoints:",
    table([
      ["endpoint", "attempts", "answered", "failures", "breaker transitions"],
      ...Object.entries(r.endpoints).sort((a, b) => a[0].localeCompare(b[0])).map(([id, e]) => [
        id,
        String(e.attempts),
        String(e.answered),
        Object.entries(e.failures).map(([k, v]) => `${k} ${v}`).join(", ") || "-",
        String(e.transitions)
      ])
    ], "  ")
  ]
  if (r.breakerTransitions.length > 0) {
    lines.push("breaker transitions:")
    for (const t of r.breakerTransitions.slice(0, SHOWN_TRANSITIONS)) {
      lines.push(`  +${millis(t.atMillis)}  ${t.endpoint}  ${t.from} → ${t.to}`)
    }
    if (r.breakerTransitions.length > SHOWN_TRANSITIONS) {
      lines.push(`  … ${r.breakerTransitions.length - SHOWN_TRANSITIONS} more (--json for all)`)
    }
  }
  if (r.stopReasons.length > 0) {
    lines.push("why requests failed (most frequent):")
    for (const s of r.stopReasons) lines.push(`  ${s.count} × ${s.outcome}: ${s.reason}`)
  }
  return lines.join("\n")
}

/**
 * The `rein simulate` command.
 *
 * @example
 * ```ts
 * import { Simulate } from "@rein/cli"
 *
 * Simulate.command // rein simulate --catalog C --contract K --scenario S [--seed N] [--json]
 * ```
 * @since 0.1.0
 * @category commands
 */
export const command = Command.make(
  "simulate",
  {
    catalog: Shared.catalog,
    contract: Shared.contract,
    scenario: Shared.file("scenario").pipe(
      Options.withDescription("The scenario (JSON): traffic, duration, endpoint phases, price changes")
    ),
    seed: Shared.number("seed", "an integer").pipe(
      Options.withDescription("Seed of arrivals, jitter and failure draws (the same seed gives the same report)"),
      Options.withDefault(1)
    ),
    json: Shared.json
  },
  (o): Effect.Effect<void, InputError, FileSystem.FileSystem | ExitStatus> =>
    Effect.gen(function*() {
      const { catalog, contract } = yield* loadCatalogAndContract(o.catalog, o.contract)
      const scenario = yield* readScenario(o.scenario, catalog)
      yield* checkSize(o.scenario, scenario)
      const report = yield* simulate(catalog, contract, scenario, o.seed)
      yield* Console.log(o.json ? json(report) : render(report))
      yield* exitWith(ExitCode.ok)
    })
).pipe(
  Command.withDescription("Drive a scenario's traffic through scripted endpoints in virtual time; report what Rein did")
)
