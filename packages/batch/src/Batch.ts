/**
 * Batch runs: many items, each executed under the per-request contract, with run-wide guardrails around
 * all of them (concurrency, item and batch deadlines, abort mode, fail-fast, soft token and cost caps, rate
 * limits, capacity, a shared cooldown after a 429, a startup ramp).
 *
 * What a run promises:
 *
 * - items are pulled one at a time when a worker is free, so an infinite source works; every accepted item
 *   gets exactly one terminal result. A collection (an array, a `Chunk`, a `Set`) hands all of its items
 *   over: after an early stop, the items not started get the stop's result without a call. A lazy source
 *   hands over only what is pulled: an item never pulled is never accepted nor materialised (see `Source`);
 * - the item deadline covers admission waits, attempts and backoff (not queue wait, not persistence); the
 *   batch deadline starts when the run starts;
 * - when the run stops (batch deadline, fail-fast, a cap, an artifact failure) nothing more is pulled, no
 *   attempt, retry or wait starts, and calls in flight drain or are cancelled as the abort mode says;
 * - an item's artifact record is appended before its result is published;
 * - every run gets fresh counters, and after it ends no fiber, timer or source it opened stays open;
 * - caller interruption propagates as interruption.
 *
 * `run` collects the results with the termination and stats; `stream` yields each result as it happens and
 * then ends normally (the termination and stats arrive with the `RunCompleted` event); `drain` keeps no
 * result (they reach only the artifact and `onEvent`) and returns the termination and stats.
 *
 * @since 0.1.0
 */
import { Contract } from "@rein/core"
import type { Provider, Rein } from "@rein/core"
import type { SubscriptionRef } from "effect"
import { Effect, Exit, Queue, Stream, Take } from "effect"
import type { CostFunction } from "./Cost.js"
import type * as Events from "./Events.js"
import * as Guardrails from "./Guardrails.js"
import * as Engine from "./internal/engine.js"
import type * as Settings from "./internal/settings.js"
import * as Pull from "./internal/source.js"
import type { ItemResult } from "./Result.js"
import type { Source, SourceError } from "./Source.js"
import type { Stats } from "./Stats.js"
import type { Termination } from "./Termination.js"

/**
 * Where an open artifact plugs into a run:
 *
 * - `lookup` (resume): before an item executes, an earlier reusable record for it, if any (found at once, or
 *   an effect that reads it back, as `Resume.Session.lookup` does from the JSONL store). A reused item
 *   is not executed, costs nothing, is not appended again and does not count against the caps.
 * - `toRecord`: the record of an item's terminal result. It is appended (and flushed) before the result is
 *   published; a failed append stops the run with `artifact_error`. Guardrail audit records (collateral
 *   `batch_*` results) are appended best-effort.
 *
 * @example
 * ```ts
 * import { Effect, Option } from "effect"
 * import type { ArtifactStore, Batch } from "@rein/batch"
 *
 * declare const opened: ArtifactStore.Opened
 * declare const toRecord: Batch.Artifacts<string>["toRecord"]
 * const artifacts: Batch.Artifacts<string> = { opened, lookup: () => Option.none(), toRecord }
 * ```
 * @category models
 * @since 0.1.0
 */
export interface Artifacts<I> extends Settings.Artifacts<I> {}

type RequestOption<I> = [I] extends [string | Provider.CompletionRequest] ? {
    /** The request of an item (default: a string is the prompt; a request is itself). */
    readonly request?: ((item: I, index: number) => Provider.CompletionRequest) | undefined
  }
  : {
    /** The request of an item. */
    readonly request: (item: I, index: number) => Provider.CompletionRequest
  }

/**
 * How to run: the contract every item executes under, the guardrails around the run, how an item becomes
 * a request and an id, the cost function, observers and artifacts.
 *
 * @example
 * ```ts
 * import { Contract } from "@rein/core"
 * import type { Batch } from "@rein/batch"
 *
 * declare const contract: Contract.Contract
 * const options: Batch.Options<{ readonly id: string; readonly text: string }> = {
 *   contract,
 *   request: (doc) => ({ prompt: `Summarise: ${doc.text}`, inputTokens: 2_000 }),
 *   itemId: (doc) => doc.id
 * }
 * ```
 * @category models
 * @since 0.1.0
 */
export type Options<I> = RequestOption<I> & {
  readonly contract: Contract.Contract
  readonly guardrails?: Guardrails.Guardrails | undefined
  /** The item's id (default: the request's `id`, else its position in the source). */
  readonly itemId?: ((item: I, index: number) => string) | undefined
  readonly costFunction?: CostFunction | undefined
  /** Receives every event of the run, in order. */
  readonly onEvent?: ((event: Events.Event) => Effect.Effect<void>) | undefined
  /** Updated as items start and end and attempts finish. */
  readonly progress?: SubscriptionRef.SubscriptionRef<Events.Progress> | undefined
  readonly artifacts?: Artifacts<I> | undefined
}

/**
 * A finished run: every accepted item's result, how the run ended and what it did.
 *
 * @example
 * ```ts
 * import type { Batch } from "@rein/batch"
 *
 * const failures = (s: Batch.Summary<string>) => s.results.filter((r) => r._tag === "Failed").length
 * ```
 * @category models
 * @since 0.1.0
 */
export interface Summary<I> {
  readonly results: ReadonlyArray<ItemResult<I>>
  readonly termination: Termination
  readonly stats: Stats
}

const DEFAULT_GUARDRAILS = Guardrails.make()

const defaultRequest = (item: unknown): Provider.CompletionRequest =>
  typeof item === "string" ? { prompt: item } : item as Provider.CompletionRequest

