/**
 * One timer per clock for every bound the executor sets (attempt timeouts, teardown graces): the deadlines
 * in order, served by a single sleeping fiber, instead of a timer fiber per attempt.
 *
 * The deadlines are kept in a run (a linked list in due order) and a heap. Bounds of one length set one after
 * another come due in the order they were set (a batch's attempt timeouts, a burst's deadlines): each is
 * appended to the run and, as nearly all are cancelled long before they are due, unlinked from it, both in
 * constant time. Only an entry due before the run's last goes into the heap (`log n`), as every entry did.
 *
 * The fiber sleeps on the clock it was made for (so `TestClock` drives it in tests, and a virtual clock in
 * simulations) until the earliest deadline, fires every entry that is due, and sleeps again. It is
 * re-armed only when a new entry is due earlier than it would wake, and it ends as soon as no entry is
 * left: after a run, no fiber and no timer of Rein's stays behind. Entries due at the same instant fire in
 * the order they were scheduled.
 *
 * A clock that schedules callbacks itself (one with Effect's `scheduler()`: the live clock, whose scheduler is
 * `setTimeout`, and the CLI's virtual clock) needs no fiber for it: the entries are served by one callback on the
 * clock's scheduler instead, armed, re-armed and cancelled exactly as the fiber's sleep would be. When requests
 * do not overlap, every attempt armed and disarmed the timer, and the sleeper was a fork and an interruption.
 *
 * JavaScript runs one fiber at a time: every operation here is a synchronous step.
 *
 * @internal
 */
import type { Clock, Fiber } from "effect"
import { Duration, Effect, Exit, FiberId, Runtime, RuntimeFlags } from "effect"
import { clampMillis } from "./duration.js"

/**
 * A scheduled callback; `cancel` it when the thing it bounds ended first. A bound that lives in an object of
 * its own (an attempt's wait) can be the entry itself: no entry object and no callback closure per bound.
 * Make entries with a class, never an object literal: V8 pretenures a literal's allocation site once some of
 * its objects outlive a young-generation collection (an entry lives as long as its attempt), and a pretenured
 * entry, dead in the old generation, kept its callback, and through it the attempt's fiber, alive until the
 * next full collection.
 *
 * @internal
 */
export interface Entry {
  /** When it is due: nanoseconds after the timer's origin, as a number (see `Timers`). */
  key: number
  seq: number
  /** Position in the heap, `IN_RUN` while in the run, -1 once fired or cancelled (or before it is scheduled). */
  index: number
  /** Its neighbours in the run. */
  prev: Entry | undefined
  next: Entry | undefined
  fire(): void
}

/** `Entry.index` of an entry in the run. */
const IN_RUN = -2

/** An entry for a callback (`schedule`). */
class Callback implements Entry {
  key = 0
  seq = 0
  index = -1
  prev: Entry | undefined = undefined
  next: Entry | undefined = undefined
  constructor(readonly fire: () => void) {}
}

/**
 * Deadlines are kept as numbers: nanoseconds after the clock's reading when this timer was made. Comparing and
 * moving them down the heap then costs no `bigint` work (every insert and cancel compares a few of them), and a
 * bound set relative to now allocates one `bigint` fewer (the offset is added as a number). Exact for 104 days
 * after the origin (2^53 ns); later, ties may break a few nanoseconds apart.
 */
class Timers {
  private readonly heap: Array<Entry> = []
  /** The run: entries in due order (then scheduling order), first to last. */
  private first: Entry | undefined = undefined
  private last: Entry | undefined = undefined
  private seq = 0
  /** Whether a sleeper is serving the heap (it may have no fiber yet: see `arm`). */
  private armed = false
  private sleeper: Fiber.RuntimeFiber<void> | undefined = undefined
  /** Which sleeper is current: one that wakes after it was replaced or disarmed does nothing. */
  private generation = 0
  /** When the current sleeper wakes (a key); meaningful only while `armed`. */
  private wakesAt = 0
  private readonly origin: bigint
  /** The clock's own scheduler, when it has one: then the entries are served by a callback, not a fiber. */
  private readonly direct: Clock.ClockScheduler | undefined
  /** Cancels the callback armed on `direct`. */
  private cancelDirect: Clock.CancelToken | undefined = undefined

  constructor(private readonly clock: Clock.Clock) {
    this.origin = clock.unsafeCurrentTimeNanos()
    this.direct = schedulerOf(clock)
  }

  /** The clock's reading now, as a key. */
  now(): number {
    return Number(this.clock.unsafeCurrentTimeNanos() - this.origin)
  }

  keyOf(atNanos: bigint): number {
    return Number(atNanos - this.origin)
  }

  schedule(runtime: Runtime.Runtime<never>, key: number, entry: Entry): void {
    entry.key = key
    entry.seq = this.seq++
    const last = this.last
    if (last === undefined || key >= last.key) {
      // Due no earlier than the run's last (and scheduled after it): appended.
      entry.index = IN_RUN
      entry.prev = last
      entry.next = undefined
      if (last === undefined) this.first = entry
      else last.next = entry
      this.last = entry
    } else {
      entry.index = this.heap.length
      this.heap.push(entry)
      this.up(entry.index)
    }
    if (!this.armed || key < this.wakesAt) this.arm(runtime)
  }

  /** The entry due first (`undefined`: none). */
  private top(): Entry | undefined {
    const first = this.first
    const root = this.heap[0]
    return first === undefined ? root : root === undefined || this.before(first, root) ? first : root
  }

  private unlink(entry: Entry): void {
    entry.index = -1
    const { next, prev } = entry
    if (prev === undefined) this.first = next
    else prev.next = next
    if (next === undefined) this.last = prev
    else next.prev = prev
    entry.prev = undefined
    entry.next = undefined
  }

