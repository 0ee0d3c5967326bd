import { describe, expect, it } from "@effect/vitest"
import { Batch, Guardrails } from "@rein/batch"
import { Catalog, Rein } from "@rein/core"
import { Effect, Fiber, TestClock } from "effect"
import { contract, endpoint, ok, scripted } from "./batch-helpers.js"

// Names every plain object inherits: an index by id that is a `{}` finds them before any entry is made.
const names = ["constructor", "__proto__", "toString", "hasOwnProperty"] as const

describe("Batch.run with endpoint ids that are Object.prototype names", () => {
  for (const health of [true, false]) {
    it.effect.each(names)(
      `every item on %s succeeds, under a capacity guardrail (health ${health ? "on" : "off"})`,
      (id) =>
        Effect.gen(function*() {
          const fake = scripted(() => ok(10))
          const layer = Rein.layer({
            catalog: Catalog.make({ endpoints: [endpoint("a"), endpoint(id)] }),
            providers: { fake: fake.provider },
            ...(health ? {} : { health: false })
          })
          const fiber = yield* Effect.fork(
            Batch.run(["p0", "p1", "p2", "p3"], {
              contract: contract({ candidates: [id, "a"] }),
              // `a` is capped; the endpoint under test is not, whatever `Object.prototype` holds under its name.
              guardrails: Guardrails.make({ concurrency: 4, capacity: { a: 1 } })
            }).pipe(Effect.provide(layer))
          )
          yield* TestClock.adjust("1 minute")
          const summary = yield* Fiber.join(fiber)
          expect(summary.results.map((r) => r._tag)).toEqual(["Succeeded", "Succeeded", "Succeeded", "Succeeded"])
          expect(summary.results.every((r) => r._tag === "Succeeded" && r.completion.endpoint === id)).toBe(true)
          // Four at once: nothing waited for a capacity the endpoint does not have.
          expect(fake.log.map((c) => c.startMillis)).toEqual([0, 0, 0, 0])
        })
    )
  }
})
