/**
 * The output bound an attempt sends a vendor: Rein's bound, or the caller's own cap when it is smaller.
 *
 * @internal
 */

/**
 * The smaller of Rein's `bound` and the caller's `cap` (its `Config`'s `max_output_tokens`, `max_tokens`,
 * `maxOutputTokens`, given per call with `withConfigOverride` or to a bridge's `make`): a cap the caller
 * set is kept, never raised to the endpoint's maximum; anything but a positive integer is no cap. @internal
 */
export const outputBound = (cap: unknown, bound: number): number => isCap(cap) && cap < bound ? cap : bound

/** Whether a caller's `Config` field is an output cap: a positive integer (anything else is no cap). @internal */
export const isCap = (value: unknown): value is number =>
  typeof value === "number" && Number.isSafeInteger(value) && value > 0
