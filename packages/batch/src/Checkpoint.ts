/**
 * A checkpointed, resumable batch run: the artifact store and a resume policy wired onto `Batch`. Every
 * terminal item is recorded (and flushed) before its result is published; a run started again on the same
 * artifact gives back what the policy allows instead of calling the provider, and runs the rest.
 *
 * `Checkpoint.run` / `Checkpoint.stream` take `Batch`'s options plus `checkpoint: { identity, resume }`;
 * `Checkpoint.open` gives the `Batch.Artifacts` hook itself, for callers who drive `Batch` directly.
 *
 * What a record holds: the item id and position, fingerprints of the prompt (from the item's request) and
 * of the whole input item, the identity fingerprint, the outcome and category, usage, cost, attempts,
 * duration, the encoded error of a failure (kinds and codes, never provider text) and — unless
 * `result: false` — the result: the completion's text by default, or what `result` picks from it.
 *
 * @since 0.1.0
 */
import { Outcome } from "@rein/core"
import type { Provider, Rein } from "@rein/core"
import type { Scope } from "effect"
import { Effect, Either, Schema, Stream } from "effect"
import type { ArtifactStore, ItemRecord } from "./ArtifactStore.js"
import { ArtifactError } from "./ArtifactStore.js"
import type * as Batch from "./Batch.js"
import * as Batches from "./Batch.js"
import * as CurrentItem from "./CurrentItem.js"
import * as Fingerprint from "./Fingerprint.js"
import type { Identity } from "./Identity.js"
import { ArtifactFailed, BatchAborted, BatchBudgetExceeded, BatchDeadlineExceeded } from "./Result.js"
import type { Failed, ItemResult, Succeeded } from "./Result.js"
import * as Resume from "./Resume.js"
import type { Source, SourceError } from "./Source.js"

/**
 * How a run is checkpointed.
 *
 * @example
 * ```ts
 * import type { Checkpoint, Identity } from "@rein/batch"
 *
 * declare const identity: Identity.Identity
 * const checkpoint: Checkpoint.Options<{ readonly id: string; readonly text: string }> = {
 *   identity,
 *   resume: "reuse-successes",
 *   input: (item) => item.text,
 *   result: (completion) => JSON.parse(completion.text)
 * }
 * ```
 * @category models
 * @since 0.1.0
 */
export interface Options<I> {
  /** What makes results interchangeable; a record is reused only under the same identity. */
  readonly identity: Identity
  /** Which earlier records are given back instead of running the item again. */
  readonly resume: Resume.Policy
  /** What of the item is fingerprinted as its input (default: the whole item). */
  readonly input?: ((item: I) => unknown) | undefined
  /** What of a success is kept as its result (default: the completion's text); `false` keeps none. */
  readonly result?: ((completion: Outcome.Completion, item: I) => unknown) | false | undefined
}

/**
 * `CurrentItem.unsafeItemId`: the id of the item the current fiber executes, in a checkpointed run with a listener.
 * Here too, so that a caller that loads this module alone (the `rein` binary loads each module it uses on its
 * own) names items without loading one more.
 *
 * @example
 * ```ts
 * import { Checkpoint } from "@rein/batch"
 *
 * const label = (endpoint: string) => `${endpoint} (item ${Checkpoint.unsafeItemId() ?? "?"})`
 * ```
 * @category references
 * @since 0.1.0
 */
export const unsafeItemId: () => string | undefined = CurrentItem.unsafeItemId

const ItemErrorSchema = Schema.Union(
  Outcome.Terminal,
  BatchDeadlineExceeded,
  BatchAborted,
  BatchBudgetExceeded,
  ArtifactFailed
)
const encodeError = Schema.encodeEither(ItemErrorSchema)

/** A record's `requestId`: the outcome's, when it has one (a collateral failure has none). */
const requestIdOf = (outcome: object): { readonly requestId?: string } =>
  "requestId" in outcome && typeof outcome.requestId === "string" ? { requestId: outcome.requestId } : {}

const defaultRequest = (item: unknown): Provider.CompletionRequest =>
  typeof item === "string" ? { prompt: item } : item as Provider.CompletionRequest

// Usage and cost of a failure, from its attempts: unknown as soon as one attempt's usage is unknown.
const spent = (attempts: ReadonlyArray<Outcome.AttemptRecord>): Pick<ItemRecord, "usage" | "cost"> => {
  let inputTokens = 0
  let outputTokens = 0
  let cost = 0
  for (const a of attempts) {
    if (a.usage === "unknown") return { usage: "unknown", cost: "unknown" }
    inputTokens += a.usage.inputTokens
    outputTokens += a.usage.outputTokens
    cost += a.charged.cost
  }
  return { usage: { inputTokens, outputTokens }, cost }
}

