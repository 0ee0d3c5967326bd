/**
 * An adapter's options that do not decode, as a `ProviderConfigError` worded as every other config error of
 * Rein (`Input.formatParseError`: one line per bad field, `maxResponseBytes: Expected …, actual -1`), its
 * `field` the path of the first bad one.
 *
 * @internal
 */
import { formatParseError } from "@rein/core/Input"
import { ParseResult } from "effect"
import { ProviderConfigError } from "../Transport.js"

/** @internal */
export const configError = (adapter: string, error: ParseResult.ParseError): ProviderConfigError => {
  const first = ParseResult.ArrayFormatter.formatErrorSync(error)[0]
  const field = first === undefined || first.path.length === 0 ? "options" : first.path.map(String).join(".")
  return new ProviderConfigError({ field, message: `${adapter}: ${formatParseError(error)}` })
}
