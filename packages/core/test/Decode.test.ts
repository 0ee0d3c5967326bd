import { describe, expect, it } from "@effect/vitest"
import { Catalog, Contract, Fake, Input, Rein } from "@rein/core"
import { Hostile } from "@rein/core/testing"
import { Duration, Effect, Either, FastCheck as fc } from "effect"
import { catalog, endpoint } from "./fixtures.js"

const nested = (depth: number): unknown => {
  let v: unknown = 1
  for (let i = 0; i < depth; i++) v = [v]
  return v
}
const nullProto = (entries: Record<string, unknown>): object => Object.assign(Object.create(null), entries)

const leftOf = <E extends { readonly message: string }>(result: Either.Either<unknown, E>): string => {
  if (Either.isRight(result)) throw new Error("expected a decode failure")
  return result.left.message
}

const validContract = {
  deadline: "30 seconds",
  attemptTimeout: 1_000,
  teardownGrace: "250 millis",
  minAttempt: 10,
  budget: { cost: 0.5, tokens: 1_000, calls: 5 },
  candidates: ["a", "b"],
  retry: { perEndpoint: 2, rateLimited: 3, base: "100 millis", factor: 2, max: "2 seconds", jitter: 0.2 },
  requires: { tools: false, structuredOutput: true, streaming: false },
  mode: "read-only",
  allowSimulated: true,
  failures: { noRetry: ["timeout"], noFallback: [], alsoRetry: ["malformed_response"], alsoFallback: [] }
}

const validEndpoint = (id: string) => ({
  id,
  provider: "p",
  model: "m",
  credentialScope: "s",
  capabilities: { contextWindow: 8_000, maxOutputTokens: 1_000, tools: true, structuredOutput: false, streaming: true },
  prices: { inputTokens: 1e-6, outputTokens: 2e-6, request: 0 },
  simulated: false
})
const validCatalog = { endpoints: [validEndpoint("a"), validEndpoint("b")] }

/** Every mutation is a typed error naming its field, and nothing throws. */
const expectRejected = <E extends { readonly message: string }>(
  decode: (u: unknown) => Either.Either<unknown, E>,
  mutation: Hostile.Mutation
) => {
  const result = decode(mutation.doc)
  expect(Either.isLeft(result), `${mutation.what} at ${mutation.path} was accepted`).toBe(true)
  const message = Either.isLeft(result) ? result.left.message : ""
  expect(message).toContain(mutation.path)
  expect(message.length).toBeLessThan(10_000)
}

describe("a hostile value at the edge is a typed error naming its field", () => {
  it("deeply nested arrays in a duration or a number", () => {
    const base = { deadline: "1 second", candidates: ["a"] }
    expect(leftOf(Contract.decode({ ...base, deadline: nested(100_000) }))).toMatch(
      /^deadline: Expected a positive finite duration .*, actual \[\[\[…\]\]\]$/
    )
    expect(leftOf(Contract.decode({ ...base, budget: { cost: nested(100_000) } }))).toMatch(/^budget\.cost: /)
    expect(leftOf(Contract.decode({ ...base, retry: { jitter: nested(50_000) } }))).toMatch(/^retry\.jitter: /)
  })

  it("null-prototype objects in a field, and a null-prototype document decodes like a plain one", () => {
    const base = { deadline: "1 second", candidates: ["a"] }
    expect(leftOf(Contract.decode({ ...base, deadline: nullProto({ x: 1 }) }))).toMatch(
      /^deadline: Expected .*, actual \{ x: 1 \}$/
    )
    expect(leftOf(Contract.decode({ ...base, retry: { factor: nullProto({}) } }))).toMatch(/^retry\.factor: /)
    const endpoint = { ...validEndpoint("a"), capabilities: { contextWindow: nullProto({}), maxOutputTokens: 1 } }
    expect(leftOf(Catalog.decode({ endpoints: [endpoint] }))).toMatch(/^endpoints\.0\.capabilities\.contextWindow: /)
    expect(Either.isRight(Contract.decode(Hostile.withoutPrototypes(validContract)))).toBe(true)
    expect(Either.isRight(Catalog.decode(Hostile.withoutPrototypes(validCatalog)))).toBe(true)
  })

  it("a huge string is abbreviated, a symbol named", () => {
    const message = leftOf(Contract.decode({ deadline: "x".repeat(1_000_000), candidates: ["a"] }))
    expect(message.length).toBeLessThan(300)
    expect(message).toContain("(1000000 characters)")
    expect(leftOf(Contract.decode({ deadline: Symbol("s"), candidates: ["a"] }))).toContain("actual a symbol")
  })

  it("describe never throws and stays short", () => {
    const revoked = Proxy.revocable({}, {})
    revoked.revoke()
    for (const v of [...Hostile.values, revoked.proxy]) {
      expect(Input.describe(v).length).toBeLessThan(400)
    }
  })
})

