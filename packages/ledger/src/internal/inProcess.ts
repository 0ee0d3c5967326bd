/**
 * In-process coordination. `owners` lets a concurrent submission with the same key await the owner's result
 * instead of racing it; `active` keeps `recover` away from executions this process is running. Across
 * processes, the store's compare-and-set transitions are what guarantee a single dispatch.
 *
 * @internal
 */
import { Deferred, Effect, Exit, Ref } from "effect"
import type { Sha256 } from "../Digest.js"
import type { Outcome, SubmitError } from "./outcome.js"

/** The submission of this process that holds an idempotency key. @internal */
export interface Owner {
  readonly connection: string
  readonly requestDigest: Sha256
  readonly done: Deferred.Deferred<Outcome, SubmitError>
}

/** @internal */
export interface InProcess {
  /** Claims `key` for `requestDigest` on `connection`, or returns the submission that holds it. */
  readonly claim: (key: string, connection: string, requestDigest: Sha256) => Effect.Effect<
    { readonly _tag: "Claimed"; readonly release: (exit: Exit.Exit<Outcome, SubmitError>) => Effect.Effect<void> } | {
      readonly _tag: "Held"
      readonly owner: Owner
    }
  >
  /** Runs `effect` with `id` marked as running here. */
  readonly markActive: <A, E, R>(id: string, effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  readonly active: Effect.Effect<ReadonlySet<string>>
}

const without = <K, V>(map: ReadonlyMap<K, V>, key: K) => {
  const next = new Map(map)
  next.delete(key)
  return next
}

/** @internal */
export const make: Effect.Effect<InProcess> = Effect.gen(function*() {
  const owners = yield* Ref.make<ReadonlyMap<string, Owner>>(new Map())
  const active = yield* Ref.make<ReadonlySet<string>>(new Set())
  return {
    claim: (key, connection, requestDigest) =>
      Effect.gen(function*() {
        const done = yield* Deferred.make<Outcome, SubmitError>()
        const holder = yield* Ref.modify(owners, (map): readonly [Owner | undefined, ReadonlyMap<string, Owner>] => {
          const current = map.get(key)
          if (current !== undefined) return [current, map]
          return [undefined, new Map(map).set(key, { connection, requestDigest, done })]
        })
        if (holder !== undefined) return { _tag: "Held", owner: holder } as const
        const release = (exit: Exit.Exit<Outcome, SubmitError>) =>
          Effect.zipRight(Deferred.done(done, exit), Ref.update(owners, (map) => without(map, key)))
        return { _tag: "Claimed", release } as const
      }),
    markActive: (id, effect) =>
      Effect.ensuring(
        Effect.zipRight(Ref.update(active, (s) => new Set(s).add(id)), effect),
        Ref.update(active, (s) => {
          const next = new Set(s)
          next.delete(id)
          return next
        })
      ),
    active: Ref.get(active)
  }
})
