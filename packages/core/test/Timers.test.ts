import { describe, expect, it } from "@effect/vitest"
import { Fake, Gate, Health, Rein } from "@rein/core"
import type { Outcome, Provider } from "@rein/core"
import {
  Cause,
  Effect,
  Either,
  Exit,
  FastCheck,
  Fiber,
  FiberRef,
  HashMap,
  Layer,
  Logger,
  LogLevel,
  Option,
  RuntimeFlags,
  RuntimeFlagsPatch,
  Supervisor,
  TestClock,
  TestContext
} from "effect"
import * as Attempt from "../src/internal/attempt.js"
import * as Timers from "../src/internal/timers.js"
import { catalog, contract, endpoint } from "./fixtures.js"
import { CallbackClock } from "./support/callbackClock.js"

const cat = catalog(endpoint("a"))
const request = { prompt: "p", inputTokens: 10, maxOutputTokens: 10 }

/** Schedules a callback on the fiber's clock and runtime, the way the executor does. */
const schedule = (atMillis: number, fire: () => void) =>
  Effect.flatMap(Effect.clock, (clock) =>
    Effect.map(
      Effect.runtime<never>(),
      (runtime) => Timers.schedule(clock, runtime, BigInt(atMillis) * 1_000_000n, fire)
    ))

/** Counts the fibers started under it (the clock's sleeper included: it runs on the caller's runtime). */
class Starts extends Supervisor.AbstractSupervisor<number> {
  count = 0
  override get value() {
    return Effect.sync(() => this.count)
  }
  override onStart() {
    this.count++
  }
}