describe("durations below the clock's resolution", () => {
  for (const value of ["0.4 ns", "1e-7 ms", 4e-7, Number.MIN_VALUE]) {
    it(`${String(value)} is refused, naming the field (never a zero deadline)`, () => {
      expect(leftOf(Contract.decode({ deadline: value, candidates: ["a"] }))).toMatch(
        /^deadline: Expected a duration of at least 1 nanosecond/
      )
      expect(leftOf(Contract.decode({ deadline: 1, attemptTimeout: value, candidates: ["a"] }))).toMatch(
        /^attemptTimeout: /
      )
    })
  }

  it("one nanosecond is the least duration", () => {
    const c = Contract.make({ deadline: "1 ns", candidates: ["a"] })
    expect(Duration.unsafeToNanos(c.deadline)).toBe(1n)
  })
})

describe("a catalog's prices", () => {
  const priced = (prices: object, capabilities?: object) => ({
    endpoints: [{ ...validEndpoint("a"), ...(capabilities === undefined ? {} : { capabilities }), prices }]
  })

  it("refuses prices whose worst case for one call is not a finite cost, naming the endpoint's prices", () => {
    // 8,000 × 1e305 overflows: every reservation on it would be Infinity, charged as unknown usage, and a
    // batch's cost cap (which counts unknown usage apart) would never see it.
    expect(leftOf(Catalog.decode(priced({ inputTokens: 1e305, outputTokens: 0 })))).toBe(
      "endpoints.0.prices: Expected prices whose worst case for one call (contextWindow × inputTokens + " +
        "maxOutputTokens × outputTokens + request) is a finite cost, actual Infinity"
    )
    expect(leftOf(Catalog.decode(priced({ inputTokens: 0, outputTokens: 1e308, request: 1e308 })))).toMatch(
      /^endpoints\.0\.prices: Expected prices whose worst case/
    )
    expect(Either.isRight(Catalog.decode(priced({ inputTokens: 1e300, outputTokens: 1e300, request: 1e300 }))))
      .toBe(true)
  })

  it.effect.prop(
    "a catalog is taken exactly when every endpoint's worst case for one call is finite",
    [
      fc.double({ min: 0, max: Number.MAX_VALUE, noNaN: true }),
      fc.double({ min: 0, max: Number.MAX_VALUE, noNaN: true }),
      fc.double({ min: 0, max: Number.MAX_VALUE, noNaN: true }),
      fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
      fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER })
    ],
    ([inputTokens, outputTokens, request, contextWindow, maxOutputTokens]) =>
      Effect.sync(() => {
        const worst = contextWindow * inputTokens + maxOutputTokens * outputTokens + request
        const result = Catalog.decode(
          priced({ inputTokens, outputTokens, request }, { contextWindow, maxOutputTokens })
        )
        expect(Either.isRight(result)).toBe(Number.isFinite(worst))
      })
  )
})

