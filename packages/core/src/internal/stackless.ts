/**
 * Outcome errors are values: returned to the caller, recorded, counted. A stack captured where the
 * executor builds one points into Rein's internals and tells the caller nothing, while capturing it is
 * among the costliest steps of a cancelled or timed-out request (a thousand of them at a batch stop).
 *
 * @internal
 */

/** Builds an error without capturing a stack trace. @internal */
export const stackless = <A>(make: () => A): A => {
  const limit = Error.stackTraceLimit
  Error.stackTraceLimit = 0
  try {
    return make()
  } finally {
    Error.stackTraceLimit = limit
  }
}
