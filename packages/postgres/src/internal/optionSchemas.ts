/**
 * The option fields every shared service decodes alike: a duration in milliseconds and a shared name, each
 * bounded so that a value the database or the timers cannot hold is refused as an invalid option, naming the
 * field, rather than failing later as the database being unavailable.
 *
 * @internal
 */
import { Schema } from "effect"

/**
 * The longest duration an option takes: 2^31 − 1 ms (about 24.8 days), the longest a timer waits (a longer
 * `Effect.sleep` never fires: a heartbeat would never run) and far inside PostgreSQL's intervals (a `ttlMillis`
 * of 1e300 failed every lease with `interval out of range`). @internal
 */
export const MAX_MILLIS = 2 ** 31 - 1

/** A positive, finite number of milliseconds, at most `MAX_MILLIS`. @internal */
export const Millis = Schema.Number.pipe(
  Schema.finite(),
  Schema.greaterThan(0),
  Schema.lessThanOrEqualTo(MAX_MILLIS)
)

/**
 * The longest shared name, in UTF-8 bytes: it is a key of the database's indexes (whose rows hold about 2.7 KB; a
 * longer name failed with `index row requires … bytes`). It holds a run's session names, `rein-batch/<run id of at
 * most PgBatchRun.MAX_RUN_ID_BYTES>/<session start>`. @internal
 */
export const MAX_NAME_BYTES = 512

/** Why `s` cannot be a shared name's key (over `MAX_NAME_BYTES` in UTF-8); `undefined` when it can. @internal */
export const nameTooLong = (s: string): string | undefined => {
  const bytes = Buffer.byteLength(s, "utf8")
  return bytes <= MAX_NAME_BYTES ? undefined : `Expected at most ${MAX_NAME_BYTES} bytes, actual ${bytes}`
}

/** A shared name: not empty, no leading or trailing space, at most `MAX_NAME_BYTES` bytes. @internal */
export const Name = Schema.NonEmptyTrimmedString.pipe(Schema.filter((s) => nameTooLong(s) ?? true))
