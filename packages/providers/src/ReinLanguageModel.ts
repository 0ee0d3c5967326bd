/**
 * An `@effect/ai` `LanguageModel` backed by Rein: swap one Layer and every `generateText`,
 * `generateObject` and `streamText` of an existing program runs under one contract — planner, deadline,
 * budget, breakers, retry budgets, journal — over the contract's candidates, each an `@effect/ai` model.
 * Call sites do not change.
 *
 * - Each provider-level call is one Rein request: its prompt, tools, tool choice and response format go
 *   with it (the planner checks tool support, structured output, and that a provider-defined tool runs
 *   only on its vendor's endpoints). Per attempt, the chosen endpoint's inner model is called with
 *   tool-call resolution off; the outer `LanguageModel.make` resolves tool calls once, with the caller's
 *   handlers. Tool calls are checked as bare `@effect/ai` checks them, against the caller's whole toolkit
 *   (one outside a `toolChoice: { oneOf }` runs its handler; one the toolkit cannot take fails with
 *   `@effect/ai`'s own `MalformedOutput`, with no retry nor fallback: see `internal/rejected.ts`).
 * - The endpoint's model name and Rein's output bound reach the inner model through its vendor's
 *   `Config` (OpenAI, Anthropic, Google, OpenRouter), merged over the caller's own config. The vendor
 *   module (`EffectAiOpenAi`, …) is loaded on demand, for the vendors of the models given only: a user of
 *   one `@effect/ai-*` package installs only that one.
 * - Hidden retries are refused up front: the `clients` are built on a one-shot `HttpClient`, and probed at
 *   layer build (no traffic) so that a client that retries makes Rein refuse every request
 *   (`nested_retries`) before any HTTP call.
 * - Rein's terminal outcomes travel as `AiError.UnknownError` whose `cause` is the outcome (still
 *   serialisable); `withOutcomes` widens the error back so `Effect.catchTag("PlanExhausted", …)` works.
 * - An agent loop of many turns shares one deadline, call cap and budget under `Refine.sharing`.
 *
 * @since 0.1.0
 */
import { AiError, LanguageModel } from "@effect/ai"
import type { Tokenizer } from "@effect/ai"
import type * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientTag from "@effect/platform/HttpClient"
import { Journal, Outcome, Rein } from "@rein/core"
import type { Catalog, Contract, Health, Provider } from "@rein/core"
import { Context, Effect, Layer, Option, Schema, Stream } from "effect"
import { dual } from "effect/Function"
import { oneShot } from "./EffectAi.js"
import * as GenerateText from "./internal/generateText.js"
import * as Inner from "./internal/languageModel.js"
import * as Outcomes from "./internal/outcomes.js"
import { requestsPerCall } from "./internal/probe.js"
import * as Rejected from "./internal/rejected.js"
import * as Stages from "./internal/stages.js"
import * as StreamText from "./internal/streamText.js"

/**
 * One endpoint's `@effect/ai` model: a model layer (`OpenAiLanguageModel.model("gpt-4.1-mini")`, or any
 * `Layer` providing `LanguageModel`), or a function of the endpoint's model name
 * (`OpenAiLanguageModel.model` itself: the name is then written once, in the catalog).
 *
 * @category models
 * @since 0.1.0
 */
export type Model<R> =
  | Layer.Layer<LanguageModel.LanguageModel, never, R>
  | ((model: string) => Layer.Layer<LanguageModel.LanguageModel, never, R>)

/**
 * What the models of a `models` record need, together (each vendor's model its own client).
 *
 * @example
 * ```ts
 * import type { OpenAiClient, OpenAiLanguageModel } from "@effect/ai-openai"
 * import type { ReinLanguageModel } from "@rein/providers"
 *
 * type Needs = ReinLanguageModel.RequirementsOf<{ readonly a: typeof OpenAiLanguageModel.model }> // OpenAiClient
 * ```
 * @category models
 * @since 0.1.0
 */
export type RequirementsOf<M> = {
  [K in keyof M]: M[K] extends Layer.Layer<LanguageModel.LanguageModel, never, infer R> ? R
    : M[K] extends (model: string) => Layer.Layer<LanguageModel.LanguageModel, never, infer R> ? R
    : never
}[keyof M]

/**
 * What the layer is built from.
 *
 * @category models
 * @since 0.1.0
 */
