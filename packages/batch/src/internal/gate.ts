/**
 * The run's gate, built from its run limits: it admits each attempt of the item a worker is executing (rate
 * limits, capacity, cooldown, ramp, all from the limits), counts what the attempt used when it settles (the
 * soft caps, the stats), starts a cooldown after a 429, and closes when the run stops, so that no attempt,
 * retry or wait starts afterwards. The limits' synchronous members are used when present; without them
 * every step goes through the limits' effects.
 *
 * One gate serves the whole run, provided once around the workers (one context for all of them). Each worker
 * marks its fiber as its own once (the mark of `internal/currentItem.ts`, inherited by every fiber forked inside
 * it), and the gate finds the item by the asking fiber's worker: the calls the item makes from its worker's
 * fiber, from its own fiber under `cancel-active`, from its attempt's fiber (a provider that calls Rein) or from
 * any fiber forked inside it are all the item's attempts, as when each worker provided a gate of its own. Settlement goes by the
 * ticket, which carries its item.
 *
 * @internal
 */
import type { Outcome } from "@rein/core"
import { Gate } from "@rein/core"
import { Duration, Effect, Fiber, Option } from "effect"
import { price } from "../Cost.js"
import type { Admission, Hold } from "../RunLimits.js"
import type { Stop } from "../Termination.js"
import * as CurrentItem from "./currentItem.js"
import { clampMillis } from "./schema.js"
import type { ItemState, RunState, Ticket } from "./state.js"
import { closeAtDeadline, closedOf, pastDeadline, stop } from "./state.js"
import { addFinite } from "./totals.js"

/** @internal */
export interface RunGate {
  /**
   * The run's one gate: an admission belongs to the item the asking fiber's worker is executing (see
   * `internal/currentItem.ts`).
   */
  readonly service: Gate.Service
  /** Tickets of attempts the executor never settled (the item was interrupted or timed out at admission). */
  readonly releaseOpen: (it: ItemState) => Effect.Effect<void> | undefined
  /** Counts an ungated item's attempts when it ends; the effect still to run (a stop), if any. */
  readonly countRecords: (records: ReadonlyArray<Outcome.AttemptRecord>) => Effect.Effect<void> | undefined
}

const EXPIRED: Gate.Expired = { _tag: "GateExpired" }
const OPEN_ADMIT = Effect.succeed(undefined)
const OPEN_TICKET = Option.some(undefined)

