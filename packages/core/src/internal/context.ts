/**
 * The Rein service tag, apart from the facade so the executor can depend on it without a cycle.
 *
 * @internal
 */
import { Context } from "effect"
import type { Catalog } from "../Catalog.js"
import type { CompletionRequest, Provider } from "../Provider.js"

/** @internal */
export type Tokenizer = (request: CompletionRequest) => number

/** @internal */
export interface Service {
  readonly catalog: Catalog
  readonly providers: ReadonlyMap<string, Provider>
  readonly tokenizer?: Tokenizer | undefined
}

/** @internal */
export type Services = Service

/** @internal */
export class Rein extends Context.Tag("@rein/core/Rein")<Rein, Service>() {}
