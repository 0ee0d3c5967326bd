/**
 * An admission gate: something outside the request that decides when an attempt may start — a batch
 * run's rate limits, provider capacity, a shared cooldown after a 429, or the run itself stopping. The
 * executor asks the gate before every attempt (after its backoff) and tells it how the attempt ended.
 * Time spent waiting at the gate counts toward the request's deadline. A gate bounds its own waits: it
 * answers within `Ask.remainingMillis`, failing with `Expired` when it cannot admit the attempt by then, and
 * the request ends with `DeadlineExceeded` (phase `admission`). (The executor puts no timer of its own
 * around `admit`: that would cost a fiber per attempt for a bound the gate keeps for free.)
 *
 * When the gate closes, waits stop at once and the request ends with `Halted`.
 *
 * @since 0.1.0
 */
import type { Effect, FiberId, Option } from "effect"
import { Context } from "effect"
import type { Endpoint } from "./Catalog.js"
import type { AttemptRecord } from "./Outcome.js"
import type { Reservation, Role } from "./Planner.js"

/**
 * What an attempt asks the gate for.
 *
 * @category models
 * @since 0.1.0
 */
export interface Ask {
  readonly endpoint: Endpoint
  readonly role: Role
  /** The logical attempt (see `Provider.AttemptContext`). */
  readonly attempt: number
  /** The physical call number. */
  readonly call: number
  readonly reservation: Reservation
  /** Time left before the request's deadline: the gate never waits longer. */
  readonly remainingMillis: number
}

/**
 * The gate refused: the run stopped admitting attempts.
 *
 * @category models
 * @since 0.1.0
 */
export interface Closed {
  readonly _tag: "GateClosed"
  readonly reason: string
}

/**
 * The gate could not admit the attempt within `Ask.remainingMillis`.
 *
 * @example
 * ```ts
 * import type { Gate } from "@rein/core"
 *
 * const expired: Gate.Expired = { _tag: "GateExpired" }
 * ```
 * @category models
 * @since 0.1.0
 */
export interface Expired {
  readonly _tag: "GateExpired"
}

/**
 * An admitted attempt while it runs, as the gate sees it (see `Service.unsafeRunning`): what interrupts it.
 *
 * @example
 * ```ts
 * import { FiberId } from "effect"
 * import type { Gate } from "@rein/core"
 *
 * const running: Array<Gate.Running> = []
 * // A gate that stops everything at once interrupts every attempt, then the requests that run them.
 * for (const attempt of running) attempt.unsafeInterruptAsFork(FiberId.none)
 * ```
 * @category models
 * @since 0.1.0
 */
export interface Running {
  /**
   * Interrupts the attempt's own fiber without waiting for it. Interrupt the request's fiber (the attempt's
   * caller) right after it, in the same synchronous step: the caller then finds the attempt already torn down
   * (one interruption to wait for, not two) and records it as `interrupted`. An attempt interrupted while its
   * caller is not ends like a provider defect (`unknown`, `provider_defect`).
   */
  readonly unsafeInterruptAsFork: (by: FiberId.FiberId) => void
}

/**
 * The gate service. `Ticket` is whatever the gate needs back when the attempt ends. The required members
 * are effects (a gate shared by many processes can implement them); the `unsafe*` members are an optional
 * synchronous fast path, taken only when present.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import type { Gate } from "@rein/core"
 *
 * // A gate that admits everything (what running without a gate means).
 * const open: Gate.Service = {
 *   admit: () => Effect.succeed(undefined),
 *   settle: () => Effect.void,
 *   closed: Effect.never
 * }
 * ```
 * @category services
 * @since 0.1.0
 */
export interface Service {
  /** Waits until the attempt may start, at most `ask.remainingMillis`; fails when the gate is closed or the
   * time ran out. */
  readonly admit: (ask: Ask) => Effect.Effect<unknown, Closed | Expired>
  /** Reports how an admitted attempt ended (usage, failure kind, Retry-After), with the gate's ticket. */
  readonly settle: (ticket: unknown, record: AttemptRecord) => Effect.Effect<void>
  /** Completes when the gate closes, so that backoff waits stop at once. */
  readonly closed: Effect.Effect<Closed>
  /**
   * Optional: `admit` as one synchronous step when the attempt can start at once (the ticket), `None` when
   * it would wait or the gate is closed (the executor then calls `admit`). Lets the executor skip the
   * effects of an admission that never waits.
   */
  readonly unsafeTryAdmit?: (ask: Ask) => Option.Option<unknown>
  /**
   * Optional: `settle` as a synchronous step that returns only the effect still to run (`undefined`:
   * nothing), for the executor's hot path.
   */
  readonly unsafeSettle?: (ticket: unknown, record: AttemptRecord) => Effect.Effect<void> | undefined
  /**
   * Optional: called, synchronously, once an admitted attempt is running in its own fiber (not for an attempt
   * that ended without suspending), with its ticket. A gate that cancels requests in flight keeps it until the
   * attempt settles, and interrupts it together with the request (see `Running`).
   */
  readonly unsafeRunning?: (ticket: unknown, attempt: Running) => void
}

/**
 * The gate service tag.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Gate } from "@rein/core"
 *
 * const open = Gate.Gate.of({
 *   admit: () => Effect.succeed(undefined),
 *   settle: () => Effect.void,
 *   closed: Effect.never
 * })
 * ```
 * @category services
 * @since 0.1.0
 */
export class Gate extends Context.Tag("@rein/core/Gate")<Gate, Service>() {}
