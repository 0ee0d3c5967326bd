/**
 * Endpoint health shared by many processes through PostgreSQL: core's `Health.Service` (breakers, half-open
 * probe slots, retry budgets) with every process reading and writing the same rows, so that a breaker opened
 * in one process is open in all of them and a half-open endpoint gets `probes` probes from the whole fleet.
 * The executor is untouched: provide `PgHealth.layer` where `Rein.layer` would have provided the in-memory one.
 *
 * **Breakers** are rows (`rein_health_breakers`) changed only by compare-and-set: a process reads the row and
 * the database's time, computes the transition with core's own pure functions (`Health.admit`,
 * `Health.settle`: the in-process rules, not a copy), and writes it back with `UPDATE … WHERE version = $v`,
 * reading again when another process won. Every successful compare-and-set notifies the channel `rein_health`
 * in the same statement (delivered at commit); each process listens and applies it to its in-memory mirror,
 * which the synchronous fast path reads. The heartbeat polls every breaker as well, so a process whose
 * notification connection is lost (PostgreSQL's listener does not report it) is at most a heartbeat behind.
 *
 * **Probe slots** are rows (`rein_health_probes`) taken by the compare-and-set that admits the probe, so the
 * count read under version `v` is the count the slot is added to: at most `probes` are live fleet-wide. A slot
 * lives `probeTtlMillis` on the database clock past its holder's last heartbeat: a holder that dies frees it
 * then, with nothing to reclaim (a late completion of an expired slot counts as a plain attempt's outcome).
 *
 * **Retry budgets.** A first attempt on an endpoint this process sees closed costs no round trip: its deposits
 * (into the global bucket and each candidate's) are added at the next heartbeat, or before this process's next
 * withdrawal, in one relative update per bucket (`LEAST(capacity, tokens + n × ratio)`: exactly what n
 * deposits one by one give). A retry or a fallback takes its tokens with a round trip: from the global bucket
 * and, in the breaker's compare-and-set, from the endpoint's, in one transaction. Retries follow a failed
 * attempt and its backoff, so that round trip is small beside them, and it keeps the bound exact, with no
 * slack leased to processes: over the whole fleet, extra attempts ≤ capacity + depositRatio × first attempts,
 * globally and per endpoint. Deposits reach the shared bucket up to a heartbeat late, which can only refuse a
 * retry that the in-process bucket would have admitted, never the reverse.
 *
 * **What the fast path sees.** A breaker opened by another process is refused here as soon as its
 * notification arrives (milliseconds), at the latest a heartbeat later; until then this process may admit first
 * attempts on it. A success on an endpoint whose breaker is closed with a full window of successes changes
 * nothing and costs no round trip; any other outcome is written before `complete` returns.
 *
 * **Time.** Cooldowns and slot lifetimes are compared on the database clock (`clock_timestamp()`), never a
 * process clock across machines. A process converts a row's `open_until` to its own monotonic clock when the
 * row arrives, so a cooldown ends there no earlier than in the database.
 *
 * **Failures.** Every database step is bounded by `queryTimeoutMillis`, and setting up (migrations, the
 * settings row, the first read) by ten of them: a database that does not answer fails the layer with
 * `PgHealthError` (`Unavailable`), never hangs it. The processes' health instances on one `PgClient` share one
 * `LISTEN` subscription, which comes back after a lost connection (an instance pings itself each heartbeat): it
 * runs on a listening connection of its own (made like the client's: its configuration, or its pool's options
 * for a client from `PgFromPool`; one connection), which is dropped at once when its pings go unheard, even when
 * it stopped answering without closing. An acquisition that needs the database
 * while it is unreachable is refused (`breaker_open`, fail closed) and the endpoint is treated as open for a
 * heartbeat; an outcome that cannot be written is lost (logged), and a probe slot it held expires.
 * Degradation (an abandoned attempt still tearing down) stays local to its process.
 *
 * Tables and queries: see `Migrations` (`0002_health`) and `src/internal/healthStatements.ts`.
 *
 * @since 0.1.0
 */
