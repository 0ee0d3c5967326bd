import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect, FastCheck as fc, Scheduler, TestClock, TestContext } from "effect"
import type { Runtime } from "effect"
import * as Timers from "../src/internal/timers.js"
import { CallbackClock } from "./support/callbackClock.js"

// The laws of the clock's one timer, over any interleaving of scheduling (absolute, relative to now, relative to
// an earlier reading, fractions of a millisecond), cancelling (before or after the entry fired), entries that
// schedule more when they fire, and the clock moving in steps of any size: every entry not cancelled before it
// was due fires exactly once, at the first whole millisecond at or after it is due (never before), in due order
// and then scheduling order; a cancelled one never fires; once nothing is left, nothing stays armed. Checked on
// `TestClock` (a sleeper fiber) and on a clock with its own scheduler (one callback, no fiber).

/** An entry the caller made (as an attempt's wait is), for `scheduleIn` and `scheduleFrom`. */
class Probe implements Timers.Entry {
  key = 0
  seq = 0
  index = -1
  prev: Timers.Entry | undefined = undefined
  next: Timers.Entry | undefined = undefined
  constructor(readonly fire: () => void) {}
}

type Op =
  | {
    readonly op: "at"
    readonly millis: number
    readonly via: "schedule" | "after" | "in" | "from"
    readonly then: number
    readonly onFire: "none" | "cancelOne" | "cancelAll"
    readonly which: number
  }
  | { readonly op: "cancel"; readonly which: number }
  | { readonly op: "advance"; readonly millis: number }

// Mostly scheduling (heaps of tens of entries), delays in quarters of a millisecond (exact in nanoseconds), 0
// included. When it fires, an entry may cancel one
// entry (`which`, fired or not) or every other one (as an attempt's bound that fires and ends its attempt), then
// (`then` > 0) schedule another, due that many milliseconds later.
const ops = fc.array(
  fc.oneof(
    {
      weight: 4,
      arbitrary: fc.record({
        op: fc.constant("at" as const),
        millis: fc.integer({ min: 0, max: 160 }).map((q) => q / 4),
        via: fc.constantFrom("schedule" as const, "after" as const, "in" as const, "from" as const),
        then: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 12 })),
        onFire: fc.constantFrom("none" as const, "none" as const, "cancelOne" as const, "cancelAll" as const),
        which: fc.nat()
      })
    },
    { weight: 2, arbitrary: fc.record({ op: fc.constant("cancel" as const), which: fc.nat() }) },
    {
      weight: 1,
      arbitrary: fc.record({ op: fc.constant("advance" as const), millis: fc.integer({ min: 0, max: 12 }) })
    }
  ),
  { maxLength: 80 }
)

interface Scheduled {
  readonly id: number
  readonly due: number // nanoseconds
  readonly seq: number
  readonly made: number // nanoseconds: when it was scheduled
  readonly entry: Timers.Entry
  readonly onFire: Extract<Op, { op: "at" }>["onFire"]
}

/**
 * Runs `program` against the timer on `clock` (`advance` moves it) and against a model: after every step the
 * entries fired, in order, with the clock's reading at each, are the model's.
 */
