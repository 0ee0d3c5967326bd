/**
 * Virtual time for `rein simulate`: an hour of traffic in seconds, the same seed giving the same report.
 *
 * Why not `TestClock`: it is a legitimate virtual clock, but each wake-up waits for every fiber to
 * suspend by yielding to a real timer (`setTimeout(0)`, ≥ 1 ms), and a simulated hour has tens of
 * thousands of wake-ups (latencies, attempt timers, backoffs, arrivals) — tens of seconds of real time.
 * It also warns after 5 real seconds. Here instead every fiber of the simulation runs on a scheduler
 * whose queue we drain ourselves, and on a `Clock` whose sleepers wait in a priority queue: when no task
 * is runnable, every fiber is suspended by construction, so time jumps to the earliest sleeper. No real
 * timer is involved, ordering is total (wake time, then registration order), and the run is deterministic.
 *
 * @internal
 */
import type { Duration } from "effect"
import type { Cause } from "effect"
import type { Fiber } from "effect"
import { Clock, Effect, Exit, FiberId, RuntimeFlags, Scheduler } from "effect"
import { Duration as D } from "effect"

/**
 * One sleeping fiber. A class, not an object literal: V8 pretenures an object literal's allocation site when
 * its objects survive young-generation collections (a sleeper lives as long as its sleep, and a cancelled one
 * until its time), and then every sleeper of the hour was allocated in the old generation, where each kept
 * what it pointed to (its fiber's resume, the fiber's young state) alive through scavenges: most of the
 * simulation's garbage-collection time. Objects made by `new` are not pretenured that way.
 */
class Sleeper {
  constructor(
    readonly at: number,
    readonly seq: number,
    /** Resumes the sleeping fiber (its `Effect.async` resume itself: no closure per sleep); `undefined` once
     * cancelled (see `sleep`). */
    public wake: ((effect: Effect.Effect<void>) => void) | undefined
  ) {}
}

const before = (a: Sleeper, b: Sleeper): boolean => a.at < b.at || (a.at === b.at && a.seq < b.seq)

/** A min-heap of sleepers by (wake time, registration order). */
class Sleepers {
  private readonly heap: Array<Sleeper> = []
  push(s: Sleeper): void {
    const h = this.heap
    h.push(s)
    let i = h.length - 1
    while (i > 0) {
      const parent = (i - 1) >> 1
      const up = h[i]!
      if (!before(up, h[parent]!)) break
      h[i] = h[parent]!
      h[parent] = up
      i = parent
    }
  }
  pop(): Sleeper | undefined {
    const h = this.heap
    for (;;) {
      const top = h[0]
      if (top === undefined) return undefined
      const last = h.pop()!
      if (h.length > 0) {
        h[0] = last
        let i = 0
        for (;;) {
          const l = 2 * i + 1
          const r = l + 1
          let m = i
          if (l < h.length && before(h[l]!, h[m]!)) m = l
          if (r < h.length && before(h[r]!, h[m]!)) m = r
          if (m === i) break
          const down = h[i]!
          h[i] = h[m]!
          h[m] = down
          i = m
        }
      }
      if (top.wake !== undefined) return top
    }
  }
}

/**
 * A `Clock` reading virtual milliseconds since the start of the simulation. Besides fibers' sleeps, it schedules
 * plain callbacks (`scheduler()`, as Effect's live clock does): Rein's one timer per clock runs on them without a
 * fiber of its own (see `@rein/core`'s `internal/timers.ts`). @internal
 */
export class VirtualClock implements Clock.Clock {
  readonly [Clock.ClockTypeId]: Clock.ClockTypeId = Clock.ClockTypeId
  now = 0
  private seq = 0
  readonly sleepers = new Sleepers()

  /** @param yieldTo queues a task on the simulation's scheduler (what a sleep of no time does). */
  constructor(private readonly yieldTo: (task: () => void) => void) {}

