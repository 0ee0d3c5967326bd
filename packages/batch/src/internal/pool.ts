/**
 * The worker pool: up to `concurrency` workers (each started as the one before it takes an item), each pulling
 * one item when it is free, executing it under the item's contract (with the run's gate, when the run has
 * one: provided once around the workers by the engine, each gated worker marking its fiber as its own), and
 * completing it with exactly one result.
 *
 * @internal
 */
import type { Provider } from "@rein/core"
import { Contract, Outcome, Rein } from "@rein/core"
import { Cause, Duration, Effect, Exit, Fiber, FiberId, Option, Runtime } from "effect"
import type { ItemRecord } from "../ArtifactStore.js"
import * as CurrentItem from "./currentItem.js"
import type { RunGate } from "./gate.js"
import type { Pulled, Pulling, Slot } from "./pull.js"
import type { Results } from "./results.js"
import type { ItemState, RunState, Worker } from "./state.js"
import { NO_TICKETS } from "./state.js"

/** @internal */
export interface Pool<R> {
  /** One worker: pulls and executes items until there is nothing more to pull, starting the next worker
   * (`spawner`) as it takes an item. */
  readonly worker: (spawner: Spawner<Rein.Rein | R>) => Effect.Effect<void, never, Rein.Rein | R>
}

/**
 * How a worker starts the next one: workers are started as items are taken, not all up front, so a run
 * never holds more workers than items it took plus one (a concurrency of 10⁹ over 48 items forks 49, not 10⁹).
 *
 * @internal
 */
export interface Spawner<R> {
  /** Whether no worker is left to start (`n` started, or the pool is stopping): then taking an item starts none. */
  full: boolean
  /** Starts one more worker, unless full. */
  readonly one: Effect.Effect<void, never, R>
}

/** `effect`, after starting the next worker while fewer than `n` run: what a worker does as it takes an item. */
const afterNext = <R, R2>(
  spawner: Spawner<R>,
  effect: Effect.Effect<void, never, R2>
): Effect.Effect<void, never, R | R2> => spawner.full ? effect : Effect.zipRight(spawner.one, effect)

/** Starting an item that has nothing to reuse (the pool's `startItem`). */
type Start<I> = (
  worker: Running<I>,
  item: I,
  index: number,
  itemId: string,
  request: Provider.CompletionRequest
) => Effect.Effect<void, never, Rein.Rein>

/**
 * The record to reuse, found at once or read back (an effect: the item starts once it is known that none is
 * reused), given to `reuse`; without one, `start`.
 */
const reuseOr = <R>(
  found: Option.Option<ItemRecord> | Effect.Effect<Option.Option<ItemRecord>>,
  reuse: (record: ItemRecord) => Effect.Effect<void, never, R>,
  start: () => Effect.Effect<void, never, R>
): Effect.Effect<void, never, R> =>
  Option.isOption(found)
    ? (Option.isSome(found) ? reuse(found.value) : start())
    : Effect.flatMap(found, (record) => Option.isSome(record) ? reuse(record.value) : start())

/**
 * Runs up to `n` copies of a worker, each in its own fiber, until all have ended: the first is forked here, and
 * each worker starts the next (`Spawner.one`) as it takes an item, until `n` run; one fork each and one wait for
 * them all. (`Effect.forEach` with unbounded concurrency costs a result slot, a scheduled start and a step per
 * element besides the fork: ≈ 19 KB per worker against ≈ 6 KB here.) A worker that fails or dies interrupts the
 * others, and the whole fails with its cause once they ended; interrupting the whole interrupts every worker
 * and waits for them. Workers are root fibers of this fiber's runtime (a worker's end must not end the workers
 * it started), and this function owns their lifetime.
 *
 * @internal
 */
