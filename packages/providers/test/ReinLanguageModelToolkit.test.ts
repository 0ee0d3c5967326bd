import { LanguageModel, Tool, Toolkit } from "@effect/ai"
import type { Response } from "@effect/ai"
import { describe, expect, it } from "@effect/vitest"
import { ReinLanguageModel } from "@rein/providers"
import { Cause, Effect, Exit, Layer, ParseResult, Schema, Stream } from "effect"
import { catalog, contract, endpoint } from "./fixtures.js"

// The outer `generateText` keeps a toolkit's resolution while its tools find the same handler entries, and
// encodes tool parameters synchronously unless a schema cannot be: both must answer as `LanguageModel.make`.

/** A string parameter whose encode is asynchronous (a promise), or always fails. */
const Later = Schema.transformOrFail(Schema.String, Schema.String, {
  strict: true,
  decode: (s) => ParseResult.succeed(s),
  encode: (s) => Effect.promise(() => Promise.resolve(s))
})
const Broken = Schema.transformOrFail(Schema.String, Schema.String, {
  strict: true,
  decode: (s) => ParseResult.succeed(s),
  encode: (s, _, ast) => ParseResult.fail(new ParseResult.Type(ast, s, "no encode"))
})
const Echo = Tool.make("Echo", { parameters: { s: Schema.String }, success: Schema.String })
const Slow = Tool.make("Slow", { parameters: { s: Later }, success: Schema.String })
const Bad = Tool.make("Bad", { parameters: { s: Broken }, success: Schema.String })
const Tools = Toolkit.make(Echo, Slow, Bad)

const handlersOf = (tag: string) =>
  Tools.toLayer({
    Echo: ({ s }) => Effect.succeed(`${tag} ${s}`),
    Slow: ({ s }) => Effect.succeed(`${tag} slow ${s}`),
    Bad: ({ s }) => Effect.succeed(`${tag} bad ${s}`)
  })

const answer = (...names: Array<"Echo" | "Slow" | "Bad">): Array<Response.PartEncoded> => [
  ...names.map((name, i): Response.PartEncoded => ({ type: "tool-call", id: `c${i}`, name, params: { s: `x${i}` } })),
  { type: "finish", reason: "tool-calls", usage: { inputTokens: 1, outputTokens: 1, totalTokens: 2 } }
]
/** An in-memory model answering `parts`, and Rein over it (one endpoint, the fixtures' contract). */
const memoryOf = (parts: Array<Response.PartEncoded>) =>
  Layer.effect(
    LanguageModel.LanguageModel,
    LanguageModel.make({ generateText: () => Effect.succeed(parts), streamText: () => Stream.empty })
  )
const withTools = endpoint("a", "memory", "a")
const reinOf = (model: Layer.Layer<LanguageModel.LanguageModel>) =>
  ReinLanguageModel.layer({
    contract: contract(),
    catalog: catalog({ ...withTools, capabilities: { ...withTools.capabilities, tools: true } }),
    models: { a: model },
    inputTokens: () => 10
  })

/** The tool results (id, result, encoded result) of one call with `Tools` under `handlers`. */
const resultsOf = (
  model: Layer.Layer<LanguageModel.LanguageModel>,
  handlers: Layer.Layer<Tool.HandlersFor<Toolkit.Tools<typeof Tools>>>
) =>
  LanguageModel.generateText({ prompt: "hi", toolkit: Tools }).pipe(
    Effect.map((r) => r.toolResults.map((t) => [t.id, t.result, t.encodedResult])),
    Effect.provide(model),
    Effect.provide(handlers),
    Effect.exit
  )

describe("ReinLanguageModel: a toolkit's resolution and its parameters, as under make", () => {
  it.effect("the handlers of each call are the ones its context provides, the toolkit kept or not", () =>
    Effect.gen(function*() {
      const memory = memoryOf(answer("Echo", "Echo"))
      const under = Layer.succeedContext(yield* Layer.build(reinOf(memory)))
      const one = Layer.succeedContext(yield* Layer.build(handlersOf("one")))
      const two = Layer.succeedContext(yield* Layer.build(handlersOf("two")))
      const rebuilt = Layer.succeedContext(yield* Layer.build(handlersOf("one")))
      // The same handlers twice (the resolution kept), other handlers, the first ones back, a rebuild of them
      // (new entries).
      for (const handlers of [one, one, two, one, rebuilt, one]) {
        const [bare, rein] = [yield* resultsOf(memory, handlers), yield* resultsOf(under, handlers)]
        expect(rein).toEqual(bare)
        expect(Exit.isSuccess(rein)).toBe(true)
      }
      expect(yield* resultsOf(under, handlersOf("three"))).toEqual(
        Exit.succeed([["c0", "three x0", "three x0"], ["c1", "three x1", "three x1"]])
      )
    }).pipe(Effect.scoped))

  it.effect("parameters whose encode is asynchronous are encoded as effects, in order, before any handler", () =>
    Effect.gen(function*() {
      const memory = memoryOf(answer("Echo", "Slow", "Echo"))
      const bare = yield* resultsOf(memory, handlersOf("h"))
      const rein = yield* resultsOf(reinOf(memory), handlersOf("h"))
      expect(rein).toEqual(bare)
      expect(rein).toEqual(Exit.succeed([["c0", "h x0", "h x0"], ["c1", "h slow x1", "h slow x1"], [
        "c2",
        "h x2",
        "h x2"
      ]]))
    }))

  it.effect("parameters that fail to encode again are a defect carrying the ParseError, as before", () =>
    Effect.gen(function*() {
      const exit = yield* resultsOf(reinOf(memoryOf(answer("Echo", "Bad"))), handlersOf("h"))
      expect(Exit.isFailure(exit) && Cause.isDie(exit.cause)).toBe(true)
      const defect = Exit.isFailure(exit) ? Cause.dieOption(exit.cause) : undefined
      expect(defect?._tag === "Some" && ParseResult.isParseError(defect.value)).toBe(true)
    }))
})
