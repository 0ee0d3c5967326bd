import { describe, expect, it } from "@effect/vitest"
import { Failure } from "@rein/core"
import { Either, FastCheck, Schema } from "effect"

// The failure table, classification and Retry-After parsing decide what is retried, what falls back and how
// long a run waits: each row and each boundary below is a decision a mutant of `Failure.ts` would change.

const yes = true
const no = false

describe("the default failure table", () => {
  it("is the one DESIGN.md documents: retry same endpoint, fall back, counts against health", () => {
    const documented: Record<Failure.FailureKind, [boolean, Failure.FallbackRule, boolean]> = {
      timeout: [yes, "any", no],
      transport: [yes, "any", no],
      rate_limited: [yes, "any", yes],
      overloaded: [yes, "any", yes],
      server_error: [yes, "any", yes],
      malformed_response: [no, "any", yes],
      context_length: [no, "larger_window", no],
      truncated: [no, "larger_output", no],
      content_filtered: [no, "none", no],
      authentication: [no, "other_scope", no],
      permission_denied: [no, "other_scope", no],
      insufficient_balance: [no, "other_scope", no],
      quota_exhausted: [no, "other_scope", no],
      invalid_request: [no, "none", no],
      unknown: [no, "none", no]
    }
    const actual = Object.fromEntries(
      Object.entries(Failure.defaultTable).map(([kind, rule]) => [kind, [rule.retry, rule.fallback, rule.health]])
    )
    expect(actual).toEqual(documented)
    expect([...Failure.FailureKind.literals].sort()).toEqual(Object.keys(documented).sort())
  })

  it("a recorded rule decodes with each fallback rule and nothing else; a recorded failure's usage is checked", () => {
    const rule = Schema.decodeUnknownEither(Failure.Rule)
    for (const fallback of ["any", "larger_window", "larger_output", "other_scope", "none"]) {
      expect(rule({ retry: true, fallback, health: false }), fallback).toEqual(
        Either.right({ retry: true, fallback, health: false })
      )
    }
    expect(Either.isLeft(rule({ retry: true, fallback: "sideways", health: false }))).toBe(true)
    expect(Either.isLeft(rule({ fallback: "any", health: false }))).toBe(true)
    const failure = Schema.decodeUnknownEither(Failure.ProviderFailure)
    const recorded = { _tag: "ProviderFailure", kind: "transport", code: "ECONNRESET", dispatched: true }
    expect(Either.isRight(failure({ ...recorded, usage: { inputTokens: 1, outputTokens: 0 } }))).toBe(true)
    expect(Either.isLeft(failure({ ...recorded, usage: { inputTokens: "1", outputTokens: 0 } }))).toBe(true)
    expect(Either.isLeft(failure({ ...recorded, kind: "tired" }))).toBe(true)
  })

  it("a contract may widen retry only to malformed_response and content_filtered, fallback only to content_filtered", () => {
    expect(Failure.RetryWidenable.literals).toEqual(["malformed_response", "content_filtered"])
    expect(Failure.FallbackWidenable.literals).toEqual(["content_filtered"])
  })
})

