/**
 * The run's own state: its counters, the items executing, its view of the stop, and the observers. The
 * state shared beyond this run (caps, rate limits, cooldowns, the stop itself) lives in the run limits;
 * this module keeps only what one process needs to act on it. Mutated in synchronous steps only: fibers
 * interleave at effect boundaries, so each check-and-update is atomic with respect to the other workers.
 *
 * @internal
 */
import type { Outcome } from "@rein/core"
import { Gate } from "@rein/core"
import type { Scope } from "effect"
import { Clock, Context, Deferred, Effect, SubscriptionRef } from "effect"
import type { FiberId } from "effect"
import type { Category } from "../Category.js"
import type * as Events from "../Events.js"
import type { Hold, Service as Limits } from "../RunLimits.js"
import * as Stats from "../Stats.js"
import type { Stop } from "../Termination.js"
import { fix } from "../Termination.js"
import type { Settings } from "./settings.js"
import * as Telemetry from "./telemetry.js"
import { fmt } from "./totals.js"

/** An attempt's hold at the gate, until it settles. @internal */
export interface Ticket {
  /** The item whose attempt it admitted. */
  readonly item: ItemState
  /** What the run limits hold for it (`undefined`: admitted without the limits). */
  readonly hold: Hold | undefined
  readonly waitedMillis: number
  settled: boolean
  /** The attempt's record, once settled: what an interrupted item's result carries. */
  record: Outcome.AttemptRecord | undefined
  /** The attempt while it runs in its own fiber (`cancel-active` only): a stop interrupts it directly. */
  attempt: Gate.Running | undefined
}

/** An item being executed. @internal */
export interface ItemState {
  readonly index: number
  readonly itemId: string
  /** Its attempts' tickets, in admission order (`NO_TICKETS` until the gate admits one: see `hold`). */
  tickets: ReadonlyArray<Ticket>
  fiber: { readonly unsafeInterruptAsFork: (id: FiberId.FiberId) => void } | undefined
}

/** The tickets of an item the gate has not admitted yet: shared, never mutated. @internal */
export const NO_TICKETS: ReadonlyArray<Ticket> = []

/** A worker: the item it is executing (`undefined` between items). @internal */
export interface Worker {
  current: ItemState | undefined
}

/** @internal */
export type Counters = ReturnType<typeof Stats.empty>

/** @internal */
export interface RunState<I> {
  readonly settings: Settings<I>
  readonly limits: Limits
  readonly stats: Counters
  readonly byCategory: Record<string, number>
  readonly abortOn: ReadonlySet<Category>
  readonly cancelActive: boolean
  /** The items executing, under `cancel-active` only (a stop interrupts them; nothing else reads them). */
  readonly executing: Set<ItemState>
  readonly clock: Clock.Clock
  readonly scope: Scope.Scope
  /** Completes when the run stops (the gate's `closed`). */
  readonly closed: Deferred.Deferred<Gate.Closed>
  readonly closedAwait: Effect.Effect<Gate.Closed>
  /** Milliseconds since the run started. */
  readonly nowMillis: Effect.Effect<number>
  readonly sinceStart: (nanos: bigint) => number
  /** Raises an event (outside the run's gate: an observer's own calls are not an item's attempts). */
  readonly event: (make: (at: number) => Events.Event) => Effect.Effect<void>
  progress: Effect.Effect<void>
  inFlight: number
  /** The run's view of the stop: the run limits' stop, once this run learned of it. */
  stopped: Stop | undefined
  /**
   * The batch deadline, in milliseconds since the run started (`undefined`: none). Its timer stops the run; the
   * gate also reads the clock at each admission, so no attempt starts after it when the timer fires late.
   */
  deadlineMillis: number | undefined
  /** Telemetry's observer of the run (`undefined` without `Telemetry`: nothing is paid). */
  readonly observer: Telemetry.Observer | undefined
}

