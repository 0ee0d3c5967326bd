/**
 * What the database knows of an item: its id, submission index and fingerprints, computed by batch's own
 * `Fingerprint` exactly as a checkpointed single-process run computes them (the whole item, or what `input`
 * picks, for the input; the request's prompt and system for the prompt).
 *
 * @internal
 */
import { Fingerprint } from "@rein/batch"
import type { Provider } from "@rein/core"
import { Outcome } from "@rein/core"
import { Either } from "effect"
import type { ItemKey } from "./batchStatements.js"

/** How an item becomes a request, an id and a fingerprinted input (as `Checkpoint` options say). @internal */
export interface ItemOptions<I> {
  readonly request?: ((item: I, index: number) => Provider.CompletionRequest) | undefined
  readonly itemId?: ((item: I, index: number) => string) | undefined
  readonly input?: ((item: I) => unknown) | undefined
}

const defaultRequest = (item: unknown): Provider.CompletionRequest =>
  typeof item === "string" ? { prompt: item } : item as Provider.CompletionRequest

/** The request of an item (batch's default: a string is the prompt, a request is itself). @internal */
export const requestOf = <I>(options: ItemOptions<I>) => (item: I, index: number): Provider.CompletionRequest =>
  options.request === undefined ? defaultRequest(item) : options.request(item, index)

/** The id of an item (batch's default: the request's `id`, else its position in the source). @internal */
export const idOf = <I>(options: ItemOptions<I>, item: I, index: number): string =>
  options.itemId?.(item, index) ?? requestOf(options)(item, index).id ?? String(index)

/**
 * The input fingerprint of an item whose input has none (a non-finite number, a bigint, a cycle…), as batch's
 * `Checkpoint` records it: no canonical JSON text hashes to it (it is no `sha256:` value). @internal
 */
export const NO_FINGERPRINT = "none"

/**
 * An item whose input has no fingerprint: its key (input fingerprint `NO_FINGERPRINT`) and why. It is
 * submitted, and refused alone when a worker takes it (`refusedInput`), as in a single-process run. @internal
 */
export interface Unfingerprinted {
  readonly key: ItemKey
  readonly error: Fingerprint.FingerprintError
}

/**
 * The prompt fingerprint of a request, as `Fingerprint.prompt` computes it, or why there is none (a prompt that
 * is a bigint or holds a cycle: `Fingerprint.prompt` throws there).
 */
const promptOf = (request: Provider.CompletionRequest): Either.Either<string, Fingerprint.FingerprintError> =>
  typeof request === "string"
    ? Fingerprint.of({ prompt: request })
    : Fingerprint.of(
      request.system === undefined
        ? { prompt: request.prompt }
        : { prompt: request.prompt, system: request.system }
    )

/**
 * The item's key, or, for an input or a prompt with no fingerprint, its key without one (`NO_FINGERPRINT`) and
 * why. Throws what the item or the caller's functions throw (a getter, a proxy, a `null` item).
 *
 * @internal
 */
export const keyOf = <I>(
  options: ItemOptions<I>,
  item: I,
  index: number
): Either.Either<ItemKey, Unfingerprinted> => {
  const itemId = idOf(options, item, index)
  const input = Fingerprint.input(options.input === undefined ? item : options.input(item))
  const prompt = promptOf(requestOf(options)(item, index))
  const key = {
    itemId,
    index,
    inputFingerprint: Either.getOrElse(input, () => NO_FINGERPRINT),
    promptFingerprint: Either.getOrElse(prompt, () => NO_FINGERPRINT)
  }
  return Either.isLeft(input)
    ? Either.left({ key, error: input.left })
    : Either.isLeft(prompt)
    ? Either.left({
      key,
      error: new Fingerprint.FingerprintError({
        path: `prompt ${prompt.left.path}`,
        message: prompt.left.message
      })
    })
    : Either.right(key)
}

/**
 * The outcome of an item whose input has no fingerprint: refused before any call (`invalid_request`), naming
 * the item and where its input fails, exactly as batch's `Checkpoint` refuses it in a single-process run.
 *
 * @internal
 */
export const refusedInput = (itemId: string, e: Fingerprint.FingerprintError): Outcome.Refused =>
  new Outcome.Refused({
    refusal: "invalid_request",
    reason: `the input of item ${JSON.stringify(itemId)} has no fingerprint: ${e.path}: ${e.message}`,
    attempts: []
  })
