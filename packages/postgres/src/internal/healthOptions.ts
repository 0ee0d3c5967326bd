/**
 * The shared health's options and its error, decoded at the edge (`PgHealth` re-exports them).
 *
 * @internal
 */
import { Schema } from "effect"
import { Millis, Name } from "./optionSchemas.js"

export class PgHealthError extends Schema.TaggedError<PgHealthError>()("PgHealthError", {
  reason: Schema.Literal("InvalidOptions", "ConfigMismatch", "Unavailable"),
  message: Schema.String
}) {}

const Count = Schema.Int.pipe(Schema.greaterThanOrEqualTo(1))
const Ratio = Schema.Number.pipe(Schema.finite(), Schema.greaterThan(0), Schema.lessThanOrEqualTo(1))

export const Options = Schema.Struct({
  /** The health's name: every process using this name shares its breakers and buckets. */
  name: Schema.optional(Name),
  consecutiveFailures: Schema.optional(Count),
  windowSize: Schema.optional(Schema.Int.pipe(Schema.between(1, 30))),
  minimumVolume: Schema.optional(Count),
  failureRatio: Schema.optional(Ratio),
  /** First cooldown of an open breaker, in milliseconds. */
  cooldownMillis: Schema.optional(Millis),
  cooldownGrowth: Schema.optional(Schema.Number.pipe(Schema.finite(), Schema.greaterThanOrEqualTo(1))),
  maxCooldownMillis: Schema.optional(Millis),
  probes: Schema.optional(Count),
  capacity: Schema.optional(Schema.Number.pipe(Schema.finite(), Schema.nonNegative())),
  depositRatio: Schema.optional(Schema.Number.pipe(Schema.finite(), Schema.nonNegative())),
  /** How often a process polls every breaker, adds its deposits and extends its probe slots (default 1000 ms). */
  heartbeatMillis: Schema.optional(Millis),
  /** How long a probe slot lives past its holder's last heartbeat (default 5000 ms; at least three heartbeats). */
  probeTtlMillis: Schema.optional(Millis),
  /** Bound on one database interaction (default 1000 ms): past it the attempt is refused. */
  queryTimeoutMillis: Schema.optional(Millis),
  /** `false`: no synchronous fast path; every acquisition and completion asks the database (default `true`). */
  fastPath: Schema.optional(Schema.Boolean),
  /** A label for operators in `rein_health_probes.holder` (default `hostname:pid`). */
  holder: Schema.optional(Schema.String)
}).pipe(
  Schema.filter((o) =>
    (o.probeTtlMillis ?? 5000) >= 3 * (o.heartbeatMillis ?? 1000) ||
    { path: ["probeTtlMillis"], message: "Expected at least three heartbeats (3 × heartbeatMillis)" }
  )
)
