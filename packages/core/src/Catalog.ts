/**
 * The catalog: the endpoints Rein may call, with what each can do, what it costs and whose credentials it
 * uses. Prices are pinned here: admission reserves against these numbers, never against a live price.
 *
 * @since 0.1.0
 */
import { Either, Schema } from "effect"
import { identity } from "effect/Function"
import { decodeWith, nonEmptyArray, NonNegativeNumber as NonNegative, PositiveInt } from "./internal/decode.js"

/**
 * An endpoint id, e.g. `"openai/mini"`.
 *
 * @category schemas
 * @since 0.1.0
 */
export const EndpointId = Schema.NonEmptyTrimmedString.annotations({ identifier: "EndpointId" })

/**
 * @category models
 * @since 0.1.0
 */
export type EndpointId = typeof EndpointId.Type

/**
 * What an endpoint can do.
 *
 * @category models
 * @since 0.1.0
 */
export class Capabilities extends Schema.Class<Capabilities>("Capabilities")({
  contextWindow: PositiveInt,
  maxOutputTokens: PositiveInt,
  tools: Schema.optionalWith(Schema.Boolean, { default: () => false }),
  structuredOutput: Schema.optionalWith(Schema.Boolean, { default: () => false }),
  streaming: Schema.optionalWith(Schema.Boolean, { default: () => false })
}) {}

/**
 * Prices per billable dimension, in the catalog's currency: per input token, per output token, per
 * request.
 *
 * @category models
 * @since 0.1.0
 */
export class Prices extends Schema.Class<Prices>("Prices")({
  inputTokens: NonNegative,
  outputTokens: NonNegative,
  request: Schema.optionalWith(NonNegative, { default: () => 0 })
}) {}

/**
 * One endpoint: a model at a provider, under a credential scope.
 *
 * @category models
 * @since 0.1.0
 */
export class Endpoint extends Schema.Class<Endpoint>("Endpoint")({
  id: EndpointId,
  provider: Schema.NonEmptyTrimmedString,
  model: Schema.NonEmptyTrimmedString,
  credentialScope: Schema.optional(Schema.NonEmptyTrimmedString),
  capabilities: Capabilities,
  prices: Prices,
  /** A simulated endpoint runs only when the contract allows simulation; its results are labelled. */
  simulated: Schema.optionalWith(Schema.Boolean, { default: () => false }),
  /** Whose provider-defined tools it runs (`openai`, `anthropic`, …); default: `provider`. */
  vendor: Schema.optional(Schema.NonEmptyTrimmedString)
}) {}

/**
 * The credential scope of an endpoint (its provider when none is given).
 *
 * @category getters
 * @since 0.1.0
 */
export const scopeOf = (endpoint: Endpoint): string => endpoint.credentialScope ?? endpoint.provider

/**
 * The vendor whose provider-defined tools an endpoint runs: `vendor`, else `provider`.
 *
 * @example
 * ```ts
 * import { Catalog } from "@rein/core"
 *
 * declare const endpoint: Catalog.Endpoint
 * const vendor = Catalog.vendorOf(endpoint)
 * ```
 * @category getters
 * @since 0.1.0
 */
export const vendorOf = (endpoint: Endpoint): string => endpoint.vendor ?? endpoint.provider

/**
 * The encoded (JSON) form of a catalog.
 *
 * @category models
 * @since 0.1.0
 */
export type CatalogInput = typeof CatalogSchema.Encoded

/**
 * The most one call on `endpoint` can reserve: a request fills at most its context window and asks for at most
 * its output limit (the `capable` predicate), so `contextWindow × inputTokens + maxOutputTokens ×
 * outputTokens + request` bounds every reservation on it. A decoded catalog keeps it finite.
 *
 * @example
 * ```ts
 * import { Catalog } from "@rein/core"
 *
 * declare const endpoint: Catalog.Endpoint
 * const finite = Number.isFinite(Catalog.worstCase(endpoint))
 * ```
 * @category getters
 * @since 0.1.0
 */
export const worstCase = (endpoint: Endpoint): number =>
  endpoint.capabilities.contextWindow * endpoint.prices.inputTokens +
  endpoint.capabilities.maxOutputTokens * endpoint.prices.outputTokens + endpoint.prices.request

/**
 * A catalog as a Schema, decodable from JSON. Endpoint ids must be unique, and each endpoint's worst case for
 * one call a finite cost: prices that overflow it (`1e305` per input token over an 8,000-token window) would
 * make every reservation on it `Infinity`, charged as unknown usage that a batch's cost cap counts apart.
 *
 * @category schemas
 * @since 0.1.0
 */
export const CatalogSchema = Schema.Struct({
  endpoints: nonEmptyArray(Endpoint, "endpoint")
}).annotations({ description: "a catalog: an object with \"endpoints\"" }).pipe(
  Schema.filter((c) => {
    const seen = new Set<string>()
    for (const [i, e] of c.endpoints.entries()) {
      if (seen.has(e.id)) {
        return { path: ["endpoints", i, "id"], message: `Duplicate endpoint id ${JSON.stringify(e.id)}` }
      }
      seen.add(e.id)
    }
    return true
  }),
  Schema.filter((c) => {
    for (const [i, e] of c.endpoints.entries()) {
      const worst = worstCase(e)
      if (!Number.isFinite(worst)) {
        return {
          path: ["endpoints", i, "prices"],
          message: "Expected prices whose worst case for one call (contextWindow × inputTokens + maxOutputTokens × " +
            `outputTokens + request) is a finite cost, actual ${worst}`
        }
      }
    }
    return true
  })
)

/**
 * A decoded catalog, indexed by endpoint id.
 *
 * @category models
 * @since 0.1.0
 */
export interface Catalog {
  readonly endpoints: ReadonlyArray<Endpoint>
  readonly byId: ReadonlyMap<EndpointId, Endpoint>
}

/**
 * A catalog decode failure, with a message naming each bad field.
 *
 * @category errors
 * @since 0.1.0
 */
export class CatalogError extends Schema.TaggedError<CatalogError>()("CatalogError", {
  message: Schema.String
}) {}

const decodeCatalog = decodeWith(CatalogSchema)

const index = (endpoints: ReadonlyArray<Endpoint>): Catalog => ({
  endpoints,
  byId: new Map(endpoints.map((e) => [e.id, e]))
})

/**
 * Decodes a catalog from unknown input (parsed JSON), naming every bad field.
 *
 * @example
 * ```ts
 * import { Catalog } from "@rein/core"
 *
 * const result = Catalog.decode({ endpoints: [] })
 * // Left(CatalogError: "endpoints: Expected a non empty array…")
 * ```
 * @category decoding
 * @since 0.1.0
 */
export const decode = (input: unknown): Either.Either<Catalog, CatalogError> =>
  Either.match(decodeCatalog(input), {
    onLeft: (message) => Either.left(new CatalogError({ message })),
    onRight: (c) => Either.right(index(c.endpoints))
  })

/**
 * Builds a catalog from its JSON form; throws a `CatalogError` on bad input. For trusted, literal config.
 *
 * @example
 * ```ts
 * import { Catalog } from "@rein/core"
 *
 * const catalog = Catalog.make({
 *   endpoints: [{
 *     id: "openai/mini", provider: "openai", model: "gpt-4.1-mini",
 *     capabilities: { contextWindow: 128_000, maxOutputTokens: 16_384, structuredOutput: true },
 *     prices: { inputTokens: 0.4e-6, outputTokens: 1.6e-6 }
 *   }]
 * })
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const make = (input: CatalogInput): Catalog => Either.getOrThrowWith(decode(input), identity)
