/**
 * A simulation's request fibers are started from the virtual clock's callbacks (the arrivals), not forked by the
 * simulation's fiber: they must still end with it when it is interrupted, or when a request dies.
 */
import { describe, expect, it } from "@effect/vitest"
import { Scenario, Simulate } from "@rein/cli"
import { Catalog, Contract } from "@rein/core"
import { Effect, Either, Fiber, Supervisor } from "effect"

const catalog = Catalog.make({
  endpoints: [{
    id: "fake/a",
    provider: "fake",
    model: "a",
    capabilities: {
      contextWindow: 8_000,
      maxOutputTokens: 1_000,
      tools: true,
      structuredOutput: true,
      streaming: true
    },
    prices: { inputTokens: 1e-6, outputTokens: 2e-6, request: 0 },
    simulated: true
  }]
})
const contract = Contract.make({ deadline: "20 seconds", candidates: ["fake/a"], allowSimulated: true })

// A hundred requests a second, each ten seconds long: about a thousand in flight at any time.
const scenario = Either.getOrThrow(Scenario.decode({
  duration: "10 minutes",
  rate: 100,
  arrivals: "steady",
  default: { kind: "ok", latency: "10 seconds", outputTokens: 10 }
}))

describe("rein simulate's request fibers", () => {
  it.live("end with the simulation when it is interrupted: none is left suspended", () =>
    Effect.gen(function*() {
      const tracked = yield* Supervisor.track
      const fiber = yield* Effect.fork(
        Simulate.simulate(catalog, contract, scenario, 1).pipe(
          Effect.supervised(tracked)
        )
      )
      // Until a few hundred requests are in flight (the run yields to the event loop between slices: a timer of
      // no time on the live clock, hence a live test).
      let running = 0
      while (running < 500 && fiber.unsafePoll() === null) {
        yield* Effect.sleep(0)
        running = (yield* tracked.value).length
      }
      yield* Fiber.interrupt(fiber)
      expect(running).toBeGreaterThanOrEqual(500)
      const left = yield* tracked.value
      expect(left.length).toBe(0)
    }))
})