/** @internal */
export const make = <I>(state: RunState<I>): RunGate => {
  const limits = state.limits
  const stats = state.stats
  const onEvent = state.settings.onEvent

  /** The item holds the ticket until its attempt settles; the admission is counted. */
  const hold = (it: ItemState, held: Hold | undefined, waitedMillis: number): Ticket => {
    const ticket: Ticket = { item: it, hold: held, waitedMillis, settled: false, record: undefined, attempt: undefined }
    // Most items have one attempt: a one-element array (an empty one would grow to 16 slots on its first push,
    // and an ungated item keeps the shared empty one).
    it.tickets = it.tickets.length === 0 ? [ticket] : [...it.tickets, ticket]
    stats.attempts++
    if (waitedMillis > 0) {
      stats.admissionWaits++
      stats.admissionWaitMillis += waitedMillis
    }
    return ticket
  }

  const admitted = (it: ItemState, ticket: Ticket, ask: Gate.Ask): Effect.Effect<Ticket> =>
    onEvent === undefined ? Effect.succeed(ticket) : Effect.as(
      state.event((at) => ({
        _tag: "ItemAdmitted",
        at,
        index: it.index,
        itemId: it.itemId,
        endpoint: ask.endpoint.id,
        attempt: ask.attempt,
        waitedMillis: ticket.waitedMillis
      })),
      ticket
    )

  const unsafeAdmit = limits.unsafeAdmit
  const take = (ask: Gate.Ask): Effect.Effect<Admission> =>
    unsafeAdmit !== undefined
      ? Effect.sync(() => unsafeAdmit(ask.endpoint.id, ask.reservation.tokens ?? 0))
      : limits.admit(ask.endpoint.id, ask.reservation.tokens ?? 0)

  // The gate bounds its own wait by the request's remaining time (the executor sets no timer around it).
  const admitLimited = (ask: Gate.Ask, it: ItemState): Effect.Effect<Ticket, Gate.Closed | Gate.Expired> =>
    Effect.gen(function*() {
      const start = yield* state.nowMillis
      while (true) {
        if (state.stopped !== undefined) return yield* Effect.fail(closedOf(state))
        if (pastDeadline(state)) return yield* closeAtDeadline(state)
        const waited = (yield* state.nowMillis) - start
        if (waited > 0 && waited >= ask.remainingMillis) return yield* Effect.fail(EXPIRED)
        const taken = yield* take(ask)
        if (taken._tag === "Hold") return yield* admitted(it, hold(it, taken, waited), ask)
        const left = ask.remainingMillis - waited
        if (left <= 0) return yield* Effect.fail(EXPIRED)
        yield* Effect.raceAll([
          state.closedAwait,
          limits.released,
          Effect.sleep(Duration.millis(clampMillis(Math.min(taken.millis, left))))
        ])
      }
    })

  /** Admits `it`'s attempt (called in a step of the asking fiber). */
  const admitNow = (ask: Gate.Ask, it: ItemState): Effect.Effect<Ticket, Gate.Closed | Gate.Expired> => {
    if (state.stopped !== undefined) return Effect.fail(closedOf(state))
    if (pastDeadline(state)) return closeAtDeadline(state)
    if (limits.waits) return admitLimited(ask, it)
    return admitted(it, hold(it, undefined, 0), ask)
  }

  /** Admits at once when nothing has to wait and nobody observes admissions (else `admit` does). */
  const tryAdmit = (ask: Gate.Ask, it: ItemState): Option.Option<Ticket> => {
    if (state.stopped !== undefined || onEvent !== undefined || pastDeadline(state)) return Option.none()
    if (!limits.waits) return Option.some(hold(it, undefined, 0))
    if (unsafeAdmit === undefined) return Option.none()
    const taken = unsafeAdmit(ask.endpoint.id, ask.reservation.tokens ?? 0)
    return taken._tag === "Hold" ? Option.some(hold(it, taken, 0)) : Option.none()
  }

  /** Releases a hold now when the limits can; else the effect that releases it. */
  const release = (held: Hold, tokens: number | undefined): Effect.Effect<void> | undefined => {
    if (limits.unsafeRelease === undefined) return limits.release(held, tokens)
    limits.unsafeRelease(held, tokens)
    return undefined
  }

  const cooling = makeCooling(state)
  const charging = makeCharging(state)

  /** Settles an attempt's ticket now; the effect is what remains (a release, progress, a cooldown, a stop). */
  const settleNow = (ticket: Ticket, record: Outcome.AttemptRecord): Effect.Effect<void> => {
    if (ticket.settled) return Effect.void
    const it = ticket.item
    ticket.settled = true
    ticket.record = record
    const usage = record.usage
    const tokens = usage === "unknown" ? undefined : usage.inputTokens + usage.outputTokens
    const released = ticket.hold === undefined ? undefined : release(ticket.hold, tokens)
    if (record.role === "retry") stats.retries++
    else if (record.role === "fallback") stats.fallbacks++
    let next: Effect.Effect<void> = state.progress
    if (record.failure === "rate_limited") {
      stats.rateLimited++
      if (state.settings.guardrails.cooldown !== undefined) {
        next = Effect.zipRight(cooling.cool(record.endpoint, record.retryAfterMillis), next)
      }
    }
    const charged = charging.attempt(record, it)
    const rest = charged === undefined ? next : Effect.zipRight(charged, next)
    return released === undefined ? rest : Effect.zipRight(released, rest)
  }

  /** The effect still to run (releases through the limits' effects), if any. */
  const releaseOpen = (it: ItemState): Effect.Effect<void> | undefined => {
    let released: Effect.Effect<void> | undefined
    for (const ticket of it.tickets) {
      if (ticket.settled) continue
      ticket.settled = true
      // It may have reached the provider: its usage is unknown, and its token reservation stays spent.
      stats.unknownUsageAttempts++
      if (ticket.hold === undefined) continue
      const rest = release(ticket.hold, undefined)
      if (rest !== undefined) released = released === undefined ? rest : Effect.zipRight(released, rest)
    }
    return released
  }

  return { service: governing(state, { admitNow, tryAdmit, settleNow }), releaseOpen, countRecords: charging.records }
}

