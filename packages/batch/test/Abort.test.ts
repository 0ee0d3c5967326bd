// `cancel-active`: how a stop reaches the calls in flight, counted in scheduler passes. The batch runs on a
// `ControlledScheduler` the test steps one pass at a time, so "the attempt was torn down in the pass after
// the stop" is an exact, load-free statement (no wall clock, no timer).
import { describe, expect, it } from "@effect/vitest"
import { Batch, Guardrails } from "@rein/batch"
import type { Events } from "@rein/batch"
import { Failure, Rein } from "@rein/core"
import type { Provider } from "@rein/core"
import { Deferred, Effect, Fiber, Scheduler } from "effect"
import { catalog, contract } from "./batch-helpers.js"

const IN_FLIGHT = 20

/** Runs the scheduler's queued tasks one pass at a time until nothing is queued (at most `max` passes). */
const drain = (scheduler: Scheduler.ControlledScheduler, clock: { pass: number }, max = 1_000) =>
  Effect.sync(() => {
    for (let i = 0; i < max && scheduler.tasks.buckets.length > 0; i++) {
      clock.pass++
      scheduler.step()
    }
  })

describe("cancel-active", () => {
  it.effect("the stop interrupts every running attempt itself: each is torn down in the pass after the stop, recorded as interrupted (not a defect), its reservation charged, its result published after", () =>
    Effect.gen(function*() {
      const scheduler = new Scheduler.ControlledScheduler()
      const clock = { pass: 0 }
      const trigger = yield* Deferred.make<void>()
      const started: Array<string> = []
      const tornDownAt = new Map<string, number>()
      const provider: Provider.Provider = {
        internalMaxAttempts: 1,
        simulated: true,
        call: (request) =>
          Effect.suspend(() => {
            started.push(request.prompt)
            if (request.prompt === "p0") {
              return Effect.zipRight(
                Deferred.await(trigger),
                Effect.fail(new Failure.ProviderFailure({ kind: "authentication", code: "http_401", dispatched: true }))
              )
            }
            return Effect.never.pipe(
              Effect.onInterrupt(() => Effect.sync(() => void tornDownAt.set(request.prompt, clock.pass)))
            )
          })
      }
      let stoppedAt = -1
      const publishedAt = new Map<string, number>()
      const onEvent = (event: Events.Event) =>
        Effect.sync(() => {
          if (event._tag === "RunAborted") stoppedAt = clock.pass
          else if (event._tag === "ItemFailed") publishedAt.set(event.itemId, clock.pass)
        })
      const prompts = Array.from({ length: IN_FLIGHT }, (_, i) => `p${i}`)
      const fiber = yield* Effect.fork(
        Batch.run(prompts, {
          contract: contract({ retry: { perEndpoint: 0 } }),
          request: (prompt: string, index) => ({ id: String(index), prompt, inputTokens: 100, maxOutputTokens: 100 }),
          guardrails: Guardrails.make({
            concurrency: IN_FLIGHT,
            abortMode: "cancel-active",
            abortOn: ["authentication"]
          }),
          onEvent
        }).pipe(
          Effect.provide(Rein.layer({ catalog, providers: { fake: provider }, health: false })),
          Effect.withScheduler(scheduler)
        )
      )
      // Let the fork reach the controlled scheduler, then run until every call is in flight.
      for (let i = 0; i < 10 && started.length < IN_FLIGHT; i++) {
        yield* Effect.yieldNow()
        yield* drain(scheduler, clock)
      }
      expect(started).toHaveLength(IN_FLIGHT)
      yield* Deferred.succeed(trigger, undefined)
      for (let i = 0; i < 10 && fiber.unsafePoll() === null; i++) {
        yield* Effect.yieldNow()
        yield* drain(scheduler, clock)
      }
      const summary = yield* Fiber.join(fiber)

      expect(summary.termination).toMatchObject({ kind: "fail_fast", category: "authentication" })
      expect(stoppedAt).toBeGreaterThan(0)
      // One level: the stop's own step interrupted every attempt, so each processed its interruption in the
      // very next pass (interrupting the item, which then interrupts its attempt, takes two).
      expect([...tornDownAt.keys()].sort()).toEqual(prompts.slice(1).sort())
      expect(new Set(tornDownAt.values())).toEqual(new Set([stoppedAt + 1]))
      for (const result of summary.results) {
        if (result.itemId === "0") continue
        if (result._tag !== "Failed") throw new Error(`item ${result.itemId}: ${result._tag}`)
        expect(result.category).toBe("batch_aborted")
        // The item was interrupted, so its attempt is `interrupted` (an attempt interrupted on its own would
        // read as a provider defect), confirmed, and its worst case stays charged.
        expect(result.error.attempts.map((a) => [a.status, a.failure, a.teardownUnconfirmed])).toEqual([
          ["interrupted", null, false]
        ])
        expect(result.error.attempts[0]!.charged).toEqual(result.error.attempts[0]!.reservation)
        // Published only once its call was torn down.
        expect(publishedAt.get(result.itemId)).toBeGreaterThanOrEqual(tornDownAt.get(`p${result.itemId}`)!)
      }
      expect(summary.stats.byCategory).toEqual({ authentication: 1, batch_aborted: IN_FLIGHT - 1 })
      // The interrupted calls, and the failing one, which reported no usage either.
      expect(summary.stats.unknownUsageAttempts).toBe(IN_FLIGHT)
    }))
})
