/**
 * Bench 6's floor rows: the same virtual hour (10,000 arrivals, one every 360 virtual ms, each call a 300 ms
 * sleep) on the CLI's own virtual scheduler and clock (`packages/cli/dist/internal/virtual.js`, what
 * `Simulate.simulate` runs on), without the simulator:
 *
 * - the arrivals alone: a fiber forked per arrival that sleeps 300 ms (the scheduler's and the clock's cost);
 * - the same call bounded by `Effect.timeout` (30 s): the Effect-native bound on each call;
 * - the same call under a lean bound (30 s): one fork (the call's fiber) and one timer on the virtual clock per
 *   call, the fiber's observer resuming the caller, as bench 4's lean bound on the real clock: the least a call
 *   bounded by a deadline costs on this clock, with no Rein (no planner, no records, no health);
 * - bare `Rein.execute` per arrival (the scenario's catalog, contract and health settings, a provider that
 *   sleeps 300 ms and answers; no scenario lookup, no tally, no report): what Rein's requests cost in virtual
 *   time, which the simulator cannot go below.
 *
 * The last one also runs alone in a fresh process (`coldReinHour`, from `simulation-floor-child.ts`): the cold
 * floor of the binary's row.
 */
import type { Catalog, Contract, Provider } from "@rein/core"
import { Health, Rein } from "@rein/core"
import type { Clock } from "effect"
import { Context, Deferred, Duration, Effect, Exit, FiberId, Runtime } from "effect"
import { join } from "node:path"
import { pathToFileURL } from "node:url"

const ARRIVALS = 10_000
const EVERY = Duration.millis(360)
const LATENCY = Duration.millis(300)

interface VirtualModule {
  readonly run: <A, E>(
    effect: Effect.Effect<A, E>
  ) => Effect.Effect<{ readonly exit: Exit.Exit<A, E>; readonly virtualMillis: number }>
}

/** An arrival's fiber starts as a fork's does: its first step queued on the virtual scheduler. */
const QUEUED: Runtime.RunForkOptions = { immediate: false }

/**
 * Forks `one(i)` for every arrival, one every 360 virtual ms, and waits for all of them to end. The arrivals are
 * the virtual clock's callbacks, as the simulator's are (`Simulate.ts`): each forks its call's fiber (its first
 * step queued) and arms the next arrival; no fiber sleeps between arrivals; a call's end is one step. A floor
 * drives its arrivals no dearer than the simulator does, so that the simulator cannot read below it.
 */
const arrivals = <R>(one: (i: number) => Effect.Effect<unknown, unknown, R>): Effect.Effect<void, never, R> =>
  Effect.gen(function*() {
    const done = yield* Deferred.make<void>()
    const fork = Runtime.runFork(yield* Effect.runtime<R>())
    const timers = yield* Effect.clockWith((clock) => (clock as Clock.Clock & VirtualScheduling).scheduler())
    let pending = 0
    let arriving = true
    let i = 0
    // A call's end, whatever its exit, in one step (as the simulator ends a request).
    const settled = (): Effect.Effect<void> => {
      if (--pending === 0 && !arriving) Deferred.unsafeDone(done, Exit.void)
      return Effect.void
    }
    const settle = { onFailure: settled, onSuccess: settled }
    const arrive = (): void => {
      if (i === ARRIVALS) {
        arriving = false
        if (pending === 0) Deferred.unsafeDone(done, Exit.void)
        return
      }
      pending++
      fork(Effect.matchCauseEffect(one(i++), settle), QUEUED)
      timers.unsafeSchedule(arrive, EVERY)
    }
    arrive()
    yield* Deferred.await(done)
  })

/** The lean-bound floor's name: the goal lines compare the target with it. */
export const LEAN_FLOOR = "floor: each call under a lean bound (one fork + one virtual timer, observer resumes)"

/** The bare `Rein.execute` floor's name. */
export const REIN_FLOOR = "bare Rein.execute per arrival, no simulator"

export interface Floor {
  readonly name: string
  /** Runs the hour once on the virtual scheduler; rejects when it did not end as expected. */
  readonly run: () => Promise<void>
}

/** The CLI's virtual scheduler (`packages/cli/dist/internal/virtual.js` under `root`). */
const virtualOf = (root: string): Promise<VirtualModule> =>
  import(pathToFileURL(join(root, "packages", "cli", "dist", "internal", "virtual.js")).href) as Promise<VirtualModule>

/** Runs `hour` once on the virtual scheduler; rejects when it did not end as expected. */
const runHour = (Virtual: VirtualModule, name: string, hour: Effect.Effect<void, Health.ConfigError>) => async () => {
  const { exit } = await Effect.runPromise(Virtual.run(hour))
  if (!Exit.isSuccess(exit)) throw new Error(`${name}: the hour did not end: ${String(exit)}`)
}

