/**
 * One submission: checked and authorised before anything is written (`created → refused` records a refusal
 * that got that far), then `created → authorised` with its single-use nonce under the idempotency key, or
 * the execution already recorded under that key resumed. A concurrent submission with the same key in this
 * process joins the owner's result.
 *
 * @internal
 */
import { Deferred, Effect, Either, Schema } from "effect"
import * as Authorisation from "../Authorisation.js"
import * as Digest from "../Digest.js"
import type { Execution } from "../Execution.js"
import { IdempotencyConflict, InFlight, type InvalidRequest, type RefusalReason, Refused } from "../LedgerError.js"
import type * as Operation from "../Operation.js"
import { proceed } from "./dispatch.js"
import type { InProcess } from "./inProcess.js"
import { type Deps, newId, now, type Outcome, settledOf, type SubmitError } from "./outcome.js"
import { reconcileAmbiguous } from "./reconcile.js"

const NonEmpty = Schema.String.pipe(Schema.minLength(1), Schema.maxLength(256))

/** The fields of `Ledger.Submission`. @internal */
export const submissionFields = {
  connection: NonEmpty,
  operation: NonEmpty,
  idempotencyKey: NonEmpty,
  request: Schema.Unknown,
  authorisation: Schema.Unknown
}

/** A decoded submission. @internal */
export type Submission = Schema.Struct.Type<typeof submissionFields>

const decodeAuthorisation = Schema.decodeUnknownEither(Authorisation.Authorisation, { onExcessProperty: "error" })

/** What `submit` checks against: fixed when the ledger is built. @internal */
export interface Checked extends Deps {
  readonly audience: string
  readonly connections: ReadonlyMap<string, Operation.Connection>
  readonly trust: { readonly verifier: Authorisation.Verifier; readonly trustRoots: Authorisation.TrustRoots }
  /** `Ledger.Submission`'s closed decoding, its error formatted for the caller. */
  readonly decodeSubmission: (input: unknown) => Either.Either<Submission, InvalidRequest>
}

interface Where {
  readonly organisation: string
  readonly connection: Operation.Connection
  readonly operation: string
}

// `created → refused`: a refusal claims no idempotency key and no nonce.
const refuse = (deps: Deps, reason: RefusalReason, at: Where, requestDigest: Digest.Sha256) =>
  Effect.gen(function*() {
    const execution = yield* deps.store.refuse({
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

// Decoding, the operation and connection, the request, the origin and the signed grant, in that order.
const authorise = (checked: Checked, organisation: string, input: unknown) =>
  Effect.gen(function*() {
    const submission = yield* checked.decodeSubmission(input)
    const operation = checked.operations.get(submission.operation)
    if (operation === undefined) return yield* new Refused({ reason: "unknown_operation", executionId: null })
    // A connection of another organisation is indistinguishable from a missing one.
    const connection = checked.connections.get(`${organisation}\u0000${submission.connection}`)
    if (connection === undefined) return yield* new Refused({ reason: "unknown_connection", executionId: null })
    const admitted = yield* operation.admit(submission.request)
    const where: Where = { organisation, connection, operation: operation.name }

    if (!operation.allowedOrigins.includes(connection.origin)) {
      return yield* refuse(checked, "origin_not_allowed", where, admitted.requestDigest)
    }
    const authorisation = decodeAuthorisation(submission.authorisation)
    if (Either.isLeft(authorisation)) {
      return yield* refuse(checked, "malformed_authorisation", where, admitted.requestDigest)
    }
    const granted = Authorisation.check(authorisation.right, {
      organisation,
      connection: connection.id,
      operation: operation.name,
      audience: checked.audience,
      requestDigest: admitted.requestDigest,
      now: yield* now
    }, checked.trust)
    if (Either.isLeft(granted)) return yield* refuse(checked, granted.left, where, admitted.requestDigest)
    return { submission, operation, connection, admitted, where, grant: granted.right }
  })

type Authorised = Effect.Effect.Success<ReturnType<typeof authorise>>

// The owner's path for an execution it found already recorded under the idempotency key. The key names one
// request (its digest covers the operation) on one connection: the same request on another connection is
// another effect, neither given the recorded one's result nor dispatched on its connection.
const resume = (
  checked: Checked,
  local: InProcess,
  existing: Execution,
  { admitted, connection, operation, submission }: Authorised
): Effect.Effect<Outcome, SubmitError> =>
  Effect.gen(function*() {
    if (existing.requestDigest !== admitted.requestDigest || existing.connection !== connection.id) {
      return yield* new IdempotencyConflict({ idempotencyKey: submission.idempotencyKey, executionId: existing.id })
    }
    switch (existing.state) {
      case "authorised":
      case "prepared":
        // Nothing was dispatched yet, so continuing is safe; the compare-and-set transitions make sure only
        // one submission continues.
        return yield* proceed(checked, local, existing, operation, admitted)
      case "ambiguous":
        return yield* Effect.catchTag(
          reconcileAmbiguous(checked)(existing),
          "ExecutionNotFound",
          () => Effect.fail(new InFlight({ executionId: existing.id, state: existing.state }))
        )
      default:
        return yield* settledOf(existing)
    }
  })

// `created → authorised` under the idempotency key, consuming the grant's nonce; then on to the dispatch.
const begin = (checked: Checked, local: InProcess, authorised: Authorised) =>
  Effect.gen(function*() {
    const { admitted, connection, grant, operation, submission, where } = authorised
    const begun = yield* checked.store.begin({
      id: yield* newId,
      organisation: where.organisation,
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
        return yield* refuse(checked, "nonce_replayed", where, admitted.requestDigest)
      case "Existing":
        return yield* resume(checked, local, begun.execution, authorised)
      case "Created":
        return yield* proceed(checked, local, begun.execution, operation, admitted)
    }
  })

/** Authorises, records and dispatches one submission (at most once per idempotency key). @internal */
export const submit =
  (checked: Checked, local: InProcess) => (organisation: string, input: unknown): Effect.Effect<Outcome, SubmitError> =>
    Effect.gen(function*() {
      const authorised = yield* authorise(checked, organisation, input)
      const { admitted, connection, submission } = authorised
      // Authorised. Claim the idempotency key in this process, or join the submission that holds it.
      const claim = yield* local.claim(
        `${organisation}\u0000${submission.idempotencyKey}`,
        connection.id,
        admitted.requestDigest
      )
      if (claim._tag === "Held") {
        if (claim.owner.requestDigest !== admitted.requestDigest || claim.owner.connection !== connection.id) {
          return yield* new IdempotencyConflict({ idempotencyKey: submission.idempotencyKey, executionId: null })
        }
        const shared = yield* Deferred.await(claim.owner.done)
        return { ...shared, joined: true }
      }
      return yield* begin(checked, local, authorised).pipe(Effect.onExit(claim.release))
    })
