/**
 * The pulls of a committed stream, bounded by its attempt's end. Each pull used to race a sleep
 * (`Effect.timeoutOption`): two forked fibers and a timer per delta, most of what a streamed delta cost. Here
 * the stream has one entry in the clock's one timer (`timers.ts`), set once; each pull runs in a fiber of its
 * own, started at once from references forked once (`fork.ts`): a pull that completes without suspending (a buffered delta)
 * costs that fork and nothing else, one that suspends a wait on the fiber. When the end comes first, the
 * pull's fiber is interrupted in the timer's step and the wait resumes with `None` once the fiber ended
 * (within the teardown grace).
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

/** The bounded pulls of one stream (make with `make`; `stop` it when the stream ends). @internal */
export class BoundedPull<A, E> {
  private expired = false
  private fiber: Fiber.RuntimeFiber<Exit.Exit<A, E>> | undefined = undefined
  private resume: Resume<A, E> | undefined = undefined
  private readonly entry: Timers.Entry
  private readonly work: Effect.Effect<Exit.Exit<A, E>>

  constructor(
    private readonly clock: Clock.Clock,
    private readonly site: Fork.Site,
    pull: Effect.Effect<A, E>,
    private readonly endsNanos: bigint,
    private readonly graceMillis: number
  ) {
    this.work = Effect.exit(pull)
    this.entry = Timers.schedule(clock, site.runtime, endsNanos, this.fire)
  }

  /** One pull: its exit, or `None` once the end has come (before the pull, or while it ran). */
  readonly next: Effect.Effect<Option.Option<Exit.Exit<A, E>>> = Effect.suspend(() => {
    if (this.expired || this.clock.unsafeCurrentTimeNanos() >= this.endsNanos) return EXPIRED
    const fiber = this.site.fork(this.work)
    const polled = fiber.unsafePoll()
    if (polled !== null) return Effect.succeed(Option.some(Exit.flatten(polled)))
    return Effect.async<Option.Option<Exit.Exit<A, E>>>((resume) => {
      this.fiber = fiber
      this.resume = resume
      // A fiber that already ended calls `onExit` at once.
      fiber.addObserver(this.onExit)
      return Effect.suspend(() => this.cancel(fiber))
    })
  })

  /** Stops the timer (the stream ended). */
  stop(): void {
    Timers.cancel(this.clock, this.entry)
  }

  private readonly onExit = (exit: Exit.Exit<Exit.Exit<A, E>>): void => {
    const resume = this.release()
    if (resume !== undefined) resume(Effect.succeed(Option.some(Exit.flatten(exit))))
  }

  /** The end came: the running pull (if any) is interrupted, and its wait resumes once it ended. */
  private readonly fire = (): void => {
    this.expired = true
    const fiber = this.fiber
    const resume = this.release()
    if (fiber === undefined || resume === undefined) return
    fiber.unsafeInterruptAsFork(FiberId.none)
    resume(Effect.as(endsWithin(fiber, this.graceMillis), Option.none()))
  }

  /** The caller was interrupted while a pull ran: the pull is interrupted too, and awaited within the grace. */
  private cancel(fiber: Fiber.RuntimeFiber<Exit.Exit<A, E>>): Effect.Effect<void> {
    if (this.release() === undefined) return Effect.void
    fiber.unsafeInterruptAsFork(FiberId.none)
    return Effect.asVoid(endsWithin(fiber, this.graceMillis))
  }

  private release(): Resume<A, E> | undefined {
    const resume = this.resume
    if (this.fiber !== undefined) this.fiber.removeObserver(this.onExit)
    this.fiber = undefined
    this.resume = undefined
    return resume
  }
}

/**
 * The bounded pulls of `pull` until `endsNanos`, on the calling fiber's clock, services and references.
 *
 * @internal
 */
export const make = <A, E>(
  pull: Effect.Effect<A, E>,
  endsNanos: bigint,
  graceMillis: number
): Effect.Effect<BoundedPull<A, E>> =>
  Effect.withFiberRuntime((self, status) =>
    Effect.succeed(
      new BoundedPull(
        Context.get(self.currentDefaultServices, Clock.Clock),
        Fork.siteOf(self, RuntimeFlags.enable(status.runtimeFlags, RuntimeFlags.Interruption)),
        pull,
        endsNanos,
        graceMillis
      )
    )
  )
