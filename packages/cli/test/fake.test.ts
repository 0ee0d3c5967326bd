/**
 * The CLI's scripted fake plays each scenario behaviour as core's `Fake` plays the same step: the latency on
 * the effect's clock, then the same answer or the same classified failure (it no longer makes a `Fake` per
 * call, so this pins the two together).
 */
import { describe, expect, it } from "@effect/vitest"
import { Catalog, Fake } from "@rein/core"
import type { Provider } from "@rein/core"
import { Effect, Either, Exit, Fiber, TestClock } from "effect"
import { scripted } from "../src/internal/fake.js"
import * as Scenario from "../src/Scenario.js"

const endpoint = Either.getOrThrow(Catalog.decode({
  endpoints: [{
    id: "fake/a",
    provider: "fake",
    model: "m",
    capabilities: { contextWindow: 32_000, maxOutputTokens: 4_096 },
    prices: { inputTokens: 0, outputTokens: 0 }
  }]
})).endpoints[0]!
const context: Provider.AttemptContext = {
  attempt: 1,
  call: 1,
  endpoint,
  timeoutMillis: 10_000,
  remainingMillis: 10_000,
  reservation: { cost: null, tokens: null },
  maxOutputTokens: 90
}
const request: Provider.CompletionRequest = { prompt: "p", inputTokens: 600 }

const scenarioWith = (behaviour: unknown) =>
  Either.getOrThrow(Scenario.decode({
    duration: "1 hour",
    rate: 1,
    default: { kind: "ok", latency: "300 millis", outputTokens: 120 },
    endpoints: { "fake/a": [{ from: "0 millis", behaviour }] }
  }))

const STEP = 10

/** Runs `call` on the test clock: its exit and the virtual time it took, to `STEP` ms (within `horizon`). */
const played = (call: Effect.Effect<Provider.ProviderResponse, unknown>, horizon: number) =>
  Effect.gen(function*() {
    const fiber = yield* Effect.fork(call)
    let elapsed = 0
    while (elapsed < horizon && fiber.unsafePoll() === null) {
      yield* TestClock.adjust(STEP)
      elapsed += STEP
    }
    const exit = fiber.unsafePoll()
    if (exit === null) yield* Fiber.interrupt(fiber)
    return { exit, elapsed }
  })

const same = (behaviour: unknown, step: Fake.Step, horizon = 2_000) =>
  Effect.gen(function*() {
    const ours = yield* played(scripted(scenarioWith(behaviour), 0).call(request, context), horizon)
    const core = yield* played(Fake.make({ "fake/a": [step] }).provider.call(request, context), horizon)
    expect(ours.elapsed).toBe(core.elapsed)
    expect(ours.exit === null).toBe(core.exit === null)
    if (ours.exit !== null && core.exit !== null) {
      expect(Exit.isSuccess(ours.exit)).toBe(Exit.isSuccess(core.exit))
      const value = (e: Exit.Exit<unknown, unknown>) =>
        Exit.match(e, { onSuccess: (a) => a, onFailure: (c) => JSON.parse(JSON.stringify(c)) })
      expect(value(ours.exit)).toEqual(value(core.exit))
    }
  })

describe("the scripted fake", () => {
  it.effect("an ok behaviour answers after its latency, its output capped at the attempt's limit", () =>
    same(
      { kind: "ok", latency: "250 millis", outputTokens: 120 },
      Fake.succeed({ text: "(simulated answer)", latency: 250, usage: { inputTokens: 600, outputTokens: 90 } })
    ))

  it.effect("a failing behaviour fails after its latency with the classified failure and its Retry-After", () =>
    same(
      { kind: "fail", failure: "overloaded", latency: "80 millis", retryAfter: "1500 millis" },
      Fake.fail("overloaded", { code: "http_503", latency: 80, retryAfter: 1_500 })
    ))

  it.effect("a failure without an HTTP status keeps its kind as its code; latency 0 answers at once", () =>
    same({ kind: "fail", failure: "transport", latency: "0 millis" }, Fake.fail("transport", { latency: 0 })))

  it.effect("a stalling behaviour never answers", () => same({ kind: "stall" }, Fake.hang, 500))

  it.effect("a flapping behaviour is up first: it answers 100 output tokens after its latency", () =>
    same(
      { kind: "flap", up: "1 minute", down: "1 minute", latency: "40 millis" },
      Fake.succeed({ text: "(simulated answer)", latency: 40, usage: { inputTokens: 600, outputTokens: 90 } })
    ))
})
