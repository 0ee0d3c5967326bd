/**
 * Decoding at the edge: one helper that turns a Schema parse error into a message naming each field.
 *
 * @internal
 */
import { Either, ParseResult, Schema } from "effect"

/**
 * Formats a parse error as lines of `path: message`, e.g. `deadline: Expected a positive finite duration…`.
 *
 * @internal
 */
export const formatParseError = (error: ParseResult.ParseError): string =>
  ParseResult.ArrayFormatter.formatErrorSync(error)
    // An optional field's union with `undefined` adds a second, useless line ("Expected undefined").
    .filter((issue) => !issue.message.startsWith("Expected undefined, actual"))
    .map((issue) =>
      issue.path.length === 0 ? issue.message : `${issue.path.map((p) => String(p)).join(".")}: ${issue.message}`
    )
    .join("\n")

/** @internal */
export const decodeWith = <A, I>(schema: Schema.Schema<A, I>) => {
  const decode = Schema.decodeUnknownEither(schema, { errors: "all", onExcessProperty: "error" })
  return (input: unknown): Either.Either<A, string> => Either.mapLeft(decode(input), formatParseError)
}