/** What the run's gate does for an item (see `make`); `governing` finds the item. */
interface Steps {
  readonly admitNow: (ask: Gate.Ask, it: ItemState) => Effect.Effect<Ticket, Gate.Closed | Gate.Expired>
  readonly tryAdmit: (ask: Gate.Ask, it: ItemState) => Option.Option<Ticket>
  readonly settleNow: (ticket: Ticket, record: Outcome.AttemptRecord) => Effect.Effect<void>
}

const unsafeRunning = (ticket: unknown, attempt: Gate.Running): void => {
  if (ticket !== undefined) (ticket as Ticket).attempt = attempt
}

/**
 * The run's one gate, and how a worker marks its fibers: the worker each fiber works for is a fiber reference,
 * set once around each worker's loop and inherited by every fiber forked inside it, so the gate governs the item
 * the worker is executing, and nothing else: between items (a source's upstream, publishing) it is an open gate,
 * and so it is to a fiber no worker forked; observers run without it (see `event`), so a call of user code's own is
 * never admitted, counted or stopped as an item's attempt. A gated run inside an item marks its own workers for its
 * own gate, on top of the outer run's mark; each gate finds its own run's worker on the chain.
 */
const governing = <I>(state: RunState<I>, steps: Steps): Gate.Service => {
  const { admitNow, settleNow, tryAdmit } = steps
  // The run's own worker on the asking fiber's marks (see `internal/currentItem.ts`): the run is its `state`.
  const itemOf = (fiber: Fiber.RuntimeFiber<unknown, unknown>): ItemState | undefined =>
    CurrentItem.workerOf(fiber.getFiberRef(CurrentItem.mark), state)?.current
  // The executor asks `unsafeTryAdmit` in a step of the fiber that runs `Rein.execute`.
  const asking = (): ItemState | undefined => {
    const fiber = Fiber.getCurrentFiber()
    return fiber._tag === "None" ? undefined : itemOf(fiber.value)
  }
  // Run by the fiber that waits (the executor races it against a backoff, in fibers forked from the asking one).
  const closed: Effect.Effect<Gate.Closed> = Effect.withFiberRuntime((fiber) =>
    itemOf(fiber) === undefined ? Effect.never : state.closedAwait
  )
  return {
    admit: (ask) =>
      Effect.withFiberRuntime((fiber) => {
        const it = itemOf(fiber)
        return it === undefined ? OPEN_ADMIT : admitNow(ask, it)
      }),
    // The ticket carries its item (an open gate's ticket is `undefined`: nothing to settle).
    settle: (ticket, record) =>
      ticket === undefined ? Effect.void : Effect.suspend(() => settleNow(ticket as Ticket, record)),
    closed,
    unsafeTryAdmit: (ask) => {
      const it = asking()
      return it === undefined ? OPEN_TICKET : tryAdmit(ask, it)
    },
    unsafeSettle: (ticket, record) => ticket === undefined ? undefined : settleNow(ticket as Ticket, record),
    // Only `cancel-active` interrupts attempts (see `applyStop`).
    ...(state.cancelActive ? { unsafeRunning } : undefined)
  }
}

