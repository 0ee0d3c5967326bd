/**
 * How many items a worker leases ahead of its engine: what the engine takes in about `AHEAD_MILLIS` at its recent
 * pace, at least `minimumOf(batch)` = max(1, ⌈batch/4⌉) and at most `batch`.
 *
 * Why a pace and not a count: every lease is one statement (before 59ca3c5, also a sort of the run's open items),
 * so a small fixed group made a fast worker lease four times as often as a whole batch did (bench 12, 200 ms
 * items at 16 per worker: 500 leases instead of 125 per 2,000 items, PostgreSQL's CPU per item 305 → 600 µs and
 * the worker's ~1,250 → ~1,640 µs), while a whole batch ahead held a slow worker's items from a worker joining
 * later for a whole item's duration. Paced, a worker holds unstarted items for about `AHEAD_MILLIS` of its own
 * work (two groups: the one the engine is taking and the one leased ahead) and leases at most ~1 / `AHEAD_MILLIS`
 * times a second: a slow worker leases ahead the minimum, a fast one a whole batch.
 *
 * @internal
 */

/** The work a worker leases ahead, in milliseconds of its own pace. @internal */
export const AHEAD_MILLIS = 250

/** How many of the last groups the pace is measured over (one group alone is often taken in one burst). */
const WINDOW = 4

/** A group of leased items handed to the engine: when, and how many. @internal */
export interface Handed {
  readonly at: number
  readonly size: number
}

/** The smallest lease ahead of a worker that leases `batch` items first. @internal */
export const minimumOf = (batch: number): number => Math.max(1, Math.ceil(batch / 4))

/**
 * The size of the next lease ahead, at `now`, when every group in `handed` (the last ones, oldest first) has
 * been taken by the engine: their items over the time since the oldest was handed over is the engine's pace.
 * With no history, or no time elapsed (a clock that does not move), the minimum. @internal
 */
export const sizeOf = (batch: number, handed: ReadonlyArray<Handed>, now: number): number => {
  const minimum = minimumOf(batch)
  const oldest = handed[0]
  if (oldest === undefined || now <= oldest.at) return minimum
  let items = 0
  for (const h of handed) items += h.size
  const ahead = Math.ceil((items * AHEAD_MILLIS) / (now - oldest.at))
  return Math.max(minimum, Math.min(batch, ahead))
}

/** Records a group handed over, keeping the last `WINDOW`. @internal */
export const record = (handed: Array<Handed>, group: Handed): void => {
  handed.push(group)
  if (handed.length > WINDOW) handed.shift()
}
