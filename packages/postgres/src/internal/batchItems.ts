/**
 * What the database knows of an item: its id, submission index and fingerprints, computed by batch's own
 * `Fingerprint` exactly as a checkpointed single-process run computes them (the whole item, or what `input`
 * picks, for the input; the request's prompt and system for the prompt).
 *
 * @internal
 */
import { Fingerprint } from "@rein/batch"
import type { Provider } from "@rein/core"
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

/** The item's key, or why its input has no fingerprint. @internal */
export const keyOf = <I>(
  options: ItemOptions<I>,
  item: I,
  index: number
): Either.Either<ItemKey, { readonly itemId: string; readonly error: Fingerprint.FingerprintError }> => {
  const itemId = idOf(options, item, index)
  return Either.match(Fingerprint.input(options.input === undefined ? item : options.input(item)), {
    onLeft: (error) => Either.left({ itemId, error }),
    onRight: (inputFingerprint) =>
      Either.right({
        itemId,
        index,
        inputFingerprint,
        promptFingerprint: Fingerprint.prompt(requestOf(options)(item, index))
      })
  })
}
