import { Catalog, Contract, Fake, Rein } from "@rein/core"
import type { Failure } from "@rein/core"
import { FastCheck as fc } from "effect"

export const endpoint = (
  id: string,
  overrides: {
    readonly provider?: string
    readonly scope?: string
    readonly contextWindow?: number
    readonly maxOutputTokens?: number
    readonly inPrice?: number
    readonly outPrice?: number
    readonly requestPrice?: number
    readonly tools?: boolean
    readonly structuredOutput?: boolean
    readonly streaming?: boolean
    readonly simulated?: boolean
  } = {}
): Catalog.CatalogInput["endpoints"][number] => ({
  id,
  provider: overrides.provider ?? "fake",
  model: `model-${id}`,
  ...(overrides.scope !== undefined ? { credentialScope: overrides.scope } : {}),
  capabilities: {
    contextWindow: overrides.contextWindow ?? 8_000,
    maxOutputTokens: overrides.maxOutputTokens ?? 1_000,
    tools: overrides.tools ?? true,
    structuredOutput: overrides.structuredOutput ?? true,
    streaming: overrides.streaming ?? true
  },
  prices: {
    inputTokens: overrides.inPrice ?? 1e-6,
    outputTokens: overrides.outPrice ?? 2e-6,
    request: overrides.requestPrice ?? 0
  },
  ...(overrides.simulated !== undefined ? { simulated: overrides.simulated } : {})
})

export const catalog = (...endpoints: Array<Catalog.CatalogInput["endpoints"][number]>) =>
  Catalog.make({ endpoints: endpoints as unknown as Catalog.CatalogInput["endpoints"] })

export const defaultCatalog = catalog(endpoint("a"), endpoint("b"), endpoint("c"))

export const contract = (overrides: Partial<Contract.ContractInput> = {}) =>
  Contract.make({
    deadline: "30 seconds",
    candidates: ["a", "b"],
    allowSimulated: true,
    retry: { perEndpoint: 2, base: "100 millis", factor: 2, max: "2 seconds", jitter: 0 },
    ...overrides
  })

export const layer = (fake: Fake.Fake, cat: Catalog.Catalog = defaultCatalog) =>
  Rein.layer({ catalog: cat, providers: { fake: fake.provider } })

/** A scripted failure of one of `kinds`, after up to `maxLatency` ms, with an optional Retry-After. */
export const failureStep = (kinds: ReadonlyArray<Failure.FailureKind>, maxLatency: number): fc.Arbitrary<Fake.Step> =>
  fc.record({
    kind: fc.constantFrom(...kinds),
    latency: fc.integer({ min: 0, max: maxLatency }),
    retryAfter: fc.option(fc.integer({ min: 0, max: 5_000 }), { nil: undefined })
  }).map(({ kind, latency, retryAfter }) =>
    Fake.fail(kind, { latency, ...(retryAfter !== undefined ? { retryAfter } : {}) })
  )
