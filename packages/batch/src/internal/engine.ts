/**
 * The run loop: `concurrency` workers pull one item at a time from the source, execute it under the
 * contract inside the item deadline with the run's gate, and publish exactly one terminal result per
 * accepted item. The gate is the run's one control point over attempts: it admits them (rate limits,
 * capacity, cooldown, ramp), counts what they used as they finish (soft caps, stats), and closes when the
 * run stops, so that no attempt, retry or wait starts afterwards.
 *
 * State is plain and run-local, mutated only in synchronous steps: fibers interleave only at effect
 * boundaries, so every check-and-update below is atomic with respect to the other workers.
 *
 * @internal
 */
import type { Outcome, Provider } from "@rein/core"
import { Contract, Gate, Rein } from "@rein/core"
import { number as fmt } from "@rein/core/Format"
import { stackless } from "@rein/core/Stackless"
import type { Scope } from "effect"
import {
  Cause,
  Clock,
  Context,
  Deferred,
  Duration,
  Effect,
  Either,
  Exit,
  Fiber,
  FiberId,
  Option,
  SubscriptionRef
} from "effect"
import type { Artifacts } from "../Batch.js"
import type { Category } from "../Category.js"
import * as Categories from "../Category.js"
import type { CostFunction } from "../Cost.js"
import { price } from "../Cost.js"
import type * as Events from "../Events.js"
import { summarise } from "../Events.js"
import type { Guardrails } from "../Guardrails.js"
import type { Failed, ItemError, ItemResult, Succeeded } from "../Result.js"
import { ArtifactFailed, BatchAborted, BatchBudgetExceeded, BatchDeadlineExceeded, categoryOf } from "../Result.js"
import * as Stats from "../Stats.js"
import type { Stop, Termination } from "../Termination.js"
import * as Limiter from "./limiter.js"
import { clampMillis } from "./schema.js"
import type { Puller } from "./source.js"

/** Everything a run needs besides its source. @internal */
export interface Settings<I> {
  readonly guardrails: Guardrails
  readonly contract: Contract.Contract
  readonly request: (item: I, index: number) => Provider.CompletionRequest
  readonly itemId: ((item: I, index: number) => string) | undefined
  readonly costFunction: CostFunction | undefined
  readonly onEvent: ((event: Events.Event) => Effect.Effect<void>) | undefined
  readonly progress: SubscriptionRef.SubscriptionRef<Events.Progress> | undefined
  readonly artifacts: Artifacts<I> | undefined
}

/** @internal */
export interface Ending {
  readonly termination: Termination
  readonly stats: Stats.Stats
}

interface Ticket extends Limiter.Ticket {
  readonly limited: boolean
}

/** A worker: the item it is executing (`undefined` between items). */
interface Worker {
  current: ItemState | undefined
}

interface ItemState {
  readonly index: number
  readonly itemId: string
  readonly tickets: Array<Ticket>
  fiber: Fiber.RuntimeFiber<Outcome.Completion, Outcome.Terminal> | undefined
}

const errorCause = (e: ItemError): Outcome.Cause | null => e._tag === "Refused" ? null : e.cause

const causeOf = (e: Outcome.Terminal): Outcome.Cause | null => (e._tag === "Refused" ? null : e.cause)

/**
 * Runs the loop until the source is exhausted (or the run stopped) and every accepted item has been
 * published. `window` bounds accepted-but-unpublished items when results are published in submission order.
 *
 * @internal
 */
