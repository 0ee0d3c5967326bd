/**
 * Bad input at the edge of the command: a missing or unreadable file, invalid JSON, a schema violation
 * (with the path and the field), an unreadable record, a bad flag value. The command prints its message on
 * stderr — one or a few lines, never a stack trace — and exits with `ExitCode.usage`.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"

/**
 * A bad input, with a message meant for a person (it names the file and the field).
 *
 * @example
 * ```ts
 * import { InputError } from "@rein/cli"
 *
 * new InputError.InputError({ message: "examples/contract.json: deadline: Expected a positive finite duration" })
 * ```
 * @since 0.1.0
 * @category errors
 */
export class InputError extends Schema.TaggedError<InputError>()("InputError", {
  message: Schema.String
}) {}
