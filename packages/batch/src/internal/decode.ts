/**
 * Decoding at the edge: parse errors as `path: message` lines, the way core reports them.
 *
 * @internal
 */
import { ParseResult } from "effect"

/** @internal */
export const formatParseError = (error: ParseResult.ParseError): string =>
  ParseResult.ArrayFormatter.formatErrorSync(error)
    .map((issue) =>
      issue.path.length === 0 ? issue.message : `${issue.path.map((p) => String(p)).join(".")}: ${issue.message}`
    )
    .join("\n")
