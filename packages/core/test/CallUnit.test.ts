// The call cap counts calls made. A call taken for an attempt that never started (refused by health after the
// reservation, a gate that closes or runs out of time at admission, an interruption while health is asked) comes
// back whole; a call made is never refunded. Checked on a shared run budget: calls taken = calls made.
import { describe, expect, it } from "@effect/vitest"
import { Budget, Fake, Gate, Health, Rein } from "@rein/core"
import type { Provider } from "@rein/core"
import { Effect, Either, FastCheck as fc, Fiber, Layer, TestClock } from "effect"
import { catalog, contract, endpoint } from "./fixtures.js"

const cat = catalog(endpoint("a"))
const request = { prompt: "p", inputTokens: 10, maxOutputTokens: 10 }

type Way = "health refuses once" | "gate closed" | "gate expired" | "interrupted while health is asked"

const gateFailing = (error: Gate.Closed | Gate.Expired) =>
  Gate.Gate.of({ admit: () => Effect.fail(error), settle: () => Effect.void, closed: Effect.never })

/** Core's health, with its first acquisition refused (or, `hang`, never answered), and no fast path. */
const healthWith = (inner: Health.Service, first: "refuse" | "hang"): Health.Service => {
  let asked = false
  return Health.Health.of({
    config: inner.config,
    view: inner.view,
    complete: inner.complete,
    degrade: inner.degrade,
    breaker: inner.breaker,
    acquire: (endpoint, role, options) => {
      if (asked) return inner.acquire(endpoint, role, options)
      asked = true
      return first === "refuse" ? Effect.fail("no_probe_slot") : Effect.never
    }
  })
}

const layerFor = (way: Way, health: Health.Service, provider: Provider.Provider) => {
  const rein = Rein.layer({ catalog: cat, providers: { fake: provider }, health: false })
  switch (way) {
    case "gate closed":
      return Layer.mergeAll(
        rein,
        Layer.succeed(Health.Health, health),
        Layer.succeed(
          Gate.Gate,
          gateFailing({
            _tag: "GateClosed",
            reason: "stopped"
          })
        )
      )
    case "gate expired":
      return Layer.mergeAll(
        rein,
        Layer.succeed(Health.Health, health),
        Layer.succeed(
          Gate.Gate,
          gateFailing({
            _tag: "GateExpired"
          })
        )
      )
    case "health refuses once":
      return Layer.merge(rein, Layer.succeed(Health.Health, healthWith(health, "refuse")))
    case "interrupted while health is asked":
      return Layer.merge(rein, Layer.succeed(Health.Health, healthWith(health, "hang")))
  }
}

describe("the call unit", () => {
  it.effect.prop(
    "calls taken from the cap are the calls made, whichever way an attempt ends before its call",
    [
      fc.constantFrom<Way>("health refuses once", "gate closed", "gate expired", "interrupted while health is asked"),
      fc.integer({ min: 1, max: 4 })
    ],
    ([way, cap]) =>
      Effect.gen(function*() {
        const fake = Fake.make({ a: [Fake.succeed({ text: "ok" })] })
        const health = yield* Health.make()
        const run = Budget.unsafeMake({ calls: cap })
        const fiber = yield* Effect.fork(Effect.either(
          Rein.execute(request, contract({ candidates: ["a"], budget: { calls: cap } })).pipe(
            Effect.provide(layerFor(way, health, fake.provider)),
            Effect.provideService(Budget.SharedBudget, run)
          )
        ))
        yield* TestClock.adjust(1)
        if (way === "interrupted while health is asked") yield* Fiber.interrupt(fiber)
        else {
          const result = yield* Fiber.join(fiber)
          if (way === "health refuses once") expect(Either.isRight(result)).toBe(true)
        }
        const made = (yield* fake.calls).length
        expect(run.unsafeLeft!().calls).toBe(cap - made)
      }),
    { fastCheck: { numRuns: 40 } }
  )
})
