import { describe, expect, it } from "@effect/vitest"
import { Rein } from "@rein/core"
import type { Provider } from "@rein/core"
import { Effect, Exit, Fiber, FiberRef } from "effect"
import * as Fork from "../src/internal/fork.js"
import { catalog, contract, endpoint } from "./fixtures.js"

// The fork site made last is reused by any fiber whose references hold the same values. A fiber that has
// fewer references than the one the site was made for (one it never set) holds different values: it must
// not be handed the other fiber's (a worker's reference leaking into its parent's attempts).

const tag = FiberRef.unsafeMake("unset")
const other = FiberRef.unsafeMake("unset")

const siteIn = Effect.withFiberRuntime<Fork.Site>((fiber, status) =>
  Effect.succeed(Fork.siteOf(fiber, status.runtimeFlags))
)

describe("an attempt's fork site, made by another fiber", () => {
  it.effect("a fiber without a reference another fiber set does not reuse that fiber's site", () =>
    Effect.gen(function*() {
      // Not joined (a join would hand the child's references to the parent): awaited.
      const child = yield* Effect.fork(Effect.zipRight(FiberRef.set(tag, "the child's"), siteIn))
      const made = yield* Fiber.await(child)
      const site = yield* siteIn
      expect(Exit.isSuccess(made) && made.value === site).toBe(false)
      expect(yield* site.fork(FiberRef.get(tag)).await).toEqual(Exit.succeed("unset"))
      // The other way round (more references than the site's) makes a new site too.
      yield* FiberRef.set(tag, "the parent's")
      const more = yield* siteIn
      expect(more).not.toBe(site)
      expect(yield* more.fork(FiberRef.get(tag)).await).toEqual(Exit.succeed("the parent's"))
    }))

  it.effect("a fiber that set another reference than the site's fiber (as many references) gets a site of its own", () =>
    Effect.gen(function*() {
      const child = yield* Effect.fork(Effect.zipRight(FiberRef.set(tag, "the child's"), siteIn))
      const made = yield* Fiber.await(child)
      yield* FiberRef.set(other, "the parent's")
      const site = yield* siteIn
      expect(Exit.isSuccess(made) && made.value.source.locals.size === site.source.locals.size).toBe(true)
      expect(Exit.isSuccess(made) && made.value === site).toBe(false)
      expect(yield* site.fork(Effect.zip(FiberRef.get(tag), FiberRef.get(other))).await).toEqual(
        Exit.succeed(["unset", "the parent's"])
      )
    }))

  it.effect("an attempt sees its own caller's references, not those of a worker that ran just before", () =>
    Effect.gen(function*() {
      const seen: Array<string> = []
      const provider: Provider.Provider = {
        internalMaxAttempts: 1,
        simulated: true,
        call: () =>
          Effect.map(FiberRef.get(tag), (value) => {
            seen.push(value)
            return { text: "ok", usage: { inputTokens: 10, outputTokens: 10 } }
          })
      }
      const layer = Rein.layer({ catalog: catalog(endpoint("a")), providers: { fake: provider }, health: false })
      const execute = Rein.execute(
        { prompt: "p", inputTokens: 10, maxOutputTokens: 10 },
        contract({ candidates: ["a"] })
      )
      yield* Effect.gen(function*() {
        const worker = yield* Effect.fork(Effect.zipRight(FiberRef.set(tag, "the worker's"), execute))
        yield* Fiber.await(worker)
        yield* execute
      }).pipe(Effect.provide(layer))
      expect(seen).toEqual(["the worker's", "unset"])
    }))
})
