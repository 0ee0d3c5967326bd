/**
 * The simulation's virtual clock schedules plain callbacks (what core's one timer per clock runs on) in the
 * same order as fibers sleeping as long: by wake time, then by registration; a callback of no time is a task,
 * as `Effect.yieldNow` is. The report's byte-for-byte determinism depends on that order.
 */
import { describe, expect, it } from "@effect/vitest"
import { Cause, Duration, Effect, Exit, Fiber } from "effect"
import * as Virtual from "../src/internal/virtual.js"

/** Runs `f` with the simulation's clock, in virtual time; what it logged, in order. */
const simulate = (f: (clock: Virtual.VirtualClock, log: (s: string) => void) => Effect.Effect<void>) =>
  Effect.gen(function*() {
    const logged: Array<string> = []
    const log = (s: string) => {
      logged.push(s)
    }
    const { exit } = yield* Virtual.run(
      Effect.flatMap(Effect.clock, (clock) => f(clock as Virtual.VirtualClock, log))
    )
    expect(Exit.isSuccess(exit)).toBe(true)
    return logged
  })

describe("the virtual clock's callbacks", () => {
  it.effect("interleave with sleeps by wake time, then registration; a cancelled one never runs", () =>
    Effect.gen(function*() {
      const logged = yield* simulate((clock, log) =>
        Effect.gen(function*() {
          const at = (name: string) => () => log(`${name}@${clock.unsafeCurrentTimeMillis()}`)
          clock.unsafeSchedule(at("callback 200"), Duration.millis(200))
          const sleeper = yield* Effect.fork(Effect.andThen(Effect.sleep("100 millis"), Effect.sync(at("sleep 100"))))
          yield* Effect.yieldNow() // the fiber starts, and its sleep is registered
          clock.unsafeSchedule(at("callback 100"), Duration.millis(100))
          const cancel = clock.unsafeSchedule(at("never"), Duration.millis(50))
          expect(cancel()).toBe(true)
          yield* Effect.sleep("300 millis")
          yield* Effect.fromFiber(sleeper)
          // Cancelling after it ran says so.
          const ran = clock.unsafeSchedule(at("soon"), Duration.millis(1))
          yield* Effect.sleep("2 millis")
          expect(ran()).toBe(false)
        })
      )
      expect(logged).toEqual(["sleep 100@100", "callback 100@100", "callback 200@200", "soon@301"])
    }))

  it.effect("a callback of no time runs as a task, before time moves", () =>
    Effect.gen(function*() {
      const logged = yield* simulate((clock, log) =>
        Effect.gen(function*() {
          clock.unsafeSchedule(() => log(`later@${clock.unsafeCurrentTimeMillis()}`), Duration.millis(10))
          clock.unsafeSchedule(() => log(`now@${clock.unsafeCurrentTimeMillis()}`), Duration.zero)
          yield* Effect.sleep("20 millis")
        })
      )
      expect(logged).toEqual(["now@0", "later@10"])
    }))

  it.effect("is what `scheduler()` gives (as Effect's live clock's does)", () =>
    Effect.gen(function*() {
      const logged = yield* simulate((clock) =>
        Effect.map(clock.scheduler(), (scheduler) => expect(scheduler).toBe(clock))
      )
      expect(logged).toEqual([])
    }))
})

describe("the virtual clock's sleeps", () => {
  // A cancelled sleeper is skipped, not woken: time never moves to it (seen when the simulation stalls after it).
  it.effect("an interrupted sleep lets go of its sleeper (time does not move to it); an uninterruptible one is not cut", () =>
    Effect.gen(function*() {
      const { exit, virtualMillis } = yield* Virtual.run(
        Effect.gen(function*() {
          const sleeping = yield* Effect.fork(Effect.sleep("10 seconds"))
          const masked = yield* Effect.fork(Effect.uninterruptible(Effect.sleep("2 seconds")))
          yield* Effect.sleep("1 second")
          const interrupted = yield* Fiber.interrupt(sleeping)
          expect(Exit.isInterrupted(interrupted)).toBe(true)
          // Interrupting the uninterruptible sleep waits for it to end.
          yield* Fiber.interrupt(masked)
          expect(yield* Effect.clockWith((clock) => clock.currentTimeMillis)).toBe(2_000)
          // Nothing can wake this: the simulation stalls, at the time of the last sleeper that woke.
          yield* Effect.never
        })
      )
      expect(Exit.isFailure(exit) && Cause.pretty(exit.cause)).toContain("the simulation stalled")
      expect(virtualMillis).toBe(2_000)
    }))
})

describe("a long simulation", () => {
  it.effect("stays interruptible: it yields between slices, and interrupting the run interrupts the simulation", () =>
    Effect.gen(function*() {
      // A simulation that never ends (a sleeper woken forever). The loop once ran it in one synchronous step:
      // nothing else ever ran again, a SIGTERM included.
      let wakes = 0
      let interrupted = false
      const endless = Effect.forever(Effect.zipRight(Effect.sleep("1 second"), Effect.sync(() => void wakes++))).pipe(
        Effect.onInterrupt(() => Effect.sync(() => void (interrupted = true)))
      )
      const fiber = yield* Effect.fork(Virtual.run(endless))
      while (wakes === 0) yield* Effect.yieldNow()
      yield* Fiber.interrupt(fiber)
      expect(interrupted).toBe(true)
    }))
})

describe("the fiber parked for the life of the process (it keeps Effect's and the clock's hidden classes between runs)", () => {
  it.effect("sleeps on a clock of its own: a simulation neither wakes it nor moves its clock", () =>
    Effect.gen(function*() {
      const { clock, fiber } = Virtual.parked
      const logged = yield* simulate((_, log) =>
        Effect.zipRight(Effect.sleep("2 hours"), Effect.sync(() => log("simulation woke")))
      )
      expect(logged).toEqual(["simulation woke"])
      expect(fiber.unsafePoll()).toBe(null)
      expect(clock.unsafeCurrentTimeMillis()).toBe(0)
    }))

  it("keeps an idle instance of the scheduler `Effect.runSync` runs on (the run loop checks its class's map)", () => {
    const used = Effect.runSync(Effect.withFiberRuntime((fiber) => Effect.succeed(fiber.currentScheduler)))
    expect(Virtual.parked.kept.some((k) => k !== used && Object.getPrototypeOf(k) === Object.getPrototypeOf(used)))
      .toBe(true)
  })
})
