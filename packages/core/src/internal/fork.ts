/**
 * Forking an attempt's fiber (or a stream's pull) from the caller's fiber, with the caller's services and
 * fiber references, without copying those references twice per fork.
 *
 * `Runtime.runFork(Runtime.make({ fiberRefs: parent.getFiberRefs(), … }), work)` copies the caller's references
 * twice: `getFiberRefs` sets the runtime-flags reference first (a new `Map`, even when the value is the same),
 * and `runFork` forks them again (`FiberRefs.forkAs`: a new `Map`, a patch and an equality test per reference),
 * ≈ 1.7 KB per attempt, most of what Rein's attempt fiber costs over a bare fork. A caller's references rarely
 * change between its attempts (a batch worker runs thousands of items with the same ones), so the forked
 * references are made once and reused while the caller's references hold the same values:
 * every child is then started on that one immutable `FiberRefs` (a `FiberRefs` is never changed in place: a
 * fiber that sets a reference makes itself a new one). The caller's references are still read per fork
 * (`getFiberRefs`: Effect has no public way to read them without the copy), and compared reference by
 * reference (the same stack, or the same current value); any difference makes a new one.
 *
 * What a child sees is what `Runtime.runFork` gave it: the caller's current value of every reference, forked
 * (`FiberRef.make`'s `fork`: the interruption cause and the fork-scope override start empty), the caller's
 * context, and the given runtime flags. Only the fiber ids inside the references' stacks differ (those of the
 * first child made from them): they are read when a fiber joins its parent (`Fiber.join`), and an attempt's
 * fiber is never joined (its exit is read by an observer); its own children join it as usual, their stacks
 * being forked from its own.
 *
 * @internal
 */
import { FiberRef, FiberRefs, Runtime } from "effect"
import type { Context, Effect, Fiber, FiberId, RuntimeFlags } from "effect"

/** Where a caller's children are forked: one while the callers' references and flags stay the same. @internal */
export class Site {
  /** The caller's context and references as a runtime (for the clock's sleeper: see `timers.ts`). */
  readonly runtime: Runtime.Runtime<never>
  /** No references of its own: `updateRefs` gives each child `forked` (`runFork` would copy them). */
  private readonly bare: Runtime.Runtime<never>
  private forked: FiberRefs.FiberRefs | undefined = undefined
  private readonly options: Runtime.RunForkOptions

  constructor(
    /** The caller's references this site was made from (`getFiberRefs`' copy). */
    readonly source: FiberRefs.FiberRefs,
    readonly flags: RuntimeFlags.RuntimeFlags,
    context: Context.Context<never>
  ) {
    this.runtime = Runtime.make({ context, fiberRefs: source, runtimeFlags: flags })
    this.bare = Runtime.make({ context, fiberRefs: NO_REFS, runtimeFlags: flags })
    this.options = { updateRefs: this.childRefs }
  }

  /** Starts `effect` in a new fiber (synchronously, until its first asynchronous step), as `Runtime.runFork` would. */
  fork<A, E>(effect: Effect.Effect<A, E>): Fiber.RuntimeFiber<A, E> {
    return Runtime.runFork(this.bare, effect, this.options)
  }

  // The first child's own fork of the caller's references, then the same for every child after it.
  private readonly childRefs = (_: FiberRefs.FiberRefs, id: FiberId.Runtime): FiberRefs.FiberRefs =>
    this.forked ??= FiberRefs.forkAs(this.source, id)
}

const NO_REFS = FiberRefs.empty()

// Where sites are kept: the site made last, whichever fiber it was made for, and the site made last for each
// fiber, at the slot of its id (`id & SLOTS - 1`; a fiber id is a number never reused). A batch's workers are
// forked from one fiber and share its references' stacks, so they share the last site; a caller that runs one
// request per fiber (a `runPromise` per call, each from the same runtime) finds the same values each time. Workers
// that each hold a reference of their own (a batch's guardrail workers each provide their own `Gate`) alternate,
// and each finds its own site at its slot (two workers whose ids share a slot take turns, as with one site).
// A `WeakMap` per caller fiber cost ≈ 3.5 µs of CPU per one-shot caller (its `set` on a short-lived key).
const SLOTS = 1024
let last: Site | undefined = undefined
const owners: Array<number> = new Array<number>(SLOTS).fill(-1)
const kept: Array<Site | undefined> = new Array<Site | undefined>(SLOTS).fill(undefined)

// Every site is let go at each full collection (the first after a site was made), with the caller's context and
// references it holds: an object only a `FinalizationRegistry` watches goes then, and its callback empties the
// slots (scavenges leave it). A `WeakRef` per site would cost an allocation per look-up (`deref` keeps its target
// in a set made anew after each job, ≈ 0.12 KB per batch item).
const sweeper = new FinalizationRegistry<undefined>(() => {
  last = undefined
  owners.fill(-1)
  kept.fill(undefined)
  watched = false
})
let watched = false

/**
 * Where `parent` (the calling fiber, in one of its own steps) forks children with `flags`: the site made last for
 * `parent`, or else the one made last, while `parent`'s references hold the same values as those it was made from;
 * else a new one.
 *
 * @internal
 */
export const siteOf = (parent: Fiber.RuntimeFiber<unknown, unknown>, flags: RuntimeFlags.RuntimeFlags): Site => {
  const refs = parent.getFiberRefs()
  const id = parent.id().id
  const slot = id & (SLOTS - 1)
  if (owners[slot] === id) {
    const own = kept[slot]!
    if (own.flags === flags && sameValues(own.source, refs)) return own
  }
  const site = last
  if (site !== undefined && site.flags === flags && sameValues(site.source, refs)) return site
  const made = new Site(refs, flags, parent.currentContext)
  sitesMade++
  last = kept[slot] = made
  owners[slot] = id
  if (!watched) {
    watched = true
    sweeper.register({}, undefined)
  }
  return made
}

let sitesMade = 0

/** How many sites were made since the process started (a miss of both look-ups makes one). @internal */
export const made = (): number => sitesMade

// `getFiberRefs` keeps every other reference's stack (it copies the map, not the stacks): the stacks compare
// by identity; a value set and then restored (`Effect.locally`) is a new stack with the same current value.
let same = true
type Locals = FiberRefs.FiberRefs["locals"]
type Ref = Locals extends Map<infer R, unknown> ? R : never
type Stack = Locals extends Map<unknown, infer S> ? S : never
let against: Locals = new Map()

function compare(stack: Stack, ref: Ref): void {
  if (!same || ref === RUNTIME_FLAGS) return
  const before = against.get(ref)
  if (before === undefined || (before !== stack && before[0][1] !== stack[0][1])) same = false
}

// The flags a fiber runs with are the runtime's (`Site.flags`), not this reference (see the module's comment).
const RUNTIME_FLAGS: Ref = FiberRef.currentRuntimeFlags

/** Whether `now` holds the same references as `before`, each with the same current value. */
const sameValues = (before: FiberRefs.FiberRefs, now: FiberRefs.FiberRefs): boolean => {
  if (before.locals.size !== now.locals.size) return false
  same = true
  against = before.locals
  now.locals.forEach(compare)
  against = NO_REFS.locals
  return same
}