describe("the timer shared by every bound", () => {
  it.effect("entries fire in time order, ties in scheduling order, cancelled ones never", () =>
    Effect.gen(function*() {
      const fired: Array<string> = []
      yield* schedule(300, () => fired.push("c"))
      yield* schedule(100, () => fired.push("a"))
      const cancelled = yield* schedule(200, () => fired.push("never"))
      yield* schedule(100, () => fired.push("b"))
      const clock = yield* Effect.clock
      Timers.cancel(clock, cancelled)
      yield* TestClock.adjust(99)
      expect(fired).toEqual([])
      yield* TestClock.adjust(1)
      expect(fired).toEqual(["a", "b"])
      yield* TestClock.adjust(1_000)
      expect(fired).toEqual(["a", "b", "c"])
    }))

  // Entries set one after another with the same length go to the run (a list in due order), the others to the
  // heap: whatever mix of the two, they fire in due order, then in scheduling order, and the cancelled never.
  it("entries fire in due order, then scheduling order, wherever they were kept, and cancelled ones never", async () => {
    const plan = FastCheck.array(
      FastCheck.record({ at: FastCheck.integer({ min: 1, max: 40 }), cancel: FastCheck.boolean() }),
      { maxLength: 40 }
    )
    await FastCheck.assert(
      FastCheck.asyncProperty(plan, (entries) =>
        Effect.runPromise(
          Effect.gen(function*() {
            const clock = yield* Effect.clock
            const fired: Array<number> = []
            const scheduled: Array<Timers.Entry> = []
            for (const [i, e] of entries.entries()) scheduled.push(yield* schedule(e.at, () => fired.push(i)))
            for (const [i, e] of entries.entries()) if (e.cancel) Timers.cancel(clock, scheduled[i]!)
            yield* TestClock.adjust(50)
            const expected = entries
              .map((e, i) => ({ ...e, i }))
              .filter((e) => !e.cancel)
              .sort((a, b) => a.at - b.at || a.i - b.i)
              .map((e) => e.i)
            expect(fired).toEqual(expected)
            // Nothing left: no sleeper stays behind.
            expect(Timers.sleeperOf(clock)).toBeUndefined()
          }).pipe(Effect.provide(TestContext.TestContext))
        )),
      { numRuns: 100, seed: 22 }
    )
  })

  it.effect("an entry due at once does not stop later entries from firing", () =>
    Effect.gen(function*() {
      const fired: Array<string> = []
      // Due now: the sleeper fires it synchronously as it starts, and ends with an empty heap.
      yield* schedule(0, () => fired.push("now"))
      expect(fired).toEqual(["now"])
      yield* schedule(1_000, () => fired.push("later"))
      yield* TestClock.adjust(1_000)
      expect(fired).toEqual(["now", "later"])
    }))

  it.effect("a sleeper armed inside an uninterruptible region still ends when its last entry is cancelled", () =>
    Effect.gen(function*() {
      const clock = yield* Effect.clock
      const work = yield* Effect.fork(Effect.sleep("30 millis"))
      // As a stream's close does, inside a finalizer: the grace's timer is armed with interruption off.
      const waiting = yield* Effect.fork(Effect.uninterruptible(Attempt.endsWithin(work, 3_000)))
      yield* TestClock.adjust(5)
      const sleeper = Timers.sleeperOf(clock)
      expect(sleeper).toBeDefined()
      yield* TestClock.adjust(25)
      expect(yield* Fiber.join(waiting)).toBe(true)
      yield* Effect.yieldNow()
      // The work ended, its entry was cancelled, the heap is empty: the sleeper was interrupted and is gone.
      expect(sleeper!.unsafePoll()).not.toBeNull()
      expect(Timers.sleeperOf(clock)).toBeUndefined()
    }))

  it.effect("waiting for a fiber that already ended arms no timer", () =>
    Effect.gen(function*() {
      const done = yield* Effect.fork(Effect.void)
      yield* Fiber.await(done)
      const starts = new Starts()
      expect(yield* Effect.supervised(Attempt.endsWithin(done, 3_000), starts)).toBe(true)
      // No sleeper was started (and interrupted at once) for an entry that could never fire.
      expect(starts.count).toBe(0)
    }))

  it.effect("a timed-out attempt is interrupted by its bound: its teardown starts no second timer fiber", () =>
    Effect.gen(function*() {
      const fake = Fake.make({ a: [Fake.hang] })
      const layer = Rein.layer({ catalog: cat, providers: { fake: fake.provider }, health: false })
      const c = contract({ deadline: "1 second", teardownGrace: "5 seconds", candidates: ["a"] })
      const starts = new Starts()
      const fiber = yield* Effect.fork(
        Effect.supervised(Effect.either(Rein.execute(request, c).pipe(Effect.provide(layer))), starts)
      )
      yield* TestClock.adjust("1 second")
      const result = yield* Fiber.join(fiber)
      expect(Either.getLeft(result).pipe(Option.getOrThrow)).toMatchObject({
        _tag: "DeadlineExceeded",
        teardownUnconfirmed: false
      })
      // The attempt's fiber and the clock's one sleeper. The attempt was interrupted when its bound fired, so
      // by the time its caller tears it down it has ended: the teardown's grace needs no timer (it used to arm
      // a second sleeper per expiry, a fork and an interruption each, which is what made a thousand
      // simultaneous expiries late).
      expect(starts.count).toBe(2)
    }))

  it.effect("a timed-out attempt is interrupted once: its teardown sends no second interruption", () =>
    Effect.gen(function*() {
      let attempt: Fiber.RuntimeFiber<unknown, unknown> | undefined
      const provider: Provider.Provider = {
        internalMaxAttempts: 1,
        simulated: true,
        call: () =>
          Effect.withFiberRuntime<never>((fiber) => {
            attempt = fiber
            return Effect.never
          })
      }
      const fiber = yield* Effect.fork(Effect.either(
        Rein.execute(request, contract({ deadline: "1 second", candidates: ["a"] })).pipe(
          Effect.provide(Rein.layer({ catalog: cat, providers: { fake: provider }, health: false }))
        )
      ))
      yield* TestClock.adjust("1 second")
      const result = yield* Fiber.join(fiber)
      expect(Either.getLeft(result).pipe(Option.getOrThrow)).toMatchObject({
        _tag: "DeadlineExceeded",
        teardownUnconfirmed: false
      })
      // Any message still on its way to the ended fiber is processed by now.
      for (let i = 0; i < 10; i++) yield* Effect.yieldNow()
      // Every interruption a fiber receives, even once it ended, is a scheduler task and a step of its
      // interruption cause (a hash of the whole cause): the bound's, and not the teardown's again.
      const interruptions = Cause.reduce(
        attempt!.getFiberRef(FiberRef.interruptedCause),
        0,
        (n, c) => Option.some(c._tag === "Interrupt" ? n + 1 : n)
      )
      expect(interruptions).toBe(1)
    }))

  it.effect("a callback that throws does not stop the timer", () =>
    Effect.gen(function*() {
      const fired: Array<string> = []
      yield* schedule(100, () => {
        throw new Error("boom")
      })
      yield* schedule(200, () => fired.push("after"))
      yield* TestClock.adjust(200)
      expect(fired).toEqual(["after"])
    }))
})