export const runAll = <R>(
  worker: (spawner: Spawner<R>) => Effect.Effect<void, never, R>,
  n: number
): Effect.Effect<void, never, R> =>
  Effect.uninterruptibleMask((restore) =>
    Effect.flatMap(Effect.runtime<R>(), (runtime) => {
      // Every worker is forked from this fiber's runtime (its context and fiber refs), whichever worker starts
      // it: forked by the worker before it, each would inherit a copy of that worker's refs, and a chain of 200
      // forks made every later fork in an item cost ≈ 2 KB more (a run with a gate: 16.2 → 18.2 KB per item).
      const fork = Runtime.runFork(runtime)
      const fibers: Array<Fiber.RuntimeFiber<void>> = []
      let started = 0
      let left = 0
      let failure: Cause.Cause<never> | undefined
      let resume: ((effect: Effect.Effect<void>) => void) | undefined
      const ended = (): Effect.Effect<void> => failure === undefined ? Effect.void : Effect.failCause(failure)
      const observer = (exit: Exit.Exit<void>) => {
        if (Exit.isFailure(exit) && failure === undefined) {
          failure = exit.cause
          spawner.full = true
          for (const fiber of fibers) fiber.unsafeInterruptAsFork(FiberId.none)
        }
        if (--left === 0 && resume !== undefined) resume(ended())
      }
      const spawner: Spawner<R> = {
        full: n <= 0,
        // One synchronous step: an interruption cannot land between counting a worker and forking it.
        one: Effect.sync(() => {
          if (spawner.full) return
          left++
          if (++started >= n) spawner.full = true
          const fiber = fork(restore(run), { immediate: false })
          fibers.push(fiber)
          fiber.addObserver(observer)
        })
      }
      const run = worker(spawner)
      const awaitAll = Effect.async<void>((cb) => {
        if (left === 0) return cb(ended())
        resume = cb
        return Effect.sync(() => {
          resume = undefined
        })
      })
      const stop = Effect.suspend(() => {
        spawner.full = true
        return Fiber.interruptAll(fibers)
      })
      return Effect.zipRight(spawner.one, Effect.onInterrupt(restore(awaitAll), () => stop))
    })
  )

/** A worker of this pool: the item it executes, with its start, and the ends of its call (made once). */
interface Running<I> extends Worker {
  item: I | undefined
  startNanos: bigint
  /** The item this worker executes, for its fibers (see `CurrentItem`); only in a run with a listener. */
  readonly cell: CurrentItem.Cell | undefined
  readonly ends: {
    readonly onFailure: (cause: Cause.Cause<Outcome.Terminal>) => Effect.Effect<void>
    readonly onSuccess: (completion: Outcome.Completion) => Effect.Effect<void>
  }
}

/** The attempts of an item whose call failed (none when it did not fail with a terminal: a defect, an interruption). */
const failedAttempts = (cause: Cause.Cause<Outcome.Terminal>): ReadonlyArray<Outcome.AttemptRecord> => {
  const failure = Cause.failureOption(cause)
  return Option.isSome(failure) ? failure.value.attempts : []
}

/** How an item ends: with the completion (no `Exit` built per item), or with the call's failure. */
interface ItemEnds<I> {
  readonly succeeded: (
    worker: Running<I>,
    it: ItemState,
    item: I,
    startNanos: bigint,
    completion: Outcome.Completion
  ) => Effect.Effect<void>
  readonly ended: (
    worker: Running<I>,
    it: ItemState,
    item: I,
    startNanos: bigint,
    exit: Exit.Exit<Outcome.Completion, Outcome.Terminal>
  ) => Effect.Effect<void>
}

/** A worker and the ends of the call of the item it executes (see `execute`), made once per worker. */
const workerOf = <I>(ends: ItemEnds<I>, quiet: boolean): Running<I> => {
  const self: Running<I> = {
    current: undefined,
    item: undefined,
    startNanos: 0n,
    cell: quiet ? undefined : { itemId: undefined },
    ends: {
      onFailure: (cause) => ends.ended(self, self.current!, self.item!, self.startNanos, Exit.failCause(cause)),
      onSuccess: (completion) => ends.succeeded(self, self.current!, self.item!, self.startNanos, completion)
    }
  }
  return self
}

