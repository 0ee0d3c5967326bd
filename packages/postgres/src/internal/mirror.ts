/**
 * One process's in-memory view of a shared health: the breaker rows it has read or been notified of (times
 * converted to this process's monotonic clock), the degradations of its own abandoned attempts, and the
 * deposits of its first attempts not yet added to the shared buckets. Everything here is synchronous: it is
 * what the fast path (`unsafeView`, `unsafeAcquire`, `unsafeComplete`) reads.
 *
 * A row is applied only if its version is at least the one held (a notification or a read that arrives late
 * never rolls a breaker back). Its `openUntil` (database clock) becomes `local + (openUntil − now)`, where
 * `now` is the database time of the read and `local` this process's time when the answer arrived: a cooldown
 * ends here no earlier than in the database.
 *
 * @internal
 */
import type * as Health from "@rein/core/Health"
import * as H from "@rein/core/Health"
import type { HealthView } from "@rein/core/Planner"

interface Entry {
  readonly version: number
  readonly state: Health.EndpointState
}

export interface Mirror {
  readonly settings: Health.Settings
  readonly fresh: Health.EndpointState
  readonly entries: Map<string, Entry>
  readonly degraded: Map<string, number>
  /** The global bucket as last read. */
  global: number
  /** First attempts whose deposits are not in the database yet: globally, and per endpoint. */
  firsts: number
  readonly endpointFirsts: Map<string, number>
}

export const make = (settings: Health.Settings): Mirror => ({
  settings,
  fresh: H.freshState(settings),
  entries: new Map(),
  degraded: new Map(),
  global: settings.config.capacity,
  firsts: 0,
  endpointFirsts: new Map()
})

/** Applies a row read (or notified) at database time `dbNow`, arriving at local time `local`. */
export const apply = (
  m: Mirror,
  endpoint: string,
  version: number,
  state: Health.EndpointState,
  dbNow: number,
  local: number
): void => {
  const held = m.entries.get(endpoint)
  if (held !== undefined && held.version > version) return
  // The same version is the same breaker: only its live probe slots and its bucket may have moved. Its cooldown
  // stays as first converted (a read that took longer would only push it later).
  const openUntil = held !== undefined && held.version === version && version > 0
    ? held.state.openUntil
    : local + (state.openUntil - dbNow)
  m.entries.set(endpoint, { version, state: { ...state, openUntil, degraded: 0 } })
}

/**
 * The database could not be reached about `endpoint`: it is treated as open for `millis` (so that the planner
 * does not pick it again at once and the executor does not spin on refusals), until a read says otherwise.
 */
export const unreachable = (m: Mirror, endpoint: string, local: number, millis: number): void => {
  const held = m.entries.get(endpoint)
  const state = held?.state ?? m.fresh
  m.entries.set(endpoint, {
    // Just below the version held: the next read of that version replaces this guess entirely.
    version: (held?.version ?? 0) - 0.5,
    state: { ...state, state: "open", openUntil: Math.max(state.openUntil, local + millis) }
  })
}

/** An endpoint's state as this process knows it, its own degradations included. */
export const stateOf = (m: Mirror, endpoint: string): Health.EndpointState => {
  const state = m.entries.get(endpoint)?.state ?? m.fresh
  const degraded = m.degraded.get(endpoint) ?? 0
  return degraded === 0 ? state : { ...state, degraded }
}

export const versionOf = (m: Mirror, endpoint: string): number => m.entries.get(endpoint)?.version ?? 0

const withDeposits = (m: Mirror, tokens: number, firsts: number): number =>
  Math.min(m.settings.config.capacity, tokens + firsts * m.settings.config.depositRatio)

/** The planner's view at local time `now`. */
export const view = (m: Mirror, now: number, ids: ReadonlyArray<string>): Health.View => {
  const health: Record<string, HealthView> = Object.create(null)
  const tokens: Record<string, number> = Object.create(null)
  for (const id of ids) {
    if (!m.entries.has(id) && !m.degraded.has(id)) continue
    const e = stateOf(m, id)
    health[id] = H.viewOf(m.settings, e, now)
    tokens[id] = withDeposits(m, e.tokens, m.endpointFirsts.get(id) ?? 0)
  }
  return { health, retryTokens: { global: withDeposits(m, m.global, m.firsts), endpoints: tokens } }
}

/** Records a first attempt's deposits (into the global bucket and each candidate's), to be flushed. */
export const deposit = (m: Mirror, endpoint: string, candidates: ReadonlyArray<string> | undefined): void => {
  m.firsts++
  m.endpointFirsts.set(endpoint, (m.endpointFirsts.get(endpoint) ?? 0) + 1)
  if (candidates === undefined) return
  for (const id of candidates) {
    if (id !== endpoint) m.endpointFirsts.set(id, (m.endpointFirsts.get(id) ?? 0) + 1)
  }
}

/** Takes the pending deposits (to flush); `restore` puts them back if the flush failed. */
export const takeDeposits = (m: Mirror): { readonly firsts: number; readonly endpoints: Map<string, number> } => {
  const taken = { firsts: m.firsts, endpoints: new Map(m.endpointFirsts) }
  m.firsts = 0
  m.endpointFirsts.clear()
  return taken
}

export const restoreDeposits = (
  m: Mirror,
  taken: { readonly firsts: number; readonly endpoints: Map<string, number> }
): void => {
  m.firsts += taken.firsts
  for (const [id, n] of taken.endpoints) m.endpointFirsts.set(id, (m.endpointFirsts.get(id) ?? 0) + n)
}

/** Whether the breaker parts of two states are equal (buckets and probe counts aside). */
export const sameBreaker = (a: Health.EndpointState, b: Health.EndpointState): boolean =>
  a.state === b.state && a.consecutive === b.consecutive && a.window === b.window &&
  a.windowLength === b.windowLength && a.openUntil === b.openUntil && a.cooldownMillis === b.cooldownMillis

/**
 * A success that changes nothing: the breaker is closed with a full window of successes (no failure in it, no
 * failure in a row). Most successes on a healthy endpoint are these, and cost no round trip.
 */
export const settled = (m: Mirror, endpoint: string): boolean => {
  const e = m.entries.get(endpoint)?.state
  return e !== undefined && e.state === "closed" && e.consecutive === 0 && e.window === 0 &&
    e.windowLength >= m.settings.windowSize
}
