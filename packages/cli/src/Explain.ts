/**
 * `rein explain rec.jsonl`: the readable timeline of each recorded request — every decision, why the
 * chosen attempt was allowed, why each other candidate was not (the failing predicate with its numbers),
 * the waits and their reasons, each attempt's result, and the outcome.
 *
 * @since 0.1.0
 */
import { Args, Command } from "@effect/cli"
import type { FileSystem } from "@effect/platform"
import { Journal } from "@rein/core"
import { Console, Effect } from "effect"
import * as ExitCode from "./ExitCode.js"
import type { InputError } from "./InputError.js"
import { json } from "./internal/format.js"
import * as Shared from "./internal/options.js"
import { readRecords } from "./internal/records.js"
import type { ExitStatus } from "./internal/status.js"
import { exitWith } from "./internal/status.js"

/**
 * Explains records: `text` for people (requests separated by a blank line), `json` for tools.
 *
 * @example
 * ```ts
 * import type { Journal } from "@rein/core"
 * import { Explain } from "@rein/cli"
 *
 * declare const records: ReadonlyArray<Journal.JournalRecord>
 * console.log(Explain.explain(records).text)
 * ```
 * @since 0.1.0
 * @category running
 */
export const explain = (
  records: ReadonlyArray<Journal.JournalRecord>
): { readonly text: string; readonly json: ReadonlyArray<Journal.Explanation> } => {
  const explained = records.map((r) => Journal.explain(r))
  return { text: explained.map((e) => e.text).join("\n\n"), json: explained.map((e) => e.json) }
}

/**
 * The `rein explain` command.
 *
 * @example
 * ```ts
 * import { Explain } from "@rein/cli"
 *
 * Explain.command // rein explain rec.jsonl [--json]
 * ```
 * @since 0.1.0
 * @category commands
 */
export const command = Command.make(
  "explain",
  {
    record: Args.text({ name: "record" }).pipe(Args.withDescription("A journal (JSONL) written by rein run --record")),
    json: Shared.json
  },
  (o): Effect.Effect<void, InputError, FileSystem.FileSystem | ExitStatus> =>
    Effect.gen(function*() {
      const e = explain(yield* readRecords(o.record))
      yield* Console.log(o.json ? json(e.json) : e.text)
      yield* exitWith(ExitCode.ok)
    })
).pipe(Command.withDescription("Print the readable timeline of a recorded journal"))
