import { describe, expect, it } from "@effect/vitest"
import { Catalog, Contract } from "@rein/core"
import { Effect, Either, FastCheck as fc } from "effect"
import { Fingerprint, Identity } from "../src/index.js"
import { identity } from "./fixtures/artifact-identity.js"

const fp = (value: unknown) => Either.getOrThrow(Fingerprint.of(value))

/** The same value with every object's keys in a random order. */
const shuffled = (value: unknown, rand: () => number): unknown => {
  if (Array.isArray(value)) return value.map((v) => shuffled(v, rand))
  if (typeof value === "object" && value !== null) {
    const entries = Object.entries(value).sort(() => rand() - 0.5)
    return Object.fromEntries(entries.map(([k, v]) => [k, shuffled(v, rand)]))
  }
  return value
}

describe("Fingerprint: canonical JSON", () => {
  it("sorts keys, keeps array order, writes numbers and strings as JSON does", () => {
    expect(Either.getOrThrow(Fingerprint.canonical({ b: [3, 1, "x\n"], a: { d: null, c: -0, e: 1e21 } }))).toBe(
      "{\"a\":{\"c\":0,\"d\":null,\"e\":1e+21},\"b\":[3,1,\"x\\n\"]}"
    )
    expect(Fingerprint.sha256("")).toBe("sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
  })

  it("an absent field and one set to undefined are the same input; a Date is its ISO string", () => {
    expect(fp({ a: 1, b: undefined })).toBe(fp({ a: 1 }))
    expect(fp({ at: new Date(0) })).toBe(fp({ at: "1970-01-01T00:00:00.000Z" }))
  })

  it("refuses what JSON would write lossily, naming where", () => {
    const cyclic: Record<string, unknown> = {}
    cyclic.self = cyclic
    const cases: ReadonlyArray<[unknown, string]> = [
      [{ price: Number.NaN }, "$.price"],
      [{ items: [1, Infinity] }, "$.items[1]"],
      [[undefined], "$[0]"],
      [{ tags: new Set(["a"]) }, "$.tags"],
      [{ "odd key": new Map() }, "$[\"odd key\"]"],
      [{ n: 10n }, "$.n"],
      [{ f: () => 1 }, "$.f"],
      [cyclic, "$.self"],
      [undefined, "$"]
    ]
    for (const [value, path] of cases) {
      const result = Fingerprint.of(value)
      expect(Either.isLeft(result)).toBe(true)
      if (Either.isLeft(result)) expect(result.left.path).toBe(path)
    }
  })

  it.effect.prop(
    "key order never changes a fingerprint, and the canonical text round-trips",
    [fc.jsonValue(), fc.integer()],
    ([value, seed]) =>
      Effect.sync(() => {
        let s = seed
        const rand = () => ((s = (s * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff)
        expect(fp(shuffled(value, rand))).toBe(fp(value))
        const text = Either.getOrThrow(Fingerprint.canonical(value))
        expect(Either.getOrThrow(Fingerprint.canonical(JSON.parse(text)))).toBe(text)
      })
  )

  it.effect.prop(
    "different JSON values have different fingerprints",
    [fc.jsonValue(), fc.jsonValue()],
    ([a, b]) =>
      Effect.sync(() => {
        const same = Either.getOrThrow(Fingerprint.canonical(a)) === Either.getOrThrow(Fingerprint.canonical(b))
        expect(fp(a) === fp(b)).toBe(same)
      })
  )
})

describe("Fingerprint: prompts and inputs", () => {
  it("a bare prompt is the same prompt as { prompt }; a system prompt changes it", () => {
    expect(Fingerprint.prompt("Summarise")).toBe(Fingerprint.prompt({ prompt: "Summarise" }))
    expect(Fingerprint.prompt({ prompt: "Summarise", system: undefined })).toBe(Fingerprint.prompt("Summarise"))
    expect(Fingerprint.prompt({ prompt: "Summarise", system: "Be brief" })).not.toBe(Fingerprint.prompt("Summarise"))
  })

  it("any change anywhere in an input item changes its fingerprint", () => {
    const item = { id: "inv-1", text: "Invoice", lines: [{ sku: "a", qty: 1 }] }
    const base = Either.getOrThrow(Fingerprint.input(item))
    expect(Either.getOrThrow(Fingerprint.input({ ...item, lines: [{ sku: "a", qty: 2 }] }))).not.toBe(base)
    expect(Either.getOrThrow(Fingerprint.input({ ...item, text: "Invoice " }))).not.toBe(base)
    expect(base).toMatch(/^sha256:[0-9a-f]{64}$/)
  })
})

describe("Identity", () => {
  it("every field of an identity is part of its fingerprint", () => {
    const base = Fingerprint.identity(identity)
    const changes: ReadonlyArray<Partial<Identity.Identity>> = [
      { provider: "other" },
      { model: "a-2" },
      { promptVersion: "invoice-v5" },
      { parserVersion: "invoice-schema-v3" },
      { applicationVersion: "billing-v8" },
      { extra: { temperature: "0.2" } }
    ]
    for (const change of changes) expect(Fingerprint.identity({ ...identity, ...change })).not.toBe(base)
    expect(Fingerprint.identity(Identity.make({ ...identity, extra: {} }))).toBe(base)
  })

  it("decoding names the bad field", () => {
    const result = Identity.decode({ ...identity, model: " " })
    expect(Either.isLeft(result) && result.left.message).toBe("model: Expected a non-empty string")
  })

  const catalog = Catalog.make({
    endpoints: [
      {
        id: "openai/mini",
        provider: "openai",
        model: "gpt-4.1-mini",
        capabilities: { contextWindow: 128_000, maxOutputTokens: 16_384 },
        prices: { inputTokens: 0.4e-6, outputTokens: 1.6e-6 }
      },
      {
        id: "anthropic/haiku",
        provider: "anthropic",
        model: "claude-haiku",
        capabilities: { contextWindow: 200_000, maxOutputTokens: 8_192 },
        prices: { inputTokens: 0.8e-6, outputTokens: 4e-6 }
      }
    ]
  })
  const versions = { promptVersion: "p4", parserVersion: "j2", applicationVersion: "a7" }
  // Names from the characters that separate a candidate's parts, so that lists easily read alike.
  const name = fc.string({ unit: fc.constantFrom("a", "b", ",", "=", "/", "%", "2"), minLength: 1, maxLength: 4 })

  it("derived from a contract: the first candidate answers, every candidate in order is part of it", () => {
    const both = Contract.make({ deadline: "30 seconds", candidates: ["openai/mini", "anthropic/haiku"] })
    const derived = Either.getOrThrow(Identity.fromContract(both, catalog, versions))
    expect(derived).toEqual({
      provider: "openai",
      model: "gpt-4.1-mini",
      ...versions,
      extra: { "rein.candidates": "openai/mini=openai/gpt-4.1-mini,anthropic/haiku=anthropic/claude-haiku" }
    })
    const reordered = Contract.make({ deadline: "30 seconds", candidates: ["anthropic/haiku", "openai/mini"] })
    const alone = Contract.make({ deadline: "30 seconds", candidates: ["openai/mini"] })
    const fingerprint = (c: Contract.Contract) =>
      Fingerprint.identity(Either.getOrThrow(Identity.fromContract(c, catalog, versions)))
    expect(new Set([fingerprint(both), fingerprint(reordered), fingerprint(alone)]).size).toBe(3)
    // A contract's deadline or budget is not part of what a result means.
    expect(fingerprint(Contract.make({ deadline: "5 minutes", candidates: ["openai/mini", "anthropic/haiku"] }))).toBe(
      fingerprint(both)
    )
  })

  // A catalog of the given (id, provider, model) endpoints, and the contract naming all of them in order.
  const derivedFrom = (endpoints: ReadonlyArray<readonly [string, string, string]>) => {
    const [first, ...rest] = endpoints.map(([id, provider, model]) => ({
      id,
      provider,
      model,
      capabilities: { contextWindow: 1_000, maxOutputTokens: 100 },
      prices: { inputTokens: 0, outputTokens: 0 }
    }))
    const cat = Catalog.make({ endpoints: [first!, ...rest] })
    const contract = Contract.make({ deadline: "30 seconds", candidates: [first!.id, ...rest.map((e) => e.id)] })
    return Either.getOrThrow(Identity.fromContract(contract, cat, versions))
  }

  it("two different candidate lists never share an identity, whatever their names hold (',', '=', '/', '%')", () => {
    // One endpoint whose model reads like a second endpoint, against the two endpoints it imitates.
    const one = derivedFrom([["a", "p", "m"], ["b", "q", "n,c=r/o"]])
    const two = derivedFrom([["a", "p", "m"], ["b", "q", "n"], ["c", "r", "o"]])
    expect(Fingerprint.identity(one)).not.toBe(Fingerprint.identity(two))
    // A provider holding the '/' that ends a provider, and an id holding the '=' that ends an id.
    const fingerprintOf = (endpoints: ReadonlyArray<readonly [string, string, string]>) =>
      Fingerprint.identity(derivedFrom(endpoints))
    expect(fingerprintOf([["a", "p", "m"], ["b", "q/x", "n"]])).not.toBe(
      fingerprintOf([["a", "p", "m"], ["b", "q", "x/n"]])
    )
    expect(fingerprintOf([["z", "p", "m"], ["b=q/n", "r", "s"]])).not.toBe(
      fingerprintOf([["z", "p", "m"], ["b", "q", "n=r/s"]])
    )
  })

  it.prop(
    "candidate lists with the same identity are the same list",
    [
      fc.array(fc.tuple(name, name, name), { minLength: 1, maxLength: 3 }),
      fc.array(fc.tuple(name, name, name), { minLength: 1, maxLength: 3 })
    ],
    ([a, b]) => {
      const unique = (l: ReadonlyArray<readonly [string, string, string]>) =>
        new Set(l.map(([id]) => id)).size === l.length
      fc.pre(unique(a) && unique(b))
      if (Fingerprint.identity(derivedFrom(a)) === Fingerprint.identity(derivedFrom(b))) expect(b).toEqual(a)
    },
    { fastCheck: { numRuns: 2_000 } }
  )

  it("a candidate missing from the catalog, or a reserved extra, is an IdentityError", () => {
    const unknown = Contract.make({ deadline: "30 seconds", candidates: ["mistral/small"] })
    const missing = Identity.fromContract(unknown, catalog, versions)
    expect(Either.isLeft(missing) && missing.left.message).toBe("candidates: \"mistral/small\" is not in the catalog")
    const reserved = Identity.fromContract(
      Contract.make({ deadline: "30 seconds", candidates: ["openai/mini"] }),
      catalog,
      { ...versions, extra: { "rein.candidates": "x" } }
    )
    expect(Either.isLeft(reserved)).toBe(true)
  })
})