export interface Options<R> {
  readonly contract: Contract.Contract
  readonly catalog: Catalog.Catalog
  /** Per endpoint id of the contract's candidates: its model (every candidate needs one, else `Refused`). */
  readonly models: Readonly<Record<string, Model<R>>>
  /**
   * Rein's output bound per call (default: each endpoint's maximum). A smaller cap given per call in the
   * vendor's `Config` (`OpenAiLanguageModel.withConfigOverride({ max_output_tokens: 256 })`) is sent as it
   * is; when every candidate's vendor has one (OpenAI, Anthropic, Google, OpenRouter), Rein also admits,
   * reserves and judges truncation against the largest (an answer cut at it does not fall back to a
   * larger endpoint). One in a model layer's own config (`OpenAiLanguageModel.model(name, {
   * max_output_tokens: 256 })`) is not seen and is replaced by Rein's bound: give that cap here.
   */
  readonly maxOutputTokens?: number | undefined
  /**
   * An upper bound on a prompt's input tokens. Default: the largest count of the models' `Tokenizer`s
   * (`OpenAiLanguageModel.modelWithTokenizer`, …); without either, a hard budget refuses (fail closed).
   * A `Tokenizer` that fails on a prompt gives no count: `@effect/ai-openai`'s fails for every model its
   * `gpt-tokenizer` does not know (`gpt-4.1-mini`: "does not support chat"), so under a cost or token budget
   * every call of such a model is `Refused` (`no_input_bound`) unless this option is given. This function
   * throwing refuses the call (`invalid_request`) before any is made.
   */
  readonly inputTokens?: ((prompt: LanguageModel.ProviderOptions["prompt"]) => number) | undefined
  /** Breaker and retry-budget settings (see `Rein.layer`). */
  readonly health?: Partial<Health.Config> | false | undefined
  /**
   * The largest answer read, in bytes (a positive integer; anything else is the default, 8 MiB): a whole
   * body, one SSE event, the deltas of a streamed answer (its text, reasoning and tool-call parameters,
   * together). Over it the attempt fails `malformed_response` /
   * `body_too_large` and the connection is closed (after the first delta: terminal). Bounded only with
   * `clients` (their HTTP client is Rein's one-shot client, which reads every body).
   */
  readonly maxResponseBytes?: number | undefined
}

/**
 * Provides `LanguageModel.LanguageModel` backed by Rein. With `clients` (the layer of the models' clients,
 * e.g. `OpenAiClient.layer({ apiKey })`), the clients are built on a one-shot `HttpClient` and probed for
 * hidden retries at build; without it, the models' requirements come from the context as they are.
 *
 * @example
 * ```ts
 * import { LanguageModel } from "@effect/ai"
 * import { OpenAiClient, OpenAiLanguageModel } from "@effect/ai-openai"
 * import { NodeHttpClient } from "@effect/platform-node"
 * import { Effect, Redacted } from "effect"
 * import type { Catalog, Contract } from "@rein/core"
 * import { ReinLanguageModel } from "@rein/providers"
 *
 * declare const contract: Contract.Contract
 * declare const catalog: Catalog.Catalog
 * const program = LanguageModel.generateText({ prompt: "Say hi" }).pipe(
 *   Effect.provide(ReinLanguageModel.layer({
 *     contract, catalog,
 *     models: { "openai/mini": OpenAiLanguageModel.model },
 *     clients: OpenAiClient.layer({ apiKey: Redacted.make("sk-…") })
 *   })),
 *   Effect.provide(NodeHttpClient.layerUndici)
 * )
 * ```
 * @category layers
 * @since 0.1.0
 */
export function layer<RM, E, RC>(
  // The models' requirements are read from `clients` alone (two vendors' models, each needing its own client,
  // are then checked against the union the merged client layers provide).
  options: Options<NoInfer<RM>> & { readonly clients: Layer.Layer<RM, E, RC> }
): Layer.Layer<LanguageModel.LanguageModel, E, RC | HttpClient.HttpClient>
export function layer<M extends Readonly<Record<string, Model<unknown>>>>(
  options: Options<RequirementsOf<M>> & { readonly models: M }
): Layer.Layer<LanguageModel.LanguageModel, never, RequirementsOf<M>>
export function layer<R>(
  options: Options<R> & { readonly clients?: Layer.Layer<R, unknown, unknown> | undefined }
): Layer.Layer<LanguageModel.LanguageModel, unknown, unknown> {
  return Layer.scoped(LanguageModel.LanguageModel, make(options))
}

