/**
 * What a failed statement says, and which failures are worth running the statement again. `SqlError`'s own
 * message is only "Failed to execute statement": the driver's error, and its SQLSTATE, are in its `cause`.
 *
 * @internal
 */
import { SqlError } from "@effect/sql/SqlError"
import { Duration, Effect, Schedule } from "effect"

/** The SQLSTATE of a failed statement (`40P01`, `23505`, …), if the server answered with one. */
export const sqlState = (e: unknown): string | undefined => {
  const cause = e instanceof SqlError ? e.cause : undefined
  if (typeof cause !== "object" || cause === null || !("code" in cause)) return undefined
  return typeof cause.code === "string" ? cause.code : undefined
}

/**
 * A failure's message with its cause's and its SQLSTATE: `Failed to execute statement: deadlock detected
 * (SQLSTATE 40P01)`. The cause's message is the server's (its `detail`, which may quote a row's values, is
 * left out).
 */
export const describe = (e: { readonly message: string }): string => {
  if (!(e instanceof SqlError)) return e.message
  const cause = e.cause instanceof Error ? `: ${e.cause.message}` : ""
  const state = sqlState(e)
  return `${e.message}${cause}${state === undefined ? "" : ` (SQLSTATE ${state})`}`
}

/** Deadlock detected, serialization failure: the server rolled the statement's transaction back whole. */
const CONFLICTS: ReadonlySet<string> = new Set(["40P01", "40001"])

/** Whether the failure is a deadlock or a serialization failure (nothing of the transaction was kept). */
export const isConflict = (e: unknown): boolean => {
  const state = sqlState(e)
  return state !== undefined && CONFLICTS.has(state)
}

/** How many times a conflict is retried, and the first pause (doubling, jittered). */
export const CONFLICT_RETRIES = 4
const CONFLICT_PAUSE = Duration.millis(10)

/**
 * Runs `effect` again, up to `CONFLICT_RETRIES` times, when it lost to a deadlock or a serialization failure.
 * Only for an effect that is one whole transaction (one autocommitted statement, or a `withTransaction`): the
 * server rolled all of it back, so running it again cannot apply anything twice.
 */
export const retryConflicts = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.retry(effect, {
    schedule: Schedule.jittered(Schedule.exponential(CONFLICT_PAUSE)),
    times: CONFLICT_RETRIES,
    while: isConflict
  })
