/**
 * An effectful operation the ledger may dispatch ("send_email", "issue_refund"): a closed request schema,
 * the HTTPS origins it may reach, its one-shot dispatcher and its reconciler.
 *
 * The request is data only. The target origin comes from the trusted connection and must be on the
 * operation's allow-list; no URL, header or credential is ever taken from the request, and the request
 * schema may not even declare such fields. Credentials stay inside the dispatcher (as `Redacted`), never in
 * the ledger.
 *
 * @since 0.1.0
 */
import { Canonical } from "@rein/core"
import { formatParseError } from "@rein/core/Input"
import { Duration, Effect, Either, Schema, SchemaAST } from "effect"
import * as Digest from "./Digest.js"
import { Code } from "./Execution.js"
import { InvalidRequest, LedgerConfigError } from "./LedgerError.js"

/**
 * A connection: a trusted binding of an organisation to one provider origin. Hosts configure these; requests
 * only name them.
 *
 * @example
 * ```ts
 * import { Operation } from "@rein/ledger"
 *
 * const mail = Operation.Connection.make({ id: "mail", organisation: "acme", origin: "https://mail.example" })
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export class Connection extends Schema.Class<Connection>("@rein/ledger/Connection")({
  id: Schema.String.pipe(Schema.minLength(1)),
  organisation: Schema.String.pipe(Schema.minLength(1)),
  origin: Schema.String
}) {}

/**
 * How a failed-safe result proves that nothing happened.
 *
 * - `not_sent`: the request provably never left the process;
 * - `rejected_before_effect`: the provider rejected it with a response that guarantees no effect;
 * - `confirmed_absent`: (reconciliation) the provider confirms there is no effect for this idempotency key.
 *
 * @example
 * ```ts
 * import { Operation } from "@rein/ledger"
 *
 * Operation.NoEffectProof.literals
 * ```
 *
 * @category schemas
 * @since 0.1.0
 */
export const NoEffectProof = Schema.Literal("not_sent", "rejected_before_effect", "confirmed_absent")

/**
 * The effect happened; `confirmation` is the SHA-256 digest of the provider's confirmation (for example of
 * its message id), never the confirmation itself.
 *
 * @example
 * ```ts
 * import { Digest, Operation } from "@rein/ledger"
 *
 * const ok = Operation.Confirmed.make({ confirmation: Digest.sha256("msg_123") })
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export class Confirmed extends Schema.TaggedClass<Confirmed>()("Confirmed", {
  confirmation: Digest.Sha256
}) {}

/**
 * The effect did not happen, with proof (`proof`), a normalised code and the digest of the evidence.
 *
 * @example
 * ```ts
 * import { Digest, Operation } from "@rein/ledger"
 *
 * const no = Operation.NoEffect.make({ code: "recipient_rejected", proof: "rejected_before_effect", evidence: Digest.sha256("422") })
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export class NoEffect extends Schema.TaggedClass<NoEffect>()("NoEffect", {
  code: Code,
  proof: NoEffectProof,
  evidence: Digest.Sha256
}) {}

/**
 * Reconciliation could not decide (the provider is unreachable, or does not know yet). The execution stays
 * `ambiguous` and the attempt is appended as evidence.
 *
 * @example
 * ```ts
 * import { Operation } from "@rein/ledger"
 *
 * const later = Operation.Unresolved.make({ code: "provider_unreachable", evidence: null })
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export class Unresolved extends Schema.TaggedClass<Unresolved>()("Unresolved", {
  code: Code,
  evidence: Schema.NullOr(Digest.Sha256)
}) {}

/**
 * What a dispatcher returns. Anything else — a failure, a defect, a timeout, an interruption, a value that
 * does not decode — is `ambiguous`.
 *
 * @example
 * ```ts
 * import { Operation } from "@rein/ledger"
 *
 * const isConfirmed = (r: Operation.DispatchResult) => r._tag === "Confirmed"
 * ```
 *
 * @category schemas
 * @since 0.1.0
 */
