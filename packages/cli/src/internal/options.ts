/**
 * Options shared by several commands, with their help text.
 *
 * @internal
 */
import { Options } from "@effect/cli"

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
