/**
 * What a shared budget could still grant one reservation, anywhere: the question a distributed run asks
 * before it stops on a refusal (`budgetStop`). A process's own `left` (the pool's free units plus its own
 * slice, less what it used) does not answer it: units other processes lease and have not used are in no
 * one else's `left`, yet they can still admit an item.
 *
 * Read from the database in one snapshot (`Q.holdings`), per resource:
 * - the pool once the expired leases are reclaimed: cap − spent − Σ leased of live leases − Σ exposed of
 *   expired ones (reclaiming charges an expired lease's ceiling and returns the rest);
 * - plus the largest free part of one live lease: leased − (charged + reserved + pending), as last recorded,
 *   or from memory for this process's own lease (its row may be a heartbeat old). `pending` (0005) is the
 *   reservation a top-up or a raise was for, written before it was taken: it is taken as soon as that
 *   statement commits, and shows in `reserved` only at the holder's next report. (Counted free, it made a
 *   refusal elsewhere that it leaves no room for read as units still held, not the run's stop, until then;
 *   settled for less before that report, it errs toward less, as `reserved` does: see below.)
 *
 * One reservation is served by one process: from its slice, topped up from the pool. So the largest
 * reservation the budget can still grant is the pool plus the freest slice, not the sum of every slice's
 * free part (a sum of remainders each too small would admit nothing, and a run would never stop).
 * Another slice's figures are as last reported (at its heartbeat, or sooner near its ceiling): its holder may
 * have reserved more since (then this errs toward more, and a later refusal, once it reported, stops the run),
 * or settled a worst case in flight for less (toward less: that part of a stop comes early, as a single
 * process's reservations in flight also refuse).
 *
 * @internal
 */
import type { Effect } from "effect"
import type { Left, Service } from "./budgetService.js"
import * as S from "./slice.js"
import type { Free, Holdings } from "./statements.js"

/** This process's own lease, from memory: current, unlike its row. */
export interface Own {
  readonly id: string
  readonly used: S.Vec
}

/**
 * The largest reservation the budget can still grant, per resource, in its public measure (`null`: no cap).
 */
export const grantable = (holdings: Holdings, own: Own): Left => {
  const of = (r: S.Resource): number | null => {
    const cap = holdings.caps[r]
    if (cap === null) return null
    let pool = cap - holdings.spent[r]
    let freest = 0
    for (const lease of holdings.leases) {
      if (!lease.live) {
        pool -= lease.exposed[r]
        continue
      }
      pool -= lease.leased[r]
      const used = lease.id === own.id ? own.used[r] : lease.used[r]
      freest = Math.max(freest, lease.leased[r] - used)
    }
    return S.toPublic(r, Math.max(0, pool) + freest)
  }
  return { cost: of("cost"), tokens: of("tokens"), calls: of("calls") }
}

/**
 * What the pool has free in the same snapshot, as the budget row counts it (cap − spent − Σ leased, expired
 * leases included until reclaimed): what `Q.free` reads, so a process can refresh its view of the pool with it.
 */
export const freeOf = (holdings: Holdings): Free => {
  const of = (r: S.Resource): number | null => {
    const cap = holdings.caps[r]
    if (cap === null) return null
    let free = cap - holdings.spent[r]
    for (const lease of holdings.leases) free -= lease.leased[r]
    return free
  }
  return { calls: of("calls"), cost: of("cost"), tokens: of("tokens") }
}

/** The budgets that can answer it (`PgBudget`'s services), with how. */
const readers = new WeakMap<Service, Effect.Effect<Left, Failure>>()

/** A failed read: the database did not answer, or not in time. */
export interface Failure {
  readonly message: string
}

/** Registers how `service` reads what it could still grant. */
export const register = (service: Service, read: Effect.Effect<Left, Failure>): void => {
  readers.set(service, read)
}

/**
 * How `service` reads what it could still grant, if it can (a `PgBudget`); `undefined` for another budget
 * (an in-memory one, whose `left` already is that).
 */
export const readerOf = (service: Service): Effect.Effect<Left, Failure> | undefined => readers.get(service)
