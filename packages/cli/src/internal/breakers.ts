/**
 * Breaker transitions of a `rein batch` run, as events: the process-wide `Health` is wrapped so that the
 * moment an endpoint's breaker changes state is seen where it happens — a completion that opens or closes
 * it, the acquisition of a probe (an open breaker whose cooldown has passed is half-open) — and offered to
 * a queue the progress display drains. The wrapped service decides nothing itself: every call goes to the
 * inner one unchanged.
 *
 * @internal
 */
import { Health } from "@rein/core"
import { Effect, Either, Layer, Queue } from "effect"

/** One breaker transition of an endpoint. @internal */
export interface Transition {
  readonly endpoint: string
  readonly from: Health.BreakerState
  readonly to: Health.BreakerState
}

/** Wraps `inner` so that every breaker transition is offered to `transitions`. @internal */
export const observe = (
  inner: Health.Health["Type"],
  transitions: Queue.Enqueue<Transition>
): Health.Health["Type"] => {
  const states = new Map<string, Health.BreakerState>()
  const saw = (endpoint: string, to: Health.BreakerState): void => {
    const from = states.get(endpoint) ?? "closed"
    if (from === to) return
    states.set(endpoint, to)
    Queue.unsafeOffer(transitions, { endpoint, from, to })
  }
  const unsafeAcquire: Health.Health["Type"]["unsafeAcquire"] = (now, endpoint, role) => {
    const acquired = inner.unsafeAcquire(now, endpoint, role)
    // Only a half-open breaker hands out probe permits.
    if (Either.isRight(acquired) && acquired.right.probe) saw(endpoint, "half_open")
    return acquired
  }
  const unsafeComplete: Health.Health["Type"]["unsafeComplete"] = (now, permit, result) =>
    Effect.zipRight(
      inner.unsafeComplete(now, permit, result),
      Effect.map(inner.breaker(now, permit.endpoint), (state) => saw(permit.endpoint, state))
    )
  return Health.Health.of({
    ...inner,
    unsafeAcquire,
    unsafeComplete,
    acquire: (now, endpoint, role) => Effect.suspend(() => unsafeAcquire(now, endpoint, role)),
    complete: (now, permit, result) => Effect.suspend(() => unsafeComplete(now, permit, result))
  })
}

/** A process-wide `Health` with these settings whose transitions go to `transitions`. @internal */
export const layer = (
  config: Partial<Health.Config>,
  transitions: Queue.Enqueue<Transition>
): Layer.Layer<Health.Health> =>
  Layer.effect(Health.Health, Effect.map(Health.make(config), (inner) => observe(inner, transitions)))