/** Cooldowns after a 429: started through the limits, watched until they end (for the events). */
const makeCooling = <I>(state: RunState<I>) => {
  const limits = state.limits
  const watch = (endpoint: string): Effect.Effect<void> =>
    Effect.gen(function*() {
      while (true) {
        const left = yield* limits.cooldownLeft(endpoint)
        if (Option.isNone(left)) return
        if (left.value <= 0) return yield* state.event((at) => ({ _tag: "CooldownEnded", at, endpoint }))
        yield* Effect.sleep(Duration.millis(clampMillis(left.value)))
      }
    })
  // The cooldown is time-bound: only its timer ends it. A cancelled item never does, and a later 429 with a
  // longer Retry-After lengthens it.
  const cool = (endpoint: string, retryAfterMillis: number | null): Effect.Effect<void> =>
    Effect.flatMap(limits.cool(endpoint, retryAfterMillis), (started) => {
      if (Option.isNone(started)) return Effect.void
      return Effect.zipRight(
        state.event((at) => ({ _tag: "CooldownStarted", at, endpoint, untilMillis: at + started.value })),
        Effect.asVoid(Effect.forkIn(watch(endpoint), state.scope))
      )
    })
  return { cool }
}

/**
 * Counting what attempts used: this run's stats, and the limits' totals (the soft caps). A cost function
 * that fails stops the run (`cost_function`) before the usage is charged, so its stop wins over a cap the
 * same attempt reaches.
 */
const makeCharging = <I>(state: RunState<I>) => {
  const limits = state.limits
  const stats = state.stats
  const costFunction = state.settings.costFunction

  const charge = (tokens: number, cost: number, it: ItemState | undefined): Effect.Effect<void> | undefined => {
    const t = addFinite(stats.tokensUsed, tokens)
    if (t !== undefined) stats.tokensUsed = t
    const c = addFinite(stats.costUsed, cost)
    if (c !== undefined) stats.costUsed = c
    else stats.costComplete = false
    if (limits.unsafeCharge !== undefined) {
      const trip = limits.unsafeCharge({ tokens, cost })
      return trip === undefined ? undefined : stop(state, trip, it)
    }
    return Effect.flatMap(
      limits.charge({ tokens, cost }),
      (trip) => Option.isNone(trip) ? Effect.void : stop(state, trip.value, it)
    )
  }

  /** Counts a settled attempt's usage; the effect still to run (a stop), if any. */
  const attempt = (record: Outcome.AttemptRecord, it: ItemState): Effect.Effect<void> | undefined => {
    const usage = record.usage
    if (usage === "unknown") {
      if (record.dispatched) stats.unknownUsageAttempts++
      return undefined
    }
    let cost = record.charged.cost
    let unpriced: Stop | undefined
    if (costFunction !== undefined) {
      const priced = price(costFunction, {
        itemId: it.itemId,
        index: it.index,
        attempt: record.attempt,
        role: record.role,
        endpoint: record.endpoint,
        usage,
        succeeded: record.status === "success",
        catalogCost: record.charged.cost
      })
      if (priced._tag === "Cost") cost = priced.cost
      else {
        cost = 0
        stats.costComplete = false
        unpriced = { _tag: "BudgetExceeded", kind: "budget_exceeded", resource: "cost_function", reason: priced.reason }
      }
    }
    const charged = charge(usage.inputTokens + usage.outputTokens, cost, it)
    if (unpriced === undefined) return charged
    const first = stop(state, unpriced, it)
    return charged === undefined ? first : Effect.zipRight(first, charged)
  }

  /** Counts an ungated item's attempts when it ends (nothing acted on them one by one). */
  const records = (list: ReadonlyArray<Outcome.AttemptRecord>): Effect.Effect<void> | undefined => {
    let after: Effect.Effect<void> | undefined
    for (const record of list) {
      stats.attempts++
      if (record.role === "retry") stats.retries++
      else if (record.role === "fallback") stats.fallbacks++
      if (record.failure === "rate_limited") stats.rateLimited++
      if (record.usage === "unknown") {
        if (record.dispatched) stats.unknownUsageAttempts++
      } else {
        const charged = charge(record.usage.inputTokens + record.usage.outputTokens, record.charged.cost, undefined)
        if (charged !== undefined) after = after === undefined ? charged : Effect.zipRight(after, charged)
      }
    }
    return after
  }

  return { attempt, records }
}
