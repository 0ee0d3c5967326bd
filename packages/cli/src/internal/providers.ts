/**
 * Which provider runs each catalog endpoint: a registry from provider name to constructor. A new provider
 * is one entry here. Convention (documented in the README and `--help`):
 *
 * - provider `openai-compatible`: the OpenAI-compatible HTTP adapter of `@rein/providers`. Its base URL
 *   comes from `--base-url` or the `REIN_BASE_URL` environment variable; its API key only from the
 *   `REIN_API_KEY` environment variable (never a flag, held as `Redacted`, never printed or recorded).
 * - any other provider name: the built-in fake, scripted by a scenario's endpoint behaviour (or answering
 *   at once without one). A fake is simulated: the contract must say `allowSimulated: true`.
 *
 * @internal
 */
import type { Catalog, Provider } from "@rein/core"
import type { Option, Scope } from "effect"
import { Effect } from "effect"
import type { InputError } from "../InputError.js"
import type { Scenario } from "../Scenario.js"
import { scripted } from "./fake.js"

/** What a constructor is given: the command's scenario, its start, the `--base-url` flag. @internal */
export interface Context {
  readonly scenario: Scenario | undefined
  readonly originMillis: number
  readonly baseUrl: Option.Option<string>
}

/** One registered provider. @internal */
export interface Entry {
  /** Whether its answers are simulated (`plan` labels the endpoint so without constructing it). */
  readonly simulated: boolean
  /** Builds the provider for the command's scope; bad configuration is bad input. */
  readonly make: (name: string, context: Context) => Effect.Effect<Provider.Provider, InputError, Scope.Scope>
}

/** The entry of every provider name the registry does not list: the scripted fake. @internal */
export const fake: Entry = {
  simulated: true,
  make: (_name, context) => Effect.succeed(scripted(context.scenario, context.originMillis))
}

/** The registry: provider name → constructor. @internal */
export const registry: ReadonlyMap<string, Entry> = new Map<string, Entry>([
  ["openai-compatible", {
    simulated: false,
    // Loaded only when needed: the HTTP stack costs start-up that fake runs should not pay.
    make: (name, context) =>
      Effect.flatMap(Effect.promise(() => import("./real.js")), (m) => m.real(name, context.baseUrl))
  }]
])

/** The entry that runs a provider name. @internal */
export const entryFor = (name: string): Entry => registry.get(name) ?? fake

const placeholder = (simulated: boolean): Provider.Provider => ({
  internalMaxAttempts: 1,
  simulated,
  call: () => Effect.dieMessage("rein plan never calls a provider")
})

const names = (
  catalog: Catalog.Catalog
): ReadonlyArray<string> => [...new Set(catalog.endpoints.map((e) => e.provider))]

/** Providers for planning only: present, labelled as they would run, never called. @internal */
export const forPlanning = (catalog: Catalog.Catalog): ReadonlyMap<string, Provider.Provider> =>
  new Map(names(catalog).map((name) => [name, placeholder(entryFor(name).simulated)]))

/**
 * Providers for calls: each provider name of the catalog built by its registry entry, once.
 *
 * @internal
 */
export const forCalls = (
  catalog: Catalog.Catalog,
  context: Context
): Effect.Effect<ReadonlyMap<string, Provider.Provider>, InputError, Scope.Scope> =>
  Effect.map(
    Effect.forEach(names(catalog), (name) => Effect.map(entryFor(name).make(name, context), (p) => [name, p] as const)),
    (entries) => new Map(entries)
  )
