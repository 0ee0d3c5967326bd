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
import { Cause, Context, Deferred, Duration, Effect, Either, Exit, Layer, Option, Ref, Schema } from "effect"
import { randomUUID } from "node:crypto"
import * as Authorisation from "./Authorisation.js"
import * as Digest from "./Digest.js"
import type { Execution, Receipt } from "./Execution.js"
import * as Lease from "./Lease.js"
import {
  Ambiguous,
  type ExecutionNotFound,
  FailedSafe,
  IdempotencyConflict,
  InFlight,
  InvalidRequest,
  LedgerConfigError,
  type LedgerStoreError,
  type RefusalReason,
  Refused
} from "./LedgerError.js"
import * as LedgerStore from "./LedgerStore.js"
import * as Operation from "./Operation.js"

const NonEmpty = Schema.String.pipe(Schema.minLength(1), Schema.maxLength(256))

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
 * @since 0.1.0
 */
export class Submission extends Schema.Class<Submission>("@rein/ledger/Submission")({
  connection: NonEmpty,
  operation: NonEmpty,
  idempotencyKey: NonEmpty,
  request: Schema.Unknown,
  authorisation: Schema.Unknown
}) {}

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
 * @since 0.1.0
 */
export type SubmitError =
  | Refused
  | FailedSafe
  | Ambiguous
  | InFlight
  | IdempotencyConflict
  | InvalidRequest
  | LedgerStoreError

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
 * @since 0.1.0
 */
export class Ledger extends Context.Tag("@rein/ledger/Ledger")<Ledger, {
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
}>() {}

const decodeSubmission = Schema.decodeUnknownEither(Submission, { onExcessProperty: "error", errors: "all" })
const decodeAuthorisation = Schema.decodeUnknownEither(Authorisation.Authorisation, { onExcessProperty: "error" })
const decodeDispatchResult = Schema.decodeUnknownEither(Operation.DispatchResult)
const decodeReconcileResult = Schema.decodeUnknownEither(Operation.ReconcileResult)

// The code a lost result is recorded with. Only the shape of the exit is kept, never its content: a
// dispatcher's error may carry provider text or secrets.
const lostCode = (phase: "dispatch" | "reconcile", exit: Exit.Exit<unknown, unknown>): string => {
  if (Exit.isSuccess(exit)) return `${phase}_result_invalid`
  if (Cause.isInterruptedOnly(exit.cause)) return `${phase}_interrupted`
  if (Cause.isFailure(exit.cause)) return `${phase}_failed`
  return `${phase}_defect`
}

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
 * @since 0.1.0
 */
