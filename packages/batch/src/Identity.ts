/**
 * What makes the results of two runs interchangeable: the provider and model that answer, the versions of
 * the prompt, the parser and the application, and anything else the caller names. A stored record is
 * reused only under the same identity (compared by its fingerprint), so any change here forces the items
 * to run again.
 *
 * An identity is given explicitly (`Identity.make`) or derived from a core `Contract` and `Catalog`
 * (`Identity.fromContract`), in which case every candidate in the contract's order is part of it: adding
 * a fallback model, or reordering the candidates, changes what may answer and so changes the identity.
 *
 * @since 0.1.0
 */
import type { Catalog, Contract } from "@rein/core"
import { Either, Schema } from "effect"
import { identity } from "effect/Function"
import { formatParseError, OwnRecord } from "./internal/schema.js"

const Name = Schema.String.pipe(
  Schema.filter((s) => s.trim().length > 0 || "Expected a non-empty string")
)

/**
 * The identity of a run, as stored in the artifact manifest. `extra` holds anything else that changes the
 * meaning of a result (a temperature, a tool-set version, a dataset revision).
 *
 * @example
 * ```ts
 * import { Identity } from "@rein/batch"
 *
 * const identity: Identity.Identity = {
 *   provider: "openai", model: "gpt-4.1-mini",
 *   promptVersion: "invoice-v4", parserVersion: "invoice-schema-v2", applicationVersion: "billing-v7",
 *   extra: { temperature: "0" }
 * }
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const Identity = Schema.Struct({
  provider: Name,
  model: Name,
  promptVersion: Name,
  parserVersion: Name,
  applicationVersion: Name,
  extra: Schema.optionalWith(OwnRecord(Schema.String), { default: () => ({}) })
})

/**
 * @category models
 * @since 0.1.0
 */
export type Identity = typeof Identity.Type

/**
 * The encoded (JSON) form of an identity: `extra` may be left out.
 *
 * @category models
 * @since 0.1.0
 */
export type IdentityInput = typeof Identity.Encoded

/**
 * An identity that cannot be built: a field that does not decode, or a contract candidate missing from
 * the catalog.
 *
 * @example
 * ```ts
 * import { Either } from "effect"
 * import { Identity } from "@rein/batch"
 *
 * const result = Identity.decode({ provider: "openai" })
 * if (Either.isLeft(result)) console.error(result.left.message) // "model: is missing" …
 * ```
 * @category errors
 * @since 0.1.0
 */
export class IdentityError extends Schema.TaggedError<IdentityError>()("IdentityError", {
  message: Schema.String
}) {}

const decodeIdentity = Schema.decodeUnknownEither(Identity, { errors: "all", onExcessProperty: "error" })

/**
 * Decodes an identity from unknown input, naming every bad field.
 *
 * @example
 * ```ts
 * import { Identity } from "@rein/batch"
 *
 * Identity.decode({ provider: "openai", model: "", promptVersion: "p1", parserVersion: "j1", applicationVersion: "a1" })
 * // Left(IdentityError: "model: Expected a non-empty string")
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const decode = (input: unknown): Either.Either<Identity, IdentityError> =>
  Either.mapLeft(decodeIdentity(input), (e) => new IdentityError({ message: formatParseError(e) }))

/**
 * Builds an identity from literal input; throws an `IdentityError` on bad input. For trusted config.
 *
 * @example
 * ```ts
 * import { Identity } from "@rein/batch"
 *
 * const identity = Identity.make({
 *   provider: "openai", model: "gpt-4.1-mini",
 *   promptVersion: "invoice-v4", parserVersion: "invoice-schema-v2", applicationVersion: "billing-v7"
 * })
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const make = (input: IdentityInput): Identity => Either.getOrThrowWith(decode(input), identity)

/**
 * The versions a contract cannot know: the caller's prompt, parser and application versions, and extras.
 *
 * @example
 * ```ts
 * import type { Identity } from "@rein/batch"
 *
 * const versions: Identity.Versions = {
 *   promptVersion: "invoice-v4", parserVersion: "invoice-schema-v2", applicationVersion: "billing-v7",
 *   extra: { temperature: "0" }
 * }
 * ```
 * @category models
 * @since 0.1.0
 */
export interface Versions {
  readonly promptVersion: string
  readonly parserVersion: string
  readonly applicationVersion: string
  readonly extra?: Readonly<Record<string, string>> | undefined
}

/**
 * The key under which `fromContract` records the whole ordered candidate list in `extra`.
 *
 * @example
 * ```ts
 * import { Identity } from "@rein/batch"
 *
 * declare const identity: Identity.Identity
 * const candidates = identity.extra[Identity.CANDIDATES_KEY] // "openai/mini=openai/gpt-4.1-mini,…"
 * ```
 * @category constants
 * @since 0.1.0
 */
export const CANDIDATES_KEY = "rein.candidates"

// A name in the candidate list, its separators percent-encoded (`/` only where it ends the part: a provider).
const escape = (name: string, slash: boolean): string =>
  name.replace(slash ? /[%,=/]/g : /[%,=]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)

/**
 * Derives an identity from a contract and its catalog: `provider` and `model` are the first candidate's
 * (the one that answers when nothing fails), and `extra["rein.candidates"]` lists every candidate in
 * order as `id=provider/model`, so a change of fallback changes the identity too. A `%`, `,` or `=` in a
 * name, and a `/` in a provider, is written `%25`, `%2C`, `%3D`, `%2F`: two different lists never read alike
 * (names without them are written as they are).
 *
 * @example
 * ```ts
 * import { Catalog, Contract } from "@rein/core"
 * import { Identity } from "@rein/batch"
 *
 * declare const catalog: Catalog.Catalog
 * declare const contract: Contract.Contract
 * const identity = Identity.fromContract(contract, catalog, {
 *   promptVersion: "invoice-v4", parserVersion: "invoice-schema-v2", applicationVersion: "billing-v7"
 * })
 * // Either<Identity, IdentityError>
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const fromContract = (
  contract: Contract.Contract,
  catalog: Catalog.Catalog,
  versions: Versions
): Either.Either<Identity, IdentityError> => {
  const endpoints: Array<Catalog.Endpoint> = []
  for (const id of contract.candidates) {
    const endpoint = catalog.byId.get(id)
    if (endpoint === undefined) {
      return Either.left(new IdentityError({ message: `candidates: ${JSON.stringify(id)} is not in the catalog` }))
    }
    endpoints.push(endpoint)
  }
  const primary = endpoints[0]!
  if (versions.extra !== undefined && CANDIDATES_KEY in versions.extra) {
    return Either.left(new IdentityError({ message: `extra: ${JSON.stringify(CANDIDATES_KEY)} is reserved` }))
  }
  return decode({
    provider: primary.provider,
    model: primary.model,
    promptVersion: versions.promptVersion,
    parserVersion: versions.parserVersion,
    applicationVersion: versions.applicationVersion,
    extra: {
      ...versions.extra,
      [CANDIDATES_KEY]: endpoints.map((e) =>
        `${escape(e.id, false)}=${escape(e.provider, true)}/${escape(e.model, false)}`
      ).join(",")
    }
  })
}
