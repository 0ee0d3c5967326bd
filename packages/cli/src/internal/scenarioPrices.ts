/**
 * A scenario's price changes over a catalog: the catalog as it stands at a moment (each endpoint's prices
 * re-pinned by the changes made by then), and the check that every change names an endpoint of the catalog and
 * keeps its worst case for one call a finite cost, as `Catalog.decode` does for the catalog's own prices.
 *
 * @internal
 */
import { Catalog, Input } from "@rein/core"
import { Effect } from "effect"
import { InputError } from "../InputError.js"
import type * as Scenario from "../Scenario.js"

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
      return new InputError({
        message: `${file}: prices.${i}.endpoint: ${Input.describe(change.endpoint)} is not in the catalog`
      })
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