  unsafeCurrentTimeMillis(): number {
    return this.now
  }
  readonly currentTimeMillis = Effect.sync(() => this.now)
  unsafeCurrentTimeNanos(): bigint {
    return BigInt(Math.round(this.now * 1_000_000))
  }
  readonly currentTimeNanos = Effect.sync(() => this.unsafeCurrentTimeNanos())
  /**
   * Calls `task` when virtual time reaches `duration` from now, ordered with sleeps exactly as a fiber sleeping
   * that long would wake (no time at all: queued as a task, as `Effect.yieldNow` is). The token cancels it.
   */
  unsafeSchedule(task: () => void, duration: Duration.Duration): Clock.CancelToken {
    const millis = D.toMillis(duration)
    if (!Number.isFinite(millis)) return () => false
    let pending = true
    const run = () => {
      if (!pending) return
      pending = false
      task()
    }
    const sleeper = millis > 0 ? new Sleeper(this.now + millis, this.seq++, run) : undefined
    if (sleeper === undefined) this.yieldTo(run)
    else this.sleepers.push(sleeper)
    return () => {
      if (sleeper !== undefined) sleeper.wake = undefined
      const was = pending
      pending = false
      return was
    }
  }
  readonly scheduler = (): Effect.Effect<Clock.ClockScheduler> => Effect.succeed(this)

  sleep(duration: Duration.Duration): Effect.Effect<void> {
    const millis = D.toMillis(duration)
    if (!(millis > 0)) return Effect.yieldNow()
    if (!Number.isFinite(millis)) return Effect.never
    return Effect.withFiberRuntime((_, status) => {
      const sleep = new Sleep(this, millis)
      // An uninterruptible sleep cannot be interrupted (Effect sets no interruptor on its wait): nothing to cancel.
      if (!RuntimeFlags.interruption(status.runtimeFlags)) return Effect.async<void>(sleep.register)
      // What `Effect.async`'s canceler did, in fewer steps: the wait interruptible, a handler that lets go of the
      // sleeper when the wait is interrupted, run uninterruptibly (an interruptible fiber that is interrupted skips
      // failure handlers). `Effect.async` with a canceler wraps the wait in `onInterrupt`, i.e. `onExit` (an
      // `uninterruptibleMask`, a `matchCauseEffect`, and on every wake an exit, a `zipRight` and an `exitMatch`):
      // 3 operations and ~1.2 KB more per sleep than this, with two sleeps per simulated request (`sim-ops.mjs`).
      return Effect.uninterruptible(
        Effect.catchAllCause(Effect.interruptible(Effect.async<void>(sleep.register)), sleep.cancel)
      )
    })
  }

  /** A sleeper for `resume`, `millis` from now, in the heap. */
  sleeperFor(millis: number, resume: (effect: Effect.Effect<void>) => void): Sleeper {
    const sleeper = new Sleeper(this.now + millis, this.seq++, resume)
    this.sleepers.push(sleeper)
    return sleeper
  }
}

/**
 * One run of a sleep: its registration and, when the wait is interrupted, its cancellation. A cancelled sleeper
 * stays in the heap until its time comes (up to a request's deadline later), but lets go of its fiber at once:
 * kept, every interrupted sleep (an attempt's bound, the executor's timer fiber) held its fiber through
 * young-generation collections and into the old generation; and a cancelled sleeper does not move the clock.
 */
class Sleep {
  private sleeper: Sleeper | undefined = undefined
  constructor(private readonly clock: VirtualClock, private readonly millis: number) {}
  readonly register = (resume: (effect: Effect.Effect<void>) => void): void => {
    this.sleeper = this.clock.sleeperFor(this.millis, resume)
  }
  // Only interruption reaches here: the wait itself never fails.
  readonly cancel = (cause: Cause.Cause<never>): Effect.Effect<never> => {
    if (this.sleeper !== undefined) this.sleeper.wake = undefined
    return Effect.failCause(cause)
  }
}

/** Tasks and wake-ups run between two yields to the real event loop (see `run`). */
const SLICE = 65_536

/** The most slices an interrupted run goes on for, until its fiber ended. */
const DRAIN = 64

/** Effect's default: a fiber yields to the scheduler's other tasks after this many operations in a row. */
const MAX_OPS_BEFORE_YIELD = 2_048