/** Builds the service: the inner models (probed), Rein over them, and the outer `LanguageModel.make`. */
const make = <R>(
  options: Options<R> & { readonly clients?: Layer.Layer<R, unknown, unknown> | undefined }
): Effect.Effect<LanguageModel.Service, unknown, unknown> =>
  Effect.gen(function*() {
    const clients = options.clients
    const built = new Map<string, Inner.Inner>()
    const retries = new Map<string, number>()
    for (const [id, model] of Object.entries(options.models)) {
      const endpoint = options.catalog.byId.get(id)
      const modelLayer = typeof model === "function" ? model(endpoint?.model ?? id) : model
      if (clients === undefined) {
        built.set(
          id,
          yield* Inner.innerOf(yield* Layer.build(modelLayer), LanguageModel.LanguageModel, options.maxResponseBytes)
        )
        continue
      }
      const on = (http: HttpClient.HttpClient) =>
        Layer.build(Layer.provide(modelLayer, Layer.provide(clients, Layer.succeed(HttpClientTag.HttpClient, http))))
      const http = oneShot(yield* HttpClientTag.HttpClient)
      built.set(id, yield* Inner.innerOf(yield* on(http), LanguageModel.LanguageModel, options.maxResponseBytes))
      retries.set(
        endpoint?.provider ?? id,
        Math.max(
          retries.get(endpoint?.provider ?? id) ?? 1,
          yield* requestsPerCall((probe) =>
            Effect.scoped(Effect.map(on(probe), (c) => Context.get(c, LanguageModel.LanguageModel)))
          )
        )
      )
    }
    const rein = yield* Layer.build(Rein.layer({
      catalog: options.catalog,
      providers: providersOf(options.catalog, built, retries),
      health: options.health
    }))
    const tokenizers = Array.from(built.values(), (i) => i.tokenizer).filter((t): t is Tokenizer.Service =>
      t !== undefined
    )
    return yield* serviceOf(options, rein, tokenizers, boundOf(options, built))
  })

/**
 * The output bound of a call, from its context: the caller's own cap (`withConfigOverride`, in each
 * vendor's `Config`) when every candidate's vendor has one, and the largest is below every candidate's
 * bound (Rein then admits, reserves and judges truncation against it, as for a smaller `maxOutputTokens`);
 * else the option. `undefined` when a candidate's vendor keeps no cap Rein can read.
 */
const boundOf = <R>(
  options: Options<R>,
  built: ReadonlyMap<string, Inner.Inner>
): ((context: Context.Context<never>) => number | undefined) | undefined => {
  const candidates: Array<{ readonly inner: Inner.Inner; readonly bound: number }> = []
  for (const id of options.contract.candidates) {
    const inner = built.get(id)
    const endpoint = options.catalog.byId.get(id)
    if (inner === undefined || endpoint === undefined) continue
    if (!Inner.knowsCap(inner)) return undefined
    const bound = endpoint.capabilities.maxOutputTokens
    candidates.push({ inner, bound: Math.min(options.maxOutputTokens ?? bound, bound) })
  }
  if (candidates.length === 0) return undefined
  const least = Math.min(...candidates.map((c) => c.bound))
  return (context) => {
    let most = 0
    for (const c of candidates) {
      const cap = Inner.callerCap(c.inner, context)
      if (cap === undefined) return options.maxOutputTokens
      if (cap > most) most = cap
    }
    return most < least ? most : options.maxOutputTokens
  }
}

