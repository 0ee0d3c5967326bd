import { Input } from "@rein/core"
import { Clock, Duration, Effect } from "effect"

/**
 * A clock that schedules callbacks itself, as Effect's live clock and the CLI's virtual clock do: no fiber
 * sleeps on it. `liveLike` makes it also drop a callback asked for more than the longest timer, as Effect's
 * `setTimeout` scheduler does ("never").
 */
export class CallbackClock implements Clock.Clock {
  readonly [Clock.ClockTypeId]: Clock.ClockTypeId = Clock.ClockTypeId
  now = 0
  /** Callbacks armed on it, in all. */
  scheduled = 0
  /** The longest duration a callback was asked for. */
  longest = 0
  private seq = 0
  private tasks: Array<{ at: number; seq: number; task: () => void; live: boolean }> = []
  constructor(private readonly options: { readonly liveLike?: boolean } = {}) {}
  unsafeCurrentTimeMillis() {
    return this.now
  }
  unsafeCurrentTimeNanos() {
    return BigInt(this.now) * 1_000_000n
  }
  readonly currentTimeMillis = Effect.sync(() => this.now)
  readonly currentTimeNanos = Effect.sync(() => this.unsafeCurrentTimeNanos())
  sleep(): Effect.Effect<void> {
    return Effect.die("the timer must not sleep on a clock with its own scheduler")
  }
  scheduler(): Effect.Effect<Clock.ClockScheduler> {
    return Effect.succeed({
      unsafeSchedule: (task, duration) => {
        const millis = Duration.toMillis(duration)
        this.scheduled += 1
        this.longest = Math.max(this.longest, millis)
        if (this.options.liveLike === true && millis > Input.MAX_TIMER_MILLIS) return () => false
        const entry = { at: this.now + millis, seq: this.seq++, task, live: true }
        this.tasks.push(entry)
        return () => {
          const was = entry.live
          entry.live = false
          return was
        }
      }
    })
  }
  /** Tasks armed and not cancelled nor run. */
  get armed(): number {
    return this.tasks.filter((t) => t.live).length
  }
  /** Moves the clock on by `millis`, running every callback due on the way, in due then scheduling order. */
  advance(millis: number): void {
    const until = this.now + millis
    for (;;) {
      const due = this.tasks.filter((t) => t.live && t.at <= until).sort((a, b) => a.at - b.at || a.seq - b.seq)[0]
      if (due === undefined) break
      due.live = false
      this.now = Math.max(this.now, due.at)
      due.task()
    }
    this.now = until
  }
}
