/**
 * The ledger: where an agent's effectful tool calls go instead of a retry loop. One submission becomes one
 * durable execution that is authorised, prepared, marked `dispatch_started` (committed before any provider
 * code runs), dispatched exactly once, and then settled as `succeeded` or `failed_safe` — or, when the
 * result is lost for any reason (failure, defect, timeout, interruption, crash), recorded as `ambiguous`
 * and handed to the operation's reconciler. An ambiguous effect is never dispatched again.
 *
 * @since 0.1.0
 */
import { formatParseError } from "@rein/core/Input"
import { Context, type Duration, Effect, Either, Layer, Schema } from "effect"
import type * as Authorisation from "./Authorisation.js"
import * as Digest from "./Digest.js"
import type { Execution, Receipt } from "./Execution.js"
import * as InProcess from "./internal/inProcess.js"
import type * as Outcome from "./internal/outcome.js"
import * as Recover from "./internal/recover.js"
import * as Submit from "./internal/submit.js"
import * as Lease from "./Lease.js"
import {
  type Ambiguous,
  type ExecutionNotFound,
  type FailedSafe,
  type InFlight,
  InvalidRequest,
  LedgerConfigError,
  type LedgerStoreError
} from "./LedgerError.js"
import * as LedgerStore from "./LedgerStore.js"
import * as Operation from "./Operation.js"

/**
 * One effectful call as a caller submits it. Closed: unknown fields are rejected. The organisation is not
 * part of it — it comes from the caller's trusted context.
 *
 * @example
 * ```ts
 * import { Schema } from "effect"
 * import { Ledger } from "@rein/ledger"
 *
 * const decode = Schema.decodeUnknown(Ledger.Submission, { onExcessProperty: "error" })
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export class Submission extends Schema.Class<Submission>("@rein/ledger/Submission")(Submit.submissionFields) {}

/**
 * A confirmed effect: the execution, the digest of the provider's confirmation, whether the dispatch itself or
 * a reconciliation confirmed it, and whether this submission joined an execution another submission owned.
 *
 * @example
 * ```ts
 * import { Ledger } from "@rein/ledger"
 *
 * const show = (s: Ledger.Settled) => `${s.executionId} confirmed by ${s.resolvedBy}`
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export class Settled extends Schema.Class<Settled>("@rein/ledger/Settled")({
  executionId: Schema.String,
  confirmation: Digest.Sha256,
  resolvedBy: Schema.Literal("dispatch", "reconciliation"),
  joined: Schema.Boolean
}) {}

/**
 * What `recover` did with one execution a previous process left behind.
 *
 * @example
 * ```ts
 * import { Ledger } from "@rein/ledger"
 *
 * const show = (r: Ledger.Recovered) => `${r.executionId}: ${r.state} (${r.code})`
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export class Recovered extends Schema.Class<Recovered>("@rein/ledger/Recovered")({
  organisation: Schema.String,
  executionId: Schema.String,
  state: Schema.Literal("succeeded", "failed_safe", "ambiguous"),
  code: Schema.String
}) {}

/**
 * The errors of `submit`.
 *
 * @example
 * ```ts
 * import type { Ledger } from "@rein/ledger"
 *
 * const tag = (e: Ledger.SubmitError) => e._tag
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export type SubmitError = Outcome.SubmitError

/**
 * How a ledger is built. The verifier and the trust roots are required: there is no permissive default.
 *
 * @example
 * ```ts
 * import type { Ledger } from "@rein/ledger"
 *
 * const audience = (c: Ledger.Config) => c.audience
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export interface Config {
  /** The name issuers put in `grant.audience` for this ledger. */
  readonly audience: string
  readonly verifier: Authorisation.Verifier
  readonly trustRoots: Authorisation.TrustRoots
  readonly connections: ReadonlyArray<Operation.Connection>
  /** Operations, as returned by `Operation.make` (an invalid one fails the layer). */
  readonly operations: ReadonlyArray<Operation.Operation | Either.Either<Operation.Operation, LedgerConfigError>>
  /** How long a dispatch stays owned by its dispatcher without a renewal (default 30 seconds), and the owner id. */
  readonly lease?: Lease.Options | undefined
}

/**
 * What the ledger does: submit, reconcile, recover, and read what it recorded.
 *
 * @example
 * ```ts
 * import type { Ledger } from "@rein/ledger"
 *
 * const send = (ledger: Ledger.Service, submission: unknown) => ledger.submit("acme", submission)
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export interface Service {
  /** Authorises, records and dispatches one effectful call (at most once per idempotency key). */
  readonly submit: (organisation: string, submission: unknown) => Effect.Effect<Settled, SubmitError>
  /** Runs the reconciler for an `ambiguous` execution (never the dispatcher). */
  readonly reconcile: (
    organisation: string,
    executionId: string
  ) => Effect.Effect<Settled, FailedSafe | Ambiguous | InFlight | ExecutionNotFound | LedgerStoreError>
  /**
   * Turns every execution left in `dispatch_started` whose lease has expired into `ambiguous` (its owner
   * stopped renewing, so its result is lost) and reconciles every ambiguous execution. Dispatches whose owner
   * still renews its lease, in this process or another, are left alone. Safe to call at any time.
   */
  readonly recover: Effect.Effect<ReadonlyArray<Recovered>, LedgerStoreError>
  readonly execution: (
    organisation: string,
    executionId: string
  ) => Effect.Effect<Execution, ExecutionNotFound | LedgerStoreError>
  readonly receipts: (
    organisation: string,
    executionId: string
  ) => Effect.Effect<ReadonlyArray<Receipt>, ExecutionNotFound | LedgerStoreError>
  /** The request digest an issuer must sign for `request` under `operation`. */
  readonly requestDigest: (operation: string, request: unknown) => Either.Either<Digest.Sha256, InvalidRequest>
}