const unfingerprintable = (itemId: string, e: Fingerprint.FingerprintError) =>
  new ArtifactError({
    reason: "encode",
    message: `the input of item ${JSON.stringify(itemId)} has no fingerprint: ${e.path}: ${e.message}`
  })

/**
 * The outcome of an item whose input has no fingerprint (a non-finite number, a bigint, a cycle…: see
 * `Fingerprint`): refused before any call, naming the item and where its input fails. Its record could not
 * be matched on resume, so the item would be paid for again on every run (and its record could not say which
 * input it belongs to).
 */
const refusedInput = (itemId: string, e: Fingerprint.FingerprintError) =>
  new Outcome.Refused({
    refusal: "invalid_request",
    reason: `the input of item ${JSON.stringify(itemId)} has no fingerprint: ${e.path}: ${e.message}`,
    attempts: []
  })

/**
 * The input fingerprint recorded for an item refused because its input has none: no canonical JSON text
 * hashes to it (it is no `sha256:` value), so no input ever matches the record.
 */
const NO_FINGERPRINT = "none"

/**
 * The `Batch.Artifacts` hook for an open session: `lookup` by item id and input fingerprint under the
 * session's identity and policy, `toRecord` making the record (its reusability decided by
 * `Resume.makeRecord`).
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Contract } from "@rein/core"
 * import { Batch, Checkpoint, Resume } from "@rein/batch"
 *
 * declare const session: Resume.Session
 * declare const contract: Contract.Contract
 * const summary = Batch.run(["a", "b"], { contract, artifacts: Checkpoint.artifacts(session, {}) })
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const artifacts = <I>(
  session: Resume.Session,
  options: {
    readonly request?: ((item: I, index: number) => Provider.CompletionRequest) | undefined
    readonly input?: ((item: I) => unknown) | undefined
    readonly result?: ((completion: Outcome.Completion, item: I) => unknown) | false | undefined
    /**
     * The item's input and prompt fingerprints when the caller already computed them (with
     * `Fingerprint.input` and `Fingerprint.prompt`, of what `input` and `request` give): they are then not
     * computed again for each record.
     */
    readonly fingerprints?: ((item: I) => { readonly input: string; readonly prompt: string }) | undefined
  }
): Batch.Artifacts<I> => {
  const request = options.request ?? defaultRequest
  const known = options.fingerprints
  const inputOf = (item: I): Either.Either<string, Fingerprint.FingerprintError> =>
    known !== undefined
      ? Either.right(known(item).input)
      : Fingerprint.input(options.input === undefined ? item : options.input(item))
  const promptOf = (item: I, index: number) =>
    known !== undefined ? known(item).prompt : Fingerprint.prompt(request(item, index))
  return {
    opened: session.opened,
    lookup: (item, _index, itemId) =>
      Either.match(inputOf(item), {
        onLeft: (e) => refusedInput(itemId, e),
        onRight: (fp) => session.lookup(itemId, fp)
      }),
    toRecord: (result: Succeeded<I> | Failed<I>) =>
      Effect.suspend(() => {
        const input = inputOf(result.item)
        // Only the refusal of that input is recorded without a fingerprint (any other outcome of such an input
        // could not be told apart from another input's).
        const refused = Either.isLeft(input) && result._tag === "Failed" && result.error._tag === "Refused"
        if (Either.isLeft(input) && !refused) return Effect.fail(unfingerprintable(result.itemId, input.left))
        const common = {
          itemId: result.itemId,
          index: result.index,
          promptFingerprint: promptOf(result.item, result.index),
          inputFingerprint: Either.getOrElse(input, () => NO_FINGERPRINT),
          identityFingerprint: session.identityFingerprint,
          durationMillis: result.durationMillis
        }
        if (result._tag === "Succeeded") {
          const c = result.completion
          return Effect.succeed(Resume.makeRecord({
            ...common,
            outcome: "success",
            category: "ok",
            usage: c.usage,
            cost: c.cost,
            attempts: c.attempts.length,
            endpoint: c.endpoint,
            ...(options.result === false ? {} : {
              result: options.result === undefined ? c.text : options.result(c, result.item)
            }),
            ...requestIdOf(c)
          }))
        }
        return Either.match(encodeError(result.error), {
          onLeft: () =>
            Effect.fail(
              new ArtifactError({
                reason: "encode",
                message: `the error of item ${JSON.stringify(result.itemId)} cannot be encoded`
              })
            ),
          onRight: (error) =>
            Effect.succeed(Resume.makeRecord({
              ...common,
              outcome: "failure",
              category: result.category,
              ...spent(result.error.attempts),
              attempts: result.error.attempts.length,
              error,
              ...requestIdOf(result.error)
            }))
        })
      })
  }
}

