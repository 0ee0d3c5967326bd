/**
 * Signed authorisation of one effectful call. An issuer the host trusts signs a grant that binds the exact
 * request (by digest), the organisation, the connection, the operation, the audience (this ledger), an
 * expiry and a single-use nonce. The ledger checks all of them before it writes anything.
 *
 * The verifier and the trust roots have no default: a ledger cannot be built without saying which
 * signature scheme it accepts and whose keys it trusts.
 *
 * @since 0.1.0
 */
import { Canonical } from "@rein/core"
import { Either, Schema } from "effect"
import { createPublicKey, type KeyObject, sign as cryptoSign, verify as cryptoVerify } from "node:crypto"
import { Sha256 } from "./Digest.js"
import type { RefusalReason } from "./LedgerError.js"

const NonEmpty = Schema.String.pipe(Schema.minLength(1), Schema.maxLength(256))

/**
 * What an issuer grants: one call of `operation` with the request whose digest is `requestDigest`, for
 * `organisation` over `connection`, addressed to the ledger named `audience`, until `expiresAt`
 * (milliseconds since the epoch), once (`nonce`).
 *
 * @example
 * ```ts
 * import { Authorisation, Digest } from "@rein/ledger"
 *
 * const grant = Authorisation.Grant.make({
 *   issuer: "approvals", organisation: "acme", connection: "mail", operation: "send_email",
 *   audience: "rein-ledger", requestDigest: Digest.sha256("…"), expiresAt: 1_900_000_000_000,
 *   nonce: "b7d4f0f2-4f7e-4c2b-9a43-1f0a1b2c3d4e"
 * })
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export class Grant extends Schema.Class<Grant>("@rein/ledger/Grant")({
  issuer: NonEmpty,
  organisation: NonEmpty,
  connection: NonEmpty,
  operation: NonEmpty,
  audience: NonEmpty,
  requestDigest: Sha256,
  expiresAt: Schema.Int,
  nonce: Schema.String.pipe(Schema.minLength(16), Schema.maxLength(256))
}) {}

/**
 * A grant and the issuer's signature over its canonical JSON (base64).
 *
 * @example
 * ```ts
 * import { Schema } from "effect"
 * import { Authorisation } from "@rein/ledger"
 *
 * const decode = Schema.decodeUnknown(Authorisation.Authorisation)
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export class Authorisation extends Schema.Class<Authorisation>("@rein/ledger/Authorisation")({
  grant: Grant,
  signature: Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9+/]+={0,2}$/, { message: () => "Expected base64" }))
}) {}

/**
 * A signature scheme. `verify` must be total: it returns `false` for anything it cannot check.
 *
 * @example
 * ```ts
 * import { Authorisation } from "@rein/ledger"
 *
 * const verifier: Authorisation.Verifier = Authorisation.ed25519
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export interface Verifier {
  readonly algorithm: string
  readonly verify: (message: Uint8Array, signature: Uint8Array, key: KeyObject) => boolean
}

/**
 * Ed25519 signatures checked with `node:crypto`.
 *
 * @example
 * ```ts
 * import { Authorisation } from "@rein/ledger"
 *
 * Authorisation.ed25519.algorithm // "ed25519"
 * ```
 *
 * @category verifiers
 * @since 0.1.0
 */
export const ed25519: Verifier = {
  algorithm: "ed25519",
  verify: (message, signature, key) => {
    if (key.type !== "public" || key.asymmetricKeyType !== "ed25519") return false
    try {
      return cryptoVerify(null, message, key, signature)
    } catch {
      return false
    }
  }
}

