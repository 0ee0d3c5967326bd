/**
 * The pulls of a committed stream, bounded by its attempt's end. Each pull used to race a sleep
 * (`Effect.timeoutOption`): two forked fibers and a timer per delta, most of what a streamed delta cost. Here
 * the stream has one entry in the clock's one timer (`timers.ts`), set once, and its pulls run in a reader
 * fiber, started from references forked once (`fork.ts`), that pulls on while the pulls complete: a provider
 * that emits one part per chunk (the `@effect/ai` models) paid a fork per delta, and now pays one per
 * `READ_AHEAD` buffered deltas.
 *
 * The reader stops after a failed pull (the stream's end included), once `READ_AHEAD` exits wait to be taken
 * (never more are held: the read-ahead is bounded), and once the end has come; a consumer waiting for the next
 * pull is handed its exit at once. What the consumer sees is what it saw when each pull ran on its request:
 * the same exits in the same order, and `None` as soon as the end has come before it asks, even when exits
 * pulled in time wait in the buffer (they are dropped). When the end comes, the reader is interrupted in the
 * timer's step, and a waiting consumer resumes with `None` once the reader ended (within the teardown grace);
 * the same when the consumer asks after the end while the reader still runs, when the consumer is interrupted
 * while it waits, and when the stream is stopped while a pull runs ahead of the consumer.
 *
 * Two ends bound it. The hard end (the request's deadline) covers everything, the consumer's own time included.
 * The attempt's end (its timeout) counts only the time the stream waits on the provider: it is paused while
 * the consumer holds what it was handed (from a hand-over to its next ask, and from the commit to its first
 * ask), so it moves later by each such hold, up to the hard end. A slow consumer does not time out the
 * provider's attempt; a provider that stalls while the consumer waits still does.
 *
 * @internal
 */
import { Clock, Context, Effect, Exit, FiberId, Option, RuntimeFlags } from "effect"
import type { Fiber } from "effect"
import { endsWithin } from "./attempt.js"
import * as Fork from "./fork.js"
import * as Timers from "./timers.js"

type Resume<A, E> = (effect: Effect.Effect<Option.Option<Exit.Exit<A, E>>>) => void

const EXPIRED = Effect.succeed(Option.none<never>())

/** How many pulled exits wait to be taken at most: the reader stops pulling at this many. @internal */
export const READ_AHEAD = 32

/** The bounded pulls of one stream (make with `make`; run `stop` when the stream ends). @internal */
export class BoundedPull<A, E> {
  private expired = false
  /** The exits pulled and not yet taken, from `head` on, oldest first; a failure is always the last. */
  private readonly ready: Array<Exit.Exit<A, E>> = []
  private head = 0
  /** The reader, while it runs (not one that ended before its fork returned). */
  private reader: Fiber.RuntimeFiber<void> | undefined = undefined
  /** The consumer waiting for the next exit. */
  private resume: Resume<A, E> | undefined = undefined
  private entry: Timers.Entry
  /** When the timer is due: the attempt's end, or the hard end while the consumer holds a delta. */
  private timerNanos: bigint
  /** Since when the consumer holds what it was handed (`undefined`: it waits, or asked and is being served). */
  private heldSince: bigint | undefined
  /** One pull, then the next while the reader may go on (see `pulled`). */
  private readonly read: Effect.Effect<void>

  constructor(
    private readonly clock: Clock.Clock,
    private readonly site: Fork.Site,
    pull: Effect.Effect<A, E>,
    /** The attempt's end, as moved by the consumer's holds so far (never past `hardEndNanos`). */
    private endsNanos: bigint,
    private readonly hardEndNanos: bigint,
    private readonly graceMillis: number
  ) {
    this.read = Effect.flatMap(Effect.exit(pull), this.pulled)
    this.heldSince = endsNanos < hardEndNanos ? clock.unsafeCurrentTimeNanos() : undefined
    this.timerNanos = endsNanos
    this.entry = Timers.schedule(clock, site.runtime, endsNanos, this.fire)
  }

  /** One pull: its exit, or `None` once the end has come (before the consumer asks, or while it waits). */
  readonly next: Effect.Effect<Option.Option<Exit.Exit<A, E>>> = Effect.suspend(() => {
    if (this.heldSince !== undefined) this.unhold(this.heldSince)
    if (this.isOver()) return this.over()
    if (this.head < this.ready.length) return Effect.succeed(Option.some(this.take()))
    if (this.reader === undefined) {
      // The reader runs at once, until its first pull that suspends, or until it stops.
      const fiber = this.site.fork(this.read)
      if (fiber.unsafePoll() === null) {
        this.reader = fiber
        fiber.addObserver(this.ended)
      }
      if (this.head < this.ready.length) return Effect.succeed(Option.some(this.take()))
      if (this.reader === undefined) return Effect.dieMessage("BoundedPull: the reader ended without a pull")
    }
    return Effect.async<Option.Option<Exit.Exit<A, E>>>((resume) => {
      this.resume = resume
      return Effect.suspend(() => this.cancel())
    })
  })

  /** Stops the timer, drops what was pulled ahead, and ends a pull still running (within the grace). */
  readonly stop: Effect.Effect<void> = Effect.suspend(() => {
    Timers.cancel(this.clock, this.entry)
    this.drop()
    return this.endReader()
  })

