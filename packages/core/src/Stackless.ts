/**
 * Errors built without a stack trace. Rein's outcome errors are values — returned to the caller, recorded,
 * counted — and a stack captured where an executor builds one points into Rein's internals and tells the
 * caller nothing, while capturing it is among the costliest steps of a cancelled or timed-out request (a
 * thousand of them at a batch stop). Executors built on Rein (the batch engine) build theirs the same way.
 *
 * @since 0.1.0
 */
import * as internal from "./internal/stackless.js"

/**
 * Runs `make` with stack capture off, restoring the previous limit afterwards (also when `make` throws).
 *
 * @example
 * ```ts
 * import { Schema } from "effect"
 * import { Stackless } from "@rein/core"
 *
 * class Stopped extends Schema.TaggedError<Stopped>()("Stopped", { reason: Schema.String }) {}
 *
 * const error = Stackless.stackless(() => new Stopped({ reason: "deadline" }))
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const stackless: <A>(make: () => A) => A = internal.stackless
