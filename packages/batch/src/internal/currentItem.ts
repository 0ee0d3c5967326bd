/**
 * Where a batch run names the item a fiber works for (see `CurrentItem`): one cell per worker, in a `FiberRef`
 * the worker sets once, changed in place as the worker takes each item. Setting the reference per item
 * (`Effect.locally`) gave every item's fibers references of their own, and the executor's forks lost their
 * shared copy: +10 KB per item of a run with a listener (bench/ab/item-listener.mjs).
 *
 * @internal
 */
import { FiberRef } from "effect"

/** A worker's cell: the id of the item it executes now (the last one, between items). @internal */
export interface Cell {
  itemId: string | undefined
}

/** The cell of the worker whose item the current fiber executes (none outside a run with a listener). @internal */
export const cell: FiberRef.FiberRef<Cell | undefined> = FiberRef.unsafeMake<Cell | undefined>(undefined)