export const run = <I, E, R>(
  puller: Puller<I, E, R>,
  settings: Settings<I>,
  publish: (result: ItemResult<I>) => Effect.Effect<void>,
  window: number | undefined
): Effect.Effect<Ending, E, Rein.Rein | Scope.Scope | R> =>
  Effect.gen(function*() {
    const g = settings.guardrails
    const contract = settings.contract
    const onEvent = settings.onEvent
    const artifacts = settings.artifacts
    const cancelActive = g.abortMode === "cancel-active"
    const abortOn: ReadonlySet<Category> = new Set(g.abortOn)
    const itemDeadline = g.itemDeadline
    const scope = yield* Effect.scope
    const originNanos = yield* Clock.currentTimeNanos
    const sinceStart = (nanos: bigint): number => Number(nanos - originNanos) / 1e6
    const nowMillis = Effect.map(Clock.currentTimeNanos, sinceStart)

    const stats = Stats.empty()
    const byCategory: Record<string, number> = {}
    stats.byCategory = byCategory
    let inFlight = 0
    let stopped: Stop | undefined
    let sourceFailure: Option.Option<E> = Option.none()
    let exhausted = false
    const executing = new Set<ItemState>()

    const closed = yield* Deferred.make<Gate.Closed>()
    const closedAwait = Deferred.await(closed)
    const limiter = Limiter.make({
      concurrency: g.concurrency,
      requestsPerMinute: g.requestsPerMinute,
      tokensPerMinute: g.tokensPerMinute,
      capacity: g.capacity,
      rampMillis: g.startupRamp === undefined ? undefined : Duration.toMillis(g.startupRamp),
      cooldownMillis: g.cooldown === undefined ? 0 : Duration.toMillis(g.cooldown)
    }, 0)
    // Admission waiters wake when something is released (capacity, ramp) as well as on their timers. The
    // signal exists only while someone waits for it: a release with no waiter costs nothing.
    let changed: Deferred.Deferred<void> | undefined = undefined
    const notify = () => {
      const d = changed
      if (d === undefined) return
      changed = undefined
      Deferred.unsafeDone(d, Exit.void)
    }
    const nextChange = (): Effect.Effect<void> => Deferred.await(changed ??= Deferred.unsafeMake<void>(FiberId.none))

    // Observers run outside the run's gate, even for events raised while an item is admitted: their own
    // calls to Rein are not the item's attempts.
    const event = (make: (at: number) => Events.Event): Effect.Effect<void> =>
      onEvent === undefined
        ? Effect.void
        : Effect.flatMap(nowMillis, (at) => Effect.mapInputContext(onEvent(make(at)), Context.omit(Gate.Gate)))

    const progressRef = settings.progress
    const progress: Effect.Effect<void> = progressRef === undefined
      ? Effect.void
      : Effect.suspend(() =>
        SubscriptionRef.set(progressRef, {
          accepted: stats.accepted,
          done: stats.succeeded + stats.failed + stats.reused + stats.planned,
          succeeded: stats.succeeded,
          failed: stats.failed,
          reused: stats.reused,
          inFlight,
          tokens: stats.tokensUsed,
          cost: stats.costUsed
        })
      )

    // ---- stopping -------------------------------------------------------------------------------------

    /** The first stop wins: it closes the gate (waits end at once), and in `cancel-active` interrupts the
     * calls in flight, except the item whose own attempt tripped a cap (it keeps its outcome). */
    const stop = (termination: Stop, except?: ItemState): Effect.Effect<void> =>
      Effect.suspend(() => {
        if (stopped !== undefined) return Effect.void
        stopped = termination
        const cancel = cancelActive
          ? Effect.fiberIdWith((id) =>
            Effect.sync(() => {
              for (const s of executing) if (s !== except && s.fiber !== undefined) s.fiber.unsafeInterruptAsFork(id)
            })
          )
          : Effect.void
        return Effect.zipRight(
          Deferred.succeed(closed, { _tag: "GateClosed" as const, reason: termination.reason }),
          Effect.zipRight(cancel, event((at) => ({ _tag: "RunAborted", at, termination })))
        )
      })

    const closedOf = (): Gate.Closed => ({ _tag: "GateClosed", reason: stopped?.reason ?? "the run stopped" })

    // ---- admission ------------------------------------------------------------------------------------

    /** The item holds the ticket until its attempt settles; the admission is counted. */
    const hold = (it: ItemState, ticket: Ticket): Ticket => {
      it.tickets.push(ticket)
      stats.attempts++
      if (ticket.waitedMillis > 0) {
        stats.admissionWaits++
        stats.admissionWaitMillis += ticket.waitedMillis
      }
      return ticket
    }

    const admitted = (it: ItemState, ticket: Ticket, ask: Gate.Ask): Effect.Effect<Ticket> => {
      hold(it, ticket)
      return onEvent === undefined ? Effect.succeed(ticket) : Effect.as(
        event((at) => ({
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
    }

    // The gate bounds its own wait by the request's remaining time (the executor sets no timer around it).
    const admitLimited = (ask: Gate.Ask, it: ItemState): Effect.Effect<Ticket, Gate.Closed | Gate.Expired> =>
      Effect.gen(function*() {
        const start = yield* nowMillis
        while (true) {
          if (stopped !== undefined) return yield* Effect.fail(closedOf())
          const now = yield* nowMillis
          const waited = now - start
          if (waited > 0 && waited >= ask.remainingMillis) return yield* Effect.fail(EXPIRED)
          const taken = limiter.take(now, ask.endpoint.id, ask.reservation.tokens ?? 0, waited)
          if (typeof taken !== "number") return yield* admitted(it, { ...taken, limited: true }, ask)
          const left = ask.remainingMillis - waited
          if (left <= 0) return yield* Effect.fail(EXPIRED)
          const sleep = Math.min(taken, left)
          yield* Effect.raceAll([
            closedAwait,
            nextChange(),
            Effect.sleep(Duration.millis(clampMillis(sleep)))
          ])
        }
      })

    const admit = (ask: Gate.Ask, it: ItemState): Effect.Effect<Ticket, Gate.Closed | Gate.Expired> =>
      Effect.suspend(() => {
        if (stopped !== undefined) return Effect.fail(closedOf())
        if (limiter.active()) return admitLimited(ask, it)
        return admitted(
          it,
          { endpoint: ask.endpoint.id, tokens: 0, waitedMillis: 0, settled: false, limited: false },
          ask
        )
      })

    // ---- settling: soft caps, stats, cooldown ---------------------------------------------------------

    const watchCooldown = (endpoint: string): Effect.Effect<void> =>
      Effect.gen(function*() {
        while (true) {
          const until = limiter.coolingUntil(endpoint)
          if (until === undefined) return
          const now = yield* nowMillis
          if (now >= until) {
            limiter.endCooldown(endpoint, now)
            notify()
            return yield* event((at) => ({ _tag: "CooldownEnded", at, endpoint }))
          }
          yield* Effect.sleep(Duration.millis(clampMillis(until - now)))
        }
      })

    // The cooldown is time-bound: only its timer ends it. A cancelled item never does, and a later 429 with a
    // longer Retry-After lengthens it.
    const cool = (endpoint: string, retryAfterMillis: number | null): Effect.Effect<void> =>
      Effect.flatMap(nowMillis, (now) => {
        if (!limiter.cool(endpoint, now, retryAfterMillis)) return Effect.void
        const untilMillis = limiter.coolingUntil(endpoint)!
        return Effect.zipRight(
          event((at) => ({ _tag: "CooldownStarted", at, endpoint, untilMillis })),
          Effect.asVoid(Effect.forkIn(watchCooldown(endpoint), scope))
        )
      })

    /** Settles an attempt's ticket now; the effect is what remains (progress, a cooldown, a stop). */
    const settleNow = (ticket: Ticket, record: Outcome.AttemptRecord, it: ItemState): Effect.Effect<void> => {
      if (ticket.settled) return Effect.void
      ticket.settled = true
      const usage = record.usage
      const tokens = usage === "unknown" ? undefined : usage.inputTokens + usage.outputTokens
      if (ticket.limited) {
        limiter.release(ticket, tokens)
        notify()
      }
      if (record.role === "retry") stats.retries++
      else if (record.role === "fallback") stats.fallbacks++
      let trip: Stop | undefined
      if (usage === "unknown" || tokens === undefined) {
        if (record.dispatched) stats.unknownUsageAttempts++
      } else {
        trip = addTokens(stats, tokens)
        let cost = record.charged.cost
        if (settings.costFunction !== undefined) {
          const priced = price(settings.costFunction, {
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
            trip ??= {
              _tag: "BudgetExceeded",
              kind: "budget_exceeded",
              resource: "cost_function",
              reason: priced.reason
            }
          }
        }
        trip = addCost(stats, cost) ?? trip
        if (trip === undefined && g.maxTotalTokens !== undefined && stats.tokensUsed >= g.maxTotalTokens) {
          trip = {
            _tag: "BudgetExceeded",
            kind: "budget_exceeded",
            resource: "tokens",
            reason: `token cap reached: ${fmt(stats.tokensUsed)} of ${fmt(g.maxTotalTokens)} tokens`
          }
        }
        if (trip === undefined && g.maxTotalCost !== undefined && stats.costUsed >= g.maxTotalCost) {
          trip = {
            _tag: "BudgetExceeded",
            kind: "budget_exceeded",
            resource: "cost",
            reason: `cost cap reached: ${fmt(stats.costUsed)} of ${fmt(g.maxTotalCost)}`
          }
        }
      }
      let next: Effect.Effect<void> = progress
      if (record.failure === "rate_limited") {
        stats.rateLimited++
        if (g.cooldown !== undefined) next = Effect.zipRight(cool(record.endpoint, record.retryAfterMillis), next)
      }
      return trip === undefined ? next : Effect.zipRight(stop(trip, it), next)
    }

    const settle = (ticket: Ticket, record: Outcome.AttemptRecord, it: ItemState): Effect.Effect<void> =>
      Effect.suspend(() => settleNow(ticket, record, it))

    /** Tickets of attempts the executor never settled (the item was interrupted or timed out at admission). */
    const releaseOpen = (it: ItemState): void => {
      for (const ticket of it.tickets) {
        if (ticket.settled) continue
        ticket.settled = true
        // It may have reached the provider: its usage is unknown, and its token reservation stays spent.
        stats.unknownUsageAttempts++
        if (ticket.limited) {
          limiter.release(ticket, undefined)
          notify()
        }
      }
    }

    // Without anything that acts on single attempts (a stop, a cap, a limit, a cooldown, an observer), the
    // gate is left out: the executor then admits attempts without a bounded wait of its own, and the stats
    // are counted from the item's attempt records when it ends.
    const gated = g.batchDeadline !== undefined || g.abortOn.length > 0 || g.maxTotalTokens !== undefined ||
      g.maxTotalCost !== undefined || settings.costFunction !== undefined || g.requestsPerMinute !== undefined ||
      g.tokensPerMinute !== undefined || Object.keys(g.capacity).length > 0 || g.startupRamp !== undefined ||
      g.cooldown !== undefined || artifacts !== undefined || onEvent !== undefined || progressRef !== undefined

    /** Counts an ungated item's attempts when it ends; a total that overflows stops the run. */
    const countRecords = (records: ReadonlyArray<Outcome.AttemptRecord>): Stop | undefined => {
      let trip: Stop | undefined
      for (const record of records) {
        stats.attempts++
        if (record.role === "retry") stats.retries++
        else if (record.role === "fallback") stats.fallbacks++
        if (record.failure === "rate_limited") stats.rateLimited++
        if (record.usage === "unknown") {
          if (record.dispatched) stats.unknownUsageAttempts++
        } else {
          trip = addTokens(stats, record.usage.inputTokens + record.usage.outputTokens) ?? trip
          trip = addCost(stats, record.charged.cost) ?? trip
        }
      }
      return trip
    }

    // ---- results --------------------------------------------------------------------------------------

    // Items that never started share their stop's one error (immutable data): a collection stopped early
    // gives each of its remaining items a result, and building (and validating) one error each would cost
    // more than everything else they do.
    let unstarted: { readonly stop: Stop; readonly error: ItemError } | undefined

    const collateral = (
      base: { readonly index: number; readonly itemId: string; readonly item: I; readonly durationMillis: number },
      stop: Stop,
      cause: Outcome.Cause | null,
      attempts: ReadonlyArray<Outcome.AttemptRecord>
    ): Failed<I> => {
      const category = collateralCategory(stop)
      if (cause !== null || attempts.length > 0) {
        return { _tag: "Failed", ...base, category, error: collateralError(stop, cause, attempts) }
      }
      if (unstarted?.stop !== stop) unstarted = { stop, error: collateralError(stop, null, []) }
      return { _tag: "Failed", ...base, category, error: unstarted.error }
    }

    const toResult = (
      exit: Exit.Exit<Outcome.Completion, Outcome.Terminal>,
      base: { readonly index: number; readonly itemId: string; readonly item: I; readonly durationMillis: number }
    ): Effect.Effect<Succeeded<I> | Failed<I>> => {
      if (Exit.isSuccess(exit)) return Effect.succeed({ _tag: "Succeeded", ...base, completion: exit.value })
      const failure = Cause.failureOption(exit.cause)
      if (Option.isNone(failure)) {
        // Interrupted by `cancel-active`: the stop decides the result. Anything else (a defect) is a bug and
        // propagates; the caller's own interruption never reaches here (it interrupts this worker too).
        return stopped !== undefined && Cause.isInterruptedOnly(exit.cause)
          ? Effect.succeed(collateral(base, stopped, null, []))
          : Effect.failCause(exit.cause) as Effect.Effect<never>
      }
      const error = failure.value
      // Halted: the gate closed under the item (a stop). After a cap was reached, any failure is the cap's.
      if (error._tag === "Halted" || (stopped !== undefined && stopped.kind === "budget_exceeded")) {
        return Effect.succeed(collateral(base, stopped ?? HALTED, causeOf(error), error.attempts))
      }
      const category = Categories.ofTerminal(error)
      const result: Failed<I> = { _tag: "Failed", ...base, category, error }
      // Only a terminal item failure trips fail-fast; the first trigger wins.
      return stopped === undefined && abortOn.has(category)
        ? Effect.as(
          stop({
            _tag: "FailFast",
            kind: "fail_fast",
            reason: `fail-fast: item ${JSON.stringify(base.itemId)} failed with ${category}`,
            itemId: base.itemId,
            category
          }),
          result
        )
        : Effect.succeed(result)
    }

    // Submission order: results wait in a buffer until every earlier one is published.
    const windowLock = window === undefined ? undefined : yield* Effect.makeSemaphore(window)
    const pending = new Map<number, ItemResult<I>>()
    let nextIndex = 0
    let draining = false
    const deliver = g.order === "completion"
      ? publish
      : (result: ItemResult<I>): Effect.Effect<void> =>
        Effect.suspend(() => {
          pending.set(result.index, result)
          if (draining) return Effect.void
          draining = true
          const drain: Effect.Effect<void> = Effect.suspend(() => {
            const r = pending.get(nextIndex)
            if (r === undefined) {
              draining = false
              return Effect.void
            }
            pending.delete(nextIndex)
            return Effect.zipRight(
              publish(r),
              Effect.suspend(() => {
                nextIndex++
                return windowLock === undefined ? drain : Effect.zipRight(windowLock.release(1), drain)
              })
            )
          })
          return drain
        })

    const count = (result: ItemResult<I>): void => {
      switch (result._tag) {
        case "Succeeded":
          stats.succeeded++
          break
        case "Failed":
          stats.failed++
          break
        case "Reused":
          stats.reused++
          break
        case "Planned":
          stats.planned++
          break
      }
      const category = categoryOf(result)
      byCategory[category] = (byCategory[category] ?? 0) + 1
    }

    const announce = (result: ItemResult<I>): Effect.Effect<void> =>
      onEvent === undefined ? Effect.void : event((at): Events.Event => {
        const ids = { at, index: result.index, itemId: result.itemId }
        switch (result._tag) {
          case "Failed":
            return { _tag: "ItemFailed", ...ids, category: result.category, attempts: summarise(result.error.attempts) }
          case "Reused":
            return { _tag: "ItemReused", ...ids }
          case "Succeeded":
            return {
              _tag: "ItemCompleted",
              ...ids,
              endpoint: result.completion.endpoint,
              attempts: summarise(result.completion.attempts)
            }
          default:
            return { _tag: "ItemCompleted", ...ids }
        }
      })

    /** Persists (when an artifact is open), counts, announces and publishes: the record is appended before
     * the result is published; a failed append stops the run with `artifact_error`. */
    const complete = (result: ItemResult<I>): Effect.Effect<void> => {
      const finish = (r: ItemResult<I>) => {
        count(r)
        return onEvent === undefined && progressRef === undefined
          ? deliver(r)
          : Effect.zipRight(announce(r), Effect.zipRight(progress, deliver(r)))
      }
      if (artifacts === undefined || (result._tag !== "Succeeded" && result._tag !== "Failed")) return finish(result)
      const record = Effect.flatMap(artifacts.toRecord(result), (line) => artifacts.opened.append(line))
      if (result._tag === "Failed" && Categories.isCollateral(result.category)) {
        // Guardrail audit records are written best-effort (and never reused).
        return Effect.zipRight(Effect.ignore(record), finish(result))
      }
      return Effect.matchEffect(record, {
        onSuccess: () => finish(result),
        onFailure: (error) => {
          const original = categoryOf(result)
          const failed: Failed<I> = {
            _tag: "Failed",
            index: result.index,
            itemId: result.itemId,
            item: result.item,
            durationMillis: result.durationMillis,
            category: "artifact_error",
            error: stackless(() =>
              new ArtifactFailed({
                reason: `the record of item ${JSON.stringify(result.itemId)} could not be appended: ${error.message}`,
                cause: result._tag === "Failed" ? errorCause(result.error) : null,
                attempts: result._tag === "Succeeded" ? result.completion.attempts : result.error.attempts,
                original
              })
            )
          }
          return Effect.zipRight(
            stop({
              _tag: "ArtifactFailure",
              kind: "artifact_error",
              reason: `artifact append failed for item ${JSON.stringify(result.itemId)}: ${error.message}`,
              itemId: result.itemId
            }),
            finish(failed)
          )
        }
      })
    }

    // ---- one item -------------------------------------------------------------------------------------

    // The item deadline starts with the item's execution, like the contract's own deadline: the contract run
    // for each item carries the earlier of the two (made once per run, not a `Deadline.within` per item).
    const itemContract = itemDeadline === undefined || Duration.lessThanOrEqualTo(contract.deadline, itemDeadline)
      ? contract
      : new Contract.Contract({ ...contract, deadline: Duration.decode(itemDeadline) })
    const clock = yield* Effect.clock
    const pre = onEvent === undefined && progressRef === undefined

    /** Admits at once when nothing has to wait and nobody observes admissions (else `admit` does). */
    const tryAdmit = (ask: Gate.Ask, it: ItemState): Option.Option<Ticket> => {
      if (stopped !== undefined || onEvent !== undefined) return Option.none()
      let ticket: Ticket
      if (!limiter.active()) {
        ticket = { endpoint: ask.endpoint.id, tokens: 0, waitedMillis: 0, settled: false, limited: false }
      } else {
        const taken = limiter.take(
          sinceStart(clock.unsafeCurrentTimeNanos()),
          ask.endpoint.id,
          ask.reservation.tokens ?? 0,
          0
        )
        if (typeof taken === "number") return Option.none()
        ticket = { ...taken, limited: true }
      }
      return Option.some(hold(it, ticket))
    }

    /** The worker's gate: its admissions and settlements belong to the item the worker is executing. */
    // Provided once per worker. It governs the item the worker is executing, and nothing else: between items
    // (a source's upstream, publishing) it is an open gate, and observers run without it (see `event`), so a
    // call of user code's own is never admitted, counted or stopped as an item's attempt.
    const gateOf = (worker: Worker): Gate.Gate["Type"] => ({
      admit: (ask) => worker.current === undefined ? OPEN_ADMIT : admit(ask, worker.current),
      settle: (ticket, record) =>
        worker.current === undefined ? Effect.void : settle(ticket as Ticket, record, worker.current),
      get closed() {
        return worker.current === undefined ? Effect.never : closedAwait
      },
      unsafeTryAdmit: (ask) => worker.current === undefined ? OPEN_TICKET : tryAdmit(ask, worker.current),
      unsafeSettle: (ticket, record) =>
        worker.current === undefined ? undefined : settleNow(ticket as Ticket, record, worker.current)
    })

    const finishItem = (
      worker: Worker,
      it: ItemState,
      item: I,
      startNanos: bigint,
      exit: Exit.Exit<Outcome.Completion, Outcome.Terminal>
    ): Effect.Effect<void> => {
      if (worker.current === it) worker.current = undefined
      executing.delete(it)
      releaseOpen(it)
      inFlight--
      let trip: Stop | undefined
      if (!gated) {
        const failure = Exit.isSuccess(exit) ? undefined : Cause.failureOption(exit.cause)
        trip = countRecords(
          Exit.isSuccess(exit) ? exit.value.attempts : failure !== undefined && Option.isSome(failure)
            ? failure.value.attempts
            : []
        )
      }
      const durationMillis = Number(clock.unsafeCurrentTimeNanos() - startNanos) / 1e6
      const base = { index: it.index, itemId: it.itemId, item, durationMillis }
      const done = Exit.isSuccess(exit)
        ? complete({ _tag: "Succeeded", ...base, completion: exit.value })
        : Effect.flatMap(toResult(exit, base), complete)
      return trip === undefined ? done : Effect.zipRight(stop(trip), done)
    }

    /** Called when the worker has pulled the item (a synchronous step); the effect executes it. */
    const processItem = (
      worker: Worker,
      item: I,
      index: number
    ): Effect.Effect<void, never, Rein.Rein> => {
      const request = settings.request(item, index)
      const itemId = settings.itemId?.(item, index) ?? request.id ?? String(index)
      if (artifacts?.lookup !== undefined) {
        const found = artifacts.lookup(item, index, itemId)
        if (Option.isSome(found)) return complete({ _tag: "Reused", index, itemId, item, record: found.value })
      }
      if (stopped !== undefined) {
        // Accepted but never started: the stop's collateral result, no call.
        return complete(collateral({ index, itemId, item, durationMillis: 0 }, stopped, null, []))
      }
      if (g.dryRun) return complete({ _tag: "Planned", index, itemId, item, request })

      const it: ItemState = { index, itemId, tickets: [], fiber: undefined }
      worker.current = it
      inFlight++
      const execute = (): Effect.Effect<void, never, Rein.Rein> => {
        const startNanos = clock.unsafeCurrentTimeNanos()
        const executed = Rein.execute(request, itemContract)
        if (!cancelActive) {
          executing.add(it)
          return Effect.flatMap(Effect.exit(executed), (exit) => finishItem(worker, it, item, startNanos, exit))
        }
        // Its own fiber, so that a stop can interrupt the call while this worker publishes the result.
        return Effect.flatMap(Effect.fork(executed), (fiber) => {
          it.fiber = fiber
          executing.add(it)
          if (stopped !== undefined) fiber.unsafeInterruptAsFork(FiberId.none)
          return Effect.flatMap(Fiber.await(fiber), (exit) => finishItem(worker, it, item, startNanos, exit))
        })
      }
      return pre
        ? execute()
        : Effect.zipRight(
          Effect.zipRight(event((at) => ({ _tag: "ItemStarted", at, index, itemId })), progress),
          Effect.suspend(execute)
        )
    }

    // ---- pulling --------------------------------------------------------------------------------------

    const accept = (next: Option.Option<I>): Option.Option<readonly [I, number]> => {
      if (Option.isNone(next)) {
        exhausted = true
        return Option.none()
      }
      const index = stats.accepted++
      return Option.some([next.value, index] as const)
    }

    const onSourceError = (e: E) =>
      Effect.sync(() => {
        exhausted = true
        if (Option.isNone(sourceFailure)) sourceFailure = Option.some(e)
        return Option.none<readonly [I, number]>()
      })

    // A collection's items were all handed over: after a stop it is still pulled, to the end, and each item
    // gets the stop's result without a call (`processItem`); a lazy source stops being pulled.
    const sized = puller.sized
    const STOPPED = Symbol("stopped")
    const pullLock = puller.async ? yield* Effect.makeSemaphore(1) : undefined
    const pullOne: Effect.Effect<Option.Option<readonly [I, number]>, never, R> = pullLock === undefined
      ? Effect.suspend(() =>
        (stopped !== undefined && !sized) || exhausted
          ? Effect.succeed(Option.none())
          : Effect.matchEffect(puller.pull, { onFailure: onSourceError, onSuccess: (o) => Effect.succeed(accept(o)) })
      )
      : pullLock.withPermits(1)(Effect.suspend(() =>
        stopped !== undefined || exhausted
          ? Effect.succeed(Option.none())
          // At a stop, a pull that has not answered yet is abandoned: that item was never accepted.
          : Effect.raceFirst(Effect.either(puller.pull), Effect.as(closedAwait, STOPPED)).pipe(
            Effect.flatMap((r) =>
              r === STOPPED
                ? Effect.succeed(Option.none())
                : r._tag === "Left"
                ? onSourceError(r.left)
                : Effect.succeed(accept(r.right))
            )
          )
      ))

    const unsafePull = puller.unsafePull
    /** One pull as a synchronous step (a source that never suspends, outside submission order). */
    const pullNow = unsafePull === undefined || windowLock !== undefined
      ? undefined
      : (): Option.Option<readonly [I, number]> => {
        if ((stopped !== undefined && !sized) || exhausted) return Option.none()
        const pulled = unsafePull()
        if (Either.isRight(pulled)) return accept(pulled.right)
        exhausted = true
        if (Option.isNone(sourceFailure)) sourceFailure = Option.some(pulled.left)
        return Option.none()
      }

    const worker: Effect.Effect<void, never, Rein.Rein | R> = Effect.suspend(() => {
      const self: Worker = { current: undefined }
      // Without anything that acts on single attempts, the executor runs without a gate (see `gated`).
      const gate = gated ? gateOf(self) : undefined
      const process = (next: Option.Option<readonly [I, number]>): Effect.Effect<void, never, Rein.Rein | R> => {
        if (Option.isNone(next)) return windowLock === undefined ? Effect.void : windowLock.release(1)
        return Effect.zipRight(processItem(self, next.value[0], next.value[1]), loop)
      }
      const loop: Effect.Effect<void, never, Rein.Rein | R> = pullNow !== undefined
        ? Effect.suspend(() => process(pullNow()))
        : Effect.flatMap(windowLock === undefined ? pullOne : Effect.zipRight(windowLock.take(1), pullOne), process)
      return gate === undefined ? loop : Effect.provideService(loop, Gate.Gate, gate)
    })

    // ---- the run --------------------------------------------------------------------------------------

    yield* event((at) => ({ _tag: "RunStarted", at }))
    if (g.batchDeadline !== undefined) {
      const batchDeadline = g.batchDeadline
      yield* Effect.forkIn(
        Effect.zipRight(
          Effect.sleep(Duration.millis(clampMillis(Duration.toMillis(batchDeadline)))),
          stop({
            _tag: "BatchTimeout",
            kind: "batch_timeout",
            reason: `the batch deadline of ${fmt(Duration.toMillis(batchDeadline))} ms expired`
          })
        ),
        scope
      )
    }
    yield* Effect.forEach(Array.from({ length: g.concurrency }), () => worker, {
      concurrency: "unbounded",
      discard: true
    })
    if (Option.isSome(sourceFailure)) return yield* Effect.fail(sourceFailure.value)
    const termination: Termination = stopped ?? {
      _tag: "Completed",
      kind: "completed",
      reason: `all ${stats.accepted} accepted items finished`
    }
    const final: Stats.Stats = { ...stats, byCategory: { ...byCategory } }
    yield* event((at) => ({ _tag: "RunCompleted", at, termination, stats: final }))
    return { termination, stats: final }
  })

const collateralCategory = (stop: Stop): Category => {
  switch (stop.kind) {
    case "batch_timeout":
      return "batch_deadline_exceeded"
    case "budget_exceeded":
      return "batch_budget_exceeded"
    case "fail_fast":
    case "artifact_error":
      return "batch_aborted"
  }
}

const collateralError = (
  stop: Stop,
  cause: Outcome.Cause | null,
  attempts: ReadonlyArray<Outcome.AttemptRecord>
): ItemError => {
  const fields = { reason: stop.reason, cause, attempts }
  switch (stop.kind) {
    case "batch_timeout":
      return stackless(() => new BatchDeadlineExceeded(fields))
    case "budget_exceeded":
      return stackless(() => new BatchBudgetExceeded(fields))
    case "fail_fast":
    case "artifact_error":
      return stackless(() => new BatchAborted(fields))
  }
}

type Counters = ReturnType<typeof Stats.empty>

// Each value added to a total is finite; their sum may not be (two values near `Number.MAX_VALUE`). A sum
// that is no longer finite is not taken: the total keeps its last finite value and the run stops, like a
// cost function's bad value (for cost, `costComplete` becomes false).
const overflowed = (resource: "tokens" | "cost", total: number, value: number): Stop => ({
  _tag: "BudgetExceeded",
  kind: "budget_exceeded",
  resource,
  reason: `the running ${resource === "tokens" ? "token" : "cost"} total overflowed: ${fmt(total)} + ${
    fmt(value)
  } is not finite`
})

const addTokens = (stats: Counters, tokens: number): Stop | undefined => {
  const sum = stats.tokensUsed + tokens
  if (Number.isFinite(sum)) {
    stats.tokensUsed = sum
    return undefined
  }
  return overflowed("tokens", stats.tokensUsed, tokens)
}

const addCost = (stats: Counters, cost: number): Stop | undefined => {
  const sum = stats.costUsed + cost
  if (Number.isFinite(sum)) {
    stats.costUsed = sum
    return undefined
  }
  stats.costComplete = false
  return overflowed("cost", stats.costUsed, cost)
}

const EXPIRED: Gate.Expired = { _tag: "GateExpired" }
const OPEN_ADMIT = Effect.succeed(undefined)
const OPEN_TICKET = Option.some(undefined)

const HALTED: Stop = {
  _tag: "FailFast",
  kind: "fail_fast",
  reason: "the run stopped",
  itemId: "",
  category: "batch_aborted"
}
