/**
 * Every refusal and fail-safe stop a user sees says what was refused and what to change, and never holds the
 * prompt. The planner's own reasons are compared by replay, so they stay as old journals recorded them: the
 * fix is said on the outcome only.
 */
import { describe, expect, it } from "@effect/vitest"
import type { Outcome } from "@rein/core"
import { Catalog, Fake, Journal, Rein } from "@rein/core"
import { Effect, Either, Layer } from "effect"
import { catalog, contract, defaultCatalog, endpoint, layer } from "./fixtures.js"

const canary = "CANARY-prompt-refusal-7c1e"
const request = { prompt: `secret ${canary}`, inputTokens: 100, maxOutputTokens: 100 }

const terminalOf = <A>(result: Either.Either<A, Outcome.Terminal>): Outcome.Terminal => {
  if (Either.isRight(result)) throw new Error("expected a terminal failure")
  expect(JSON.stringify(result.left)).not.toContain(canary)
  expect(result.left.message).not.toContain(canary)
  return result.left
}

const refusedBy = (
  run: Effect.Effect<unknown, Outcome.Terminal, Rein.Rein>,
  provide: Layer.Layer<Rein.Rein>
): Effect.Effect<Outcome.Terminal> => Effect.map(Effect.either(Effect.provide(run, provide)), terminalOf)