  /** Takes an entry out, wherever it is. */
  private take(entry: Entry): void {
    if (entry.index === IN_RUN) this.unlink(entry)
    else this.remove(entry.index)
  }

  private isEmpty(): boolean {
    return this.first === undefined && this.heap.length === 0
  }

  /** The fiber serving the heap, if any (for tests). */
  current(): Fiber.RuntimeFiber<void> | undefined {
    return this.sleeper
  }

  cancel(entry: Entry): void {
    if (entry.index === -1) return
    this.take(entry)
    if (this.isEmpty()) this.disarm()
  }

  private arm(runtime: Runtime.Runtime<never>): void {
    this.disarm()
    const top = this.top()!
    const generation = ++this.generation
    this.armed = true
    this.wakesAt = top.key
    if (this.direct !== undefined) return this.callAt(this.direct, generation, top.key)
    // The sleeper must stay interruptible (it may be armed from a finalizer), and it starts at once: a clock
    // whose sleep ends synchronously (a test clock, an entry already due) may fire, empty the heap and end
    // before `runFork` returns. Only a sleeper still current is kept.
    const fiber = Runtime.runFork(interruptible(runtime))(this.sleepUntil(generation, top.key))
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

  /**
   * Timers round to whole milliseconds: wake never before the entry is due. A wait is clamped to the longest
   * timer: an entry due later is not fired when it wakes (it is not due), and it sleeps again for what remains.
   */
  private millisUntil(key: number): number {
    return clampMillis(Math.ceil((key - this.now()) / 1e6))
  }

  /** `sleepUntil`, as a callback on the clock's own scheduler (no fiber). */
  private callAt(direct: Clock.ClockScheduler, generation: number, key: number): void {
    this.cancelDirect = direct.unsafeSchedule(() => {
      if (generation !== this.generation) return
      this.cancelDirect = undefined
      this.fireDue(this.now())
      // A fired callback may have emptied the entries (disarming this callback) or scheduled more.
      if (generation !== this.generation) return
      const top = this.top()
      if (top === undefined) {
        this.armed = false
        this.generation++
        return
      }
      this.wakesAt = top.key
      this.callAt(direct, generation, top.key)
    }, Duration.millis(this.millisUntil(key)))
  }

  /** Sleeps until `at`, then fires what is due and sleeps until the next entry, until none is left. */
  private sleepUntil(generation: number, key: number): Effect.Effect<void> {
    return Effect.flatMap(this.clock.sleep(Duration.millis(this.millisUntil(key))), () =>
      Effect.suspend(() => {
        // Replaced by an earlier sleeper, or disarmed: this fiber is done.
        if (generation !== this.generation) return Effect.void
        this.fireDue(this.now())
        // A fired callback may have emptied the heap (disarming this fiber) or scheduled more.
        if (generation !== this.generation) return Effect.void
        const top = this.top()
        if (top === undefined) {
          this.armed = false
          this.sleeper = undefined
          this.generation++
          return Effect.void
        }
        this.wakesAt = top.key
        return this.sleepUntil(generation, top.key)
      }))
  }

  private fireDue(now: number): void {
    while (true) {
      const entry = this.top()
      if (entry === undefined || entry.key > now) return
      this.take(entry)
      try {
        entry.fire()
      } catch {
        // A callback that throws must not stop the timer that every other bound depends on.
      }
    }
  }

  private before(a: Entry, b: Entry): boolean {
    return a.key < b.key || (a.key === b.key && a.seq < b.seq)
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
): Entry => {
  const timers = timersOf(clock)
  const entry = new Callback(fire)
  timers.schedule(runtime, timers.keyOf(atNanos), entry)
  return entry
}

/** A bound's length: NaN and negatives are 0 (not clamped above: see `millisUntil`). */
const atLeastZero = (millis: number): number => (millis > 0 ? millis : 0)

/**
 * Calls `entry.fire()` once `clock` is `millis` (at least 0, rounded up to a nanosecond) past now, unless
 * cancelled first: `schedule` for an entry the caller made. Not clamped: a bound past the longest timer fires
 * when it is due (the sleeper's waits are clamped, not the entries).
 *
 * @internal
 */
export const scheduleIn = (
  clock: Clock.Clock,
  runtime: Runtime.Runtime<never>,
  millis: number,
  entry: Entry
): void => {
  const timers = timersOf(clock)
  timers.schedule(runtime, timers.now() + Math.ceil(atLeastZero(millis) * 1e6), entry)
}

/**
 * `scheduleIn`, counted from the reading `fromNanos` (an attempt's start) rather than from now: a bound due
 * `millis` after the thing it bounds started, whatever ran since (and no reading of the clock here).
 *
 * @internal
 */
export const scheduleFrom = (
  clock: Clock.Clock,
  runtime: Runtime.Runtime<never>,
  fromNanos: bigint,
  millis: number,
  entry: Entry
): void => {
  const timers = timersOf(clock)
  timers.schedule(runtime, timers.keyOf(fromNanos) + Math.ceil(atLeastZero(millis) * 1e6), entry)
}

/** `scheduleIn` for a callback. @internal */
export const after = (clock: Clock.Clock, runtime: Runtime.Runtime<never>, millis: number, fire: () => void): Entry => {
  const entry = new Callback(fire)
  scheduleIn(clock, runtime, millis, entry)
  return entry
}

/** Cancels an entry (nothing happens if it already fired). @internal */
export const cancel = (clock: Clock.Clock, entry: Entry): void => timersOf(clock).cancel(entry)

/** The fiber currently serving `clock`'s timer, if any (for tests). @internal */
export const sleeperOf = (clock: Clock.Clock): Fiber.RuntimeFiber<void> | undefined => timersOf(clock).current()
