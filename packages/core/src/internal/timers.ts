/**
 * One timer per clock for every bound the executor sets (attempt timeouts, teardown graces): a heap of
 * deadlines served by a single sleeping fiber, instead of a timer fiber per attempt.
 *
 * The fiber sleeps on the clock it was made for (so `TestClock` drives it in tests, and a virtual clock in
 * simulations) until the earliest deadline, fires every entry that is due, and sleeps again. It is
 * re-armed only when a new entry is due earlier than it would wake, and it ends as soon as no entry is
 * left: after a run, no fiber and no timer of Rein's stays behind. Entries due at the same instant fire in
 * the order they were scheduled.
 *
 * A clock that schedules callbacks itself (one with Effect's `scheduler()`: the live clock, whose scheduler is
 * `setTimeout`, and the CLI's virtual clock) needs no fiber for it: the heap is served by one callback on the
 * clock's scheduler instead, armed, re-armed and cancelled exactly as the fiber's sleep would be. When requests
 * do not overlap, every attempt armed and disarmed the timer, and the sleeper was a fork and an interruption.
 *
 * JavaScript runs one fiber at a time: every operation here is a synchronous step.
 *
 * @internal
 */
import type { Clock, Fiber } from "effect"
import { Duration, Effect, Exit, FiberId, Runtime, RuntimeFlags } from "effect"

/**
 * A scheduled callback; `cancel` it when the thing it bounds ended first. A class, not an object literal: V8
 * pretenures a literal's allocation site once some of its objects outlive a young-generation collection (an
 * entry lives as long as its attempt), and a pretenured entry, dead in the old generation, kept its callback,
 * and through it the attempt's fiber, alive until the next full collection. @internal
 */
export class Entry {
  constructor(
    readonly at: bigint,
    readonly seq: number,
    readonly fire: () => void,
    /** Position in the heap, -1 once fired or cancelled. */
    public index: number
  ) {}
}

class Timers {
  private readonly heap: Array<Entry> = []
  private seq = 0
  /** Whether a sleeper is serving the heap (it may have no fiber yet: see `arm`). */
  private armed = false
  private sleeper: Fiber.RuntimeFiber<void> | undefined = undefined
  /** Which sleeper is current: one that wakes after it was replaced or disarmed does nothing. */
  private generation = 0
  /** When the current sleeper wakes (nanos); meaningful only while `armed`. */
  private wakesAt = 0n
  /** The clock's own scheduler, when it has one: then the heap is served by a callback, not a fiber. */
  private readonly direct: Clock.ClockScheduler | undefined
  /** Cancels the callback armed on `direct`. */
  private cancelDirect: Clock.CancelToken | undefined = undefined

  constructor(private readonly clock: Clock.Clock) {
    this.direct = schedulerOf(clock)
  }

  schedule(runtime: Runtime.Runtime<never>, at: bigint, fire: () => void): Entry {
    const entry = new Entry(at, this.seq++, fire, this.heap.length)
    this.heap.push(entry)
    this.up(entry.index)
    if (!this.armed || at < this.wakesAt) this.arm(runtime)
    return entry
  }

  /** The fiber serving the heap, if any (for tests). */
  current(): Fiber.RuntimeFiber<void> | undefined {
    return this.sleeper
  }

  cancel(entry: Entry): void {
    if (entry.index < 0) return
    this.remove(entry.index)
    if (this.heap.length === 0) this.disarm()
  }

  private arm(runtime: Runtime.Runtime<never>): void {
    this.disarm()
    const top = this.heap[0]!
    const generation = ++this.generation
    this.armed = true
    this.wakesAt = top.at
    if (this.direct !== undefined) return this.callAt(this.direct, generation, top.at)
    // The sleeper must stay interruptible (it may be armed from a finalizer), and it starts at once: a clock
    // whose sleep ends synchronously (a test clock, an entry already due) may fire, empty the heap and end
    // before `runFork` returns. Only a sleeper still current is kept.
    const fiber = Runtime.runFork(interruptible(runtime))(this.sleepUntil(generation, top.at))
    if (generation === this.generation) this.sleeper = fiber
  }

  private disarm(): void {
    if (!this.armed) return
    this.armed = false
    this.generation++
    const sleeper = this.sleeper
    this.sleeper = undefined
    sleeper?.unsafeInterruptAsFork(FiberId.none)
    const cancel = this.cancelDirect
    this.cancelDirect = undefined
    cancel?.()
  }

  /** `sleepUntil`, as a callback on the clock's own scheduler (no fiber). */
  private callAt(direct: Clock.ClockScheduler, generation: number, at: bigint): void {
    this.cancelDirect = direct.unsafeSchedule(() => {
      if (generation !== this.generation) return
      this.cancelDirect = undefined
      this.fireDue(this.clock.unsafeCurrentTimeNanos())
      if (generation !== this.generation) return
      const top = this.heap[0]
      if (top === undefined) {
        this.armed = false
        this.generation++
        return
      }
      this.wakesAt = top.at
      this.callAt(direct, generation, top.at)
    }, Duration.millis(millisUntil(this.clock, at)))
  }

