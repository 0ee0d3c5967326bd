/**
 * Mirror of @rein/core Budget.Service until merged: the shapes of BUDGET_IFACE.md, structurally identical to
 * core's, so that at merge this file becomes `export type { ... } from "@rein/core/Budget"` and nothing else
 * in the package changes. The tag's key is core's, so the two tags are the same service at run time.
 *
 * @internal
 */
import type { Effect, Either } from "effect"
import { Context } from "effect"

/** The worst case of one attempt (`null`: not bounded by that resource). Mirror of `Outcome.Reservation`. */
export interface Reservation {
  readonly cost: number | null
  readonly tokens: number | null
}

/** What is left of a budget (`null`: unlimited). */
export interface Left {
  readonly cost: number | null
  readonly tokens: number | null
  readonly calls: number | null
}

/** Why a reservation was refused. */
export interface Shortfall {
  readonly resource: "cost" | "tokens" | "calls"
  readonly needed: number
  readonly left: number
}

/** What a successful reservation holds until it is settled or released. Opaque to the executor. */
export interface Hold {
  readonly reservation: Reservation
}

/** What an attempt is actually charged. */
export interface Charged {
  readonly cost: number
  readonly tokens: number
}

/** A hard budget: required members are effectful, the `unsafe*` members an optional synchronous fast path. */
export interface Service {
  readonly limits: Left
  readonly left: Effect.Effect<Left>
  readonly reserve: (reservation: Reservation) => Effect.Effect<Hold, Shortfall>
  readonly settle: (hold: Hold, charged: Charged) => Effect.Effect<void>
  readonly release: (hold: Hold) => Effect.Effect<void>
  readonly unsafeReserve?: (reservation: Reservation) => Either.Either<Hold, Shortfall> | undefined
  readonly unsafeSettle?: (hold: Hold, charged: Charged) => void
  readonly unsafeLeft?: () => Left
}

/** A budget shared by many requests (mirror of core's `SharedBudget`, same key). */
export class SharedBudget extends Context.Tag("@rein/core/SharedBudget")<SharedBudget, Service>() {}