/** One Rein provider per catalog provider name, each dispatching by endpoint to its inner model. */
const providersOf = (
  catalog: Catalog.Catalog,
  built: ReadonlyMap<string, Inner.Inner>,
  retries: ReadonlyMap<string, number>
): Map<string, Provider.Provider> => {
  const providers = new Map<string, Provider.Provider>()
  const missing = (id: string) =>
    new Outcome.FailedSafe({
      reason: `no model for ${id}`,
      lastFailure: { kind: "invalid_request", code: "no_model", endpoint: id },
      attempts: []
    })
  for (const id of built.keys()) {
    const name = catalog.byId.get(id)?.provider ?? id
    if (providers.has(name)) continue
    const inner = (context: Provider.AttemptContext) => built.get(context.endpoint.id)
    const callOf = (request: Provider.CompletionRequest) =>
      request.payload instanceof Inner.Call ? request.payload : undefined
    providers.set(name, {
      internalMaxAttempts: retries.get(name) ?? 1,
      call: (request, context) => {
        const model = inner(context)
        const call = callOf(request)
        return model === undefined || call === undefined
          ? Effect.die(missing(context.endpoint.id))
          : Inner.generate(model, call, context)
      },
      stream: (request, context) => {
        const model = inner(context)
        const call = callOf(request)
        return model === undefined || call === undefined
          ? Stream.die(missing(context.endpoint.id))
          : Inner.stream(model, call, context)
      }
    })
  }
  return providers
}

/**
 * A candidate of the contract that the catalog knows but `models` does not give a model: every request is
 * `Refused` (`unknown_candidate`, naming it) before any call. Without this check a fallback to it reached
 * the provider, found no model there, and ended as an opaque `unknown` / `provider_defect` after a call.
 */
const unmodelled = <R>(options: Options<R>): Outcome.Refused | undefined => {
  const missing = options.contract.candidates.filter((id) =>
    options.catalog.byId.has(id) && !Object.prototype.hasOwnProperty.call(options.models, id)
  )
  return missing.length === 0 ? undefined : new Outcome.Refused({
    refusal: "unknown_candidate",
    reason: `no model in \`models\` for the contract's candidate${missing.length > 1 ? "s" : ""} ${
      missing.map((id) => JSON.stringify(id)).join(", ")
    }`,
    attempts: []
  })
}

/**
 * The `inputTokens` option's count of a prompt. It is user code: a throw refuses the call (`invalid_request`,
 * naming only what was thrown, whose message may quote the prompt) instead of killing the caller's fiber.
 */
const countedBy = (
  count: (prompt: LanguageModel.ProviderOptions["prompt"]) => number,
  prompt: LanguageModel.ProviderOptions["prompt"]
): Effect.Effect<number, Outcome.Refused> => {
  try {
    return Effect.succeed(count(prompt))
  } catch (error) {
    const thrown = error instanceof Error ? JSON.stringify(String(error.name).slice(0, 80)) : `a ${typeof error}`
    return Effect.fail(
      new Outcome.Refused({
        refusal: "invalid_request",
        reason: `the \`inputTokens\` option (\`ReinLanguageModel.layer\`) threw ${thrown}: make it return a ` +
          "non-negative integer",
        attempts: []
      })
    )
  }
}

/**
 * The outer `LanguageModel`: every provider-level call is one Rein request. `generateText` takes the
 * inner model's decoded parts as they are and resolves tool calls with the caller's handlers
 * (`internal/generateText.ts`), and so does `streamText` (`internal/streamText.ts`); `generateObject` goes
 * through `LanguageModel.make`.
 */
