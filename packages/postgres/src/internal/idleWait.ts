/**
 * How long a worker with nothing to lease waits before it looks again, while other workers hold the run's last
 * items: from `FIRST_MILLIS`, doubling, up to a quarter of the mean duration of the items this worker ran (never
 * below `FIRST_MILLIS`, never beyond the heartbeat); a worker that ran none yet doubles up to the heartbeat.
 *
 * Why a share of the items' duration: the worker leaves (or takes a lease that came free) at its first look after
 * the event, so the last wait is what it adds to the run's end. Doubling up to the heartbeat alone made that up to
 * ~ the time it had waited: in bench 12 (200 ms items, 16 per worker, 4 workers) every worker starts waiting a
 * wave or two before the end and slept 400 ms across it, ~300 ms past the run's last record (4 % of its 7 s).
 * Capped at a quarter of an item, a worker leaves within a quarter of an item's time of the end, and looks at
 * most ~4 times per item's duration while it waits (three small statements each): 50 ms apart for 200 ms items,
 * the heartbeat apart for items of a minute.
 *
 * @internal
 */

/** The first wait and the shortest, in milliseconds. @internal */
export const FIRST_MILLIS = 50

/** The longest wait is the items' mean duration over this. @internal */
export const SHARE = 4

/** The items a worker ran (at least one attempt each) and their time, in milliseconds. @internal */
export interface Ran {
  items: number
  millis: number
}

/** Nothing run yet. @internal */
export const empty = (): Ran => ({ items: 0, millis: 0 })

/** Counts an item run for `millis` (one that made no attempt is not counted: it says nothing of the calls). @internal */
export const count = (ran: Ran, attempts: number, millis: number): void => {
  if (attempts === 0 || !(millis >= 0)) return
  ran.items++
  ran.millis += millis
}

/** The longest wait: a `SHARE`th of the mean item, at least `FIRST_MILLIS`, at most the heartbeat. @internal */
export const capOf = (ran: Ran, heartbeatMillis: number): number =>
  ran.items === 0
    ? heartbeatMillis
    : Math.min(heartbeatMillis, Math.max(FIRST_MILLIS, ran.millis / ran.items / SHARE))

/**
 * The `n`th wait (from 0) of a worker that has run `ran`: `FIRST_MILLIS` × 2^n, at most `capOf` (read at each
 * wait: the worker's own items may end while it waits). @internal
 */
export const nth = (n: number, ran: Ran, heartbeatMillis: number): number =>
  Math.min(capOf(ran, heartbeatMillis), FIRST_MILLIS * 2 ** Math.min(n, 30))