const check = (
  program: ReadonlyArray<Op>,
  clock: Clock.Clock,
  runtime: Runtime.Runtime<never>,
  advance: (millis: number) => Effect.Effect<void>,
  armed: () => number
) =>
  Effect.gen(function*() {
    const nowNanos = () => clock.unsafeCurrentTimeNanos()
    const origin = nowNanos()
    const at = () => Number(nowNanos() - origin)
    const fired: Array<[number, number]> = [] // [id, nanoseconds since origin when fired]
    const expected: Array<[number, number]> = []
    let pending: Array<Scheduled> = []
    const all: Array<Scheduled> = []
    let seq = 0
    // What each firing did, for the model: the seq counter when it fired, the entry it cancelled.
    const marks = new Map<number, number>()
    const cancelled = new Map<number, number>()
    const add = (step: Omit<Extract<Op, { op: "at" }>, "op">, from = at()) => {
      const { millis, onFire, then, via, which } = step
      const id = all.length
      const fire = () => {
        fired.push([id, at()])
        marks.set(id, seq)
        if (onFire === "cancelOne") {
          const target = all[which % all.length]!
          cancelled.set(id, target.id)
          Timers.cancel(clock, target.entry)
        } else if (onFire === "cancelAll") {
          for (const s of all) Timers.cancel(clock, s.entry)
        }
        if (then > 0) add({ millis: then, via: "after", then: 0, onFire: "none", which: 0 })
      }
      const due = from + Math.ceil(millis * 1e6)
      let entry: Timers.Entry
      if (via === "schedule") entry = Timers.schedule(clock, runtime, origin + BigInt(due), fire)
      else if (via === "after") entry = Timers.after(clock, runtime, millis, fire)
      else if (via === "in") Timers.scheduleIn(clock, runtime, millis, entry = new Probe(fire))
      else Timers.scheduleFrom(clock, runtime, origin + BigInt(from), millis, entry = new Probe(fire))
      const s = { id, due, seq: seq++, made: at(), entry, onFire }
      all.push(s)
      pending.push(s)
    }
    // The model: the clock moved to `to` (ns), every entry due by then fires at the first whole millisecond at
    // or after its due time (one made already due fires at once), in due order, then scheduling order. Entries
    // scheduled by a firing join `pending` as they are made (their order of scheduling is the timer's too); what
    // a firing cancelled is taken out when the model fires it (all made before it fired, or the one it named).
    const modelTo = (to: number) => {
      for (;;) {
        const next = pending.filter((s) => s.due <= to).sort((a, b) => a.due - b.due || a.seq - b.seq)[0]
        if (next === undefined) return
        pending = pending.filter((s) => s !== next)
        expected.push([next.id, Math.max(Math.ceil(next.due / 1e6) * 1e6, next.made)])
        const mark = marks.get(next.id) ?? Infinity
        if (next.onFire === "cancelAll") pending = pending.filter((s) => s.seq >= mark)
        if (next.onFire === "cancelOne") pending = pending.filter((s) => s.id !== cancelled.get(next.id))
      }
    }
    const same = () => {
      expect(fired).toEqual(expected)
      // One sleeper (or one callback on the clock's scheduler) while an entry is left, none once none is.
      expect(armed()).toBe(pending.length > 0 ? 1 : 0)
      // An entry fired or cancelled is out of the timer: it holds no neighbour (nor, through it, their attempts).
      for (const s of all) {
        if (pending.includes(s)) expect(s.entry.index).not.toBe(-1)
        else expect([s.entry.index, s.entry.prev, s.entry.next]).toEqual([-1, undefined, undefined])
      }
    }
    for (const step of program) {
      if (step.op === "at") {
        add(step, step.via === "from" ? Math.max(0, at() - 1e6) : at())
        // Due now (no delay): served at once on `TestClock`, at the next move on a clock with its own scheduler.
        if (step.millis === 0 || (step.via === "from" && step.millis <= 1)) {
          yield* advance(0)
          modelTo(at())
        }
      } else if (step.op === "cancel") {
        // Half the time one still pending (out of the heap's middle too), else any (fired ones: nothing happens).
        const among = step.which % 2 === 0 && pending.length > 0 ? pending : all
        if (among.length === 0) continue
        const s = among[(step.which >> 1) % among.length]!
        Timers.cancel(clock, s.entry)
        pending = pending.filter((p) => p.entry !== s.entry)
      } else {
        yield* advance(step.millis)
        modelTo(at())
      }
      same()
    }
    yield* advance(1_000)
    modelTo(at())
    same()
    expect(pending).toEqual([])
  })

describe("the clock's one timer", () => {
  it("on TestClock: every entry fires once, when due and never before, in due then scheduling order; cancelled ones never; then no sleeper", async () => {
    await fc.assert(
      fc.asyncProperty(ops, (program) =>
        Effect.runPromise(
          Effect.gen(function*() {
            const clock = yield* Effect.clock
            const runtime = yield* Effect.runtime<never>()
            yield* TestClock.adjust(7) // an origin that is not 0
            const sleepers = () => Timers.sleeperOf(clock) === undefined ? 0 : 1
            yield* check(program, clock, runtime, TestClock.adjust, sleepers)
          }).pipe(Effect.provide(TestContext.TestContext))
        )),
      { numRuns: 40, seed: 1717 }
    )
  })

  it("on a clock with its own scheduler: the same laws, then nothing armed", async () => {
    await fc.assert(
      fc.asyncProperty(ops, (program) =>
        Effect.runPromise(
          Effect.gen(function*() {
            const clock = new CallbackClock()
            clock.now = 7
            const runtime = yield* Effect.runtime<never>()
            const advance = (millis: number) => Effect.sync(() => clock.advance(millis))
            yield* check(program, clock, runtime, advance, () => clock.armed)
          })
        )),
      { numRuns: 300, seed: 1717 }
    )
  })
})

/** A scheduler that runs each task at once: a fiber forked under it runs before `runFork` returns. */
const immediate: Scheduler.Scheduler = {
  scheduleTask: (task) => task(),
  shouldYield: () => false
}

