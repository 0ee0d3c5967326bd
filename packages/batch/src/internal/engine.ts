/**
 * The run: up to `concurrency` workers (`pool`, started as items are taken) pull one item at a time from the
 * source (`pull`), execute it under the contract inside the item deadline with the run's gate (`gate`, built from
 * the run limits), and publish exactly one terminal result per accepted item (`results`). The gate is the run's
 * one control point over attempts: it admits them, counts what they used as they finish, and closes when the run
 * stops, so that no attempt, retry or wait starts afterwards.
 *
 * @internal
 */
import type { Rein } from "@rein/core"
import { Gate as CoreGate } from "@rein/core"
import type { Scope } from "effect"
import { Duration, Effect, Option } from "effect"
import type { ItemResult } from "../Result.js"
import * as RunLimits from "../RunLimits.js"
import type * as Stats from "../Stats.js"
import type { Termination } from "../Termination.js"
import * as Gate from "./gate.js"
import * as Pool from "./pool.js"
import * as Pull from "./pull.js"
import * as Results from "./results.js"
import { sleepMillis } from "./schema.js"
import type { Settings } from "./settings.js"
import type { Puller } from "./source.js"
import * as State from "./state.js"
import * as Telemetry from "./telemetry.js"

/** @internal */
export interface Ending {
  readonly termination: Termination
  readonly stats: Stats.Stats
}

/**
 * Runs the loop until the source is exhausted (or the run stopped) and every accepted item has been
 * published. `window` bounds accepted-but-unpublished items when results are published in submission order.
 * The run limits are the context's when it has them (shared with other runs), else fresh in-memory ones.
 *
 * @internal
 */
export const run = <I, E, R>(
  puller: Puller<I, E, R>,
  settings: Settings<I>,
  publish: (result: ItemResult<I>) => Effect.Effect<void>,
  window: number | undefined
): Effect.Effect<Ending, E, Rein.Rein | Scope.Scope | R> =>
  // The run span (nothing without `Telemetry`).
  Telemetry.run(runUntraced(puller, settings, publish, window), (ending) => ({
    "rein.batch.termination": ending.termination.kind,
    "rein.batch.accepted": ending.stats.accepted,
    "rein.batch.succeeded": ending.stats.succeeded,
    "rein.batch.failed": ending.stats.failed
  }))

const runUntraced = <I, E, R>(
  puller: Puller<I, E, R>,
  settings: Settings<I>,
  publish: (result: ItemResult<I>) => Effect.Effect<void>,
  window: number | undefined
): Effect.Effect<Ending, E, Rein.Rein | Scope.Scope | R> =>
  Effect.gen(function*() {
    const g = settings.guardrails
    const shared = yield* Effect.serviceOption(RunLimits.RunLimits)
    const limits = Option.isSome(shared) ? shared.value : yield* RunLimits.memory(RunLimits.configOf(g))
    const state = yield* State.make(settings, limits)
    if (Option.isSome(shared)) {
      // A stop from elsewhere (another run sharing the limits) reaches this run too.
      yield* Effect.forkIn(Effect.flatMap(limits.whenStopped, (s) => State.applyStop(state, s)), state.scope)
    }
    const windowLock = window === undefined ? undefined : yield* Effect.makeSemaphore(window)
    const deliver = g.order === "completion" ? publish : Results.inSubmissionOrder(publish, windowLock)
    const results = Results.make(state, deliver)
    const pulling = yield* Pull.make(state, puller, windowLock !== undefined)
    const gate = Gate.make(state)
    const isGated = gated(settings) || Option.isSome(shared)
    const pool = Pool.make(state, gate, isGated, results, pulling, windowLock)

    yield* state.event((at) => ({ _tag: "RunStarted", at }))
    if (g.batchDeadline !== undefined) {
      const millis = Duration.toMillis(g.batchDeadline)
      state.deadlineMillis = millis
      // `sleepMillis` sleeps again past the longest timer (2^31 - 1 ms, 24.8 days) until the clock reaches the
      // deadline, so it fires when it is due, not at the clamp.
      const expiry: Effect.Effect<void> = Effect.flatMap(state.nowMillis, (now) =>
        Effect.zipRight(sleepMillis(millis - now), State.stop(state, State.timedOut(millis))))
      yield* Effect.forkIn(expiry, state.scope)
    }
    // One gate for the whole run, in the context every worker is forked with: the workers share one context, so
    // their items' attempts are forked from one set of references (a gate per worker made 200 contexts).
    const workers = Pool.runAll(pool.worker, g.concurrency)
    yield* isGated ? Effect.provideService(workers, CoreGate.Gate, gate.service) : workers
    const failure = pulling.failure()
    if (Option.isSome(failure)) {
      return yield* Effect.fail(failure.value)
    }
    const stats = state.stats
    const termination: Termination = state.stopped ?? {
      _tag: "Completed",
      kind: "completed",
      reason: `all ${stats.accepted} accepted items finished`
    }
    const final: Stats.Stats = { ...stats, byCategory: { ...state.byCategory } }
    yield* state.event((at) => ({ _tag: "RunCompleted", at, termination, stats: final }))
    return { termination, stats: final }
  })

// Without anything that acts on single attempts (a stop, a cap, a limit, a cooldown, an observer), the gate
// is left out: the executor then admits attempts without a bounded wait of its own, and the stats are
// counted from the item's attempt records when it ends.
const gated = <I>(settings: Settings<I>): boolean => {
  const g = settings.guardrails
  return g.batchDeadline !== undefined || g.abortOn.length > 0 || g.maxTotalTokens !== undefined ||
    g.maxTotalCost !== undefined || settings.costFunction !== undefined || g.requestsPerMinute !== undefined ||
    g.tokensPerMinute !== undefined || Object.keys(g.capacity).length > 0 || g.startupRamp !== undefined ||
    g.cooldown !== undefined || settings.artifacts !== undefined || settings.onEvent !== undefined ||
    settings.progress !== undefined
}
