import { describe, expect, it } from "@effect/vitest"
import { Fake, Journal, Rein } from "@rein/core"
import { Effect, Either, Layer } from "effect"
import { catalog, contract, endpoint } from "./fixtures.js"

// `a` has the smaller output limit, `b` the larger.
const cat = catalog(endpoint("a", { maxOutputTokens: 1_000 }), endpoint("b", { maxOutputTokens: 4_000 }))

const run = <A, E>(fake: Fake.Fake, effect: Effect.Effect<A, E, Rein.Rein>) =>
  Effect.gen(function*() {
    const value = yield* Effect.either(effect)
    const records = yield* Effect.flatMap(Journal.MemoryJournal, (j) => j.records)
    return { value, records }
  }).pipe(
    Effect.provide(Layer.merge(Rein.layer({ catalog: cat, providers: { fake: fake.provider } }), Journal.layerMemory))
  )

describe("Fake: scripted finish reasons and tool calls", () => {
  it.effect("a scripted length finish is truncated and falls back to the larger output limit", () =>
    Effect.gen(function*() {
      const fake = Fake.make({
        a: [Fake.succeed({ text: "cut at the li", finishReason: "length" })],
        b: [Fake.succeed({ text: "the whole answer", finishReason: "stop" })]
      })
      const { value } = yield* run(fake, Rein.execute({ id: "r", prompt: "p", inputTokens: 10 }, contract()))
      expect(Either.isRight(value) && [value.right.endpoint, value.right.text, value.right.finishReason]).toEqual([
        "b",
        "the whole answer",
        "stop"
      ])
      expect(Either.isRight(value) && value.right.attempts.map((a) => [a.endpoint, a.failure])).toEqual([
        ["a", "truncated"],
        ["b", null]
      ])
    }))

  it.effect("under the request's own output bound a truncated answer does not fall back: every endpoint gets it", () =>
    Effect.gen(function*() {
      const fake = Fake.make({
        a: [Fake.succeed({ text: "cut at the li", finishReason: "length" })],
        b: [Fake.succeed({ text: "never asked" })]
      })
      const { value } = yield* run(
        fake,
        Rein.execute({ id: "r", prompt: "p", inputTokens: 10, maxOutputTokens: 500 }, contract())
      )
      expect(Either.isLeft(value) && value.left).toMatchObject({
        _tag: "PlanExhausted",
        lastFailure: { kind: "truncated", endpoint: "a" }
      })
      expect((yield* fake.calls).map((c) => c.endpoint)).toEqual(["a"])
    }))

  it.effect("with truncation accept, a length finish is an annotated success", () =>
    Effect.gen(function*() {
      const fake = Fake.make({ a: [Fake.succeed({ text: "cut at the li", finishReason: "length" })] })
      const { value } = yield* run(
        fake,
        Rein.execute({ id: "r", prompt: "p", inputTokens: 10 }, contract({ truncation: "accept" }))
      )
      expect(Either.isRight(value) && [value.right.endpoint, value.right.finishReason]).toEqual(["a", "length"])
    }))

  it.effect("scripted tool calls reach the completion; the journal keeps their names and counts only", () =>
    Effect.gen(function*() {
      const fake = Fake.make({
        a: [Fake.succeed({
          text: "",
          finishReason: "tool-calls",
          toolCalls: [
            { id: "c1", name: "weather", params: { city: "Oslo-secret-city" } },
            { id: "c2", name: "weather", params: { city: "Bergen" } },
            { id: "c3", name: "clock", params: {} }
          ]
        })]
      })
      const { records, value } = yield* run(
        fake,
        Rein.execute(
          { id: "r", prompt: "p", inputTokens: 10, tools: [{ name: "weather" }, { name: "clock" }] },
          contract()
        )
      )
      expect(Either.isRight(value) && value.right.toolCalls?.map((c) => [c.name, c.params])).toEqual([
        ["weather", { city: "Oslo-secret-city" }],
        ["weather", { city: "Bergen" }],
        ["clock", {}]
      ])
      const line = Journal.encode(records[0]!)
      expect(records[0]!.attempts[0]!.toolCalls).toEqual([{ name: "weather", count: 2 }, { name: "clock", count: 1 }])
      expect(records[0]!.outcome).toMatchObject({ _tag: "Completion", finishReason: "tool-calls" })
      expect(line).not.toContain("Oslo-secret-city")
    }))
})
