/**
 * A breaker in a batch run, as a display around the run sees it: the item whose failure opened the breaker is
 * named on the fiber where `Health` learns of it (`CurrentItem`), and an item the open breaker refused says so
 * in its `ItemFailed` event (which endpoint, when it may half-open).
 */
import { describe, expect, it } from "@effect/vitest"
import { Batch, CurrentItem, Guardrails } from "@rein/batch"
import type { Events } from "@rein/batch"
import { Health, Rein } from "@rein/core"
import { Effect, Fiber, Layer, Option, TestClock } from "effect"
import { catalog, contract, fail, ok, scripted } from "./batch-helpers.js"

interface Seen {
  readonly endpoint: string
  readonly state: Health.BreakerState
  readonly itemId: string | undefined
}

/** `inner`, noting after each completion the breaker's state and the item the completing fiber works for. */
const watched = (inner: Health.Service, seen: Array<Seen>): Health.Service => {
  const note = (permit: Health.Permit) =>
    Effect.flatMap(
      Effect.zip(inner.breaker(permit.endpoint), CurrentItem.itemId),
      ([state, item]) =>
        Effect.sync(() => {
          // The synchronous reading (for a service's fast path) agrees with the effect's.
          expect(CurrentItem.unsafeItemId()).toBe(Option.getOrUndefined(item))
          seen.push({ endpoint: permit.endpoint, state, itemId: Option.getOrUndefined(item) })
        })
    )
  const { unsafeComplete } = inner
  return {
    ...inner,
    complete: (permit, result) => Effect.zipRight(inner.complete(permit, result), note(permit)),
    ...(unsafeComplete === undefined ? {} : {
      unsafeComplete: (atNanos: bigint, permit: Health.Permit, result: Health.Result) =>
        Effect.zipRight(unsafeComplete(atNanos, permit, result), note(permit))
    })
  }
}

describe("a breaker in a batch run", () => {
  it.effect("the item that opened it is named where Health completes; the item it refused says which and when", () =>
    Effect.gen(function*() {
      // doc-1 fails once (a 503) and opens a's breaker for 10 s; doc-2, next (one at a time), finds it open.
      const fake = scripted((prompt) => prompt === "p1" ? fail("overloaded", { latency: 10 }) : ok(10))
      const inner = yield* Health.make({ consecutiveFailures: 1, cooldown: 10_000 })
      const seen: Array<Seen> = []
      const events: Array<Events.Event> = []
      const layer = Layer.merge(
        Rein.layer({ catalog, providers: { fake: fake.provider }, health: false }),
        Layer.succeed(Health.Health, watched(inner, seen))
      )
      const items = [{ id: "doc-1", prompt: "p1" }, { id: "doc-2", prompt: "p2" }]
      const fiber = yield* Effect.fork(
        Batch.run(items, {
          contract: contract({ retry: { perEndpoint: 0 } }),
          guardrails: Guardrails.make({ concurrency: 1 }),
          request: (item) => ({ prompt: item.prompt, inputTokens: 5, maxOutputTokens: 5 }),
          itemId: (item) => item.id,
          onEvent: (e) => Effect.sync(() => void events.push(e))
        }).pipe(Effect.provide(layer))
      )
      yield* TestClock.adjust("1 minute")
      const summary = yield* Fiber.join(fiber)
      expect(summary.results.map((r) => r._tag)).toEqual(["Failed", "Failed"])
      expect(seen).toEqual([{ endpoint: "a", state: "open", itemId: "doc-1" }])
      const refused = events.find((e): e is typeof Events.ItemFailed.Type =>
        e._tag === "ItemFailed" && e.itemId === "doc-2"
      )
      expect(refused?.error).toBe("PlanExhausted")
      expect(refused?.breakers).toEqual([{ endpoint: "a", state: "open", halfOpensInMillis: 10_000 }])
      // Outside the run, no item.
      expect(yield* CurrentItem.itemId).toEqual(Option.none())
      expect(fake.log.map((c) => c.prompt)).toEqual(["p1"])
    }))
})
