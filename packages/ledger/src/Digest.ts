/**
 * SHA-256 digests: the only form in which the ledger keeps anything derived from a request, a response or a
 * piece of reconciliation evidence. A digest is 64 lowercase hexadecimal characters.
 *
 * @since 0.1.0
 */
import { Canonical } from "@rein/core"
import { Schema } from "effect"
import { createHash } from "node:crypto"

/**
 * A lowercase hexadecimal SHA-256 digest.
 *
 * @example
 * ```ts
 * import { Schema } from "effect"
 * import { Digest } from "@rein/ledger"
 *
 * const d = Schema.decodeUnknownSync(Digest.Sha256)("a".repeat(64))
 * ```
 *
 * @category schemas
 * @since 0.1.0
 */
export const Sha256 = Schema.String.pipe(
  Schema.pattern(/^[0-9a-f]{64}$/, { message: () => "Expected a lowercase hexadecimal SHA-256 digest" }),
  Schema.brand("@rein/ledger/Sha256")
)

/**
 * @example
 * ```ts
 * import type { Digest } from "@rein/ledger"
 *
 * const show = (d: Digest.Sha256) => d.slice(0, 12)
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export type Sha256 = typeof Sha256.Type

/**
 * The SHA-256 digest of some bytes (a string is hashed as UTF-8).
 *
 * @example
 * ```ts
 * import { Digest } from "@rein/ledger"
 *
 * const confirmation = Digest.sha256("provider message id 1234")
 * ```
 *
 * @category digests
 * @since 0.1.0
 */
export const sha256 = (data: string | Uint8Array): Sha256 =>
  Sha256.make(createHash("sha256").update(data).digest("hex"))

/**
 * The canonical JSON text of a value (`Canonical` of `@rein/core`): keys sorted, no whitespace. Throws
 * `Canonical.CanonicalError` on values JSON cannot represent faithfully (a non-finite number).
 *
 * @example
 * ```ts
 * import { Digest } from "@rein/ledger"
 *
 * Digest.canonicalJson({ b: 1, a: [true] }) // '{"a":[true],"b":1}'
 * ```
 *
 * @category digests
 * @since 0.1.0
 */
export const canonicalJson: (value: unknown) => string = Canonical.unsafeEncode

/**
 * The SHA-256 digest of a value's canonical JSON.
 *
 * @example
 * ```ts
 * import { Digest } from "@rein/ledger"
 *
 * Digest.ofJson({ to: "ops@example.com", subject: "hi" }) === Digest.ofJson({ subject: "hi", to: "ops@example.com" })
 * ```
 *
 * @category digests
 * @since 0.1.0
 */
export const ofJson = (value: unknown): Sha256 => sha256(Canonical.unsafeEncode(value))