describe("messages in the user's words", () => {
  it("a catalog that is an array says what a catalog is, not the schema's internals", () => {
    const message = leftOf(Catalog.decode([validEndpoint("a")]))
    expect(message).not.toContain("Encoded side")
    expect(message).not.toContain("<->")
    expect(message).toMatch(/^Expected a catalog: an object with "endpoints", actual \[/)
  })

  it("empty candidates or endpoints say that at least one is needed", () => {
    expect(leftOf(Contract.decode({ deadline: 1, candidates: [] }))).toBe(
      "candidates: Expected at least one candidate, actual []"
    )
    expect(leftOf(Catalog.decode({ endpoints: [] }))).toBe("endpoints: Expected at least one endpoint, actual []")
    expect(leftOf(Catalog.decode({ endpoints: "x" }))).toBe(
      "endpoints: Expected an array of at least one endpoint, actual \"x\""
    )
    expect(leftOf(Contract.decode({ deadline: 1, candidates: "a" }))).toBe(
      "candidates: Expected an array of at least one candidate, actual \"a\""
    )
    // A bad item keeps its own path and message.
    expect(leftOf(Contract.decode({ deadline: 1, candidates: ["a", 3] }))).toMatch(/^candidates\.1: Expected /)
  })

  it.effect("a candidate that is not in the catalog is refused before any call, naming it", () =>
    Effect.gen(function*() {
      const fake = Fake.make({ a: [Fake.succeed()] })
      const contract = Contract.make({ deadline: "10 seconds", candidates: ["a", "typo/b"], allowSimulated: true })
      const error = yield* Rein.execute({ prompt: "p", inputTokens: 1 }, contract).pipe(
        Effect.flip,
        Effect.provide(Rein.layer({ catalog: catalog(endpoint("a")), providers: { fake: fake.provider } }))
      )
      expect(error).toMatchObject({
        _tag: "Refused",
        refusal: "unknown_candidate",
        reason: "candidate \"typo/b\" is not in the catalog: correct the contract's candidates, or add the endpoint " +
          "to the catalog",
        attempts: []
      })
      expect(yield* fake.calls).toHaveLength(0)
    }))
})

const contractFields: ReadonlyArray<Hostile.Field> = [
  { path: ["deadline"], accepts: Hostile.accepts.duration, required: true },
  { path: ["attemptTimeout"], accepts: Hostile.accepts.duration },
  { path: ["teardownGrace"], accepts: Hostile.accepts.duration },
  { path: ["minAttempt"], accepts: Hostile.accepts.duration },
  { path: ["budget"], accepts: Hostile.accepts.emptyObject },
  { path: ["budget", "cost"], accepts: Hostile.accepts.nonNegativeNumber },
  { path: ["budget", "tokens"], accepts: Hostile.accepts.nonNegativeInt },
  { path: ["budget", "calls"], accepts: Hostile.accepts.nonNegativeInt },
  { path: ["candidates"], accepts: () => false, required: true },
  { path: ["candidates", 0], accepts: (v) => Hostile.accepts.nonEmptyTrimmed(v) && v !== "b" },
  { path: ["retry"], accepts: Hostile.accepts.emptyObject },
  { path: ["retry", "perEndpoint"], accepts: Hostile.accepts.nonNegativeInt },
  { path: ["retry", "rateLimited"], accepts: Hostile.accepts.nonNegativeInt },
  { path: ["retry", "base"], accepts: Hostile.accepts.duration },
  { path: ["retry", "factor"], accepts: (v) => typeof v === "number" && Number.isFinite(v) && v >= 1 },
  { path: ["retry", "max"], accepts: Hostile.accepts.duration },
  { path: ["retry", "jitter"], accepts: Hostile.accepts.fraction },
  { path: ["requires"], accepts: Hostile.accepts.emptyObject },
  { path: ["requires", "tools"], accepts: Hostile.accepts.boolean },
  { path: ["requires", "structuredOutput"], accepts: Hostile.accepts.boolean },
  { path: ["requires", "streaming"], accepts: Hostile.accepts.boolean },
  { path: ["mode"], accepts: Hostile.accepts.oneOf("read-only", "advisory", "effectful") },
  { path: ["allowSimulated"], accepts: Hostile.accepts.boolean },
  { path: ["failures"], accepts: Hostile.accepts.emptyObject },
  { path: ["failures", "noRetry"], accepts: Hostile.accepts.arrayOf(() => false) },
  { path: ["failures", "noRetry", 0], accepts: () => false },
  { path: ["failures", "alsoRetry", 0], accepts: () => false }
]

const catalogFields: ReadonlyArray<Hostile.Field> = [
  { path: ["endpoints"], accepts: () => false, required: true },
  ...[0, 1].flatMap((i): ReadonlyArray<Hostile.Field> => [
    { path: ["endpoints", i], accepts: () => false },
    { path: ["endpoints", i, "id"], accepts: (v) => Hostile.accepts.nonEmptyTrimmed(v), required: true },
    { path: ["endpoints", i, "provider"], accepts: Hostile.accepts.nonEmptyTrimmed, required: true },
    { path: ["endpoints", i, "model"], accepts: Hostile.accepts.nonEmptyTrimmed, required: true },
    { path: ["endpoints", i, "credentialScope"], accepts: Hostile.accepts.nonEmptyTrimmed },
    { path: ["endpoints", i, "capabilities"], accepts: () => false, required: true },
    { path: ["endpoints", i, "capabilities", "contextWindow"], accepts: Hostile.accepts.positiveInt, required: true },
    { path: ["endpoints", i, "capabilities", "maxOutputTokens"], accepts: Hostile.accepts.positiveInt },
    { path: ["endpoints", i, "capabilities", "tools"], accepts: Hostile.accepts.boolean },
    { path: ["endpoints", i, "capabilities", "streaming"], accepts: Hostile.accepts.boolean },
    { path: ["endpoints", i, "prices"], accepts: () => false, required: true },
    { path: ["endpoints", i, "prices", "inputTokens"], accepts: Hostile.accepts.nonNegativeNumber, required: true },
    { path: ["endpoints", i, "prices", "outputTokens"], accepts: Hostile.accepts.nonNegativeNumber },
    { path: ["endpoints", i, "prices", "request"], accepts: Hostile.accepts.nonNegativeNumber },
    { path: ["endpoints", i, "simulated"], accepts: Hostile.accepts.boolean }
  ])
]

describe("10,000 hostile documents per decoder: zero throws, zero bad values accepted", () => {
  it("contract", () => {
    expect(Either.isRight(Contract.decode(validContract))).toBe(true)
    fc.assert(
      fc.property(
        Hostile.mutations(validContract, contractFields, {
          structs: [[], ["budget"], ["retry"], ["requires"], ["failures"]],
          document: () => false
        }),
        (mutation) => expectRejected(Contract.decode, mutation)
      ),
      { numRuns: 10_000, seed: 15 }
    )
  })

  it("catalog", () => {
    expect(Either.isRight(Catalog.decode(validCatalog))).toBe(true)
    fc.assert(
      fc.property(
        Hostile.mutations(validCatalog, catalogFields, {
          structs: [[], ["endpoints", 0], ["endpoints", 1, "capabilities"], ["endpoints", 0, "prices"]],
          document: () => false
        }),
        (mutation) => expectRejected(Catalog.decode, mutation)
      ),
      { numRuns: 10_000, seed: 15 }
    )
  })
})