describe("refusals name what was refused and what to change", () => {
  it.effect("before any call: mode, bounds, tokenizer, unknown candidates, nested retries", () =>
    Effect.gen(function*() {
      const fake = Fake.make({ a: [Fake.succeed()] })
      const effectful = yield* refusedBy(Rein.execute(request, contract({ mode: "effectful" })), layer(fake))
      expect(effectful.message).toMatch(/mode is "effectful".*`@rein\/ledger`.*`mode: "read-only"`/)

      const output = yield* refusedBy(Rein.execute({ ...request, maxOutputTokens: 0 }, contract()), layer(fake))
      expect(output.message).toMatch(/^invalid_request: the request's maxOutputTokens is 0: give a positive integer/)
      const input = yield* refusedBy(Rein.execute({ ...request, inputTokens: -3 }, contract()), layer(fake))
      expect(input.message).toMatch(/the request's inputTokens is -3: give a non-negative integer, or leave it out/)

      const counted = yield* refusedBy(
        Rein.execute({ prompt: request.prompt }, contract()),
        Rein.layer({ catalog: defaultCatalog, providers: { fake: fake.provider }, tokenizer: () => 1.5 })
      )
      expect(counted.message).toMatch(/the tokenizer .* counted 1\.5 input tokens: make it return a non-negative/)

      const typo = yield* refusedBy(Rein.execute(request, contract({ candidates: ["a", "typo/b"] })), layer(fake))
      expect(typo.message).toBe(
        "unknown_candidate: candidate \"typo/b\" is not in the catalog: correct the contract's candidates, or add " +
          "the endpoint to the catalog"
      )

      const nested = yield* refusedBy(
        Rein.execute(request, contract()),
        layer(Fake.make({}, { internalMaxAttempts: 3 }))
      )
      expect(nested.message).toMatch(
        /provider "fake" retries internally \(3 attempts\).*turn its SDK's retries off and declare `internalMaxAttempts: 1`/
      )
      expect(yield* fake.calls).toHaveLength(0)
    }))

  it.effect("a request's own count beyond a safe integer is the request's, not blamed on a tokenizer", () =>
    Effect.gen(function*() {
      const fake = Fake.make({ a: [Fake.succeed()] })
      const input = yield* refusedBy(Rein.execute({ ...request, inputTokens: 1e300 }, contract()), layer(fake))
      expect(input.message).toMatch(
        /^invalid_request: the request's inputTokens is 1e\+300: give a non-negative integer/
      )
      const output = yield* refusedBy(Rein.execute({ ...request, maxOutputTokens: 2 ** 53 }, contract()), layer(fake))
      expect(output.message).toMatch(/^invalid_request: the request's maxOutputTokens is 9007199254740992: give a/)
      expect(yield* fake.calls).toHaveLength(0)
    }))

  it.effect("a tokenizer that throws refuses its request (typed, the prompt unquoted), journal or not", () =>
    Effect.gen(function*() {
      const fake = Fake.make({ a: [Fake.succeed()] })
      const throwing = (thrown: unknown) =>
        Rein.layer({
          catalog: defaultCatalog,
          providers: { fake: fake.provider },
          tokenizer: () => {
            throw thrown
          }
        })
      const error = yield* refusedBy(
        Rein.execute({ prompt: request.prompt }, contract()),
        throwing(new RangeError(`cannot count ${request.prompt}`))
      )
      expect(error._tag).toBe("Refused")
      expect(error.message).toBe(
        "invalid_request: the tokenizer (`Rein.layer({ tokenizer })`) threw \"RangeError\": make it return a " +
          "non-negative integer, or give the request `inputTokens`"
      )
      const value = yield* refusedBy(Rein.execute({ prompt: request.prompt }, contract()), throwing(request.prompt))
      expect(value.message).toMatch(/threw a string: make it return/)
      const { records, result } = yield* Effect.gen(function*() {
        const result = yield* Effect.either(Rein.execute({ prompt: request.prompt }, contract()))
        return { result, records: yield* Effect.flatMap(Journal.MemoryJournal, (j) => j.records) }
      }).pipe(Effect.provide(Layer.merge(throwing(new Error(request.prompt)), Journal.layerMemory)))
      expect(terminalOf(result).message).toMatch(/threw "Error": make it return/)
      expect(records.length).toBeGreaterThan(0)
      expect(JSON.stringify(records)).not.toContain(canary)
      expect(yield* fake.calls).toHaveLength(0)
    }))

  it.effect("no legal candidate: the planner's reason, then the fix for the predicate that excluded it", () =>
    Effect.gen(function*() {
      const fake = Fake.make({ a: [Fake.succeed()] })
      const simulated = Catalog.make({ endpoints: [endpoint("a", { simulated: true })] as never })
      const sim = yield* refusedBy(
        Rein.execute(request, contract({ candidates: ["a"], allowSimulated: false })),
        layer(fake, simulated)
      )
      expect(sim.message).toBe(
        "no_legal_candidate: a: simulation: simulated endpoint; the contract does not allow simulation; give the " +
          "contract `allowSimulated: true` (tests, examples), or a real candidate"
      )
      const small = yield* refusedBy(
        Rein.execute({ ...request, maxOutputTokens: 5_000 }, contract({ candidates: ["a"] })),
        layer(fake)
      )
      expect(small.message).toMatch(/capable: max output 1000 < 5000 requested; lower the request's bounds/)
      const unserved = yield* refusedBy(
        Rein.execute(request, contract({ candidates: ["x"] })),
        layer(fake, catalog(endpoint("x", { provider: "nobody" })))
      )
      expect(unserved.message).toMatch(/listed: no provider registered; register a provider/)
    }))

  it.effect("no legal candidate: why each candidate was not, the first five named and the rest counted", () =>
    Effect.gen(function*() {
      const fake = Fake.make({ a: [Fake.succeed()] })
      const ids = ["a", "b", "c", "d", "e", "f", "g"] as const
      const mixed = catalog(
        endpoint("a", { maxOutputTokens: 50 }),
        endpoint("b", { simulated: true }),
        endpoint("c", { provider: "nobody" }),
        ...ids.slice(3).map((id) => endpoint(id, { maxOutputTokens: 50 }))
      )
      const refused = yield* refusedBy(
        Rein.execute(request, contract({ candidates: ids, allowSimulated: false })),
        layer(fake, mixed)
      )
      expect(refused._tag).toBe("Refused")
      expect(refused.message).toBe(
        "no_legal_candidate: a: capable: max output 50 < 100 requested; also not legal: " +
          "b (simulation: simulated endpoint; the contract does not allow simulation), " +
          "c (listed: no provider registered), d (capable: max output 50 < 100 requested), " +
          "e (capable: max output 50 < 100 requested), and 2 more; " +
          "lower the request's bounds, drop the capability it requires, add a candidate that has it, or, if the " +
          "model has it, declare it in the catalog entry's `capabilities` (`tools: true`, …); " +
          "give the contract `allowSimulated: true` (tests, examples), or a real candidate; " +
          "register a provider for each candidate's `provider` in `Rein.layer({ providers })`, and list the " +
          "candidates in the catalog"
      )
      // Two candidates: both named, nothing counted.
      const two = yield* refusedBy(
        Rein.execute(request, contract({ candidates: ["c", "d"] })),
        layer(fake, mixed)
      )
      expect(two.message).toMatch(
        /^no_legal_candidate: c: listed: no provider registered; also not legal: d \(capable: max output 50 < 100 requested\); register a provider/
      )
      expect(two.message).not.toContain("more")
      expect(yield* fake.calls).toHaveLength(0)
    }))

  it.effect("a fail-safe stop says what the failure's kind needs, or which contract field narrowed it", () =>
    Effect.gen(function*() {
      const stop = (step: Fake.Step, overrides: Parameters<typeof contract>[0] = {}) =>
        refusedBy(Rein.execute(request, contract(overrides)), layer(Fake.make({ a: [step] })))
      expect((yield* stop(Fake.fail("content_filtered"))).message).toMatch(
        /^content_filtered forbids retry and fallback; the provider refused the content: change the prompt, or list content_filtered in the contract's `failures.alsoRetry` or `failures.alsoFallback`; last failure/
      )
      expect((yield* stop(Fake.fail("invalid_request"))).message).toMatch(
        /^invalid_request forbids retry and fallback; the provider rejected the request itself, as any model would/
      )
      expect((yield* stop(Fake.fail("unknown"))).message).toMatch(
        /^unknown forbids retry and fallback; Rein does not retry a failure it cannot classify: see the code/
      )
      const narrowed = yield* stop(Fake.fail("server_error"), {
        failures: { noRetry: ["server_error"], noFallback: ["server_error"] }
      })
      expect(narrowed._tag).toBe("FailedSafe")
      expect(narrowed.message).toMatch(
        /^server_error forbids retry and fallback; the contract's `failures` \(noRetry, noFallback\) stop server_error: take it out of them/
      )
    }))

  it.effect("the journal keeps the planner's reason for replay; the outcome's record has the fix, and replays", () =>
    Effect.gen(function*() {
      const fake = Fake.make({ a: [Fake.fail("content_filtered")] })
      const records = yield* Effect.either(Rein.execute(request, contract())).pipe(
        Effect.zipRight(Effect.flatMap(Journal.MemoryJournal, (j) => j.records)),
        Effect.provide(Layer.merge(layer(fake), Journal.layerMemory))
      )
      const record = records[0]!
      const stop = record.decisions.at(-1)!.decision
      expect(stop).toMatchObject({ _tag: "Stop", reason: "content_filtered forbids retry and fallback" })
      expect(record.outcome).toMatchObject({
        _tag: "FailedSafe",
        reason: expect.stringMatching(/; the provider refused/)
      })
      expect(Journal.replay(record)).toEqual(Either.right(record.decisions.length))
      // A record written before the fix was said (its outcome's reason the planner's alone) still decodes and
      // replays: replay compares decisions, not the outcome's words.
      const old = Journal.encode(record).replace(/; the provider refused the content[^"]*/, "")
      expect(old).toContain("\"detail\":null,\"reason\":\"content_filtered forbids retry and fallback\"},\"requestId\"")
      const decoded = Journal.decodeLine(old)
      expect(Either.map(decoded, Journal.replay)).toEqual(Either.right(Either.right(record.decisions.length)))
    }))
})