/** @internal */
export const make = <I>(settings: Settings<I>, limits: Limits): Effect.Effect<RunState<I>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const scope = yield* Effect.scope
    const clock = yield* Effect.clock
    const originNanos = clock.unsafeCurrentTimeNanos()
    const sinceStart = (nanos: bigint): number => Number(nanos - originNanos) / 1e6
    const nowMillis = Effect.map(Clock.currentTimeNanos, sinceStart)
    const closed = yield* Deferred.make<Gate.Closed>()
    const onEvent = settings.onEvent
    const stats = Stats.empty()
    const byCategory: Record<string, number> = {}
    stats.byCategory = byCategory
    const event = (make: (at: number) => Events.Event): Effect.Effect<void> =>
      onEvent === undefined
        ? Effect.void
        : Effect.flatMap(nowMillis, (at) => Effect.mapInputContext(onEvent(make(at)), Context.omit(Gate.Gate)))
    const progressRef = settings.progress
    const observer = yield* Telemetry.observe
    const state: RunState<I> = {
      settings,
      limits,
      stats,
      byCategory,
      abortOn: new Set(settings.guardrails.abortOn),
      cancelActive: settings.guardrails.abortMode === "cancel-active",
      executing: new Set(),
      clock,
      scope,
      closed,
      closedAwait: Deferred.await(closed),
      nowMillis,
      sinceStart,
      event,
      progress: Effect.void,
      inFlight: 0,
      stopped: undefined,
      deadlineMillis: undefined,
      observer
    }
    if (progressRef !== undefined) {
      state.progress = Effect.suspend(() =>
        SubscriptionRef.set(progressRef, {
          accepted: stats.accepted,
          done: stats.succeeded + stats.failed + stats.reused + stats.planned,
          succeeded: stats.succeeded,
          failed: stats.failed,
          reused: stats.reused,
          inFlight: state.inFlight,
          tokens: stats.tokensUsed,
          cost: stats.costUsed
        })
      )
    }
    return state
  })

/**
 * Stops the run: the run limits decide which stop wins (the first, wherever it came from); this run then
 * applies the winner once (see `applyStop`).
 *
 * @internal
 */
export const stop = <I>(state: RunState<I>, termination: Stop, except?: ItemState): Effect.Effect<void> =>
  Effect.suspend(() => {
    if (state.stopped !== undefined) return Effect.void
    const limits = state.limits
    // The item that tripped this stop keeps its outcome; under another's stop it is interrupted like the rest.
    const apply = (winner: Stop) => applyStop(state, winner, winner === termination ? except : undefined)
    if (limits.unsafeStop !== undefined) return apply(limits.unsafeStop(termination))
    return Effect.flatMap(limits.stop(termination), apply)
  })

/**
 * Applies the stop that won, once: it closes the gate (waits end at once), and in `cancel-active`
 * interrupts the calls in flight, except the item whose own attempt tripped a cap (it keeps its outcome).
 *
 * @internal
 */
export const applyStop = <I>(state: RunState<I>, winner: Stop, except?: ItemState): Effect.Effect<void> =>
  Effect.suspend(() => {
    if (state.stopped !== undefined) return Effect.void
    state.stopped = winner
    const cancel = state.cancelActive
      ? Effect.fiberIdWith((id) =>
        Effect.sync(() => {
          // Every running attempt first, then the items: each item then finds its attempt torn down (or about
          // to be, in the same scheduler pass) instead of interrupting it itself, one pass later.
          for (const s of state.executing) {
            if (s === except) continue
            for (const t of s.tickets) if (!t.settled && t.attempt !== undefined) t.attempt.unsafeInterruptAsFork(id)
          }
          for (const s of state.executing) if (s !== except && s.fiber !== undefined) s.fiber.unsafeInterruptAsFork(id)
        })
      )
      : Effect.void
    return Effect.zipRight(
      Deferred.succeed(state.closed, { _tag: "GateClosed" as const, reason: winner.reason }),
      Effect.zipRight(cancel, state.event((at) => ({ _tag: "RunAborted", at, termination: winner, fix: fix(winner) })))
    )
  })

/** The stop of a batch deadline of `millis`. @internal */
export const timedOut = (millis: number): Stop => ({
  _tag: "BatchTimeout",
  kind: "batch_timeout",
  reason: `the batch deadline of ${fmt(millis)} ms expired`
})

/**
 * Whether the batch deadline has passed, by the clock now: its timer stops the run, but a loaded process can
 * fire that timer late, and an admission must not start an attempt after the deadline meanwhile. @internal
 */
export const pastDeadline = <I>(state: RunState<I>): boolean =>
  state.deadlineMillis !== undefined && state.sinceStart(state.clock.unsafeCurrentTimeNanos()) >= state.deadlineMillis

/**
 * Past the batch deadline, its timer not run yet: the run stops now, and the attempt asking is refused as
 * closed. @internal
 */
export const closeAtDeadline = <I>(state: RunState<I>): Effect.Effect<never, Gate.Closed> =>
  Effect.zipRight(
    Effect.suspend(() => stop(state, timedOut(state.deadlineMillis!))),
    Effect.suspend(() => Effect.fail(closedOf(state)))
  )

/** The gate's refusal once the run stopped. @internal */
export const closedOf = <I>(state: RunState<I>): Gate.Closed => ({
  _tag: "GateClosed",
  reason: state.stopped?.reason ?? "the run stopped"
})
