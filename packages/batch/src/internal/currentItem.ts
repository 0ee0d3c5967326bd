/**
 * How a batch run's worker marks its fibers: one fiber reference, set once around each worker's loop that needs
 * it (a gated run's, for its gate to find the item; a run with a listener's, to name the item, see
 * `CurrentItem`), inherited by every fiber forked inside it. The mark holds the worker's run, the worker, its cell
 * (the id of the item it executes now, changed in place as it takes each item) and the mark it started under (an
 * outer run's, when the run is nested in an item), so a gate finds its own run's worker through any nested run's
 * marks, and one reference serves both: a second per-worker reference cost a second `Effect.locally` per worker and
 * one more entry in every attempt fiber's references (bench 5's torn-down time with a listener, +2–4 ms for 1,000).
 * Setting the cell per item (`Effect.locally`) gave every item's fibers references of their own: +10 KB per item.
 *
 * @internal
 */
import { FiberRef } from "effect"
import type { Worker } from "./state.js"

/** A worker's cell: the id of the item it executes now (the last one, between items). @internal */
export interface Cell {
  itemId: string | undefined
}

/** A worker's mark (see the module's comment). @internal */
export interface Mark {
  readonly run: object
  readonly worker: Worker
  readonly cell: Cell | undefined
  readonly outer: Mark | undefined
}

/** The mark of the worker whose item the current fiber executes (none outside a marked worker). @internal */
export const mark: FiberRef.FiberRef<Mark | undefined> = FiberRef.unsafeMake<Mark | undefined>(undefined)

/** The nearest cell on a chain of marks (the innermost run with a listener). @internal */
export const cellOf = (m: Mark | undefined): Cell | undefined => {
  for (let at = m; at !== undefined; at = at.outer) if (at.cell !== undefined) return at.cell
  return undefined
}

/** `run`'s worker on a chain of marks. @internal */
export const workerOf = (m: Mark | undefined, run: object): Worker | undefined => {
  for (let at = m; at !== undefined; at = at.outer) if (at.run === run) return at.worker
  return undefined
}