const serviceOf = <R>(
  options: Options<R>,
  rein: Context.Context<Rein.Rein | Health.Health>,
  tokenizers: ReadonlyArray<Tokenizer.Service>,
  bound: ((context: Context.Context<never>) => number | undefined) | undefined
): Effect.Effect<LanguageModel.Service> => {
  const tokens = (call: LanguageModel.ProviderOptions) =>
    options.inputTokens !== undefined
      ? countedBy(options.inputTokens, call.prompt)
      : Inner.tokensOf(tokenizers, call.prompt)
  const request = (call: LanguageModel.ProviderOptions): Effect.Effect<Provider.CompletionRequest, Outcome.Refused> =>
    bound === undefined
      ? Effect.map(tokens(call), (inputTokens) => Inner.requestOf(call, inputTokens, options.maxOutputTokens))
      : Effect.contextWithEffect((context: Context.Context<never>) =>
        Effect.map(tokens(call), (inputTokens) => Inner.requestOf(call, inputTokens, bound(context)))
      )
  const refused = unmodelled(options)
  const execute = (r: Provider.CompletionRequest) =>
    refused === undefined ? Rein.execute(r, options.contract) : Effect.fail(refused)
  const parts = (call: LanguageModel.ProviderOptions) =>
    Effect.flatMap(request(call), execute).pipe(
      Effect.flatMap((completion) =>
        completion.payload instanceof Inner.Parts
          ? Effect.succeed(completion.payload)
          : Effect.die("a Rein LanguageModel answer without its parts")
      ),
      // A plan that ended on an answer the inner decode rejected: that answer, which the outer call validates
      // as bare does (`internal/rejected.ts`). `make`'s `generateObject` calls this too: the error names the
      // method the caller called.
      Effect.catchAll((outcome) => {
        const kept = Rejected.keptAnswer(call, outcome)
        return kept instanceof Inner.Parts
          ? Effect.succeed(kept)
          : Effect.fail(toAiError(outcome, call.responseFormat.type === "json" ? "generateObject" : "generateText"))
      }),
      Effect.provide(rein)
    )
  // `Stages`' unwrap and provide: no stage per delta (one stage maps the events to parts).
  const streamParts = (call: LanguageModel.ProviderOptions) =>
    Stages.provideSomeContext(
      Stages.unwrap(
        Effect.map(request(call), (r) =>
          refused === undefined ? Rein.executeStream(r, options.contract) : Stream.fail(refused))
      ).pipe(
        Stream.filterMap((event) =>
          event._tag === "Delta" && event.payload instanceof Inner.StreamPart
            ? Option.some(event.payload.part)
            : Option.none()
        ),
        Stream.mapError((outcome) =>
          // A chunk the inner decode rejected ends the call with the error bare raises (`internal/rejected.ts`).
          Rejected.rejection(call, outcome) ?? toAiError(outcome, "streamText")
        )
      ),
      rein
    )
  return Effect.gen(function*() {
    const made = yield* LanguageModel.make({
      generateText: (call) => Effect.flatMap(parts(call), (p) => p.encoded()),
      streamText: () => Stream.die("a Rein LanguageModel streams through its own streamText")
    })
    const direct = yield* GenerateText.make(parts)
    const streamed = yield* StreamText.make(streamParts)
    // `direct` and `streamed` answer exactly the types `make`'s methods have for the same options.
    return {
      ...made,
      generateText: direct as LanguageModel.Service["generateText"],
      streamText: streamed as LanguageModel.Service["streamText"]
    }
  })
}

/** A terminal outcome as the `AiError` a `LanguageModel` may fail with (the outcome as its cause). */
const toAiError = (outcome: Outcome.Terminal, method: string): AiError.AiError =>
  new AiError.UnknownError({
    module: "Rein",
    method,
    description: `${outcome._tag}: ${outcome.message}`,
    cause: outcome
  })

const isTerminal = Schema.is(Outcome.Terminal)

/**
 * The Rein outcome an `AiError` carries, if any.
 *
 * @example
 * ```ts
 * import type { AiError } from "@effect/ai"
 * import { ReinLanguageModel } from "@rein/providers"
 *
 * declare const error: AiError.AiError
 * const outcome = ReinLanguageModel.outcomeOf(error) // Option<Outcome.Terminal>
 * ```
 * @category getters
 * @since 0.1.0
 */
export const outcomeOf = (error: unknown): Option.Option<Outcome.Terminal> =>
  error instanceof AiError.UnknownError && isTerminal(error.cause) ? Option.some(error.cause) : Option.none()

/**
 * Widens the error of a `LanguageModel` call back to Rein's outcomes: an `AiError` that carries one
 * becomes the outcome itself, so `Effect.catchTag("PlanExhausted", …)` works.
 *
 * @example
 * ```ts
 * import { LanguageModel } from "@effect/ai"
 * import { Effect } from "effect"
 * import { ReinLanguageModel } from "@rein/providers"
 *
 * const answer = LanguageModel.generateText({ prompt: "hi" }).pipe(
 *   ReinLanguageModel.withOutcomes,
 *   Effect.catchTag("BudgetExhausted", (e) => Effect.succeed(`out of ${e.resource}`))
 * )
 * ```
 * @category combinators
 * @since 0.1.0
 */
export const withOutcomes = <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E | Outcome.Terminal, R> =>
  Effect.mapError(self, (error) => Option.getOrElse(outcomeOf(error), (): E | Outcome.Terminal => error))