/**
 * Opens the store's artifact for a run (creating it on the first run, resuming it after) and returns the
 * `Batch.Artifacts` hook. The artifact stays open for the scope.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Contract } from "@rein/core"
 * import { Batch, Checkpoint, Identity } from "@rein/batch"
 *
 * declare const contract: Contract.Contract
 * declare const identity: Identity.Identity
 * const summary = Effect.scoped(Effect.flatMap(
 *   Checkpoint.open<string>({ identity, resume: "reuse-successes" }),
 *   (artifacts) => Batch.run(["a", "b"], { contract, artifacts })
 * ))
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const open = <I>(
  options: Options<I> & {
    readonly request?: ((item: I, index: number) => Provider.CompletionRequest) | undefined
  }
): Effect.Effect<Batch.Artifacts<I>, ArtifactError, ArtifactStore | Scope.Scope> =>
  Effect.map(
    Resume.open({ identity: options.identity, policy: options.resume }),
    (session) => artifacts(session, options)
  )

/**
 * `Batch.Options` plus how the run is checkpointed.
 *
 * @example
 * ```ts
 * import type { Contract } from "@rein/core"
 * import type { Checkpoint, Identity } from "@rein/batch"
 *
 * declare const contract: Contract.Contract
 * declare const identity: Identity.Identity
 * const options: Checkpoint.RunOptions<string> = { contract, checkpoint: { identity, resume: "reuse-all" } }
 * ```
 * @category models
 * @since 0.1.0
 */
export type RunOptions<I> = Batch.Options<I> & { readonly artifacts?: never; readonly checkpoint: Options<I> }

const split = <I>(options: RunOptions<I>) => {
  const { checkpoint, ...batch } = options
  const request = (batch as { readonly request?: ((item: I, index: number) => Provider.CompletionRequest) | undefined })
    .request
  return { checkpoint: { ...checkpoint, request }, batch }
}

/**
 * `Batch.run` over an artifact: records every terminal item before publishing it and, on a later run
 * over the same artifact, gives back what the resume policy allows. Fails with `ArtifactError` only when
 * the artifact cannot be opened; a failed append ends the run with termination `artifact_error`.
 *
 * @example
 * ```ts
 * import { NodeFileSystem } from "@effect/platform-node"
 * import { Effect } from "effect"
 * import { Contract } from "@rein/core"
 * import { Checkpoint, Identity, JsonlStore } from "@rein/batch"
 *
 * declare const contract: Contract.Contract
 * const identity = Identity.make({
 *   provider: "openai", model: "gpt-4.1-mini", promptVersion: "p4", parserVersion: "j2", applicationVersion: "a7"
 * })
 * const summary = Checkpoint.run(["Summarise A", "Summarise B"], {
 *   contract,
 *   checkpoint: { identity, resume: "reuse-successes" }
 * }).pipe(Effect.provide(JsonlStore.layer({ path: "run.jsonl" })), Effect.provide(NodeFileSystem.layer))
 * ```
 * @category running
 * @since 0.1.0
 */
export const run = <I, E = never, R = never>(
  source: Source<I, E, R>,
  options: RunOptions<I>
): Effect.Effect<Batch.Summary<I>, E | SourceError | ArtifactError, R | Rein.Rein | ArtifactStore> => {
  const { batch, checkpoint } = split(options)
  return Effect.scoped(
    Effect.flatMap(
      open<I>(checkpoint),
      (hook) => Batches.run(source, { ...batch, artifacts: hook } as Batch.Options<I>)
    )
  )
}

/**
 * `Batch.stream` over an artifact (see `run`).
 *
 * @example
 * ```ts
 * import { Effect, Stream } from "effect"
 * import { Contract } from "@rein/core"
 * import { Checkpoint, Identity } from "@rein/batch"
 *
 * declare const contract: Contract.Contract
 * declare const identity: Identity.Identity
 * const printed = Checkpoint.stream(["a", "b"], { contract, checkpoint: { identity, resume: "reuse-all" } }).pipe(
 *   Stream.runForEach((r) => Effect.log(r.itemId, r._tag))
 * )
 * ```
 * @category running
 * @since 0.1.0
 */
export const stream = <I, E = never, R = never>(
  source: Source<I, E, R>,
  options: RunOptions<I>
): Stream.Stream<ItemResult<I>, E | SourceError | ArtifactError, R | Rein.Rein | ArtifactStore> => {
  const { batch, checkpoint } = split(options)
  return Stream.unwrapScoped(
    Effect.map(
      open<I>(checkpoint),
      (hook) => Batches.stream(source, { ...batch, artifacts: hook } as Batch.Options<I>)
    )
  )
}