import { PgClient } from "@effect/sql-pg"
import { Health } from "@rein/core/Health"
import type * as H from "@rein/core/Health"
import type { Scope } from "effect"
import { Effect, Layer } from "effect"
import { makeWith } from "./internal/healthMake.js"
import { Options as OptionsSchema, PgHealthError as PgHealthErrorClass } from "./internal/healthOptions.js"
import { databaseClock } from "./internal/healthStatements.js"
import * as LC from "./internal/listenConnection.js"

/**
 * The shared health could not be set up: invalid options, settings that differ from those on record for the
 * name, or an unreachable database.
 *
 * @example
 * ```ts
 * import { PgHealth } from "@rein/postgres"
 *
 * const error = new PgHealth.PgHealthError({ reason: "ConfigMismatch", message: "probes: 1 on record, 2 asked" })
 * ```
 * @category errors
 * @since 0.1.0
 */
export const PgHealthError = PgHealthErrorClass

/**
 * @category errors
 * @since 0.1.0
 */
export type PgHealthError = PgHealthErrorClass

/**
 * The options: the health's `name` (every process using it shares its breakers and buckets; default
 * `"default"`), core's breaker and retry-budget settings (durations in milliseconds; fixed when the name is
 * first used: a process asking for others fails with `ConfigMismatch`), and `heartbeatMillis` (1000),
 * `probeTtlMillis` (5000, at least three heartbeats), `queryTimeoutMillis` (1000), `fastPath` (true), `holder`.
 *
 * @example
 * ```ts
 * import { Schema } from "effect"
 * import { PgHealth } from "@rein/postgres"
 *
 * const options = Schema.decodeUnknownSync(PgHealth.Options)({ name: "prod", consecutiveFailures: 3, probes: 2 })
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const Options = OptionsSchema

/**
 * @category models
 * @since 0.1.0
 */
export type Options = typeof OptionsSchema.Encoded

/**
 * Makes the shared health in the current scope: migrates, records the settings under the name (or checks them),
 * reads every breaker, starts listening and the heartbeat; closing the scope adds the pending deposits and
 * gives back this process's probe slots.
 *
 * @example
 * ```ts
 * import { PgClient } from "@effect/sql-pg"
 * import { Effect, Redacted } from "effect"
 * import { PgHealth } from "@rein/postgres"
 *
 * const program = Effect.scoped(Effect.gen(function*() {
 *   const health = yield* PgHealth.make({ name: "prod", consecutiveFailures: 3 })
 *   return yield* health.breaker("openai/mini")
 * })).pipe(Effect.provide(PgClient.layer({ url: Redacted.make("postgres://localhost/rein") })))
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const make = (options: Options): Effect.Effect<H.Service, PgHealthError, PgClient.PgClient | Scope.Scope> =>
  Effect.flatMap(
    PgClient.PgClient,
    (pg) => makeWith(options, { sql: pg, listen: LC.of(pg) }, databaseClock)
  )

/**
 * Core's `Health` service shared through PostgreSQL, for the lifetime of the layer. Provide it after
 * `Rein.layer` (which provides the in-memory one) so that it wins.
 *
 * @example
 * ```ts
 * import { PgClient } from "@effect/sql-pg"
 * import { Layer, Redacted } from "effect"
 * import { PgHealth } from "@rein/postgres"
 *
 * const HealthLive = PgHealth.layer({ name: "prod" }).pipe(
 *   Layer.provide(PgClient.layer({ url: Redacted.make("postgres://localhost/rein") }))
 * )
 * ```
 * @category layers
 * @since 0.1.0
 */
export const layer = (options: Options): Layer.Layer<Health, PgHealthError, PgClient.PgClient> =>
  Layer.scoped(Health, make(options))
