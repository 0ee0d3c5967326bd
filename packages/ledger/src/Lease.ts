/**
 * Who owns a running dispatch. When an execution enters `dispatch_started`, its dispatcher takes a lease in
 * the same transaction: an owner id, a token and an expiry. A heartbeat renews it while the dispatcher runs.
 * `recover` treats a `dispatch_started` execution as lost only once its lease has expired (its owner stopped
 * renewing: the process died, or stalled for longer than the lease), and a dispatcher that lost its lease
 * cannot write its result over what the recovery recorded: its transition is fenced by the token.
 *
 * Time is the `Clock`'s wall-clock time, compared across processes: the processes sharing a ledger file need
 * clocks that agree to well within the lease duration.
 *
 * @since 0.1.0
 */
import { Duration, Effect, Either, Fiber, Schema } from "effect"
import { randomUUID } from "node:crypto"
import { LedgerConfigError, type LedgerStoreError } from "./LedgerError.js"
import { timerDuration } from "./Operation.js"

/**
 * A dispatcher's claim on one execution in `dispatch_started`, valid until `expiresAt` (epoch milliseconds).
 *
 * @example
 * ```ts
 * import { Lease } from "@rein/ledger"
 *
 * const show = (l: Lease.Lease) => `${l.owner} until ${new Date(l.expiresAt).toISOString()}`
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export class Lease extends Schema.Class<Lease>("@rein/ledger/Lease")({
  owner: Schema.String,
  token: Schema.String,
  expiresAt: Schema.Int
}) {}

/**
 * The lease condition of a transition out of `dispatch_started` (`LedgerStore.leasedTransition`). `Holder`
 * applies it only while `token` holds the lease (else `LeaseLost`: the dispatcher was taken over); `Expired`
 * only once the lease expired at the transition's time, or if there is none (else `LeaseHeld`). Either way the
 * transition ends the lease.
 *
 * @example
 * ```ts
 * import type { Lease } from "@rein/ledger"
 *
 * const expired: Lease.Guard = { _tag: "Expired" }
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export type Guard =
  | { readonly _tag: "Holder"; readonly token: string }
  | { readonly _tag: "Expired" }

/**
 * How a ledger leases its dispatches. `duration` (default 30 seconds, at most 24.8 days) is how long a
 * dispatch whose owner stopped renewing stays untouchable; the heartbeat renews every third of it. `owner`
 * names this ledger instance in the store (default: a random id); it is a label, not a secret.
 *
 * @example
 * ```ts
 * import type { Lease } from "@rein/ledger"
 *
 * const options: Lease.Options = { duration: "1 minute", owner: "worker-3" }
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export interface Options {
  readonly duration?: Duration.DurationInput | undefined
  readonly owner?: string | undefined
}

/**
 * Validated lease options.
 *
 * @example
 * ```ts
 * import { Either } from "effect"
 * import { Lease } from "@rein/ledger"
 *
 * const settings = Either.getOrThrow(Lease.settings({ duration: "10 seconds" }))
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export interface Settings {
  readonly owner: string
  readonly duration: Duration.Duration
  readonly renewEvery: Duration.Duration
}

/**
 * Validates {@link Options}; the message names the field. A lease lasts at most 2^31 - 1 ms (24.8 days).
 *
 * @example
 * ```ts
 * import { Lease } from "@rein/ledger"
 *
 * Lease.settings({ duration: "-1 seconds" }) // Left: lease.duration: Expected a positive finite duration
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const settings = (options: Options = {}): Either.Either<Settings, LedgerConfigError> =>
  Either.gen(function*() {
    // Longer than 2^31 - 1 ms, and its heartbeat (a third of it) would never fire: Effect treats a longer timer
    // as infinite.
    const duration = yield* timerDuration("lease.duration", options.duration ?? "30 seconds")
    const owner = options.owner ?? randomUUID()
    if (typeof owner !== "string" || owner.length === 0 || owner.length > 256) {
      return yield* Either.left(
        new LedgerConfigError({ message: "lease.owner: Expected a string of 1 to 256 characters" })
      )
    }
    // Whole milliseconds, at least one: the store keeps epoch milliseconds.
    const millis = Math.max(1, Math.ceil(Duration.toMillis(duration)))
    return { owner, duration: Duration.millis(millis), renewEvery: Duration.millis(Math.max(1, millis / 3)) }
  })

const expiryFrom = (settings: Settings) =>
  Effect.clockWith((clock) => clock.currentTimeMillis).pipe(
    Effect.map((now) => ({ now, expiresAt: now + Duration.toMillis(settings.duration) }))
  )

/**
 * A new lease for one dispatch, starting now (by the `Clock`), with a fresh token.
 *
 * @example
 * ```ts
 * import { Effect, Either } from "effect"
 * import { Lease } from "@rein/ledger"
 *
 * const lease = Lease.grant(Either.getOrThrow(Lease.settings()))
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const grant = (settings: Settings): Effect.Effect<{ readonly at: number; readonly lease: Lease }> =>
  Effect.map(expiryFrom(settings), ({ expiresAt, now }) => ({
    at: now,
    lease: new Lease({ owner: settings.owner, token: randomUUID(), expiresAt })
  }))

/**
 * Runs `effect` while a heartbeat renews the lease every `settings.renewEvery`. `renew` extends it to the
 * given expiry and answers whether the lease is still held; the heartbeat stops when it is not (the execution
 * was taken over or left `dispatch_started`). A renewal the store fails is tried again at the next beat.
 *
 * @example
 * ```ts
 * import { Effect, Either } from "effect"
 * import { Lease } from "@rein/ledger"
 *
 * const settings = Either.getOrThrow(Lease.settings({ duration: "9 seconds" }))
 * const kept = Lease.keep(settings, () => Effect.succeed(true))(Effect.sleep("20 seconds"))
 * ```
 *
 * @category combinators
 * @since 0.1.0
 */
export const keep =
  (settings: Settings, renew: (expiresAt: number) => Effect.Effect<boolean, LedgerStoreError>) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.gen(function*() {
      const beat = Effect.flatMap(expiryFrom(settings), ({ expiresAt }) => renew(expiresAt)).pipe(
        Effect.catchTag("LedgerStoreError", () => Effect.succeed(true))
      )
      // Forked fibers inherit the parent's interruptibility; the heartbeat must always be interruptible.
      const heartbeat = yield* Effect.fork(
        Effect.interruptible(
          Effect.repeat(Effect.delay(beat, settings.renewEvery), { while: (held) => held })
        )
      )
      return yield* Effect.ensuring(effect, Fiber.interrupt(heartbeat))
    })
