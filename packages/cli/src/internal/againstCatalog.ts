/**
 * What a command reads beside the catalog, checked against it before anything runs: a scenario's scripted
 * endpoints and price changes, a guardrail's capacity. An id the catalog lacks would otherwise be ignored
 * silently (a typo scripts or limits nothing), and a price change must keep its endpoint's worst case for one
 * call a finite cost, as `Catalog.decode` does for the catalog's own prices. Also the catalog as a scenario's
 * price changes leave it at a moment.
 *
 * @internal
 */
import { Catalog, Input } from "@rein/core"
import { Effect } from "effect"
import { InputError } from "../InputError.js"
import * as Scenario from "../Scenario.js"
import { readDecoded } from "./files.js"

/** The catalog at `atMillis`: each endpoint's prices as the changes made by then left them. @internal */
export const repriced = (catalog: Catalog.Catalog, scenario: Scenario.Scenario, atMillis: number): Catalog.Catalog => {
  const endpoints = catalog.endpoints.map((e) => {
    let prices = e.prices
    for (const change of scenario.prices) {
      if (change.endpoint === e.id && change.at <= atMillis) {
        prices = new Catalog.Prices({
          inputTokens: change.inputTokens ?? prices.inputTokens,
          outputTokens: change.outputTokens ?? prices.outputTokens,
          request: change.request ?? prices.request
        })
      }
    }
    return prices === e.prices ? e : new Catalog.Endpoint({ ...e, prices })
  })
  return { endpoints, byId: new Map(endpoints.map((e) => [e.id, e])) }
}

/**
 * Fails with the first price change (in the file's order) that names an endpoint the catalog lacks, or that
 * leaves its endpoint's worst case for one call not a finite cost. @internal
 */
export const checkPrices = (
  file: string,
  scenario: Scenario.Scenario,
  catalog: Catalog.Catalog
): Effect.Effect<void, InputError> => {
  for (const [i, change] of scenario.prices.entries()) {
    const endpoint = repriced(catalog, scenario, change.at).byId.get(change.endpoint)
    if (endpoint === undefined) {
      return unknownId(`${file}: prices.${i}.endpoint`, change.endpoint)
    }
    const worst = Catalog.worstCase(endpoint)
    if (!Number.isFinite(worst)) {
      return new InputError({
        message: `${file}: prices.${i}: ${endpoint.id}'s worst case for one call at these prices (contextWindow × ` +
          `inputTokens + maxOutputTokens × outputTokens + request) is ${worst}, not a finite cost`
      })
    }
  }
  return Effect.void
}

const unknownId = (where: string, id: string): InputError =>
  new InputError({ message: `${where}: ${Input.describe(id)} is not in the catalog` })

/**
 * Fails when the scenario scripts an endpoint the catalog lacks, or a price change fails `checkPrices`. @internal
 */
export const checkScenario = (
  file: string,
  scenario: Scenario.Scenario,
  catalog: Catalog.Catalog
): Effect.Effect<void, InputError> => {
  for (const id of Object.keys(scenario.endpoints)) {
    if (!catalog.byId.has(id)) return unknownId(`${file}: endpoints`, id)
  }
  return checkPrices(file, scenario, catalog)
}

/**
 * Fails when a guardrail's `capacity` names an endpoint the catalog lacks, naming the guardrails file (or
 * `guardrails` when the field came from elsewhere). @internal
 */
export const checkCapacity = (
  capacity: Readonly<Record<string, number>> | undefined,
  catalog: Catalog.Catalog,
  file: string | undefined
): Effect.Effect<void, InputError> => {
  for (const id of Object.keys(capacity ?? {})) {
    if (!catalog.byId.has(id)) return unknownId(`${file ?? "guardrails"}: capacity`, id)
  }
  return Effect.void
}

/** The scenario file, decoded and checked against the catalog. @internal */
export const readScenario = (file: string, catalog: Catalog.Catalog) =>
  Effect.tap(readDecoded(file, "scenario", Scenario.decode), (scenario) => checkScenario(file, scenario, catalog))

/** `readScenario` of an optional `--scenario` (`undefined`: none given). @internal */
export const loadScenario = (file: string | undefined, catalog: Catalog.Catalog) =>
  file === undefined ? Effect.succeed(undefined) : readScenario(file, catalog)
