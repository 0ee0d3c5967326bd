/**
 * The Rein service tag and its shape: the catalog, the providers by name and an optional tokenizer that every
 * execution uses. Declared apart from the `Rein` facade so that the executor can depend on it without an
 * import cycle; `Rein.Rein` is the same tag, and `Rein.layer` provides it.
 *
 * @since 0.1.0
 */
import { Context } from "effect"
import type { Catalog } from "./Catalog.js"
import type { CompletionRequest, Provider } from "./Provider.js"

/**
 * Bounds a prompt's input tokens from above when the caller gives none (a declared tokenizer). Must never
 * under-estimate: hard budgets admit against it. A count that is not a non-negative integer, or a throw,
 * refuses the request (`Refused`, `invalid_request`) before any call.
 *
 * @example
 * ```ts
 * import type { Tokenizer } from "@rein/core/Services"
 *
 * const fourCharsPerToken: Tokenizer = (request) => Math.ceil(request.prompt.length / 4) + 16
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export type Tokenizer = (request: CompletionRequest) => number

/**
 * What Rein executes against: the catalog, the providers by name, and an optional tokenizer.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Rein } from "@rein/core"
 * import type { Services } from "@rein/core/Services"
 *
 * const providerNames = (services: Services) => [...services.providers.keys()]
 * const names = Effect.map(Rein.Rein, providerNames)
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export interface Services {
  readonly catalog: Catalog
  readonly providers: ReadonlyMap<string, Provider>
  readonly tokenizer?: Tokenizer | undefined
}

/**
 * The Rein service tag (also `Rein.Rein`).
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Rein } from "@rein/core/Services"
 *
 * const endpointIds = Effect.map(Rein, (rein) => rein.catalog.endpoints.map((e) => e.id))
 * ```
 *
 * @category tags
 * @since 0.1.0
 */
export class Rein extends Context.Tag("@rein/core/Rein")<Rein, Services>() {}