/**
 * `withOutcomes` for a stream (`LanguageModel.streamText`, `Chat`'s `streamText`): an `AiError` that carries
 * a Rein outcome fails the stream with the outcome itself, so `Stream.catchTag("PlanExhausted", …)` works.
 * `onStreamOutcome` reports how each of its requests ended, whichever way.
 *
 * @example
 * ```ts
 * import { LanguageModel } from "@effect/ai"
 * import { Stream } from "effect"
 * import { ReinLanguageModel } from "@rein/providers"
 *
 * const text = LanguageModel.streamText({ prompt: "hi" }).pipe(
 *   ReinLanguageModel.withOutcomesStream,
 *   Stream.catchTag("DeadlineExceeded", () => Stream.empty)
 * )
 * ```
 * @category combinators
 * @since 0.1.0
 */
export const withOutcomesStream = <A, E, R>(
  self: Stream.Stream<A, E, R>
): Stream.Stream<A, E | Outcome.Terminal, R> =>
  Stream.mapError(self, (error) => Option.getOrElse(outcomeOf(error), (): E | Outcome.Terminal => error))

/**
 * How one Rein request ended (one provider-level call: a `streamText`, one turn of an agent loop): what
 * `onStreamOutcome` hands over. Records only, never the answer's text or the prompt.
 *
 * - `Completed`: the endpoint that answered, the usage, the cost charged, the finish reason and every attempt
 *   (the retries and fallbacks before the answer included);
 * - a terminal outcome (`DeadlineExceeded`, `PlanExhausted`, `FailedSafe`, …), its attempts with it: the
 *   stream failed with it (a stream cut after its first delta is `FailedSafe`);
 * - `Interrupted`: the consumer stopped early (`Stream.take`, a fiber interrupted), with the attempts so far
 *   (the last one `interrupted`, charged its reservation unless the answer's usage had arrived); `Defect`: a
 *   bug, with the attempts so far.
 *
 * @example
 * ```ts
 * import type { ReinLanguageModel } from "@rein/providers"
 *
 * const cost = (outcome: ReinLanguageModel.CallOutcome) =>
 *   outcome._tag === "Completed" ? outcome.cost : outcome.attempts.length
 * ```
 * @category models
 * @since 0.1.0
 */
export type CallOutcome = Outcomes.CallOutcome

/**
 * Calls `f` with the outcome of each Rein request `self` makes, once, when that request ends: when the
 * stream ends (`Completed`), when it fails (the terminal outcome), or when it is interrupted or its consumer
 * stops early (`Interrupted`, before the stream's finalizers return). A journal already in the context
 * (`Journal.layerMemory`, …) still gets every record.
 *
 * @example
 * ```ts
 * import { LanguageModel } from "@effect/ai"
 * import { Effect, Stream } from "effect"
 * import { ReinLanguageModel } from "@rein/providers"
 *
 * const firstWords = LanguageModel.streamText({ prompt: "Tell me a story" }).pipe(
 *   ReinLanguageModel.onStreamOutcome((outcome) =>
 *     Effect.log(outcome._tag === "Completed" ? `${outcome.endpoint}: ${outcome.cost}` : outcome._tag)
 *   ),
 *   Stream.take(3), // stops early: the outcome is `Interrupted`, with the attempts and their charges
 *   Stream.runCollect
 * )
 * ```
 * @category combinators
 * @since 0.1.0
 */
export const onStreamOutcome: {
  <R2>(
    f: (outcome: CallOutcome) => Effect.Effect<void, never, R2>
  ): <A, E, R>(self: Stream.Stream<A, E, R>) => Stream.Stream<A, E, R | R2>
  <A, E, R, R2>(
    self: Stream.Stream<A, E, R>,
    f: (outcome: CallOutcome) => Effect.Effect<void, never, R2>
  ): Stream.Stream<A, E, R | R2>
} = dual(2, <A, E, R, R2>(
  self: Stream.Stream<A, E, R>,
  f: (outcome: CallOutcome) => Effect.Effect<void, never, R2>
): Stream.Stream<A, E, R | R2> =>
  Stream.unwrap(
    Effect.map(
      Effect.zip(Effect.serviceOption(Journal.Journal), Effect.context<R2>()),
      ([theirs, context]) =>
        Stream.provideService(
          self,
          Journal.Journal,
          Outcomes.reporting((outcome) => Effect.provide(f(outcome), context), Option.getOrUndefined(theirs))
        )
    )
  ))
