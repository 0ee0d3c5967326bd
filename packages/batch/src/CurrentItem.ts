/**
 * The item a fiber works for: while a batch run with a listener (`onEvent` or `progress`) executes an item, its
 * id is readable on every fiber of that item's request — its attempts, its provider call, the `Health`
 * completion that opens a breaker. A service wrapped around Rein's (a breaker display, a log) reads it to say
 * which item caused what it saw. It holds the item's id only: never its prompt or any provider text.
 *
 * Without a listener the run sets nothing (nobody watches): it is then `Option.none()`, as outside any run.
 *
 * @since 0.1.0
 */
import { Effect, Fiber, FiberRef, Option } from "effect"
import { cellOf, mark } from "./internal/currentItem.js"

/**
 * The id of the batch item the current fiber executes (`Option.none()` outside an item, or in a run without a
 * listener).
 *
 * @example
 * ```ts
 * import { Effect, Option } from "effect"
 * import { CurrentItem } from "@rein/batch"
 *
 * const which = Effect.map(CurrentItem.itemId, Option.getOrElse(() => "(no item)"))
 * ```
 * @category references
 * @since 0.1.0
 */
export const itemId: Effect.Effect<Option.Option<string>> = FiberRef.getWith(
  mark,
  (m) => Effect.succeed(Option.fromNullable(cellOf(m)?.itemId))
)

/**
 * The current item's id read synchronously, for code that runs on a fiber without being an effect (a service's
 * synchronous fast path): `undefined` outside a fiber, outside an item, or in a run without a listener.
 *
 * @example
 * ```ts
 * import { CurrentItem } from "@rein/batch"
 *
 * const label = (endpoint: string) => `${endpoint} (item ${CurrentItem.unsafeItemId() ?? "?"})`
 * ```
 * @category references
 * @since 0.1.0
 */
export const unsafeItemId = (): string | undefined => {
  const fiber = Fiber.getCurrentFiber()
  return Option.isNone(fiber) ? undefined : cellOf(fiber.value.getFiberRef(mark))?.itemId
}
