/**
 * The entry point. `Rein.layer` wires a catalog and the providers (by name); `Rein.execute` runs one
 * request under one contract: one deadline, one budget, one attempt policy, every attempt recorded.
 *
 * @since 0.1.0
 */
import type { Effect, Stream } from "effect"
import { Layer } from "effect"
import type { Catalog } from "./Catalog.js"
import type { Contract } from "./Contract.js"
import * as Execute from "./Execute.js"
import * as Health from "./Health.js"
import * as Internal from "./internal/context.js"
import type { Completion, Terminal } from "./Outcome.js"
import type { CompletionRequest, Provider } from "./Provider.js"
import * as Streaming from "./Streaming.js"

/**
 * Bounds a prompt's input tokens from above when the caller gives none (a declared tokenizer). Must never
 * under-estimate: hard budgets admit against it. A count that is not a non-negative integer (NaN, negative, a
 * fraction), or a throw, refuses the request (`Refused`, `invalid_request`) before any call.
 *
 * @category models
 * @since 0.1.0
 */
export type Tokenizer = Internal.Tokenizer

/**
 * The Rein service: what Rein executes against — the catalog, the providers by name, and an optional
 * tokenizer.
 *
 * @example
 * ```ts
 * import type { Rein } from "@rein/core"
 *
 * const endpoints = (rein: Rein.Service) => rein.catalog.endpoints.length
 * ```
 * @category services
 * @since 0.1.0
 */
export type Service = Internal.Service

/**
 * The former name of `Service`.
 *
 * @category services
 * @since 0.1.0
 */
export type Services = Internal.Services

/**
 * The Rein service: the catalog and providers every execution uses. Provide it with `Rein.layer`.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Rein } from "@rein/core"
 *
 * const endpointIds = Effect.map(Rein.Rein, (rein) => rein.catalog.endpoints.map((e) => e.id))
 * ```
 * @category services
 * @since 0.1.0
 */
export const Rein = Internal.Rein

/**
 * The Rein service tag's type.
 *
 * @category services
 * @since 0.1.0
 */
export type Rein = Internal.Rein

/** What `Rein.layer` takes. */
interface LayerOptions {
  readonly catalog: Catalog
  readonly providers: Readonly<Record<string, Provider>> | ReadonlyMap<string, Provider>
  readonly tokenizer?: Tokenizer | undefined
  /** Breaker and retry-budget settings for the process-wide `Health` (`false`: no health checks). */
  readonly health?: Partial<Health.Config> | false | undefined
}

/**
 * Builds the Rein layer from a catalog and providers keyed by the catalog's `provider` names. Health settings are
 * decoded at the edge: a bad one fails the layer with `Health.ConfigError` naming the field.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Catalog, Contract, Fake, Rein } from "@rein/core"
 *
 * const catalog = Catalog.make({ endpoints: [{
 *   id: "fake/a", provider: "fake", model: "a",
 *   capabilities: { contextWindow: 8000, maxOutputTokens: 1000 },
 *   prices: { inputTokens: 1e-6, outputTokens: 2e-6 }
 * }] })
 * const contract = Contract.make({ deadline: "10 seconds", candidates: ["fake/a"], allowSimulated: true })
 * const fake = Fake.make({ "fake/a": [Fake.succeed({ text: "hi" })] })
 *
 * const program = Rein.execute({ prompt: "hello", inputTokens: 10 }, contract).pipe(
 *   Effect.provide(Rein.layer({ catalog, providers: { fake: fake.provider } }))
 * )
 * ```
 * @category layers
 * @since 0.1.0
 */
export function layer(
  options: LayerOptions & { readonly health?: false | undefined }
): Layer.Layer<Rein | Health.Health>
export function layer(options: LayerOptions): Layer.Layer<Rein | Health.Health, Health.ConfigError>
export function layer(options: LayerOptions): Layer.Layer<Rein | Health.Health, Health.ConfigError> {
  const services = Layer.succeed(Rein, {
    catalog: options.catalog,
    providers: options.providers instanceof Map
      ? options.providers as ReadonlyMap<string, Provider>
      : new Map(Object.entries(options.providers as Readonly<Record<string, Provider>>)),
    tokenizer: options.tokenizer
  })
  if (options.health === false) return services as Layer.Layer<Rein | Health.Health>
  // Decoded at the edge (by `Health.layer`): a bad setting fails the layer with a typed error naming the field.
  return Layer.merge(services, Health.layer(options.health ?? {}))
}

/**
 * Executes one request under a contract.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Contract, Rein } from "@rein/core"
 *
 * declare const contract: Contract.Contract
 * const answer = Rein.execute({ prompt: "Summarise …", inputTokens: 900, maxOutputTokens: 400 }, contract).pipe(
 *   Effect.catchTag("DeadlineExceeded", (e) => Effect.succeed(`timed out in ${e.phase}`))
 * )
 * ```
 * @category execution
 * @since 0.1.0
 */
export const execute: (
  request: CompletionRequest,
  contract: Contract
) => Effect.Effect<Completion, Terminal, Rein> = Execute.execute

/**
 * Executes one request as a stream: retries and fallbacks only before the first delta, then committed.
 *
 * @example
 * ```ts
 * import { Effect, Stream } from "effect"
 * import { Contract, Rein } from "@rein/core"
 *
 * declare const contract: Contract.Contract
 * const deltas = Rein.executeStream({ prompt: "Tell me a story", inputTokens: 20 }, contract).pipe(
 *   Stream.runForEach((event) => Effect.log(event._tag === "Delta" ? event.text : "completed"))
 * )
 * ```
 * @category execution
 * @since 0.1.0
 */
export const executeStream: (
  request: CompletionRequest,
  contract: Contract
) => Stream.Stream<Streaming.Event, Terminal, Rein> = Streaming.executeStream