/**
 * The simulation's scheduler: a queue of tasks that `run` drains itself. A class, made once per run: its two
 * methods are the same functions in every run (a scheduler of closures made per run gave the fiber runtime's
 * optimized code a new function to call in each run; after a full collection between runs, V8 was seen
 * deoptimizing `drainQueueLaterOnExecutor` and `defaultShouldYield` for objects that had died).
 *
 * A fiber yields after `MAX_OPS_BEFORE_YIELD` operations, Effect's default, read here as a constant: Effect's
 * own check reads two fiber references (two map lookups) at every operation of every fiber.
 */
class Tasks implements Scheduler.Scheduler {
  /** A task run is cleared from the queue at once (see `run`). Slots `[0, end)` are the queue's: the array itself
   * is never shortened, since an array emptied (`length = 0`) lets go of its storage, and the next task made it
   * again (every time the simulation's queue ran dry: ~0.5 KB per simulated request). */
  readonly queue: Array<Scheduler.Task | undefined> = []
  end = 0
  scheduleTask(task: Scheduler.Task): void {
    this.queue[this.end++] = task
  }
  shouldYield(fiber: Parameters<Scheduler.Scheduler["shouldYield"]>[0]): number | false {
    return fiber.currentOpCount > MAX_OPS_BEFORE_YIELD ? 0 : false
  }
}

/**
 * Runs `effect` in virtual time and returns its exit with the virtual time it took. A simulation that waits on
 * something that is neither a task nor a sleeper (nothing can ever wake it) is reported as a defect rather than
 * hanging. Every `SLICE` tasks and wake-ups the loop yields to the caller's other fibers and to the real event
 * loop (a sleep of no time on the caller's clock), so that a long simulation stays interruptible: a SIGTERM or a
 * Ctrl-C reaches the command's fiber, and interrupting the run interrupts the simulation's fiber.
 *
 * @internal
 */
export const run = <A, E>(
  effect: Effect.Effect<A, E>
): Effect.Effect<{ readonly exit: Exit.Exit<A, E>; readonly virtualMillis: number }> =>
  Effect.suspend(() => {
    const scheduler = new Tasks()
    const clock = new VirtualClock((task) => scheduler.scheduleTask(task))
    return Effect.forkDaemon(Effect.withClock(effect, clock)).pipe(
      Effect.withScheduler(scheduler),
      Effect.flatMap((fiber) => {
        const drive = new Drive(scheduler, clock, fiber)
        // Other fibers first, then the event loop (a sleep of no time is a real timer on the live clock).
        const pause = Effect.zipRight(Effect.yieldNow(), Effect.sleep(D.zero))
        const loop: Effect.Effect<{ readonly exit: Exit.Exit<A, E>; readonly virtualMillis: number }> = Effect
          .suspend(() => {
            const ended = drive.slice()
            return ended !== undefined ? Effect.succeed(ended) : Effect.zipRight(pause, loop)
          })
        // Interrupted between slices: the simulation's fiber is interrupted, and the run goes on until it ended
        // (its finalizers may end fibers of its own, waiting in virtual time: a teardown's grace), at most
        // `DRAIN` slices (a simulation holds no resource outside virtual time).
        return Effect.onInterrupt(loop, () =>
          Effect.sync(() => {
            fiber.unsafeInterruptAsFork(FiberId.none)
            for (let n = 0; n < DRAIN; n++) if (drive.slice() !== undefined) return
          }))
      })
    )
  })

/**
 * What drives one run: its scheduler's queue and its clock's sleepers, drained slice by slice. A class, made once
 * per run, not a closure made per run: V8 keeps the optimized code of a closure's site only while a closure made
 * there holds it, so after a full collection between two runs (bench 6's in-process row collects before every run)
 * the run's loop started again in the interpreter and was compiled again (on-stack replacement, then in full); a
 * class's methods are the same functions in every run.
 */
class Drive<A, E> {
  /** The next task to run (slots before it are cleared). */
  private next = 0
  constructor(
    private readonly scheduler: Tasks,
    private readonly clock: VirtualClock,
    private readonly fiber: Fiber.RuntimeFiber<A, E>
  ) {}