export const DispatchResult = Schema.Union(Confirmed, NoEffect)

/**
 * @example
 * ```ts
 * import type { Operation } from "@rein/ledger"
 *
 * const tag = (r: Operation.DispatchResult) => r._tag
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export type DispatchResult = typeof DispatchResult.Type

/**
 * What a reconciler returns. A failure or timeout of the reconciler counts as `Unresolved`.
 *
 * @example
 * ```ts
 * import type { Operation } from "@rein/ledger"
 *
 * const settled = (r: Operation.ReconcileResult) => r._tag !== "Unresolved"
 * ```
 *
 * @category schemas
 * @since 0.1.0
 */
export const ReconcileResult = Schema.Union(Confirmed, NoEffect, Unresolved)

/**
 * @example
 * ```ts
 * import type { Operation } from "@rein/ledger"
 *
 * const tag = (r: Operation.ReconcileResult) => r._tag
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export type ReconcileResult = typeof ReconcileResult.Type

/**
 * What a reconciler is told: identities and digests only. The request body is not kept by the ledger, so a
 * reconciler asks the provider by idempotency key (or by a reference derived from the execution id).
 *
 * @example
 * ```ts
 * import type { Operation } from "@rein/ledger"
 *
 * const key = (c: Operation.ReconcileContext) => c.idempotencyKey
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export interface ReconcileContext {
  readonly executionId: string
  readonly organisation: string
  readonly connection: string
  readonly origin: string
  readonly idempotencyKey: string | null
  readonly requestDigest: Digest.Sha256
}

/**
 * What a dispatcher is given: the decoded request, the trusted origin and the idempotency key to pass on to
 * the provider.
 *
 * @example
 * ```ts
 * import type { Operation } from "@rein/ledger"
 *
 * const url = (c: Operation.DispatchContext<{ readonly to: string }>) => new URL("/v1/send", c.origin)
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export interface DispatchContext<A> extends ReconcileContext {
  readonly request: A
}

/**
 * The definition of an operation, as given to {@link make}.
 *
 * @example
 * ```ts
 * import type { Operation } from "@rein/ledger"
 *
 * type Def = Operation.Definition<{ readonly to: string }, { readonly to: string }>
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export interface Definition<A, I> {
  readonly name: string
  readonly request: Schema.Schema<A, I>
  readonly allowedOrigins: ReadonlyArray<string>
  readonly dispatchTimeout: Duration.DurationInput
  readonly reconcileTimeout: Duration.DurationInput
  readonly dispatch: (context: DispatchContext<A>) => Effect.Effect<DispatchResult, unknown>
  readonly reconcile: (context: ReconcileContext) => Effect.Effect<ReconcileResult, unknown>
}

/**
 * A request decoded by its operation's schema: its digest, and the dispatcher bound to it.
 *
 * @example
 * ```ts
 * import type { Operation } from "@rein/ledger"
 *
 * const digest = (a: Operation.Admitted) => a.requestDigest
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export interface Admitted {
  readonly requestDigest: Digest.Sha256
  readonly dispatch: (context: ReconcileContext) => Effect.Effect<unknown, unknown>
}

/**
 * A validated operation. The request type is erased behind {@link Admitted}, so operations of different
 * request types sit in one ledger.
 *
 * @example
 * ```ts
 * import type { Operation } from "@rein/ledger"
 *
 * const names = (ops: ReadonlyArray<Operation.Operation>) => ops.map((op) => op.name)
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export interface Operation {
  readonly name: string
  readonly allowedOrigins: ReadonlyArray<string>
  readonly dispatchTimeout: Duration.Duration
  readonly reconcileTimeout: Duration.Duration
  readonly admit: (request: unknown) => Either.Either<Admitted, InvalidRequest>
  readonly requestDigest: (request: unknown) => Either.Either<Digest.Sha256, InvalidRequest>
  readonly reconcile: (context: ReconcileContext) => Effect.Effect<unknown, unknown>
}

// Field names that smell of transport or credentials. A request that could carry them would let request data
// choose where the call goes or with whose authority.
const transportFields = new Set([
  "url",
  "uri",
  "href",
  "origin",
  "host",
  "hostname",
  "port",
  "path",
  "endpoint",
  "baseurl",
  "headers",
  "header",
  "cookie",
  "cookies",
  "authorization",
  "authorisation",
  "auth",
  "token",
  "apikey",
  "api_key",
  "secret",
  "password",
  "credential",
  "credentials",
  "redirect",
  "redirecturl",
  "redirect_uri",
  "callback",
  "callbackurl",
  "callback_url",
  "webhook"
])

const closedFields = (ast: SchemaAST.AST): Either.Either<ReadonlyArray<string>, string> => {
  switch (ast._tag) {
    case "TypeLiteral":
      if (ast.indexSignatures.length > 0) return Either.left("must not have index signatures (it must be closed)")
      return Either.right(ast.propertySignatures.map((p) => String(p.name)))
    case "Transformation":
      return closedFields(ast.from)
    case "Refinement":
      return closedFields(ast.from)
    default:
      return Either.left("must be a Schema.Struct (a closed object)")
  }
}

/** @internal */
export const validateOrigin = (field: string, origin: string): Either.Either<string, LedgerConfigError> => {
  let url: URL
  try {
    url = new URL(origin)
  } catch {
    return Either.left(new LedgerConfigError({ message: `${field}: Expected an https:// origin, actual ${origin}` }))
  }
  if (url.protocol !== "https:") {
    return Either.left(new LedgerConfigError({ message: `${field}: Expected an https:// origin, actual ${origin}` }))
  }
  if (url.origin !== origin || url.username !== "" || url.password !== "") {
    return Either.left(
      new LedgerConfigError({ message: `${field}: Expected a bare origin (no path, query or user), actual ${origin}` })
    )
  }
  return Either.right(url.origin)
}