  /** A pull's exit: to the waiting consumer, else kept; the next pull follows unless the reader must stop. */
  private readonly pulled = (exit: Exit.Exit<A, E>): Effect.Effect<void> => {
    const resume = this.resume
    if (resume !== undefined) {
      this.resume = undefined
      this.hold()
      resume(Effect.succeed(Option.some(exit)))
    } else {
      this.ready.push(exit)
    }
    return Exit.isFailure(exit) || this.ready.length - this.head >= READ_AHEAD || this.isOver()
      ? Effect.void
      : this.read
  }

  /** The reader ended (once it had suspended): a consumer still waiting (it was not interrupted by us) is told. */
  private readonly ended = (exit: Exit.Exit<void>): void => {
    this.reader = undefined
    const resume = this.resume
    if (resume === undefined) return
    this.resume = undefined
    resume(Exit.isFailure(exit) ? Effect.succeed(Option.some(Exit.failCause(exit.cause))) : this.next)
  }

  /**
   * The timer is due: the end came, and the reader (if any) is interrupted, and a waiting consumer resumes once
   * it ended (or the grace passed). Unless the attempt's end is paused (the consumer holds a delta: only the hard
   * end is due) or moved later by a hold: then the timer is set again for the end that is due.
   */
  private readonly fire = (): void => {
    const now = this.clock.unsafeCurrentTimeNanos()
    const due = this.heldSince === undefined ? this.endsNanos : this.hardEndNanos
    if (now < due) return this.rearm(due)
    this.expired = true
    const resume = this.resume
    this.resume = undefined
    const ending = this.endReader()
    if (resume !== undefined) resume(Effect.as(ending, Option.none()))
  }

  private isOver(): boolean {
    return this.expired ||
      this.clock.unsafeCurrentTimeNanos() >= (this.heldSince === undefined ? this.endsNanos : this.hardEndNanos)
  }

  /** The consumer was handed a delta: the attempt's end is paused until it asks again (none to pause at the hard end). */
  private hold(): void {
    if (this.endsNanos < this.hardEndNanos) this.heldSince = this.clock.unsafeCurrentTimeNanos()
  }

  /** The consumer asks again: the attempt's end moves later by its hold, up to the hard end, and is due again. */
  private unhold(since: bigint): void {
    this.heldSince = undefined
    const moved = this.endsNanos + (this.clock.unsafeCurrentTimeNanos() - since)
    this.endsNanos = moved < this.hardEndNanos ? moved : this.hardEndNanos
    // The timer waits for the hard end when it came due during the hold: it is due earlier now.
    if (this.timerNanos > this.endsNanos && !this.expired) this.rearm(this.endsNanos)
  }

  private rearm(atNanos: bigint): void {
    Timers.cancel(this.clock, this.entry)
    this.timerNanos = atNanos
    this.entry = Timers.schedule(this.clock, this.site.runtime, atNanos, this.fire)
  }

  /** The consumer asked after the end: `None`, once a reader still running ended (within the grace). */
  private over(): Effect.Effect<Option.Option<Exit.Exit<A, E>>> {
    this.expired = true
    this.drop()
    return this.reader === undefined ? EXPIRED : Effect.as(this.endReader(), Option.none())
  }

  /** The consumer was interrupted while it waited: the reader is interrupted too, and awaited within the grace. */
  private cancel(): Effect.Effect<void> {
    if (this.resume === undefined) return Effect.void
    this.resume = undefined
    return this.endReader()
  }

  /**
   * Interrupts the reader, if one runs: the effect waits until it ended, at most the grace. It is let go at
   * once (no later wait is for it again, and its end resumes no one): one that ignores interruption is left
   * behind after one grace, as an attempt's fiber is.
   */
  private endReader(): Effect.Effect<void> {
    const reader = this.reader
    if (reader === undefined) return Effect.void
    this.reader = undefined
    reader.removeObserver(this.ended)
    reader.unsafeInterruptAsFork(FiberId.none)
    return Effect.asVoid(endsWithin(reader, this.graceMillis))
  }

  private take(): Exit.Exit<A, E> {
    this.hold()
    const exit = this.ready[this.head++]!
    if (this.head === this.ready.length) this.drop()
    return exit
  }

  private drop(): void {
    this.ready.length = 0
    this.head = 0
  }
}

/**
 * The bounded pulls of `pull` until `endsNanos` (the attempt's end, paused while the consumer holds a delta)
 * and never past `hardEndNanos` (the deadline), on the calling fiber's clock, services and references.
 *
 * @internal
 */
export const make = <A, E>(
  pull: Effect.Effect<A, E>,
  endsNanos: bigint,
  hardEndNanos: bigint,
  graceMillis: number
): Effect.Effect<BoundedPull<A, E>> =>
  Effect.withFiberRuntime((self, status) =>
    Effect.succeed(
      new BoundedPull(
        Context.get(self.currentDefaultServices, Clock.Clock),
        Fork.siteOf(self, RuntimeFlags.enable(status.runtimeFlags, RuntimeFlags.Interruption)),
        pull,
        endsNanos < hardEndNanos ? endsNanos : hardEndNanos,
        hardEndNanos,
        graceMillis
      )
    )
  )