  /** Sleeps until `at`, then fires what is due and sleeps until the next entry, until none is left. */
  private sleepUntil(generation: number, at: bigint): Effect.Effect<void> {
    return Effect.flatMap(this.clock.sleep(Duration.millis(millisUntil(this.clock, at))), () =>
      Effect.suspend(() => {
        // Replaced by an earlier sleeper, or disarmed: this fiber is done.
        if (generation !== this.generation) return Effect.void
        this.fireDue(this.clock.unsafeCurrentTimeNanos())
        // A fired callback may have emptied the heap (disarming this fiber) or scheduled more.
        if (generation !== this.generation) return Effect.void
        const top = this.heap[0]
        if (top === undefined) {
          this.armed = false
          this.sleeper = undefined
          this.generation++
          return Effect.void
        }
        this.wakesAt = top.at
        return this.sleepUntil(generation, top.at)
      }))
  }

  private fireDue(now: bigint): void {
    while (this.heap.length > 0 && this.heap[0]!.at <= now) {
      const entry = this.heap[0]!
      this.remove(0)
      try {
        entry.fire()
      } catch {
        // A callback that throws must not stop the timer that every other bound depends on.
      }
    }
  }

  private before(a: Entry, b: Entry): boolean {
    return a.at < b.at || (a.at === b.at && a.seq < b.seq)
  }

  private remove(i: number): void {
    const heap = this.heap
    const entry = heap[i]!
    entry.index = -1
    const last = heap.pop()!
    if (i === heap.length) return
    heap[i] = last
    last.index = i
    this.up(i)
    this.down(last.index)
  }

  private up(i: number): void {
    const heap = this.heap
    const entry = heap[i]!
    while (i > 0) {
      const p = (i - 1) >> 1
      const parent = heap[p]!
      if (!this.before(entry, parent)) break
      heap[i] = parent
      parent.index = i
      i = p
    }
    heap[i] = entry
    entry.index = i
  }

  private down(i: number): void {
    const heap = this.heap
    const n = heap.length
    const entry = heap[i]!
    while (true) {
      const l = 2 * i + 1
      if (l >= n) break
      const r = l + 1
      const c = r < n && this.before(heap[r]!, heap[l]!) ? r : l
      const child = heap[c]!
      if (!this.before(child, entry)) break
      heap[i] = child
      child.index = i
      i = c
    }
    heap[i] = entry
    entry.index = i
  }
}

/** Timers round to whole milliseconds: wake never before the entry is due. */
const millisUntil = (clock: Clock.Clock, at: bigint): number =>
  Math.max(0, Math.ceil(Number(at - clock.unsafeCurrentTimeNanos()) / 1e6))

/**
 * The scheduler of a clock that has one (Effect's `scheduler()`, which the `Clock` interface does not declare:
 * the live clock's is `setTimeout`); `undefined` for any other clock (`TestClock`), or one whose scheduler is
 * not at hand synchronously.
 */
const schedulerOf = (clock: Clock.Clock): Clock.ClockScheduler | undefined => {
  const scheduler = (clock as Partial<{ scheduler: () => Effect.Effect<Clock.ClockScheduler> }>).scheduler
  if (typeof scheduler !== "function") return undefined
  const exit = Effect.runSyncExit(scheduler.call(clock))
  return Exit.isSuccess(exit) ? exit.value : undefined
}

const interruptible = (runtime: Runtime.Runtime<never>): Runtime.Runtime<never> =>
  RuntimeFlags.isEnabled(runtime.runtimeFlags, RuntimeFlags.Interruption)
    ? runtime
    : Runtime.make({
      context: runtime.context,
      fiberRefs: runtime.fiberRefs,
      runtimeFlags: RuntimeFlags.enable(runtime.runtimeFlags, RuntimeFlags.Interruption)
    })

const byClock = new WeakMap<Clock.Clock, Timers>()

const timersOf = (clock: Clock.Clock): Timers => {
  let timers = byClock.get(clock)
  if (timers === undefined) byClock.set(clock, timers = new Timers(clock))
  return timers
}

/**
 * Calls `fire` once `clock` reaches `atNanos`, unless cancelled first. A sleeper fiber, when one has to be
 * started, runs on `runtime` (the caller's scheduler and services).
 *
 * @internal
 */
export const schedule = (
  clock: Clock.Clock,
  runtime: Runtime.Runtime<never>,
  atNanos: bigint,
  fire: () => void
): Entry => timersOf(clock).schedule(runtime, atNanos, fire)

/** Cancels an entry (nothing happens if it already fired). @internal */
export const cancel = (clock: Clock.Clock, entry: Entry): void => timersOf(clock).cancel(entry)

/** The fiber currently serving `clock`'s timer, if any (for tests). @internal */
export const sleeperOf = (clock: Clock.Clock): Fiber.RuntimeFiber<void> | undefined => timersOf(clock).current()