/** The ends of a pool's items (see `ItemEnds`). */
const itemEnds = <I>(state: RunState<I>, gate: RunGate, gated: boolean, results: Results<I>): ItemEnds<I> => {
  const clock = state.clock
  const cancelActive = state.cancelActive
  /**
   * The worker and the gate let go of an ended item, and an ungated item's attempts (`records`; `undefined` when
   * gated: the gate counted them) are counted; the effects still to run first (releases, a stop), if any.
   */
  const letGo = (
    worker: Worker,
    it: ItemState,
    records: ReadonlyArray<Outcome.AttemptRecord> | undefined
  ): Effect.Effect<void> | undefined => {
    if (worker.current === it) worker.current = undefined
    // Only `cancel-active` keeps the items executing (a stop interrupts them), and only a gate holds tickets.
    if (cancelActive) state.executing.delete(it)
    const released = gated ? gate.releaseOpen(it) : undefined
    state.inFlight--
    const counted = records === undefined ? undefined : gate.countRecords(records)
    return released === undefined
      ? counted
      : counted === undefined
      ? released
      : Effect.zipRight(released, counted)
  }

  const durationSince = (startNanos: bigint): number => Number(clock.unsafeCurrentTimeNanos() - startNanos) / 1e6

  /** An item whose call succeeded: its result is built in one object (no `Exit` and no `base` copied by a spread). */
  const succeeded = (
    worker: Worker,
    it: ItemState,
    item: I,
    startNanos: bigint,
    completion: Outcome.Completion
  ): Effect.Effect<void> => {
    const before = letGo(worker, it, gated ? undefined : completion.attempts)
    const done = results.complete({
      _tag: "Succeeded",
      index: it.index,
      itemId: it.itemId,
      item,
      durationMillis: durationSince(startNanos),
      completion
    })
    return before === undefined ? done : Effect.zipRight(before, done)
  }

  const ended = (
    worker: Worker,
    it: ItemState,
    item: I,
    startNanos: bigint,
    exit: Exit.Exit<Outcome.Completion, Outcome.Terminal>
  ): Effect.Effect<void> => {
    if (Exit.isSuccess(exit)) return succeeded(worker, it, item, startNanos, exit.value)
    const before = letGo(worker, it, gated ? undefined : failedAttempts(exit.cause))
    const durationMillis = durationSince(startNanos)
    const done = Effect.flatMap(
      results.toResult(exit, { index: it.index, itemId: it.itemId, item, durationMillis }, it),
      results.complete
    )
    return before === undefined ? done : Effect.zipRight(before, done)
  }
  return { succeeded, ended }
}