describe("the clock's one timer, its heap", () => {
  // A first entry due last keeps every later one out of the run: all in the heap, cancelled from anywhere in it
  // (the entry moved into a cancelled one's place may have to go up past its new parent, or down).
  it.prop(
    "entries kept in the heap, any of them cancelled, fire in due order, then scheduling order (property)",
    [
      fc.array(fc.integer({ min: 1, max: 30 }), { minLength: 20, maxLength: 45 }),
      fc.array(fc.nat(), { minLength: 1, maxLength: 20 })
    ],
    ([dues, cancels]) => {
      const clock = new CallbackClock()
      const runtime = Effect.runSync(Effect.runtime<never>())
      const fired: Array<number> = []
      Timers.schedule(clock, runtime, 1_000_000_000n, () => fired.push(-1))
      const entries = dues.map((due, i) =>
        Timers.schedule(clock, runtime, BigInt(due) * 1_000_000n, () => fired.push(i))
      )
      const gone = new Set<number>()
      for (const c of cancels) {
        Timers.cancel(clock, entries[c % entries.length]!)
        gone.add(c % entries.length)
      }
      clock.advance(1_000)
      const expected = dues.map((due, i) => ({ due, i })).filter(({ i }) => !gone.has(i))
        .sort((a, b) => a.due - b.due || a.i - b.i).map(({ i }) => i)
      expect(fired).toEqual([...expected, -1])
      expect(clock.armed).toBe(0)
    },
    { fastCheck: { numRuns: 1_000, seed: 1717 } }
  )
})

describe("the clock's one timer, bounds set in due order", () => {
  // The batch's attempt timeouts and a burst's deadlines: appended to the run in constant time (`Entry.index` is
  // -2 there, a heap position otherwise), and the timer is armed once, not again for each.
  it("are kept in the run and arm the clock once; one due earlier goes to the heap and re-arms it", () => {
    const clock = new CallbackClock()
    const runtime = Effect.runSync(Effect.runtime<never>())
    const fired: Array<number> = []
    const dues = [5, 5, 6, 9, 9, 9, 12]
    const entries = dues.map((due, i) => Timers.schedule(clock, runtime, BigInt(due) * 1_000_000n, () => fired.push(i)))
    expect(entries.map((e) => e.index)).toEqual(dues.map(() => -2))
    expect(clock.scheduled).toBe(1)
    const early = Timers.schedule(clock, runtime, 3_000_000n, () => fired.push(-1))
    expect(early.index).toBe(0)
    expect(clock.scheduled).toBe(2)
    // Due with the entry the timer wakes for: no re-arm either.
    Timers.schedule(clock, runtime, 3_000_000n, () => fired.push(-2))
    expect(clock.scheduled).toBe(2)
    clock.advance(20)
    expect(fired).toEqual([-1, -2, 0, 1, 2, 3, 4, 5, 6])
  })
})

describe("the clock's one timer, bounds of a fraction of a nanosecond", () => {
  it.effect("are due at the next nanosecond (rounded up): not at once, at the next whole millisecond", () =>
    Effect.gen(function*() {
      const clock = yield* Effect.clock
      const runtime = yield* Effect.runtime<never>()
      const fired: Array<string> = []
      Timers.after(clock, runtime, 1e-7, () => fired.push("in"))
      Timers.scheduleFrom(clock, runtime, clock.unsafeCurrentTimeNanos(), 1e-7, new Probe(() => fired.push("from")))
      yield* TestClock.adjust(0)
      expect(fired).toEqual([])
      yield* TestClock.adjust(1)
      expect(fired).toEqual(["in", "from"])
    }))
})

describe("the clock's one timer under a scheduler that runs a fiber at once", () => {
  it.effect("an entry already due fires as its sleeper starts, and no sleeper is left behind", () =>
    Effect.gen(function*() {
      const clock = yield* Effect.clock
      const fired: Array<string> = []
      yield* Effect.withScheduler(
        Effect.flatMap(Effect.runtime<never>(), (runtime) =>
          Effect.sync(() => {
            Timers.schedule(clock, runtime, clock.unsafeCurrentTimeNanos(), () => fired.push("now"))
          })),
        immediate
      )
      // The sleeper fired the entry and ended before `runFork` returned: it is not kept as the current one.
      expect(fired).toEqual(["now"])
      expect(Timers.sleeperOf(clock)).toBeUndefined()
      // And the timer still serves later entries.
      const runtime = yield* Effect.runtime<never>()
      Timers.after(clock, runtime, 5, () => fired.push("later"))
      expect(Timers.sleeperOf(clock)).toBeDefined()
      yield* TestClock.adjust(5)
      expect(fired).toEqual(["now", "later"])
      expect(Timers.sleeperOf(clock)).toBeUndefined()
    }))
})
