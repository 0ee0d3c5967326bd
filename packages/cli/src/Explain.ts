/**
 * `rein explain rec.jsonl`: the readable timeline of each recorded request — every decision, why the
 * chosen attempt was allowed, why each other candidate was not (the failing predicate with its numbers),
 * the waits and their reasons, each attempt's result, and the outcome.
 *
 * @since 0.1.0
 */
import { Args, Command, Options } from "@effect/cli"
import type { FileSystem } from "@effect/platform"
import { Journal } from "@rein/core"
import { Chunk, Console, Effect, Option, Stream } from "effect"
import * as ExitCode from "./ExitCode.js"
import { InputError } from "./InputError.js"
import { json } from "./internal/format.js"
import * as Shared from "./internal/options.js"
import { printable } from "./internal/printable.js"
import { noRecords, streamRecords } from "./internal/records.js"
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

/** An element of the JSON array `json` prints (`JSON.stringify(…, null, 2)`): indented one level. */
const element = (e: Journal.Explanation): string => `  ${json(e).replace(/\n/g, "\n  ")}`

/**
 * Prints the explanations of a journal's records as they are read, in the bytes `explain` gives (text
 * joined by blank lines; JSON as `json` prints the array), holding one record at a time (and in JSON one
 * element, printed once the next one says whether a comma follows). The number of records printed.
 */
const printStreamed = (
  path: string,
  asJson: boolean,
  requests: ReadonlyArray<string> = []
): Effect.Effect<number, InputError, FileSystem.FileSystem> =>
  Effect.suspend(() => {
    let printed = 0
    let pending: string | undefined // JSON: the last element, not printed yet
    const lines = (e: ReturnType<typeof Journal.explain>): string => {
      printed += 1
      // A journal is a file anyone may hand over: its ids and codes shown with every control escaped.
      if (!asJson) return printed === 1 ? printable(e.text, true) : `\n${printable(e.text, true)}`
      const before = pending === undefined ? "[" : `${pending},`
      pending = element(e.json)
      return before
    }
    const wanted = new Set(requests)
    const records = wanted.size === 0 ? streamRecords(path) : Stream.filter(
      streamRecords(path),
      (record) => wanted.has(record.requestId)
    )
    return records.pipe(
      Stream.map((record) => Journal.explain(record)),
      Stream.runForEachChunk((chunk) =>
        Chunk.isEmpty(chunk) ? Effect.void : Console.log(Chunk.join(Chunk.map(chunk, lines), "\n"))
      ),
      // The array is closed whatever ends the stream (its end, a bad line, an interrupt): stdout stays one
      // JSON value (the records before a bad line; nothing when the first line is bad), the error on stderr.
      Effect.ensuring(Effect.suspend(() => pending === undefined ? Effect.void : Console.log(`${pending}\n]`))),
      Effect.map(() => printed)
    )
  })

/**
 * The `rein explain` command. Records are explained and printed as they are read, so a journal of any size
 * is explained in the memory of one record; a bad line ends it with exit 2, after the records before it were
 * printed (with `--json`, as a closed array: stdout is valid JSON, the error naming the line on stderr).
 *
 * @example
 * ```ts
 * import { Explain } from "@rein/cli"
 *
 * Explain.command // rein explain rec.jsonl [--request ID]… [--json]
 * ```
 * @since 0.1.0
 * @category commands
 */
export const command = Command.make(
  "explain",
  {
    record: Args.text({ name: "record" }).pipe(
      Args.withDescription("A journal (JSONL) written by rein run --record or rein batch --record")
    ),
    request: Options.text("request").pipe(
      Options.withPseudoName("ID"),
      Options.withDescription(
        "Explain only this request (repeatable): a batch item's id, the caller's request id, or the req-… id " +
          "rein run --record names"
      ),
      Options.repeated,
      // Shown as optional in the usage line (`[--request ID...]`): none explains every request.
      Options.optional
    ),
    json: Shared.json
  },
  (o): Effect.Effect<void, InputError, FileSystem.FileSystem | ExitStatus> =>
    Effect.gen(function*() {
      const requests = Option.getOrElse(o.request, (): ReadonlyArray<string> => [])
      const printed = yield* printStreamed(o.record, o.json, requests)
      if (printed === 0 && requests.length > 0) {
        return yield* new InputError({
          message: `${o.record}: no record of request ${requests.map((id) => JSON.stringify(id)).join(", ")}`
        })
      }
      if (printed === 0) return yield* noRecords(o.record)
      yield* exitWith(ExitCode.ok)
    })
).pipe(Command.withDescription("Print the readable timeline of a recorded journal"))