/** @internal */
export const make = <I, E, R>(
  state: RunState<I>,
  gate: RunGate,
  gated: boolean,
  results: Results<I>,
  pulling: Pulling<I, E, R>,
  window: Effect.Semaphore | undefined
): Pool<R> => {
  const settings = state.settings
  const g = settings.guardrails
  const contract = settings.contract
  const clock = state.clock
  const cancelActive = state.cancelActive
  // The item deadline starts with the item's execution, like the contract's own deadline: the contract run
  // for each item carries the earlier of the two (made once per run, not a `Deadline.within` per item).
  const itemContract = g.itemDeadline === undefined || Duration.lessThanOrEqualTo(contract.deadline, g.itemDeadline)
    ? contract
    : new Contract.Contract({ ...contract, deadline: Duration.decode(g.itemDeadline) })
  const quiet = settings.onEvent === undefined && settings.progress === undefined

  const ends = itemEnds(state, gate, gated, results)

  /** Called when the worker has pulled the item (a synchronous step); the effect executes it. */
  const processItem = (worker: Running<I>, item: I, index: number): Effect.Effect<void, never, Rein.Rein> => {
    const request = settings.request(item, index)
    const itemId = settings.itemId?.(item, index) ?? request.id ?? String(index)
    const lookup = settings.artifacts?.lookup
    if (lookup === undefined) return startItem(worker, item, index, itemId, request)
    const found = lookup(item, index, itemId)
    if (found instanceof Outcome.Refused) {
      // The item cannot run under the artifact (its input has no fingerprint): it fails alone, before any call.
      return results.complete({
        _tag: "Failed",
        index,
        itemId,
        item,
        category: "refused",
        error: found,
        durationMillis: 0
      })
    }
    const reused = (record: ItemRecord) => results.complete({ _tag: "Reused", index, itemId, item, record })
    return reuseOr(found, reused, () => startItem(worker, item, index, itemId, request))
  }

  /** An item with nothing to reuse: its stop result, its plan (a dry run), or its execution. */
  const startItem: Start<I> = (worker, item, index, itemId, request) => {
    if (state.stopped !== undefined) {
      // Accepted but never started: the stop's collateral result, no call.
      return results.complete(results.collateral({ index, itemId, item, durationMillis: 0 }, state.stopped, null, []))
    }
    if (g.dryRun) return results.complete({ _tag: "Planned", index, itemId, item, request })
    const it: ItemState = { index, itemId, tickets: NO_TICKETS, fiber: undefined }
    worker.current = it
    state.inFlight++
    return quiet
      ? execute(worker, it, item, request)
      : Effect.zipRight(
        Effect.zipRight(state.event((at) => ({ _tag: "ItemStarted", at, index, itemId })), state.progress),
        Effect.suspend(() => execute(worker, it, item, request))
      )
  }

  /** Executes an accepted item and completes it (a function of the pool, not a closure per item). */
  const execute = (
    worker: Running<I>,
    it: ItemState,
    item: I,
    request: Provider.CompletionRequest
  ): Effect.Effect<void, never, Rein.Rein> => {
    const startNanos = clock.unsafeCurrentTimeNanos()
    // A run someone watches names the item on its fibers, in the worker's cell (see `internal/currentItem.ts`).
    if (worker.cell !== undefined) worker.cell.itemId = it.itemId
    const call = Rein.execute(request, itemContract)
    const executed = state.observer === undefined ? call : state.observer.item(call, it.index, it.itemId)
    if (!cancelActive) {
      // Both ends of the call are the worker's own handlers, made once per worker: the item runs on the
      // worker's fiber, one at a time, so they read it from the worker (no closures and no options object
      // per item).
      worker.item = item
      worker.startNanos = startNanos
      return Effect.matchCauseEffect(executed, worker.ends)
    }
    // Its own fiber, so that a stop can interrupt the call while this worker publishes the result.
    return Effect.flatMap(Effect.fork(executed), (fiber) => {
      it.fiber = fiber
      state.executing.add(it)
      if (state.stopped !== undefined) fiber.unsafeInterruptAsFork(FiberId.none)
      return Effect.flatMap(Fiber.await(fiber), (exit) => ends.ended(worker, it, item, startNanos, exit))
    })
  }

  const worker = (spawner: Spawner<Rein.Rein | R>): Effect.Effect<void, never, Rein.Rein | R> =>
    Effect.suspend(() => {
      const self = workerOf(ends, quiet)
      const take = (item: I, index: number) => afterNext(spawner, processItem(self, item, index))
      // Without anything that acts on single attempts, the executor runs without a gate (see `gated`).
      const process = (next: Pulled<I>): Effect.Effect<void, never, Rein.Rein | R> => {
        if (Option.isNone(next)) return window === undefined ? Effect.void : window.release(1)
        return Effect.zipRight(take(next.value[0], next.value[1]), loop)
      }
      const pullNow = pulling.pullNow
      const loop: Effect.Effect<void, never, Rein.Rein | R> = pullNow !== undefined
        ? Effect.suspend(() => loopNow(pullNow))
        : Effect.flatMap(window === undefined ? pulling.pull : Effect.zipRight(window.take(1), pulling.pull), process)
      /** The loop over a source that never suspends: one `whileLoop`, pulling right after each item ended (no
       * `zipRight` and `suspend` per item), each item into the worker's one slot (no `Option` and tuple per item). */
      const loopNow = (pullNow: (into: Slot<I>) => boolean): Effect.Effect<void, never, Rein.Rein | R> => {
        const slot: Slot<I> = { item: undefined, index: 0 }
        let more = pullNow(slot)
        return Effect.zipRight(
          Effect.whileLoop({
            while: () => more,
            body: () => take(slot.item as I, slot.index),
            step: () => {
              more = pullNow(slot)
            }
          }),
          window === undefined ? Effect.void : window.release(1)
        )
      }
      // The run's one gate is provided around all the workers (see `engine.ts`): a gated worker only marks its
      // fiber as its own, for the gate to find the item it is executing; a listened run's mark also names the
      // item. One mark for both (see `internal/currentItem.ts`); the run is its `state`, as the gate looks it up.
      return !gated && self.cell === undefined
        ? loop
        : Effect.locallyWith(loop, CurrentItem.mark, (outer) => ({ run: state, worker: self, cell: self.cell, outer }))
    })

  return { worker }
}