export const make = (config: Config) =>
  Effect.gen(function*() {
    const store = yield* LedgerStore.LedgerStore

    const { connections, leases, operations, trust } = yield* checkConfig(config)

    // In-process coordination. `owners` lets a concurrent submission with the same key await the owner's
    // result instead of racing it; `active` keeps `recover` away from executions this process is running.
    // Across processes, the store's compare-and-set transitions are what guarantee a single dispatch.
    type Owner = { readonly requestDigest: Digest.Sha256; readonly done: Deferred.Deferred<Settled, SubmitError> }
    const owners = yield* Ref.make(new Map<string, Owner>())
    const active = yield* Ref.make(new Set<string>())
    const markActive = <A, E, R>(id: string, effect: Effect.Effect<A, E, R>) =>
      Effect.ensuring(
        Effect.zipRight(Ref.update(active, (s) => new Set(s).add(id)), effect),
        Ref.update(active, (s) => {
          const next = new Set(s)
          next.delete(id)
          return next
        })
      )

    const now = Effect.clockWith((clock) => clock.currentTimeMillis)
    const newId = Effect.sync(() => randomUUID())

    const contextOf = (execution: Execution): Operation.ReconcileContext => ({
      executionId: execution.id,
      organisation: execution.organisation,
      connection: execution.connection,
      origin: execution.origin,
      idempotencyKey: execution.idempotencyKey,
      requestDigest: execution.requestDigest
    })

    const refuse = (
      reason: RefusalReason,
      at: { readonly organisation: string; readonly connection: Operation.Connection; readonly operation: string },
      requestDigest: Digest.Sha256
    ) =>
      Effect.gen(function*() {
        const execution = yield* store.refuse({
          id: yield* newId,
          organisation: at.organisation,
          connection: at.connection.id,
          operation: at.operation,
          origin: at.connection.origin,
          requestDigest,
          reason,
          at: yield* now
        })
        return yield* new Refused({ reason, executionId: execution.id })
      })

    // Reconciliation of an execution already recorded as `ambiguous`. The dispatcher is not reachable from here.
    const reconcileAmbiguous = (
      execution: Execution
    ): Effect.Effect<Settled, FailedSafe | Ambiguous | InFlight | ExecutionNotFound | LedgerStoreError> =>
      Effect.uninterruptibleMask((restore) =>
        Effect.gen(function*() {
          const receipts = yield* store.receipts(execution.organisation, execution.id)
          const ambiguity = [...receipts].reverse().find((r) => r.kind === "transition" && r.to === "ambiguous")?.seq ??
            null
          // An unresolved attempt is appended as evidence and the execution stays ambiguous. If it is not
          // ambiguous any more, someone else resolved it meanwhile: report what they recorded.
          const evidence = (code: string, digest: Digest.Sha256 | null) =>
            now.pipe(
              Effect.flatMap((at) =>
                store.evidence({
                  organisation: execution.organisation,
                  executionId: execution.id,
                  code,
                  source: "reconciler",
                  digest,
                  refersTo: ambiguity,
                  at
                })
              ),
              Effect.zipRight(Effect.fail(new Ambiguous({ executionId: execution.id, code }))),
              Effect.catchTag(
                "StateConflict",
                () => Effect.flatMap(store.execution(execution.organisation, execution.id), settledOf)
              )
            )
          const operation = operations.get(execution.operation)
          if (operation === undefined) return yield* evidence("operation_unknown", null)

          const exit = yield* restore(
            Effect.timeoutOption(
              Effect.suspend(() => operation.reconcile(contextOf(execution))),
              operation.reconcileTimeout
            )
          ).pipe(Effect.exit)
          if (Exit.isFailure(exit) || Option.isNone(exit.value)) {
            const code = Exit.isSuccess(exit) ? "reconcile_timeout" : lostCode("reconcile", exit)
            const recorded = yield* Effect.exit(evidence(code, null))
            if (Exit.isFailure(exit) && Cause.isInterruptedOnly(exit.cause)) return yield* Effect.interrupt
            return yield* recorded
          }
          const result = decodeReconcileResult(exit.value.value)
          if (Either.isLeft(result)) return yield* evidence("reconcile_result_invalid", null)
          const value = result.right
          if (value._tag === "Unresolved") return yield* evidence(value.code, value.evidence)
          const resolved = yield* store.transition({
            organisation: execution.organisation,
            executionId: execution.id,
            from: "ambiguous",
            to: value._tag === "Confirmed" ? "succeeded" : "failed_safe",
            code: value._tag === "Confirmed" ? "reconciled" : value.code,
            source: "reconciler",
            digest: value._tag === "Confirmed" ? value.confirmation : value.evidence,
            refersTo: ambiguity,
            confirmation: value._tag === "Confirmed" ? value.confirmation : null,
            at: yield* now
          }).pipe(
            Effect.as(true),
            Effect.catchTags({
              StateConflict: () => Effect.succeed(false),
              IllegalTransition: () => Effect.succeed(false)
            })
          )
          // Someone else resolved it first: report what they recorded.
          if (!resolved) return yield* Effect.flatMap(store.execution(execution.organisation, execution.id), settledOf)
          if (value._tag === "Confirmed") {
            return new Settled({
              executionId: execution.id,
              confirmation: value.confirmation,
              resolvedBy: "reconciliation",
              joined: false
            })
          }
          return yield* new FailedSafe({ executionId: execution.id, code: value.code })
        })
      )

    // The current outcome of an execution someone else owns (or owned).
    const settledOf = (execution: Execution): Effect.Effect<Settled, FailedSafe | Ambiguous | InFlight> => {
      switch (execution.state) {
        case "succeeded":
          // A succeeded execution always carries its confirmation: both paths to `succeeded` store one.
          return execution.confirmation === null
            ? Effect.fail(new InFlight({ executionId: execution.id, state: execution.state }))
            : Effect.succeed(
              new Settled({
                executionId: execution.id,
                confirmation: execution.confirmation,
                resolvedBy: execution.code === "confirmed" ? "dispatch" : "reconciliation",
                joined: true
              })
            )
        case "failed_safe":
          return Effect.fail(new FailedSafe({ executionId: execution.id, code: execution.code }))
        case "ambiguous":
          return Effect.fail(new Ambiguous({ executionId: execution.id, code: execution.code }))
        default:
          return Effect.fail(new InFlight({ executionId: execution.id, state: execution.state }))
      }
    }

    // prepared → dispatch_started (committed, with this dispatcher's lease) → the dispatcher, once, while a
    // heartbeat renews the lease → succeeded | failed_safe | ambiguous.
    const dispatchOnce = (execution: Execution, operation: Operation.Operation, admitted: Operation.Admitted) =>
      Effect.uninterruptibleMask((restore) =>
        Effect.gen(function*() {
          const { at, lease } = yield* Lease.grant(leases)
          const started = yield* store.transition({
            organisation: execution.organisation,
            executionId: execution.id,
            from: "prepared",
            to: "dispatch_started",
            code: "dispatch_started",
            source: "ledger",
            digest: null,
            refersTo: null,
            confirmation: null,
            at,
            lease
          })
          const renew = (expiresAt: number) =>
            store.renew({
              organisation: execution.organisation,
              executionId: execution.id,
              token: lease.token,
              expiresAt
            })
          // From here on, any way of not getting a decodable result is `ambiguous`.
          const exit = yield* restore(
            Effect.timeoutOption(
              Effect.suspend(() => admitted.dispatch(contextOf(execution))),
              operation.dispatchTimeout
            )
          ).pipe(Lease.keep(leases, renew), Effect.exit)
          // The result is written only while this dispatcher still holds its lease. If `recover` took the
          // execution over (the lease expired), what the recovery recorded stands and is what the caller gets.
          const settle = (to: "succeeded" | "failed_safe" | "ambiguous", code: string, digest: Digest.Sha256 | null) =>
            Effect.flatMap(now, (at) =>
              store.leasedTransition({
                organisation: execution.organisation,
                executionId: execution.id,
                from: "dispatch_started",
                to,
                code,
                source: "dispatcher",
                digest,
                refersTo: started.seq,
                confirmation: to === "succeeded" ? digest : null,
                at
              }, { _tag: "Holder", token: lease.token })).pipe(
                Effect.as(true),
                Effect.catchTags({
                  LeaseLost: () => Effect.succeed(false),
                  LeaseHeld: () => Effect.succeed(false),
                  StateConflict: () => Effect.succeed(false)
                })
              )
          const recorded = Effect.flatMap(store.execution(execution.organisation, execution.id), settledOf)
          const result = Exit.isSuccess(exit) && Option.isSome(exit.value)
            ? decodeDispatchResult(exit.value.value)
            : Either.left(null)
          if (Either.isRight(result)) {
            const value = result.right
            const written = value._tag === "Confirmed"
              ? yield* settle("succeeded", "confirmed", value.confirmation)
              : yield* settle("failed_safe", value.code, value.evidence)
            if (!written) return yield* recorded
            if (value._tag === "NoEffect") return yield* new FailedSafe({ executionId: execution.id, code: value.code })
            return new Settled({
              executionId: execution.id,
              confirmation: value.confirmation,
              resolvedBy: "dispatch",
              joined: false
            })
          }
          const code = Exit.isSuccess(exit) && Option.isNone(exit.value)
            ? "dispatch_timeout"
            : lostCode("dispatch", exit)
          // Persist the ambiguity first; only then reconcile.
          const written = yield* settle("ambiguous", code, null)
          if (Exit.isFailure(exit) && Cause.isInterruptedOnly(exit.cause)) return yield* Effect.interrupt
          if (!written) return yield* recorded
          return yield* restore(reconcileAmbiguous(execution))
        })
      )

    // The owner's path for an execution it found already recorded under the idempotency key.
    const resume = (
      existing: Execution,
      operation: Operation.Operation,
      admitted: Operation.Admitted,
      idempotencyKey: string
    ): Effect.Effect<Settled, SubmitError> =>
      Effect.gen(function*() {
        if (existing.requestDigest !== admitted.requestDigest) {
          return yield* new IdempotencyConflict({ idempotencyKey, executionId: existing.id })
        }
        switch (existing.state) {
          case "authorised":
          case "prepared":
            // Nothing was dispatched yet, so continuing is safe; the compare-and-set transitions make sure
            // only one submission continues.
            return yield* proceed(existing, operation, admitted)
          case "ambiguous":
            return yield* Effect.catchTag(
              reconcileAmbiguous(existing),
              "ExecutionNotFound",
              () => Effect.fail(new InFlight({ executionId: existing.id, state: existing.state }))
            )
          default:
            return yield* settledOf(existing)
        }
      })

    const proceed = (
      execution: Execution,
      operation: Operation.Operation,
      admitted: Operation.Admitted
    ): Effect.Effect<Settled, SubmitError> =>
      markActive(
        execution.id,
        Effect.gen(function*() {
          if (execution.state === "authorised") {
            yield* store.transition({
              organisation: execution.organisation,
              executionId: execution.id,
              from: "authorised",
              to: "prepared",
              code: "prepared",
              source: "ledger",
              digest: admitted.requestDigest,
              refersTo: null,
              confirmation: null,
              at: yield* now
            })
          }
          return yield* dispatchOnce(execution, operation, admitted)
        })
      ).pipe(
        Effect.catchTags({
          // Lost a compare-and-set to another submission: report where that one is.
          StateConflict: (e) => Effect.fail(new InFlight({ executionId: e.executionId, state: e.actual })),
          IllegalTransition: (e) =>
            Effect.fail(new InFlight({ executionId: e.executionId, state: e.from ?? "created" })),
          ExecutionNotFound: (e) => Effect.fail(new InFlight({ executionId: e.executionId, state: "created" }))
        })
      )

    const submit = (organisation: string, input: unknown): Effect.Effect<Settled, SubmitError> =>
      Effect.gen(function*() {
        const submission = yield* Either.mapLeft(
          decodeSubmission(input),
          (error) => new InvalidRequest({ message: formatParseError(error) })
        )
        const operation = operations.get(submission.operation)
        if (operation === undefined) return yield* new Refused({ reason: "unknown_operation", executionId: null })
        // A connection of another organisation is indistinguishable from a missing one.
        const connection = connections.get(`${organisation}\u0000${submission.connection}`)
        if (connection === undefined) return yield* new Refused({ reason: "unknown_connection", executionId: null })
        const admitted = yield* operation.admit(submission.request)
        const at = { organisation, connection, operation: operation.name }

        if (!operation.allowedOrigins.includes(connection.origin)) {
          return yield* refuse("origin_not_allowed", at, admitted.requestDigest)
        }
        const authorisation = decodeAuthorisation(submission.authorisation)
        if (Either.isLeft(authorisation)) return yield* refuse("malformed_authorisation", at, admitted.requestDigest)
        const checked = Authorisation.check(authorisation.right, {
          organisation,
          connection: connection.id,
          operation: operation.name,
          audience: config.audience,
          requestDigest: admitted.requestDigest,
          now: yield* now
        }, trust)
        if (Either.isLeft(checked)) return yield* refuse(checked.left, at, admitted.requestDigest)
        const grant = checked.right

        // Authorised. Claim the idempotency key in this process, or join the submission that holds it.
        const key = `${organisation}\u0000${submission.idempotencyKey}`
        const done = yield* Deferred.make<Settled, SubmitError>()
        const holder = yield* Ref.modify(owners, (map): readonly [Owner | undefined, Map<string, Owner>] => {
          const current = map.get(key)
          if (current !== undefined) return [current, map]
          return [undefined, new Map(map).set(key, { requestDigest: admitted.requestDigest, done })]
        })
        if (holder !== undefined) {
          if (holder.requestDigest !== admitted.requestDigest) {
            return yield* new IdempotencyConflict({ idempotencyKey: submission.idempotencyKey, executionId: null })
          }
          const shared = yield* Deferred.await(holder.done)
          return new Settled({ ...shared, joined: true })
        }

        const owned = Effect.gen(function*() {
          const begun = yield* store.begin({
            id: yield* newId,
            organisation,
            connection: connection.id,
            operation: operation.name,
            origin: connection.origin,
            idempotencyKey: submission.idempotencyKey,
            requestDigest: admitted.requestDigest,
            issuer: grant.issuer,
            nonce: grant.nonce,
            authorisationDigest: Digest.sha256(Authorisation.signedBytes(grant)),
            at: yield* now
          })
          switch (begun._tag) {
            case "NonceReplayed":
              return yield* refuse("nonce_replayed", at, admitted.requestDigest)
            case "Existing":
              return yield* resume(begun.execution, operation, admitted, submission.idempotencyKey)
            case "Created":
              return yield* proceed(begun.execution, operation, admitted)
          }
        })
        return yield* owned.pipe(
          Effect.onExit((exit) =>
            Effect.zipRight(
              Deferred.done(done, exit),
              Ref.update(owners, (map) => {
                const next = new Map(map)
                next.delete(key)
                return next
              })
            )
          )
        )
      })

    const reconcile = (organisation: string, executionId: string) =>
      Effect.gen(function*() {
        const execution = yield* store.execution(organisation, executionId)
        if ((yield* Ref.get(active)).has(execution.id) || execution.state !== "ambiguous") {
          return yield* settledOf(execution)
        }
        return yield* reconcileAmbiguous(execution)
      })

    const recover = Effect.gen(function*() {
      const stranded = yield* store.stranded
      const running = yield* Ref.get(active)
      const recovered: Array<Recovered> = []
      for (const entry of stranded) {
        if (running.has(entry.id)) continue
        if (entry.state === "dispatch_started") {
          // Lost only if its owner stopped renewing the lease: the process is gone, and so is its result.
          const taken = yield* store.leasedTransition({
            organisation: entry.organisation,
            executionId: entry.id,
            from: "dispatch_started",
            to: "ambiguous",
            code: "dispatch_lost",
            source: "recovery",
            digest: null,
            refersTo: null,
            confirmation: null,
            at: yield* now
          }, { _tag: "Expired" }).pipe(
            Effect.as(true),
            Effect.catchTags({
              // Its owner is alive and dispatching: leave it alone.
              LeaseHeld: () => Effect.succeed(false),
              // Another process moved it first; reconciliation below reads whatever it recorded.
              LeaseLost: () => Effect.succeed(true),
              StateConflict: () => Effect.succeed(true),
              IllegalTransition: () => Effect.succeed(true),
              ExecutionNotFound: () => Effect.succeed(true)
            })
          )
          if (!taken) continue
        }
        const outcome = yield* Effect.either(reconcile(entry.organisation, entry.id))
        const execution = yield* Effect.catchTag(
          store.execution(entry.organisation, entry.id),
          "ExecutionNotFound",
          () => Effect.succeed(null)
        )
        if (execution === null) continue
        const state = execution.state === "succeeded" || execution.state === "failed_safe"
          ? execution.state
          : "ambiguous"
        const code = Either.isLeft(outcome) && outcome.left._tag === "Ambiguous" ? outcome.left.code : execution.code
        recovered.push(new Recovered({ organisation: entry.organisation, executionId: entry.id, state, code }))
      }
      return recovered
    })

    return Ledger.of({
      submit,
      reconcile,
      recover,
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
 * @since 0.1.0
 */
export const layerSqlite = (
  config: Config & { readonly filename: string; readonly busyTimeout?: Duration.DurationInput | undefined }
): Layer.Layer<Ledger, LedgerConfigError | LedgerStoreError> =>
  layer(config).pipe(
    Layer.provide(LedgerStore.layerSqlite({ filename: config.filename, busyTimeout: config.busyTimeout }))
  )