const settingsOf = <I>(options: Options<I>): Settings.Settings<I> => {
  const guardrails = options.guardrails ?? DEFAULT_GUARDRAILS
  const contract = guardrails.rateLimitRetries === undefined
    ? options.contract
    : new Contract.Contract({
      ...options.contract,
      retry: new Contract.RetryPolicy({ ...options.contract.retry, rateLimited: guardrails.rateLimitRetries })
    })
  return {
    guardrails,
    contract,
    request: (options.request as ((item: I, index: number) => Provider.CompletionRequest) | undefined) ??
      defaultRequest,
    itemId: options.itemId,
    costFunction: options.costFunction,
    onEvent: options.onEvent,
    progress: options.progress,
    artifacts: options.artifacts
  }
}

/**
 * Runs every item of the source and collects the results (in completion order, or in submission order when
 * the guardrails say `order: "submission"`), with the termination and stats. A guardrail stop is not a
 * failure: the summary says how the run ended. The effect fails only when the source itself fails (after
 * the accepted items finished).
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Contract } from "@rein/core"
 * import { Batch, Guardrails } from "@rein/batch"
 *
 * declare const contract: Contract.Contract
 * const summary = Batch.run(["Summarise A", "Summarise B"], {
 *   contract,
 *   guardrails: Guardrails.make({ concurrency: 20, batchDeadline: "1 hour", abortOn: ["authentication"] })
 * })
 * const report = Effect.map(summary, (s) => `${s.termination.kind}: ${s.stats.succeeded} of ${s.stats.accepted}`)
 * ```
 * @category running
 * @since 0.1.0
 */
export const run = <I, E = never, R = never>(
  source: Source<I, E, R>,
  options: Options<I>
): Effect.Effect<Summary<I>, E | SourceError, R | Rein.Rein> =>
  Effect.suspend(() => {
    const results: Array<ItemResult<I>> = []
    // Kept as soon as the run hands the result over (it is final then, and the array is read only once the run
    // ended): no `Effect.sync`, closure and run-loop step per item.
    const collect = (result: ItemResult<I>) => {
      results.push(result)
      return Effect.void
    }
    return Effect.scoped(
      Effect.flatMap(Pull.open(source), (puller) =>
        Effect.map(
          Engine.run(puller, settingsOf(options), collect, undefined),
          (ending): Summary<I> => ({ results, termination: ending.termination, stats: ending.stats })
        ))
    )
  })

/**
 * Runs every item of the source for what it records and reports, keeping no result: `run` without the
 * results (memory stays flat however many items run) and `stream` without a consumer (no buffer, no
 * `RunCompleted` event needed to learn how the run ended). Each result reaches only the artifact (`toRecord`,
 * appended before the result counts as published) and `onEvent`. Fails only when the source itself fails
 * (after the accepted items finished).
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Contract } from "@rein/core"
 * import { Batch } from "@rein/batch"
 *
 * declare const contract: Contract.Contract
 * declare const artifacts: Batch.Artifacts<string>
 * const ending = Batch.drain(["Summarise A", "Summarise B"], { contract, artifacts })
 * const report = Effect.map(ending, (e) => `${e.termination.kind}: ${e.stats.succeeded} of ${e.stats.accepted}`)
 * ```
 * @category running
 * @since 0.1.0
 */
export const drain = <I, E = never, R = never>(
  source: Source<I, E, R>,
  options: Options<I>
): Effect.Effect<Omit<Summary<I>, "results">, E | SourceError, R | Rein.Rein> =>
  Effect.scoped(
    Effect.flatMap(Pull.open(source), (puller) => Engine.run(puller, settingsOf(options), () => Effect.void, undefined))
  )

/**
 * Runs every item of the source as a stream of results, each emitted as soon as it is final (and persisted,
 * with artifacts), in completion order or submission order. The stream ends normally when the run ends,
 * however it ended; the termination and stats arrive with the `RunCompleted` event. A slow consumer slows
 * the run: results wait in a buffer of `concurrency` places. Ending the stream early interrupts the run.
 *
 * @example
 * ```ts
 * import { Effect, Stream } from "effect"
 * import { Contract } from "@rein/core"
 * import { Batch, Guardrails } from "@rein/batch"
 *
 * declare const contract: Contract.Contract
 * declare const prompts: AsyncIterable<string>
 * const printed = Batch.stream(prompts, { contract, guardrails: Guardrails.make({ concurrency: 50 }) }).pipe(
 *   Stream.runForEach((r) => Effect.log(r.itemId, r._tag))
 * )
 * ```
 * @category running
 * @since 0.1.0
 */
export const stream = <I, E = never, R = never>(
  source: Source<I, E, R>,
  options: Options<I>
): Stream.Stream<ItemResult<I>, E | SourceError, R | Rein.Rein> =>
  Stream.unwrapScoped(Effect.gen(function*() {
    const settings = settingsOf(options)
    const concurrency = settings.guardrails.concurrency
    const queue = yield* Effect.acquireRelease(
      Queue.bounded<Take.Take<ItemResult<I>, E | SourceError>>(concurrency),
      Queue.shutdown
    )
    const publish = (result: ItemResult<I>) => Effect.asVoid(Queue.offer(queue, Take.of(result)))
    // In submission order, an early slow item holds back the later ones: at most twice the concurrency wait.
    const window = settings.guardrails.order === "submission" ? 2 * concurrency : undefined
    yield* Effect.forkScoped(
      Effect.scoped(Effect.flatMap(Pull.open(source), (puller) => Engine.run(puller, settings, publish, window))).pipe(
        Effect.exit,
        Effect.flatMap((exit) => Queue.offer(queue, Exit.isSuccess(exit) ? Take.end : Take.failCause(exit.cause)))
      )
    )
    return Stream.flattenTake(Stream.fromQueue(queue))
  }))
