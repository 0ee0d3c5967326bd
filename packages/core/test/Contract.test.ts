import { describe, expect, it } from "@effect/vitest"
import { Catalog, Contract, Failure } from "@rein/core"
import { Either } from "effect"

const messageOf = (input: unknown): string => {
  const result = Contract.decode(input)
  if (Either.isRight(result)) throw new Error("expected a decode failure")
  return result.left.message
}

describe("Contract", () => {
  it("make throws the typed error naming the field, not Either's \"getOrThrow called on a Left\"", () => {
    const thrown = (f: () => unknown): unknown => {
      try {
        f()
      } catch (e) {
        return e
      }
      throw new Error("expected a throw")
    }
    const contract = thrown(() => Contract.make({ deadline: "30 secnds", candidates: ["a"] }))
    expect(contract).toBeInstanceOf(Contract.ContractError)
    expect((contract as Error).message).toMatch(/^deadline: /)
    const catalog = thrown(() =>
      Catalog.make({
        endpoints: [{ id: "a", provider: "p", model: "m", capabilities: { contextWindow: 0, maxOutputTokens: 1 } }]
      } as unknown as Catalog.CatalogInput)
    )
    expect(catalog).toBeInstanceOf(Catalog.CatalogError)
    expect((catalog as Error).message).toMatch(/endpoints\.0\./)
  })

  it("decodes durations from numbers of milliseconds and from strings", () => {
    const c = Contract.make({ deadline: "30 seconds", attemptTimeout: 2_500, candidates: ["a"] })
    expect(c.deadline).toMatchObject({ value: { _tag: "Millis", millis: 30_000 } })
    expect(c.retry.perEndpoint).toBe(2)
    expect(c.mode).toBe("read-only")
  })

  for (
    const [label, value] of [
      ["NaN", Number.NaN],
      ["Infinity", Number.POSITIVE_INFINITY],
      ["-Infinity", Number.NEGATIVE_INFINITY],
      ["zero", 0],
      ["a negative", -1],
      ["a boolean", true],
      ["an unparsable string", "soon"],
      ["a negative string", "-3 seconds"]
    ] as const
  ) {
    it(`rejects ${label} as a duration, naming the field`, () => {
      const message = messageOf({ deadline: value, candidates: ["a"] })
      expect(message).toMatch(/^deadline: Expected a positive finite duration/)
    })
  }

  it("names nested fields", () => {
    expect(messageOf({ deadline: 1000, candidates: ["a"], retry: { max: -5 } })).toMatch(
      /^retry\.max: Expected a positive/
    )
    expect(messageOf({ deadline: 1000, candidates: ["a"], budget: { cost: -1 } })).toContain("budget.cost")
    expect(messageOf({ deadline: 1000, candidates: [] })).toContain("candidates")
    expect(messageOf({ deadline: 1000, candidates: ["a", "a"] })).toContain("Duplicate candidate")
    expect(messageOf({ deadline: 1000, candidates: ["a"], retry: { jitter: 2 } })).toContain("retry.jitter")
  })

  it("refuses unknown fields", () => {
    expect(messageOf({ deadline: 1000, candidates: ["a"], retires: 3 })).toContain("retires")
  })
})

describe("Catalog", () => {
  it("rejects duplicate ids and bad prices, naming the field", () => {
    const endpoint = {
      id: "a",
      provider: "p",
      model: "m",
      capabilities: { contextWindow: 1000, maxOutputTokens: 100 },
      prices: { inputTokens: 1, outputTokens: 1 }
    }
    const dup = Catalog.decode({ endpoints: [endpoint, endpoint] })
    expect(Either.isLeft(dup) && dup.left.message).toContain("endpoints.1.id: Duplicate endpoint id")
    const bad = Catalog.decode({ endpoints: [{ ...endpoint, prices: { inputTokens: -1, outputTokens: 1 } }] })
    expect(Either.isLeft(bad) && bad.left.message).toContain("endpoints.0.prices.inputTokens")
  })
})

describe("Failure", () => {
  it("classifies from structured data only", () => {
    expect(Failure.classify({ status: 429 })).toBe("rate_limited")
    expect(Failure.classify({ status: 429, code: "insufficient_quota" })).toBe("quota_exhausted")
    expect(Failure.classify({ status: 400, code: "context_length_exceeded" })).toBe("context_length")
    expect(Failure.classify({ status: 400 })).toBe("invalid_request")
    expect(Failure.classify({ status: 401 })).toBe("authentication")
    expect(Failure.classify({ status: 402 })).toBe("insufficient_balance")
    expect(Failure.classify({ status: 403 })).toBe("permission_denied")
    expect(Failure.classify({ status: 500 })).toBe("server_error")
    expect(Failure.classify({ status: 502 })).toBe("server_error")
    expect(Failure.classify({ status: 503 })).toBe("overloaded")
    expect(Failure.classify({ status: 529 })).toBe("overloaded")
    expect(Failure.classify({ status: 200, malformed: true })).toBe("malformed_response")
    expect(Failure.classify({ errno: "ECONNREFUSED" })).toBe("transport")
    expect(Failure.classify({})).toBe("unknown")
  })

  it("parses Retry-After in its three forms", () => {
    const now = Date.parse("2026-01-01T00:00:00Z")
    expect(Failure.parseRetryAfter({ "Retry-After-Ms": "300" }, now)).toBe(300)
    expect(Failure.parseRetryAfter({ "retry-after": "2" }, now)).toBe(2_000)
    expect(Failure.parseRetryAfter({ "retry-after": "Thu, 01 Jan 2026 00:00:30 GMT" }, now)).toBe(30_000)
    expect(Failure.parseRetryAfter({ "retry-after": "Wed, 31 Dec 2025 00:00:00 GMT" }, now)).toBe(0)
    expect(Failure.parseRetryAfter({ "retry-after": "-1" }, now)).toBeUndefined()
    expect(Failure.parseRetryAfter({ "retry-after": "soon" }, now)).toBeUndefined()
    expect(Failure.parseRetryAfter({}, now)).toBeUndefined()
  })
})