/** @internal */
export const positiveDuration = (
  field: string,
  input: Duration.DurationInput
): Either.Either<Duration.Duration, LedgerConfigError> => {
  const duration = Duration.decodeUnknown(input)
  if (duration._tag === "None" || !Duration.isFinite(duration.value) || Duration.toMillis(duration.value) <= 0) {
    return Either.left(
      new LedgerConfigError({ message: `${field}: Expected a positive finite duration, actual ${String(input)}` })
    )
  }
  return Either.right(duration.value)
}

/** The longest timer Node runs (2^31 - 1 ms, 24.8 days): Effect treats a longer one as never firing. */
const MAX_TIMER_MILLIS = 2 ** 31 - 1

/**
 * A positive finite duration that a timer can run: at most 2^31 - 1 ms (24.8 days). A longer one would never
 * fire (Node's timers, and Effect's, treat it as infinite), so it is refused with a message naming the field.
 *
 * @internal
 */
export const timerDuration = (
  field: string,
  input: Duration.DurationInput
): Either.Either<Duration.Duration, LedgerConfigError> =>
  Either.flatMap(positiveDuration(field, input), (duration) =>
    Duration.toMillis(duration) > MAX_TIMER_MILLIS
      ? Either.left(
        new LedgerConfigError({
          message:
            `${field}: Expected a positive finite duration of at most ${MAX_TIMER_MILLIS} ms (24.8 days), actual ${
              Duration.format(duration)
            }`
        })
      )
      : Either.right(duration))

