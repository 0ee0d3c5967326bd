/**
 * How a request's planner spec derives from its contract and the catalog entries it names: the one
 * derivation, used by the executor to build the spec and by replay to check that a recorded spec is the
 * one its recorded contract gives.
 *
 * @internal
 */
import { Duration } from "effect"
import type { Endpoint } from "../Catalog.js"
import { scopeOf, vendorOf } from "../Catalog.js"
import type { Contract } from "../Contract.js"
import type { FailureKind, Rule } from "../Failure.js"
import { defaultTable } from "../Failure.js"
import type * as Planner from "../Planner.js"

/**
 * The failure table after a contract's narrowing and widening.
 *
 * @internal
 */
export const effectiveTable = (contract: Contract): { readonly [K in FailureKind]: Rule } => {
  const f = contract.failures
  if (f.noRetry.length + f.noFallback.length + f.alsoRetry.length + f.alsoFallback.length === 0) return defaultTable
  const table: Record<FailureKind, Rule> = { ...defaultTable }
  for (const kind of f.alsoRetry) table[kind] = { ...table[kind], retry: true }
  for (const kind of f.alsoFallback) table[kind] = { ...table[kind], fallback: "any" }
  for (const kind of f.noRetry) table[kind] = { ...table[kind], retry: false }
  for (const kind of f.noFallback) table[kind] = { ...table[kind], fallback: "none" }
  return table
}

/**
 * What a request itself uses that a candidate must support: tools, a JSON response format, and the
 * vendors of its provider-defined tools.
 *
 * @internal
 */
export interface Uses {
  readonly tools: boolean
  readonly structuredOutput: boolean
  readonly vendors: ReadonlyArray<string> | undefined
  /** The cache key of this shape of use. */
  readonly key: string
}

/** How a request shapes its spec beyond its contract. @internal */
export interface DeriveOptions {
  readonly streaming?: boolean
  readonly order?: ReadonlyArray<string>
  /** What the request itself uses (tools, a JSON response format, provider-defined tools' vendors). */
  readonly uses?: Uses | undefined
}

/** What the providers say about one catalog entry: whether one can run it, and whether it is simulated. @internal */
export interface ProviderFacts {
  readonly hasProvider: boolean
  readonly simulated: boolean
}

const UNKNOWN_CANDIDATE = {
  known: false,
  hasProvider: false,
  scope: "",
  contextWindow: 0,
  maxOutputTokens: 0,
  tools: false,
  structuredOutput: false,
  streaming: false,
  simulated: false,
  prices: { inputTokens: 0, outputTokens: 0, request: 0 }
} as const

/**
 * The spec of a request: the candidates in order with their capabilities and pinned prices, the
 * requirements, the retry policy and the effective failure table. `facts` answers for the providers.
 *
 * @internal
 */
export const derive = (
  contract: Contract,
  endpoints: ReadonlyMap<string, Endpoint>,
  facts: (endpoint: Endpoint) => ProviderFacts,
  inputTokens: number | null,
  maxOutputTokens: number | null,
  options: DeriveOptions = {}
): Planner.Spec => {
  const listed = new Set(contract.candidates)
  const uses = options.uses
  return {
    candidates: (options.order ?? contract.candidates).map((id): Planner.CandidateSpec => {
      const e = endpoints.get(id)
      if (e === undefined) return { id, listed: listed.has(id), ...UNKNOWN_CANDIDATE }
      const f = facts(e)
      return {
        id,
        listed: listed.has(id),
        known: true,
        hasProvider: f.hasProvider,
        scope: scopeOf(e),
        contextWindow: e.capabilities.contextWindow,
        maxOutputTokens: e.capabilities.maxOutputTokens,
        tools: e.capabilities.tools,
        structuredOutput: e.capabilities.structuredOutput,
        streaming: e.capabilities.streaming,
        simulated: e.simulated || f.simulated,
        prices: { inputTokens: e.prices.inputTokens, outputTokens: e.prices.outputTokens, request: e.prices.request },
        ...(uses?.vendors === undefined ? {} : { vendor: vendorOf(e) })
      }
    }),
    requires: {
      tools: contract.requires.tools || uses?.tools === true,
      structuredOutput: contract.requires.structuredOutput || uses?.structuredOutput === true,
      streaming: contract.requires.streaming || options.streaming === true,
      ...(uses?.vendors === undefined ? {} : { vendors: uses.vendors })
    },
    mode: contract.mode,
    allowSimulated: contract.allowSimulated,
    inputTokens,
    maxOutputTokens,
    attemptTimeoutMillis: Duration.toMillis(contract.attemptTimeout ?? contract.deadline),
    minAttemptMillis: contract.minAttempt === undefined ? 0 : Duration.toMillis(contract.minAttempt),
    retry: {
      perEndpoint: contract.retry.perEndpoint,
      rateLimited: contract.retry.rateLimited ?? null,
      baseMillis: Duration.toMillis(contract.retry.base),
      factor: contract.retry.factor,
      maxMillis: Duration.toMillis(contract.retry.max),
      jitter: contract.retry.jitter
    },
    table: effectiveTable(contract),
    contract: {
      deadlineMillis: Duration.toMillis(contract.deadline),
      teardownGraceMillis: Duration.toMillis(contract.teardownGrace),
      truncation: contract.truncation,
      maxRetryAfterMillis: Duration.toMillis(contract.retry.maxRetryAfter),
      requires: {
        tools: contract.requires.tools,
        structuredOutput: contract.requires.structuredOutput,
        streaming: contract.requires.streaming
      }
    }
  }
}

/**
 * The contract field (or catalog entry) a spec field derives from, for messages: `retry.maxMillis` →
 * `contract.retry.max`.
 *
 * @internal
 */
export const sourceOf = (contract: Contract, specField: string): string => {
  const [head, ...rest] = specField.split(".")
  const candidate = /^candidates\[(\d+)\](?:\.(\w+))?/.exec(specField)
  if (candidate !== null) {
    const field = candidate[2]
    return field === undefined || field === "id" || field === "listed"
      ? "contract.candidates"
      : `endpoints (the catalog entry of candidate ${Number(candidate[1]) + 1}: ${field})`
  }
  switch (head) {
    case "attemptTimeoutMillis":
      return contract.attemptTimeout === undefined ? "contract.deadline" : "contract.attemptTimeout"
    case "minAttemptMillis":
      return "contract.minAttempt"
    case "retry": {
      const names: Record<string, string> = { baseMillis: "base", maxMillis: "max" }
      const field = rest[0] ?? ""
      return `contract.retry.${Object.prototype.hasOwnProperty.call(names, field) ? names[field] : field}`
    }
    case "table":
      return "contract.failures"
    case "contract": {
      const field = rest[0] ?? ""
      return field === "deadlineMillis"
        ? "contract.deadline"
        : field === "teardownGraceMillis"
        ? "contract.teardownGrace"
        : field === "maxRetryAfterMillis"
        ? "contract.retry.maxRetryAfter"
        : `contract.${rest.join(".")}`
    }
    default:
      return `contract.${specField}`
  }
}

/**
 * A provider's Retry-After as Rein honours it: clamped to the contract's `retry.maxRetryAfter`, whatever
 * the provider put there. Not a number, or negative: no hint.
 *
 * @internal
 */
export const boundRetryAfter = (millis: number | null | undefined, contract: Contract): number | null =>
  millis === undefined || millis === null || !(millis >= 0)
    ? null
    : Math.min(millis, Duration.toMillis(contract.retry.maxRetryAfter))