describe("the timer on a clock with its own scheduler", () => {
  it.effect("serves every entry with one callback at a time and no fiber, and leaves nothing armed", () =>
    Effect.gen(function*() {
      const clock = new CallbackClock()
      const runtime = yield* Effect.runtime<never>()
      const starts = new Starts()
      const fired: Array<string> = []
      const at = (millis: number, name: string) =>
        Timers.schedule(clock, runtime, BigInt(millis) * 1_000_000n, () => fired.push(name))
      yield* Effect.supervised(
        Effect.sync(() => {
          at(300, "c")
          at(100, "a")
          const cancelled = at(200, "never")
          at(100, "b")
          Timers.cancel(clock, cancelled)
        }),
        starts
      )
      expect(starts.count).toBe(0)
      expect(Timers.sleeperOf(clock)).toBeUndefined()
      // Re-armed when an earlier entry came: the first callback (for 300) was cancelled.
      expect(clock.armed).toBe(1)
      clock.advance(99)
      expect(fired).toEqual([])
      clock.advance(1)
      expect(fired).toEqual(["a", "b"])
      clock.advance(1_000)
      expect(fired).toEqual(["a", "b", "c"])
      expect(clock.armed).toBe(0)
      // The last entry cancelled: its callback is cancelled too.
      const last = at(5_000, "cancelled")
      expect(clock.armed).toBe(1)
      Timers.cancel(clock, last)
      expect(clock.armed).toBe(0)
      clock.advance(10_000)
      expect(fired).toEqual(["a", "b", "c"])
    }))

  it.effect("bounds an attempt with no timer fiber: only the attempt's own fiber is started", () =>
    Effect.gen(function*() {
      const fake = Fake.make({ a: [Fake.hang] })
      const layer = Rein.layer({ catalog: cat, providers: { fake: fake.provider }, health: false })
      const clock = new CallbackClock()
      const starts = new Starts()
      const fiber = yield* Effect.fork(Effect.supervised(
        Effect.either(Rein.execute(request, contract({ deadline: "1 second", candidates: ["a"] }))).pipe(
          Effect.provide(layer),
          Effect.withClock(clock)
        ),
        starts
      ))
      for (let i = 0; i < 5; i++) yield* Effect.yieldNow()
      expect(clock.armed).toBe(1)
      clock.advance(1_000)
      const result = yield* Fiber.join(fiber)
      expect(Either.getLeft(result).pipe(Option.getOrThrow)).toMatchObject({
        _tag: "DeadlineExceeded",
        teardownUnconfirmed: false
      })
      expect(starts.count).toBe(1)
      expect(clock.armed).toBe(0)
    }))
})

describe("the executor around interruption and the deadline", () => {
  it.effect("an interruption while a timed-out attempt tears down gives its probe slot back", () =>
    Effect.gen(function*() {
      const health = yield* Health.make({ consecutiveFailures: 1, probes: 1, cooldown: 1_000 })
      const opener = yield* health.acquire("a", "first")
      yield* health.complete(opener, { _tag: "failure", kind: "overloaded", retryAfterMillis: null })
      yield* TestClock.adjust(1_000) // half-open: one probe slot
      const fake = Fake.make({ a: [Fake.stubborn("3 seconds", Fake.succeed())] })
      const layer = Layer.merge(
        Rein.layer({ catalog: cat, providers: { fake: fake.provider }, health: false }),
        Layer.succeed(Health.Health, health)
      )
      const c = contract({
        deadline: "30 seconds",
        attemptTimeout: "1 second",
        teardownGrace: "5 seconds",
        candidates: ["a"]
      })
      const fiber = yield* Effect.fork(Rein.execute(request, c).pipe(Effect.provide(layer)))
      yield* TestClock.adjust(1_000) // the attempt times out; its teardown waits for the stubborn provider
      yield* Effect.yieldNow()
      yield* Fiber.interruptFork(fiber)
      yield* TestClock.adjust(3_000) // the provider ends: teardown confirmed, then the interruption lands
      const exit = yield* Fiber.await(fiber)
      expect(Exit.isInterrupted(exit)).toBe(true)
      expect((yield* health.view(["a"])).health["a"]?.probesFree).toBe(1)
    }))

  it.effect("a gate that waits past the deadline ends the request at admission, with no call", () =>
    Effect.gen(function*() {
      const fake = Fake.make({ a: [Fake.hang] })
      // A gate that ignores `remainingMillis` (its contract says it must not).
      const overstaying = Gate.Gate.of({
        admit: () => Effect.as(Effect.sleep("2 seconds"), undefined),
        settle: () => Effect.void,
        closed: Effect.never
      })
      const layer = Layer.merge(
        Rein.layer({ catalog: cat, providers: { fake: fake.provider }, health: false }),
        Layer.succeed(Gate.Gate, overstaying)
      )
      const fiber = yield* Effect.fork(
        Effect.either(
          Rein.execute(request, contract({ deadline: "1 second", candidates: ["a"] })).pipe(Effect.provide(layer))
        )
      )
      yield* TestClock.adjust("2 seconds")
      const result = yield* Fiber.join(fiber)
      expect(Either.isLeft(result)).toBe(true)
      const error = Either.getLeft(result).pipe(Option.getOrThrow) as Outcome.Terminal
      expect(error).toMatchObject({ _tag: "DeadlineExceeded", phase: "admission", attempts: [] })
      expect(yield* fake.calls).toHaveLength(0)
    }))
})

