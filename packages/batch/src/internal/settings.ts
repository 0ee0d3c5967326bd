/**
 * What a run is given besides its source: the settings `Batch` resolves from its options.
 *
 * @internal
 */
import type { Contract, Outcome, Provider } from "@rein/core"
import type { Effect, Option, SubscriptionRef } from "effect"
import type { ArtifactError, ItemRecord, Opened } from "../ArtifactStore.js"
import type { CostFunction } from "../Cost.js"
import type * as Events from "../Events.js"
import type { Guardrails } from "../Guardrails.js"
import type { Failed, Succeeded } from "../Result.js"

/** Where an open artifact plugs into a run (documented as `Batch.Artifacts`). @internal */
export interface Artifacts<I> {
  readonly opened: Opened
  /**
   * An earlier record to reuse, found at once or read back (`Resume.Session.lookup`); or the refusal of an item
   * that cannot run under the artifact (its input has no fingerprint): it fails alone, before any call, with
   * that refusal as its outcome (and its record).
   */
  readonly lookup?:
    | ((
      item: I,
      index: number,
      itemId: string
    ) => Option.Option<ItemRecord> | Effect.Effect<Option.Option<ItemRecord>> | Outcome.Refused)
    | undefined
  readonly toRecord: (result: Succeeded<I> | Failed<I>) => Effect.Effect<ItemRecord, ArtifactError>
}

/** Everything a run needs besides its source. @internal */
export interface Settings<I> {
  readonly guardrails: Guardrails
  readonly contract: Contract.Contract
  readonly request: (item: I, index: number) => Provider.CompletionRequest
  readonly itemId: ((item: I, index: number) => string) | undefined
  readonly costFunction: CostFunction | undefined
  readonly onEvent: ((event: Events.Event) => Effect.Effect<void>) | undefined
  readonly progress: SubscriptionRef.SubscriptionRef<Events.Progress> | undefined
  readonly artifacts: Artifacts<I> | undefined
}
