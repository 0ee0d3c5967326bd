import { describe, expect, it } from "@effect/vitest"
import { Fake, Rein } from "@rein/core"
import { Effect, Either } from "effect"
import * as v8 from "node:v8"
import { contract, layer } from "./fixtures.js"

// A request's list of attempt records has one hidden class whether it holds records or none yet (issue #22, the
// simulation's cold hour): a list that starts as `[]` is a list of small integers to V8, and the code that read it
// on first attempts (`finishAttempt`, inlined into `commit`) was deoptimized by the first retry of a process.
// V8's own answer, through its natives syntax (allowed for functions compiled after the flag is set).
v8.setFlagsFromString("--allow-natives-syntax")
const sameClass = new Function("a", "b", "return %HaveSameMap(a, b)") as (a: object, b: object) => boolean

const request = { prompt: "hello", inputTokens: 100, maxOutputTokens: 100 }

describe("a request's records: one hidden class, empty or not", () => {
  it.effect("a refusal before any attempt and a completion", () =>
    Effect.gen(function*() {
      const fake = Fake.make({ a: [Fake.succeed({ text: "hi" })] })
      // No candidate fits a budget of a millionth of a cent: the planner stops before any attempt.
      const refused = yield* Effect.either(
        Rein.execute(request, contract({ budget: { cost: 0.000001 } })).pipe(Effect.provide(layer(fake)))
      )
      if (Either.isRight(refused)) throw new Error("expected a refusal")
      expect(refused.left.attempts).toEqual([])
      const done = yield* Rein.execute(request, contract()).pipe(Effect.provide(layer(fake)))
      expect(done.attempts).toHaveLength(1)
      expect(sameClass(refused.left.attempts, done.attempts)).toBe(true)
    }))
})
