/**
 * Breaker transitions of a `rein batch` run, as events: the process-wide `Health` is wrapped so that the
 * moment an endpoint's breaker changes state is seen where it happens — a completion that opens or closes
 * it, the acquisition of a probe (an open breaker whose cooldown has passed is half-open) — and offered to
 * a queue the progress display drains, with the id of the item whose attempt made it (the run names each item
 * on its fibers: `CurrentItem`). The wrapped service decides nothing itself: every call goes to the inner one
 * unchanged.
 *
 * @internal
 */
import { Health } from "@rein/core"
import type { Planner } from "@rein/core"
import { Effect, Either, Layer, Queue } from "effect"

/** One breaker transition of an endpoint, and the item whose attempt made it (when known). @internal */
export interface Transition {
  readonly endpoint: string
  readonly from: Health.BreakerState
  readonly to: Health.BreakerState
  /** The item whose attempt opened or closed the breaker, or took its probe (`CurrentItem`): its id only. */
  readonly itemId?: string
}

/**
 * Wraps `inner` so that every breaker transition is offered to `transitions`, with the item `itemOf` names on the
 * fiber that made it (`@rein/batch`'s `CurrentItem.unsafeItemId`, given by the command that loaded it: this module
 * does not load `@rein/batch`). @internal
 */
export const observe = (
  inner: Health.Service,
  transitions: Queue.Enqueue<Transition>,
  itemOf: () => string | undefined = () => undefined
): Health.Service => {
  const states = new Map<string, Health.BreakerState>()
  const saw = (endpoint: string, to: Health.BreakerState): void => {
    const from = states.get(endpoint) ?? "closed"
    if (from === to) return
    states.set(endpoint, to)
    // Seen on the fiber of the item whose attempt made it (a completion, a probe's admission).
    const itemId = itemOf()
    Queue.unsafeOffer(transitions, itemId === undefined ? { endpoint, from, to } : { endpoint, from, to, itemId })
  }
  // Only a half-open breaker hands out probe permits.
  const sawPermit = (endpoint: string, permit: Health.Permit): void => {
    if (permit.probe) saw(endpoint, "half_open")
  }
  const sawCompletion = (permit: Health.Permit) =>
    Effect.map(inner.breaker(permit.endpoint), (state) => saw(permit.endpoint, state))
  const { unsafeAcquire, unsafeComplete } = inner
  return Health.Health.of({
    ...inner,
    acquire: (endpoint, role, options) =>
      Effect.tap(inner.acquire(endpoint, role, options), (permit) => sawPermit(endpoint, permit)),
    complete: (permit, result) => Effect.zipRight(inner.complete(permit, result), sawCompletion(permit)),
    ...(unsafeAcquire === undefined ? {} : {
      unsafeAcquire: (atNanos: bigint, endpoint: string, role: Planner.Role, candidates?: ReadonlyArray<string>) => {
        const acquired = unsafeAcquire(atNanos, endpoint, role, candidates)
        if (acquired !== undefined && Either.isRight(acquired)) sawPermit(endpoint, acquired.right)
        return acquired
      }
    }),
    ...(unsafeComplete === undefined ? {} : {
      unsafeComplete: (atNanos: bigint, permit: Health.Permit, result: Health.Result) =>
        Effect.zipRight(unsafeComplete(atNanos, permit, result), sawCompletion(permit))
    })
  })
}

/**
 * A process-wide `Health` with these settings whose transitions go to `transitions`, each with the item `itemOf`
 * names (see `observe`). @internal
 */
export const layer = (
  config: Partial<Health.Config>,
  transitions: Queue.Enqueue<Transition>,
  itemOf?: () => string | undefined
): Layer.Layer<Health.Health, Health.ConfigError> =>
  Layer.effect(Health.Health, Effect.map(Health.make(config), (inner) => observe(inner, transitions, itemOf)))