/**
 * The ledger service.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Ledger } from "@rein/ledger"
 *
 * const send = (submission: unknown) => Effect.flatMap(Ledger.Ledger, (ledger) => ledger.submit("acme", submission))
 * ```
 *
 * @category tags
 * @since 0.1.0
 */
export class Ledger extends Context.Tag("@rein/ledger/Ledger")<Ledger, Service>() {}

const decodeSubmission = Schema.decodeUnknownEither(Submission, { onExcessProperty: "error", errors: "all" })

// Configuration is checked once, when the ledger is built; a ledger that cannot verify is not built.
const checkConfig = (config: Config) =>
  Effect.gen(function*() {
    if (typeof config.audience !== "string" || config.audience.length === 0) {
      return yield* new LedgerConfigError({ message: "audience: Expected a non-empty string" })
    }
    if (config.verifier === undefined || typeof config.verifier.verify !== "function") {
      return yield* new LedgerConfigError({ message: "verifier: a signature verifier is required" })
    }
    if (config.trustRoots === undefined || config.trustRoots.keys.size === 0) {
      return yield* new LedgerConfigError({ message: "trustRoots: at least one trusted issuer is required" })
    }
    const operations = new Map<string, Operation.Operation>()
    for (const [i, entry] of config.operations.entries()) {
      const operation = Either.isEither(entry) ? yield* entry : entry
      if (operations.has(operation.name)) {
        return yield* new LedgerConfigError({ message: `operations[${i}]: duplicate operation ${operation.name}` })
      }
      operations.set(operation.name, operation)
    }
    const connections = new Map<string, Operation.Connection>()
    for (const [i, connection] of config.connections.entries()) {
      yield* Operation.validateOrigin(`connections[${i}].origin`, connection.origin)
      const key = `${connection.organisation}\u0000${connection.id}`
      if (connections.has(key)) {
        return yield* new LedgerConfigError({ message: `connections[${i}]: duplicate connection ${connection.id}` })
      }
      connections.set(key, connection)
    }
    const trust = { verifier: config.verifier, trustRoots: config.trustRoots }
    const leases = yield* Lease.settings(config.lease)
    return { connections, leases, operations, trust }
  })

/**
 * Builds the ledger service on a {@link LedgerStore.LedgerStore}.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Ledger, LedgerStore } from "@rein/ledger"
 *
 * const build = (config: Ledger.Config) => Effect.provide(Ledger.make(config), LedgerStore.layerSqlite({ filename: "ledger.db" }))
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (config: Config): Effect.Effect<Service, LedgerConfigError, LedgerStore.LedgerStore> =>
  Effect.gen(function*() {
    const store = yield* LedgerStore.LedgerStore
    const { connections, leases, operations, trust } = yield* checkConfig(config)
    const local = yield* InProcess.make
    const checked: Submit.Checked = {
      store,
      operations,
      leases,
      audience: config.audience,
      connections,
      trust,
      decodeSubmission: (input) =>
        Either.mapLeft(
          decodeSubmission(input),
          (error) => new InvalidRequest({ message: formatParseError(error) })
        )
    }
    const submit = Submit.submit(checked, local)
    const reconcile = Recover.reconcile(checked, local)
    return Ledger.of({
      submit: (organisation, submission) => Effect.map(submit(organisation, submission), (o) => new Settled(o)),
      reconcile: (organisation, executionId) => Effect.map(reconcile(organisation, executionId), (o) => new Settled(o)),
      recover: Effect.map(Recover.recover(checked, local), (all) => all.map((r) => new Recovered(r))),
      execution: store.execution,
      receipts: store.receipts,
      requestDigest: (name, request) => {
        const operation = operations.get(name)
        return operation === undefined
          ? Either.left(new InvalidRequest({ message: `operation: unknown operation ${name}` }))
          : operation.requestDigest(request)
      }
    })
  })

/**
 * The ledger on a {@link LedgerStore.LedgerStore} provided by the caller.
 *
 * @example
 * ```ts
 * import { Layer } from "effect"
 * import { Ledger, LedgerStore } from "@rein/ledger"
 *
 * const live = (config: Ledger.Config) =>
 *   Ledger.layer(config).pipe(Layer.provide(LedgerStore.layerSqlite({ filename: "ledger.db" })))
 * ```
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (config: Config): Layer.Layer<Ledger, LedgerConfigError, LedgerStore.LedgerStore> =>
  Layer.effect(Ledger, make(config))

/**
 * The embedded default: the ledger on a SQLite file created with mode 0600.
 *
 * @example
 * ```ts
 * import { Ledger } from "@rein/ledger"
 *
 * const live = (config: Ledger.Config) => Ledger.layerSqlite({ ...config, filename: "/var/lib/agent/ledger.db" })
 * ```
 *
 * @category layers
 * @since 0.1.0
 */
export const layerSqlite = (
  config: Config & { readonly filename: string; readonly busyTimeout?: Duration.DurationInput | undefined }
): Layer.Layer<Ledger, LedgerConfigError | LedgerStoreError> =>
  layer(config).pipe(
    Layer.provide(LedgerStore.layerSqlite({ filename: config.filename, busyTimeout: config.busyTimeout }))
  )