describe("classification from structured data", () => {
  const byCode: ReadonlyArray<[Failure.FailureKind, ReadonlyArray<string>]> = [
    ["context_length", [
      "context_length_exceeded",
      "context_window_exceeded",
      "string_above_max_length",
      "max_tokens_exceeded",
      "request_too_large"
    ]],
    ["quota_exhausted", ["insufficient_quota", "quota_exceeded", "quota_exhausted", "billing_hard_limit_reached"]],
    ["insufficient_balance", ["insufficient_balance", "insufficient_funds", "payment_required", "billing_not_active"]],
    ["content_filtered", ["content_filter", "content_policy_violation", "content_filtered", "safety", "refusal"]]
  ]

  it("a provider code for context, quota, balance or content filter wins over any status, in any case", () => {
    for (const [kind, codes] of byCode) {
      for (const code of codes) {
        expect(Failure.classify({ code }), code).toBe(kind)
        expect(Failure.classify({ status: 429, code: code.toUpperCase() }), code).toBe(kind)
        expect(Failure.classify({ status: 200, code }), code).toBe(kind)
      }
    }
  })

  const byLateCode: ReadonlyArray<[Failure.FailureKind, ReadonlyArray<string>]> = [
    ["rate_limited", ["rate_limit_exceeded", "rate_limit_error", "too_many_requests"]],
    ["overloaded", ["overloaded_error", "overloaded", "server_overloaded", "engine_overloaded"]],
    ["authentication", ["invalid_api_key", "authentication_error", "unauthorized"]],
    ["permission_denied", ["permission_error", "permission_denied", "forbidden"]]
  ]

  it("a rate, overload, auth or permission code classifies only when no status does", () => {
    for (const [kind, codes] of byLateCode) {
      for (const code of codes) {
        expect(Failure.classify({ code }), code).toBe(kind)
        expect(Failure.classify({ code: code.toUpperCase(), malformed: true }), code).toBe(kind)
        expect(Failure.classify({ status: 400, code }), code).toBe("invalid_request")
        // A 2xx is never classified by a code of this kind (a stream's error event carries its own).
        expect(Failure.classify({ status: 200, code }), code).toBe("unknown")
        expect(Failure.classify({ status: 299, code }), code).toBe("unknown")
        // Outside the known status ranges, the code decides.
        expect(Failure.classify({ status: 300, code }), code).toBe(kind)
        expect(Failure.classify({ status: 302, code }), code).toBe(kind)
        expect(Failure.classify({ status: 199, code }), code).toBe(kind)
        expect(Failure.classify({ status: 600, code }), code).toBe(kind)
      }
    }
  })

  it("`classifierCodes` lists exactly the codes `classify` reads, by the kind each decides, frozen", () => {
    expect(Object.entries(Failure.classifierCodes)).toEqual([...byCode, ...byLateCode])
    expect(Object.isFrozen(Failure.classifierCodes)).toBe(true)
    for (const codes of Object.values(Failure.classifierCodes)) expect(Object.isFrozen(codes)).toBe(true)
    // Any other machine code decides nothing: the export is the classifier's whole vocabulary of codes.
    const listed = new Set(Object.values(Failure.classifierCodes).flat())
    FastCheck.assert(
      FastCheck.property(
        FastCheck.oneof(
          FastCheck.stringMatching(/^[A-Za-z0-9_.:-]{1,64}$/),
          FastCheck.constantFrom(...listed).map((c) => `${c}_x`)
        ),
        (code) => {
          FastCheck.pre(!listed.has(code.toLowerCase()))
          expect(Failure.classify({ code }), code).toBe("unknown")
        }
      ),
      { seed: 16, numRuns: 500 }
    )
  })

  it("every transport errno is transport, ETIMEDOUT is timeout, and an errno wins over the status", () => {
    const transport = [
      "ECONNREFUSED",
      "ECONNRESET",
      "ENOTFOUND",
      "EAI_AGAIN",
      "EHOSTUNREACH",
      "ENETUNREACH",
      "EPIPE",
      "ECONNABORTED",
      "UND_ERR_SOCKET",
      "UND_ERR_CONNECT_TIMEOUT",
      "CERT_HAS_EXPIRED",
      "DEPTH_ZERO_SELF_SIGNED_CERT",
      "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
      "ERR_TLS_CERT_ALTNAME_INVALID"
    ]
    for (const errno of transport) {
      expect(Failure.classify({ errno }), errno).toBe("transport")
      expect(Failure.classify({ errno, status: 500 }), errno).toBe("transport")
    }
    expect(Failure.classify({ errno: "ETIMEDOUT", status: 500 })).toBe("timeout")
    expect(Failure.classify({ errno: "EWHATEVER" })).toBe("unknown")
    // A code none of the sets knows is no evidence either way.
    expect(Failure.classify({ code: "something_else" })).toBe("unknown")
    expect(Failure.classify({ code: "something_else", malformed: true })).toBe("malformed_response")
    expect(Failure.classify({ errno: "EWHATEVER", status: 503 })).toBe("overloaded")
    // A code of the first group still wins over the errno.
    expect(Failure.classify({ errno: "ECONNRESET", code: "content_filter" })).toBe("content_filtered")
  })

  it("statuses map to their kinds at every boundary of the 2xx, 4xx and 5xx ranges", () => {
    const cases: ReadonlyArray<[number, Failure.FailureKind]> = [
      [199, "unknown"],
      [200, "unknown"],
      [299, "unknown"],
      [300, "unknown"],
      [399, "unknown"],
      [400, "invalid_request"],
      [401, "authentication"],
      [402, "insufficient_balance"],
      [403, "permission_denied"],
      [404, "invalid_request"],
      [408, "timeout"],
      [413, "context_length"],
      [429, "rate_limited"],
      [499, "invalid_request"],
      [500, "server_error"],
      [501, "server_error"],
      [502, "server_error"],
      [503, "overloaded"],
      [504, "server_error"],
      [529, "overloaded"],
      [599, "server_error"],
      [600, "unknown"]
    ]
    for (const [status, kind] of cases) expect(Failure.classify({ status }), String(status)).toBe(kind)
  })

  it("a body that does not decode is malformed_response on a 2xx or without a status, never on an error status", () => {
    expect(Failure.classify({ status: 200, malformed: true })).toBe("malformed_response")
    expect(Failure.classify({ status: 299, malformed: true })).toBe("malformed_response")
    expect(Failure.classify({ malformed: true })).toBe("malformed_response")
    expect(Failure.classify({ status: 302, malformed: true })).toBe("malformed_response")
    expect(Failure.classify({ status: 500, malformed: true })).toBe("server_error")
    expect(Failure.classify({ status: 200, malformed: false })).toBe("unknown")
    expect(Failure.classify({ malformed: false })).toBe("unknown")
  })
})

