import { it } from "@effect/vitest"
import { Clock, Deferred, Effect, Fiber, Layer, TestClock } from "effect"
import { describe, expect } from "vitest"
import {
  confirmed,
  leases,
  ledgerLayer,
  ORG,
  type Overrides,
  script,
  states,
  submission,
  tempDb,
  useLedger
} from "./helpers.js"

// Two ledgers on one file, each with its own connection and owner id: what two processes would be. Time is
// the TestClock's; the lease lasts 3 seconds and is renewed every second.
const lease = (owner: string): Overrides => ({ lease: { duration: "3 seconds", owner } })

// Ledger `a` submits a call whose dispatcher announces itself and waits to be released; `b` is the other process.
const running = (filename: string) =>
  Effect.gen(function*() {
    const started = yield* Deferred.make<void>()
    const release = yield* Deferred.make<void>()
    const s = script({
      dispatch: (ctx) =>
        Deferred.succeed(started, undefined).pipe(
          Effect.zipRight(Deferred.await(release)),
          Effect.as(confirmed(ctx.executionId))
        )
    })
    const a = yield* useLedger(filename, s, lease("a"))
    const b = yield* useLedger(filename, script(), lease("b"))
    const submitted = yield* Effect.fork(a.submit(ORG, submission()))
    yield* Deferred.await(started)
    return { a, b, s, submitted, release: Deferred.succeed(release, undefined) }
  })

// The clock of a process that sees `millis` more than this one: for it, a lease this one renews is expired,
// which is exactly what a live owner stalled for longer than its lease looks like to everyone else.
const ahead = (clock: Clock.Clock, millis: number): Clock.Clock => ({
  [Clock.ClockTypeId]: Clock.ClockTypeId,
  unsafeCurrentTimeMillis: () => clock.unsafeCurrentTimeMillis() + millis,
  currentTimeMillis: Effect.map(clock.currentTimeMillis, (t) => t + millis),
  unsafeCurrentTimeNanos: () => clock.unsafeCurrentTimeNanos() + BigInt(millis) * 1_000_000n,
  currentTimeNanos: Effect.map(clock.currentTimeNanos, (t) => t + BigInt(millis) * 1_000_000n),
  sleep: clock.sleep
})

describe("leases", () => {
  it.scoped("a dispatch that runs longer than its lease keeps renewing it: recover elsewhere leaves it alone", () =>
    Effect.gen(function*() {
      const { filename } = yield* tempDb
      const { a, b, release, s, submitted } = yield* running(filename)
      // Eight seconds, well past two lease durations (and short of the 10 second dispatch timeout).
      for (let second = 1; second <= 8; second++) {
        yield* TestClock.adjust("1 second")
        expect(yield* b.recover).toEqual([])
      }
      const [row] = yield* leases(filename)
      expect(row?.owner).toBe("a")
      expect(row?.expires_at).toBeGreaterThan(8_000)

      yield* release
      const settled = yield* Fiber.join(submitted)
      expect(settled.resolvedBy).toBe("dispatch")
      expect(s.dispatches).toBe(1)
      expect(states(yield* a.receipts(ORG, settled.executionId)).slice(-2)).toEqual(["dispatch_started", "succeeded"])
      // The lease ends with the dispatch.
      expect(yield* leases(filename)).toEqual([])
    }))

  it.scoped("an expired lease is taken over, and its dispatcher's late result is not written over the recovery's", () =>
    Effect.gen(function*() {
      const { filename } = yield* tempDb
      const { a, b, release, s, submitted } = yield* running(filename)

      const clock = yield* Effect.clock
      const recovered = yield* Effect.withClock(b.recover, ahead(clock, 60_000))
      expect(recovered.map((r) => [r.state, r.code])).toEqual([["ambiguous", "not_found_yet"]])
      expect(yield* leases(filename)).toEqual([])

      // The dispatcher comes back with a confirmation: the recovery's record stands, and the caller gets it.
      yield* release
      const outcome = yield* Effect.flip(Fiber.join(submitted))
      expect(outcome._tag).toBe("Ambiguous")
      expect(s.dispatches).toBe(1)
      const receipts = yield* a.receipts(ORG, recovered[0]!.executionId)
      expect(states(receipts)).toEqual([
        "created",
        "authorised",
        "prepared",
        "dispatch_started",
        "ambiguous",
        "evidence"
      ])
      expect(receipts.filter((r) => r.source === "dispatcher")).toEqual([])
      // Nor does its heartbeat bring the lease back.
      yield* TestClock.adjust("10 seconds")
      expect(yield* leases(filename)).toEqual([])
    }))

  it.effect("the lease duration, the owner and the busy timeout are checked, naming the field", () =>
    Effect.gen(function*() {
      const failure = (overrides: Overrides) =>
        Effect.scoped(Effect.flip(Layer.build(ledgerLayer(":memory:", script(), overrides))))
      expect(yield* failure({ lease: { duration: "0 millis" } })).toMatchObject({
        _tag: "LedgerConfigError",
        message: expect.stringMatching(/^lease\.duration: Expected a positive finite duration/)
      })
      expect(yield* failure({ lease: { owner: "" } })).toMatchObject({
        _tag: "LedgerConfigError",
        message: expect.stringMatching(/^lease\.owner: /)
      })
      expect(yield* failure({ busyTimeout: "-1 seconds" })).toMatchObject({
        _tag: "LedgerConfigError",
        message: expect.stringMatching(/^busyTimeout: Expected a positive finite duration/)
      })
    }))

  it.scoped("a lease longer than the longest timer (2^31 - 1 ms) is refused, naming the field; one just under it works", () =>
    Effect.gen(function*() {
      const failure = (overrides: Overrides) =>
        Effect.scoped(Effect.flip(Layer.build(ledgerLayer(":memory:", script(), overrides))))
      // 100 days: its heartbeat (a third of it) would never fire (Effect treats a longer timer as infinite), so a
      // live dispatch would lose its lease; 1e300 ms: its expiry is no integer, and every dispatch died at start.
      for (const duration of ["100 days", 1e300] as const) {
        expect(yield* failure({ lease: { duration } })).toMatchObject({
          _tag: "LedgerConfigError",
          message: expect.stringMatching(
            /^lease\.duration: Expected a positive finite duration of at most 2147483647 ms/
          )
        })
      }
      const { filename } = yield* tempDb
      const s = script()
      const ledger = yield* useLedger(filename, s, { lease: { duration: "24 days" } })
      yield* ledger.submit(ORG, submission())
      expect(s.dispatches).toBe(1)
    }))
})