/**
 * Validates an operation definition: a lowercase snake-case name, a closed request struct without transport
 * or credential fields, at least one `https://` origin, positive timeouts of at most 2^31 - 1 ms (24.8 days: a
 * longer timer would never fire).
 *
 * @example
 * ```ts
 * import { Effect, Schema } from "effect"
 * import { Digest, Operation } from "@rein/ledger"
 *
 * const sendEmail = Operation.make({
 *   name: "send_email",
 *   request: Schema.Struct({ to: Schema.String, subject: Schema.String, body: Schema.String }),
 *   allowedOrigins: ["https://mail.example"],
 *   dispatchTimeout: "10 seconds",
 *   reconcileTimeout: "10 seconds",
 *   dispatch: (ctx) => Effect.succeed(Operation.Confirmed.make({ confirmation: Digest.sha256(ctx.executionId) })),
 *   reconcile: () => Effect.succeed(Operation.Unresolved.make({ code: "not_implemented", evidence: null }))
 * })
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = <A, I>(definition: Definition<A, I>): Either.Either<Operation, LedgerConfigError> =>
  Either.gen(function*() {
    const name = definition.name
    if (!/^[a-z][a-z0-9_]{0,63}$/.test(name)) {
      return yield* Either.left(
        new LedgerConfigError({ message: `name: Expected lowercase snake case, actual ${name}` })
      )
    }
    const fields = yield* Either.mapLeft(
      closedFields(definition.request.ast),
      (message) => new LedgerConfigError({ message: `${name}.request: ${message}` })
    )
    for (const field of fields) {
      if (transportFields.has(field.toLowerCase())) {
        return yield* Either.left(
          new LedgerConfigError({
            message: `${name}.request.${field}: transport and credential fields may not come from request data`
          })
        )
      }
    }
    if (definition.allowedOrigins.length === 0) {
      return yield* Either.left(
        new LedgerConfigError({ message: `${name}.allowedOrigins: Expected at least one origin` })
      )
    }
    const allowedOrigins: Array<string> = []
    for (const [i, origin] of definition.allowedOrigins.entries()) {
      allowedOrigins.push(yield* validateOrigin(`${name}.allowedOrigins[${i}]`, origin))
    }
    // Each runs as a timer: at most 2^31 - 1 ms, or it would never fire.
    const dispatchTimeout = yield* timerDuration(`${name}.dispatchTimeout`, definition.dispatchTimeout)
    const reconcileTimeout = yield* timerDuration(`${name}.reconcileTimeout`, definition.reconcileTimeout)

    const decode = Schema.decodeUnknownEither(definition.request, { onExcessProperty: "error", errors: "all" })
    const encode = Schema.encodeEither(definition.request)
    const decodeRequest = (request: unknown) =>
      Either.flatMap(
        Either.mapLeft(decode(request), (error) =>
          new InvalidRequest({ message: `${name}.request: ${formatParseError(error)}` })),
        (value) =>
          Either.match(encode(value), {
            onLeft: (error) =>
              Either.left(new InvalidRequest({ message: `${name}.request: ${formatParseError(error)}` })),
            // The digest binds the operation name and the request's canonical encoded form: the same request
            // given with its keys in another order, or with defaults spelt out, is the same request. A value
            // with no JSON form (a number that is not finite: JSON.parse gives Infinity for 1e400) is invalid.
            onRight: (encoded) =>
              Either.mapBoth(Canonical.encode({ operation: name, request: encoded }), {
                onLeft: (error) => {
                  const rest = error.path.slice("$.request".length)
                  const field = rest.startsWith(".") ? rest.slice(1) : rest
                  return new InvalidRequest({
                    message: `${name}.request: ${field === "" ? "" : `${field}: `}${error.message}`
                  })
                },
                onRight: (text) => ({ value, digest: Digest.sha256(text) })
              })
          })
      )
    const operation: Operation = {
      name,
      allowedOrigins,
      dispatchTimeout,
      reconcileTimeout,
      admit: (request) =>
        Either.map(decodeRequest(request), ({ digest, value }) => ({
          requestDigest: digest,
          dispatch: (context) => definition.dispatch({ ...context, request: value })
        })),
      requestDigest: (request) => Either.map(decodeRequest(request), ({ digest }) => digest),
      reconcile: definition.reconcile
    }
    return operation
  })