/**
 * The issuers this ledger trusts, each with its public key.
 *
 * @example
 * ```ts
 * import { generateKeyPairSync } from "node:crypto"
 * import { Authorisation } from "@rein/ledger"
 *
 * const { publicKey } = generateKeyPairSync("ed25519")
 * const roots = Authorisation.trustRoots({ approvals: publicKey })
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export interface TrustRoots {
  readonly keys: ReadonlyMap<string, KeyObject>
}

/**
 * Builds trust roots from public keys (a `KeyObject` or a PEM string). Throws on a private key or a key
 * that does not parse: a misconfigured trust root is a programming error, not a refusal.
 *
 * @example
 * ```ts
 * import { generateKeyPairSync } from "node:crypto"
 * import { Authorisation } from "@rein/ledger"
 *
 * const { publicKey } = generateKeyPairSync("ed25519")
 * const roots = Authorisation.trustRoots({ approvals: publicKey.export({ type: "spki", format: "pem" }) })
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const trustRoots = (keys: Readonly<Record<string, KeyObject | string | Buffer>>): TrustRoots => {
  const map = new Map<string, KeyObject>()
  for (const [issuer, key] of Object.entries(keys)) {
    const object = typeof key === "string" || Buffer.isBuffer(key) ? createPublicKey(key) : key
    if (object.type !== "public") throw new TypeError(`trustRoots.${issuer}: expected a public key`)
    map.set(issuer, object)
  }
  if (map.size === 0) throw new TypeError("trustRoots: at least one trusted issuer is required")
  return { keys: map }
}

/**
 * The bytes an issuer signs: the canonical JSON of the grant.
 *
 * @example
 * ```ts
 * import { Authorisation } from "@rein/ledger"
 *
 * const bytes = (g: Authorisation.Grant) => Authorisation.signedBytes(g)
 * ```
 *
 * @category signing
 * @since 0.1.0
 */
export const signedBytes = (grant: Grant): Uint8Array =>
  Buffer.from(Canonical.unsafeEncode(Schema.encodeSync(Grant)(grant)), "utf8")

/**
 * Signs a grant with an Ed25519 private key (for issuers and tests; the ledger itself only verifies).
 *
 * @example
 * ```ts
 * import { generateKeyPairSync } from "node:crypto"
 * import { Authorisation } from "@rein/ledger"
 *
 * const { privateKey } = generateKeyPairSync("ed25519")
 * const sign = (grant: Authorisation.Grant) => Authorisation.signEd25519(grant, privateKey)
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const signEd25519 = (grant: Grant, privateKey: KeyObject): Authorisation =>
  Authorisation.make({ grant, signature: cryptoSign(null, signedBytes(grant), privateKey).toString("base64") })

/**
 * What the ledger expects a grant to say, from trusted context (never from the request body).
 *
 * @example
 * ```ts
 * import type { Authorisation } from "@rein/ledger"
 *
 * const expected: Omit<Authorisation.Expected, "requestDigest"> = {
 *   organisation: "acme", connection: "mail", operation: "send_email", audience: "rein-ledger", now: 0
 * }
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export interface Expected {
  readonly organisation: string
  readonly connection: string
  readonly operation: string
  readonly audience: string
  readonly requestDigest: Sha256
  readonly now: number
}

/**
 * Checks a signed authorisation against what is expected. Pure: the single-use nonce is checked by the store,
 * atomically with the first write. Issuer trust and the signature are checked first, so nothing in an
 * unsigned grant is believed.
 *
 * @example
 * ```ts
 * import { Either } from "effect"
 * import { Authorisation } from "@rein/ledger"
 *
 * const ok = (a: Authorisation.Authorisation, e: Authorisation.Expected, roots: Authorisation.TrustRoots) =>
 *   Either.isRight(Authorisation.check(a, e, { verifier: Authorisation.ed25519, trustRoots: roots }))
 * ```
 *
 * @category checking
 * @since 0.1.0
 */
export const check = (
  authorisation: Authorisation,
  expected: Expected,
  trust: { readonly verifier: Verifier; readonly trustRoots: TrustRoots }
): Either.Either<Grant, RefusalReason> => {
  const grant = authorisation.grant
  const key = trust.trustRoots.keys.get(grant.issuer)
  if (key === undefined) return Either.left("issuer_untrusted")
  const signature = Buffer.from(authorisation.signature, "base64")
  if (!trust.verifier.verify(signedBytes(grant), signature, key)) return Either.left("signature_invalid")
  if (grant.organisation !== expected.organisation) return Either.left("organisation_mismatch")
  if (grant.connection !== expected.connection) return Either.left("connection_mismatch")
  if (grant.operation !== expected.operation) return Either.left("operation_mismatch")
  if (grant.audience !== expected.audience) return Either.left("audience_mismatch")
  if (grant.requestDigest !== expected.requestDigest) return Either.left("request_digest_mismatch")
  if (expected.now >= grant.expiresAt) return Either.left("expired")
  return Either.right(grant)
}
