/**
 * Options shared by several commands, with their help text.
 *
 * @internal
 */
import { Options } from "@effect/cli"
import { Effect, Option } from "effect"
import { InputError } from "../InputError.js"

/** `--json`: machine-readable output on stdout. @internal */
export const json = Options.boolean("json").pipe(Options.withDescription("Print machine-readable JSON on stdout"))

/** `--catalog FILE`. @internal */
export const catalog = Options.file("catalog").pipe(
  Options.withDescription("The catalog: endpoints, capabilities, pinned prices (JSON)")
)

/** `--contract FILE`. @internal */
export const contract = Options.file("contract").pipe(
  Options.withDescription("The contract: deadline, attempt timeout, budget, retry policy, candidates (JSON)")
)

/** `--scenario FILE` (optional). @internal */
export const scenario = Options.file("scenario").pipe(
  Options.withDescription("A scenario (JSON) scripting the built-in fake endpoints' behaviour over time"),
  Options.optional
)

/** `--base-url URL` (optional). @internal */
export const baseUrl = Options.text("base-url").pipe(
  Options.withDescription(
    "Base URL of the endpoints whose provider is \"openai-compatible\" (else REIN_BASE_URL; the key only from REIN_API_KEY)"
  ),
  Options.optional
)

/** `--file-mode MODE` (optional): the permissions of the files the command creates. @internal */
export const fileMode = Options.text("file-mode").pipe(
  Options.withDescription(
    "Octal permissions of a file the command creates, e.g. 640 (default 600; an existing file keeps its own)"
  ),
  Options.optional
)

/** `--file-mode`'s value as a mode: up to four octal digits. @internal */
export const decodeFileMode = (value: Option.Option<string>): Effect.Effect<number | undefined, InputError> => {
  if (Option.isNone(value)) return Effect.succeed(undefined)
  return /^[0-7]{1,4}$/.test(value.value)
    ? Effect.succeed(Number.parseInt(value.value, 8))
    : Effect.fail(
      new InputError({
        message: `--file-mode: Expected octal permissions like 600 or 640, actual ${
          JSON.stringify(value.value.slice(0, 40))
        }`
      })
    )
}