  /** Runs up to `SLICE` tasks and wake-ups: the run's end, or `undefined` when the slice ran out first. */
  slice(): { readonly exit: Exit.Exit<A, E>; readonly virtualMillis: number } | undefined {
    // A task run is cleared from the queue at once: the queue holds at most 4,096 of them, and each one
    // kept its fiber alive through every young-generation collection until the queue was trimmed (most of
    // what those collections copied, and most of the simulation's CPU).
    const scheduler = this.scheduler
    const tasks = scheduler.queue
    const clock = this.clock
    for (let budget = SLICE; budget > 0; budget--) {
      if (this.next < scheduler.end) {
        const task = tasks[this.next]!
        tasks[this.next++] = undefined
        task()
        // Keep the queue from growing without bound over a long simulation: the tasks left move to its
        // start (the slots they leave cleared).
        if (this.next > 4096) {
          const end = scheduler.end
          tasks.copyWithin(0, this.next, end)
          tasks.fill(undefined, end - this.next, end)
          scheduler.end = end - this.next
          this.next = 0
        }
        continue
      }
      scheduler.end = 0
      this.next = 0
      const exit = this.fiber.unsafePoll()
      if (exit !== null) return { exit, virtualMillis: clock.now }
      const sleeper = clock.sleepers.pop()
      if (sleeper === undefined) {
        return {
          exit: Exit.die(new Error("the simulation stalled: a fiber waits on something virtual time cannot wake")),
          virtualMillis: clock.now
        }
      }
      clock.now = Math.max(clock.now, sleeper.at)
      const wake = sleeper.wake!
      sleeper.wake = undefined
      wake(Effect.void)
    }
    return undefined
  }
}

/**
 * One simulation's fiber, parked for the life of the process: a fiber on a scheduler and clock of this module,
 * asleep on that clock (interruptibly, as a request's sleeps are), never woken, and the status it ran with. V8
 * gives a class's instances a hidden class ("map") that lives only while an instance does (core's
 * `internal/maps.ts`); between two runs no fiber is left, so a full collection freed the maps of Effect's fiber
 * and its running status and of this module's sleepers, scheduler and clock, and every optimized function that
 * checked one of them (the fiber's run loop and its operations, inlined) was thrown away and compiled again in the
 * next run (bench 6's in-process row collects before every run: ≈ 90 TurboFan compilations per hour, ≈ 45 with
 * this fiber, #22). This
 * fiber keeps those maps. It holds no timer and no I/O: it does not keep the process alive, and nothing wakes it.
 *
 * Beside it, an idle `Scheduler.SyncScheduler`: `Effect.runSync` runs its fiber on a new one (core's timer runs one
 * per clock, so once per simulation), so the run loop's optimized code checks that class's map too (at its
 * scheduler's `shouldYield`), and no instance outlived the run: every full collection between two runs freed the map
 * and threw the run loop's code away ("weak objects"), and with it every operation inlined into it (≈ 6 of the ≈ 45
 * compilations an hour after a `gc()` made again, `--trace-deopt`).
 *
 * @internal
 */
export const parked: {
  readonly fiber: Fiber.RuntimeFiber<void>
  readonly clock: VirtualClock
  /** Its scheduler, an idle `SyncScheduler` and the running status it started with. */
  readonly kept: ReadonlyArray<unknown>
} = (() => {
  const scheduler = new Tasks()
  const clock = new VirtualClock((task) => scheduler.scheduleTask(task))
  const kept: Array<unknown> = [scheduler, new Scheduler.SyncScheduler()]
  const asleep = Effect.withFiberRuntime<void>((_, status) => {
    kept.push(status)
    return clock.sleep(D.hours(1))
  })
  const fiber = Effect.runFork(Effect.withScheduler(Effect.withClock(asleep, clock), scheduler))
  for (let i = 0; i < scheduler.end; i++) scheduler.queue[i]!()
  scheduler.queue.fill(undefined)
  scheduler.end = 0
  return { fiber, clock, kept }
})()
