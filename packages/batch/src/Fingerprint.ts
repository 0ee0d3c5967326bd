/**
 * Fingerprints: SHA-256 of canonical JSON (object keys sorted, numbers and strings as `JSON.stringify`
 * writes them — RFC 8785), written `sha256:<hex>`. Records carry fingerprints instead of prompts and
 * inputs, so an artifact can prove which input a result belongs to without holding the input itself.
 *
 * Values plain JSON would serialise lossily are refused rather than fingerprinted, so that two different
 * inputs never share a fingerprint: non-finite numbers, `undefined` in arrays, `Map`, `Set`, bigint,
 * functions, symbols and cycles. Objects with a `toJSON` method (a `Date`) are fingerprinted by its result;
 * an object field set to `undefined` counts as absent, as in JSON.
 *
 * @since 0.1.0
 */
import { Canonical } from "@rein/core"
import { Either, Schema } from "effect"
import { createHash } from "node:crypto"
import type { Identity } from "./Identity.js"

/**
 * A value with no faithful JSON form. `path` says where (`$.items[3].price`).
 *
 * @example
 * ```ts
 * import { Either } from "effect"
 * import { Fingerprint } from "@rein/batch"
 *
 * const result = Fingerprint.input({ price: Number.NaN })
 * if (Either.isLeft(result)) console.error(`${result.left.path}: ${result.left.message}`) // "$.price: Expected a finite number, actual NaN"
 * ```
 * @category errors
 * @since 0.1.0
 */
export class FingerprintError extends Schema.TaggedError<FingerprintError>()("FingerprintError", {
  path: Schema.String,
  message: Schema.String
}) {}

/**
 * The canonical JSON text of a value.
 *
 * @example
 * ```ts
 * import { Fingerprint } from "@rein/batch"
 *
 * Fingerprint.canonical({ b: [1, "x"], a: null })
 * // Right('{"a":null,"b":[1,"x"]}')
 * ```
 * @category utils
 * @since 0.1.0
 */
export const canonical = (value: unknown): Either.Either<string, FingerprintError> =>
  Either.mapLeft(Canonical.encode(value), ({ message, path }) => new FingerprintError({ path, message }))

/**
 * SHA-256 of a text's UTF-8 bytes, as `sha256:<64 hex digits>`.
 *
 * @example
 * ```ts
 * import { Fingerprint } from "@rein/batch"
 *
 * Fingerprint.sha256("")
 * // "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
 * ```
 * @category utils
 * @since 0.1.0
 */
export const sha256 = (text: string): string => `sha256:${createHash("sha256").update(text, "utf8").digest("hex")}`

/**
 * The fingerprint of any JSON value: SHA-256 of its canonical JSON. Key order does not matter.
 *
 * @example
 * ```ts
 * import { Either } from "effect"
 * import { Fingerprint } from "@rein/batch"
 *
 * Either.getOrThrow(Fingerprint.of({ a: 1, b: 2 })) === Either.getOrThrow(Fingerprint.of({ b: 2, a: 1 }))
 * // true
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const of = (value: unknown): Either.Either<string, FingerprintError> => Either.map(canonical(value), sha256)

/**
 * The fingerprint of a whole input item (whatever the source yields: an id, a prompt, metadata). A
 * change anywhere in the item forces it to run again.
 *
 * @example
 * ```ts
 * import { Fingerprint } from "@rein/batch"
 *
 * const fp = Fingerprint.input({ id: "inv-1", text: "Invoice #1 …", pages: 2 })
 * // Right("sha256:…")
 * ```
 * @category utils
 * @since 0.1.0
 */
export const input = (item: unknown): Either.Either<string, FingerprintError> => of(item)

/**
 * The fingerprint of a prompt: its text and, when there is one, its system prompt. A bare string is the
 * same prompt as `{ prompt: string }`. Total: every string has one.
 *
 * @example
 * ```ts
 * import { Fingerprint } from "@rein/batch"
 *
 * Fingerprint.prompt("Summarise …") === Fingerprint.prompt({ prompt: "Summarise …" })
 * // true
 * ```
 * @category utils
 * @since 0.1.0
 */
export const prompt = (
  request: string | { readonly prompt: string; readonly system?: string | undefined }
): string => {
  const value = typeof request === "string"
    ? { prompt: request }
    : request.system === undefined
    ? { prompt: request.prompt }
    : { prompt: request.prompt, system: request.system }
  return Either.getOrThrow(of(value))
}

/**
 * The fingerprint of an identity. Total: an identity is strings only.
 *
 * @example
 * ```ts
 * import { Fingerprint, Identity } from "@rein/batch"
 *
 * const fp = Fingerprint.identity(Identity.make({
 *   provider: "openai", model: "gpt-4.1-mini", promptVersion: "p4", parserVersion: "j2", applicationVersion: "a7"
 * }))
 * ```
 * @category utils
 * @since 0.1.0
 */
export const identity = (value: Identity): string =>
  Either.getOrThrow(of({
    provider: value.provider,
    model: value.model,
    promptVersion: value.promptVersion,
    parserVersion: value.parserVersion,
    applicationVersion: value.applicationVersion,
    extra: value.extra
  }))