describe("the normalised failure code", () => {
  it("is the provider code, else http_<status>, else the errno, else the kind", () => {
    expect(Failure.normaliseCode({ code: "rate_limit_exceeded", status: 429, errno: "ECONNRESET" }, "rate_limited"))
      .toBe("rate_limit_exceeded")
    expect(Failure.normaliseCode({ status: 429, errno: "ECONNRESET" }, "rate_limited")).toBe("http_429")
    expect(Failure.normaliseCode({ errno: "ECONNRESET" }, "transport")).toBe("ECONNRESET")
    expect(Failure.normaliseCode({}, "unknown")).toBe("unknown")
  })

  it("is short ASCII: anything outside [A-Za-z0-9_.:-] becomes _, and it stops at 64 characters", () => {
    expect(Failure.normaliseCode({ code: "bad code/é!x.y:z-w_1" }, "unknown")).toBe("bad_code___x.y:z-w_1")
    const long = "a".repeat(100)
    expect(Failure.normaliseCode({ code: long }, "unknown")).toBe("a".repeat(64))
    expect(Failure.normaliseCode({ code: `${"b".repeat(63)}%%` }, "unknown")).toBe(`${"b".repeat(63)}_`)
  })
})

describe("Retry-After", () => {
  const now = Date.parse("2026-01-01T00:00:00Z")

  it("retry-after-ms wins over retry-after, whatever the header case and order", () => {
    expect(Failure.parseRetryAfter({ "retry-after": "9", "RETRY-AFTER-MS": "300" }, now)).toBe(300)
    expect(Failure.parseRetryAfter({ "Retry-After-Ms": "0", "Retry-After": "9" }, now)).toBe(0)
    expect(Failure.parseRetryAfter({ "rEtRy-AfTeR": "4" }, now)).toBe(4_000)
  })

  it("an empty, negative or unparsable retry-after-ms is ignored and retry-after is read instead", () => {
    expect(Failure.parseRetryAfter({ "retry-after-ms": "", "retry-after": "2" }, now)).toBe(2_000)
    expect(Failure.parseRetryAfter({ "retry-after-ms": "   ", "retry-after": "2" }, now)).toBe(2_000)
    expect(Failure.parseRetryAfter({ "retry-after-ms": "-5", "retry-after": "2" }, now)).toBe(2_000)
    expect(Failure.parseRetryAfter({ "retry-after-ms": "soon", "retry-after": "2" }, now)).toBe(2_000)
    expect(Failure.parseRetryAfter({ "retry-after-ms": "-5" }, now)).toBeUndefined()
    expect(Failure.parseRetryAfter({ "retry-after-ms": " 250 " }, now)).toBe(250)
  })

  it("seconds may be fractional and padded; anything else that is not a date is ignored", () => {
    expect(Failure.parseRetryAfter({ "retry-after": " 1.5 " }, now)).toBe(1_500)
    expect(Failure.parseRetryAfter({ "retry-after": "1.25" }, now)).toBe(1_250)
    expect(Failure.parseRetryAfter({ "retry-after": "0" }, now)).toBe(0)
    expect(Failure.parseRetryAfter({ "retry-after": "1." }, now)).toBeUndefined()
    expect(Failure.parseRetryAfter({ "retry-after": "x2" }, now)).toBeUndefined()
    expect(Failure.parseRetryAfter({ "retry-after": "2x" }, now)).toBeUndefined()
    expect(Failure.parseRetryAfter({ "retry-after": "-1" }, now)).toBeUndefined()
    // Digits and dots that Date.parse would read as a date are neither seconds nor an HTTP date.
    expect(Failure.parseRetryAfter({ "retry-after": "1.5.3" }, now)).toBeUndefined()
    expect(Failure.parseRetryAfter({ "retry-after": "2026-01-01" }, now)).toBeUndefined()
  })

  it("an HTTP date is relative to now, a past one is 0, and too large a value is the largest safe integer", () => {
    expect(Failure.parseRetryAfter({ "retry-after": "Thu, 01 Jan 2026 00:00:30 GMT" }, now)).toBe(30_000)
    expect(Failure.parseRetryAfter({ "retry-after": "Thu, 01 Jan 2026 00:00:30 GMT" }, now + 10_000)).toBe(20_000)
    expect(Failure.parseRetryAfter({ "retry-after": "Wed, 31 Dec 2025 23:59:59 GMT" }, now)).toBe(0)
    expect(Failure.parseRetryAfter({ "retry-after": "9".repeat(400) }, now)).toBe(Number.MAX_SAFE_INTEGER)
    expect(Failure.parseRetryAfter({ "retry-after-ms": "1e300" }, now)).toBe(Number.MAX_SAFE_INTEGER)
    expect(Failure.parseRetryAfter({ "retry-after-ms": String(Number.MAX_SAFE_INTEGER - 1) }, now))
      .toBe(Number.MAX_SAFE_INTEGER - 1)
  })

  it("a header given as a list is read from its first value; absent values are skipped", () => {
    expect(Failure.parseRetryAfter({ "retry-after": ["3", "7"] }, now)).toBe(3_000)
    expect(Failure.parseRetryAfter({ "retry-after-ms": undefined, "retry-after": "3" }, now)).toBe(3_000)
    expect(Failure.parseRetryAfter({ "retry-after-ms": [], "retry-after": "3" }, now)).toBe(3_000)
    expect(Failure.parseRetryAfter({ "x-retry-after": "3" }, now)).toBeUndefined()
    // The same header in another case with no value does not erase the one that has a value.
    expect(Failure.parseRetryAfter({ "retry-after-ms": "300", "Retry-After-Ms": undefined }, now)).toBe(300)
  })
})

describe("a failure built from evidence", () => {
  it("carries the classified kind, the normalised code and only the fields that were given", () => {
    const bare = Failure.fromEvidence({ errno: "ECONNRESET" }, { dispatched: false })
    expect(bare).toMatchObject({ _tag: "ProviderFailure", kind: "transport", code: "ECONNRESET", dispatched: false })
    expect("status" in bare || "retryAfterMillis" in bare || "usage" in bare).toBe(false)
    const full = Failure.fromEvidence({ status: 429 }, {
      dispatched: true,
      retryAfterMillis: 1_000,
      usage: { inputTokens: 3, outputTokens: 0 }
    })
    expect(full).toMatchObject({
      kind: "rate_limited",
      code: "http_429",
      dispatched: true,
      status: 429,
      retryAfterMillis: 1_000,
      usage: { inputTokens: 3, outputTokens: 0 }
    })
  })
})