/** Bench 6's inputs to the bare `Rein.execute` floor. */
export interface FloorInputs {
  readonly catalog: Catalog.Catalog
  readonly contract: Contract.Contract
  readonly health: Partial<Health.Config>
}

/**
 * Bare `Rein.execute` per arrival: the scenario's catalog, contract and health settings, a provider that sleeps
 * 300 ms and answers. The services are provided once, around the arrivals, and every request's fiber inherits
 * them (as the simulator provides them once per price epoch): two `provideService`s per request cost more than
 * the rest of the floor's bookkeeping.
 */
const reinHour = (inputs: FloorInputs): Effect.Effect<void, Health.ConfigError> => {
  const answer: Provider.ProviderResponse = {
    text: "(simulated answer)",
    usage: { inputTokens: 600, outputTokens: 120 }
  }
  const provider: Provider.Provider = {
    internalMaxAttempts: 1,
    simulated: true,
    call: () => Effect.as(Effect.sleep(LATENCY), answer)
  }
  const providers = new Map([["fake", provider]])
  return Effect.flatMap(Health.make(inputs.health), (health) =>
    Effect.provide(
      arrivals((i) =>
        Rein.execute(
          { id: `sim-${i + 1}`, prompt: "simulated request", inputTokens: 600, maxOutputTokens: 300 },
          inputs.contract
        )
      ),
      Context.make(Rein.Rein, { catalog: inputs.catalog, providers }).pipe(Context.add(Health.Health, health))
    ))
}

/**
 * Each arrival's call under a lean bound on the virtual clock: bench 4's `leanBound` (one fork, one timer, the
 * fiber's observer resumes the caller; a timeout interrupts the fiber and the caller waits for its teardown),
 * its fork on the simulation's runtime (the virtual scheduler and clock, taken once for the hour) and its timer
 * the virtual clock's (`ClockScheduler.unsafeSchedule`, what Rein's one timer per clock runs on). No Rein: what a
 * bounded call costs on this clock, under which Rein's requests cannot go.
 */
const leanHour = (call: Effect.Effect<unknown>, millis: number): Effect.Effect<void> =>
  Effect.flatMap(
    // The virtual clock's scheduler (`scheduler()`, as Effect's live clock has; the `Clock` interface does not
    // declare it).
    Effect.zip(
      Effect.runtime<never>(),
      Effect.clockWith((clock) => (clock as Clock.Clock & VirtualScheduling).scheduler())
    ),
    ([runtime, timers]) => arrivals(() => leanBound(runtime, timers, call, Duration.millis(millis)))
  )

interface VirtualScheduling {
  readonly scheduler: () => Effect.Effect<Clock.ClockScheduler>
}

/** The lean bound's timeout. */
class LeanTimeout {
  readonly _tag = "LeanTimeout"
}

const leanBound = <A, E>(
  runtime: Runtime.Runtime<never>,
  timers: Clock.ClockScheduler,
  call: Effect.Effect<A, E>,
  timeout: Duration.Duration
): Effect.Effect<A, E | LeanTimeout> =>
  Effect.async<A, E | LeanTimeout>((resume) => {
    const fiber = Runtime.runFork(runtime)(call)
    let expired = false
    const cancel = timers.unsafeSchedule(() => {
      expired = true
      fiber.unsafeInterruptAsFork(FiberId.none)
    }, timeout)
    fiber.addObserver((exit) => {
      cancel()
      resume(expired ? Effect.fail(new LeanTimeout()) : exit)
    })
    return Effect.sync(() => {
      cancel()
      fiber.unsafeInterruptAsFork(FiberId.none)
    })
  })

/** The bare `Rein.execute` hour alone, for a fresh process (`simulation-floor-child.ts`). */
export const coldReinHour = async (root: string, inputs: FloorInputs): Promise<() => Promise<void>> =>
  runHour(await virtualOf(root), "Rein.execute", reinHour(inputs))

/** The floor rows, run on the CLI's virtual scheduler (found under `root`'s built CLI). */
export const floors = async (root: string, inputs: FloorInputs): Promise<ReadonlyArray<Floor>> => {
  const Virtual = await virtualOf(root)
  const sleep = Effect.sleep(LATENCY)
  const bounded = Effect.timeout(sleep, Duration.seconds(30))
  return [
    {
      name: "floor: the arrivals alone (a fiber per arrival, one 300 ms sleep)",
      run: runHour(Virtual, "arrivals", arrivals(() => sleep))
    },
    {
      name: "floor: each call bounded by Effect.timeout(30 s)",
      run: runHour(Virtual, "Effect.timeout", arrivals(() => bounded))
    },
    {
      name: LEAN_FLOOR,
      run: runHour(Virtual, "lean bound", leanHour(sleep, 30_000))
    },
    { name: REIN_FLOOR, run: runHour(Virtual, "Rein.execute", reinHour(inputs)) }
  ]
}