/** Counts the run-loop steps of one fiber while `on` (a supervisor with op supervision sees every step). */
class Steps extends Supervisor.AbstractSupervisor<number> {
  on = false
  count = 0
  of: Fiber.RuntimeFiber<unknown, unknown> | undefined = undefined
  override get value() {
    return Effect.sync(() => this.count)
  }
  override onEffect(fiber: Fiber.RuntimeFiber<unknown, unknown>) {
    if (this.on && fiber === this.of) this.count++
  }
}

describe("an expiry settled in its caller's step", () => {
  /**
   * One request against a provider that never answers, its deadline 1 s, run by `wrap`: its exit, and the steps
   * its fiber takes once its attempt was interrupted (the caller resumed, the record, the verdict, the exit).
   */
  const expire = (wrap: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>) =>
    Effect.gen(function*() {
      const steps = new Steps()
      const provider: Provider.Provider = {
        internalMaxAttempts: 1,
        simulated: true,
        call: () => Effect.onInterrupt(Effect.never, () => Effect.sync(() => (steps.on = true)))
      }
      const fiber = yield* Effect.fork(
        Effect.exit(wrap(Rein.execute(request, contract({ deadline: "1 second", candidates: ["a"] })))).pipe(
          Effect.supervised(steps),
          Effect.withRuntimeFlagsPatch(RuntimeFlagsPatch.enable(RuntimeFlags.OpSupervision)),
          Effect.provide(Rein.layer({ catalog: cat, providers: { fake: provider }, health: false }))
        )
      )
      steps.of = fiber
      yield* TestClock.adjust("1 second")
      const exit = yield* Fiber.join(fiber)
      expect(Exit.isFailure(exit) && Cause.failureOption(exit.cause).pipe(Option.getOrThrow)).toMatchObject({
        _tag: "DeadlineExceeded",
        phase: "attempt",
        teardownUnconfirmed: false,
        attempts: [{ status: "deadline", code: "deadline_expired" }]
      })
      return { exit, steps: steps.count }
    })

  it.effect("an expired request's verdict is its result in the step its caller resumes", () =>
    Effect.gen(function*() {
      const { steps } = yield* expire((effect) => effect)
      // The resumed wait and the end of its interruptible region, the verdict unwinding the attempt's region and
      // the request's, `Effect.exit`, the fiber's end. On the old code 16: a step for the debug line the fiber
      // would drop (and its `zipRight`), one for `Effect.fail` looking for a span, and an interruptible region (a
      // flags step and its revert) around a verdict that does no work.
      expect(steps).toBeLessThanOrEqual(10)
    }))

  it.effect("a fiber that logs debug still logs the expired attempt", () =>
    Effect.gen(function*() {
      const lines: Array<string> = []
      const logger = Logger.make(({ annotations, message }) => {
        lines.push(`${JSON.stringify(message)} ${JSON.stringify([...HashMap.toEntries(annotations)])}`)
      })
      yield* expire((effect) =>
        effect.pipe(
          Effect.provide(Logger.replace(Logger.defaultLogger, logger)),
          Logger.withMinimumLogLevel(LogLevel.Debug)
        )
      )
      expect(lines.filter((l) => l.includes("rein: attempt failed"))).toEqual([
        expect.stringContaining(`["kind","timeout"]`)
      ])
    }))

  it.effect("the verdict carries the caller's span, as `Effect.fail` attaches it", () =>
    Effect.gen(function*() {
      const { exit } = yield* expire((effect) => Effect.withSpan(effect, "the-expired-request"))
      expect(Exit.isFailure(exit) && Cause.pretty(exit.cause)).toContain("at the-expired-request")
    }))
})
