/**
 * `rein replay rec.jsonl`: re-runs the pure planner over every recorded snapshot and compares each
 * decision with the recorded one, byte for byte (canonical JSON), after checking that each record's spec
 * derives from its contract and that its snapshots fit that contract. Exit 0 when all reproduce; otherwise
 * the first difference — request, decision number, field, recorded and replayed values — and exit 3.
 *
 * @since 0.1.0
 */
import { Args, Command } from "@effect/cli"
import type { FileSystem } from "@effect/platform"
import { Journal } from "@rein/core"
import { Console, Effect, Either, Stream } from "effect"
import * as ExitCode from "./ExitCode.js"
import type { InputError } from "./InputError.js"
import { json } from "./internal/format.js"
import * as Shared from "./internal/options.js"
import { printable } from "./internal/printable.js"
import { noRecords, streamRecords } from "./internal/records.js"
import type { ExitStatus } from "./internal/status.js"
import { exitWith } from "./internal/status.js"

/**
 * What `rein replay` reports.
 *
 * @example
 * ```ts
 * import { Replay } from "@rein/cli"
 *
 * const ok: Replay.ReplayReport = { ok: true, requests: 1, decisions: 3 }
 * ```
 * @since 0.1.0
 * @category models
 */
export type ReplayReport =
  | { readonly ok: true; readonly requests: number; readonly decisions: number }
  | {
    readonly ok: false
    readonly requests: number
    /** 1-based index of the record (line order) holding the first difference. */
    readonly record: number
    readonly requestId: string
    /** 1-based; 0: the record's spec does not derive from its contract (`field` names the contract field). */
    readonly decision: number
    readonly field: string
    readonly recorded: string
    readonly replayed: string
  }

/**
 * Replays records; stops at the first difference.
 *
 * @example
 * ```ts
 * import type { Journal } from "@rein/core"
 * import { Replay } from "@rein/cli"
 *
 * declare const records: ReadonlyArray<Journal.JournalRecord>
 * const report = Replay.replay(records) // { ok: true, requests: 1, decisions: 3 }
 * ```
 * @since 0.1.0
 * @category running
 */
export const replay = (records: ReadonlyArray<Journal.JournalRecord>): ReplayReport => {
  let decisions = 0
  for (const [i, record] of records.entries()) {
    const result = Journal.replay(record)
    if (Either.isLeft(result)) return mismatch(result.left, records.length, i + 1)
    decisions += result.right
  }
  return { ok: true, requests: records.length, decisions }
}

const mismatch = (m: Journal.ReplayMismatch, requests: number, record: number): ReplayReport => ({
  ok: false,
  requests,
  record,
  requestId: m.requestId,
  decision: m.decision,
  field: m.field,
  recorded: m.recorded,
  replayed: m.replayed
})

/**
 * Replays a journal file as `replay` does its records, reading it as a stream: memory holds one record at a
 * time. After the first difference the rest is still read (and must be records) to count the requests.
 */
const replayFile = (path: string): Effect.Effect<ReplayReport, InputError, FileSystem.FileSystem> =>
  streamRecords(path).pipe(
    Stream.runFold(
      { requests: 0, decisions: 0, first: undefined as Journal.ReplayMismatch | undefined, at: 0 },
      (s, record) => {
        const requests = s.requests + 1
        if (s.first !== undefined) return { ...s, requests }
        const result = Journal.replay(record)
        return Either.isLeft(result)
          ? { ...s, requests, first: result.left, at: requests }
          : { ...s, requests, decisions: s.decisions + result.right }
      }
    ),
    Effect.flatMap((s) =>
      s.requests === 0
        ? Effect.fail(noRecords(path))
        : Effect.succeed(
          s.first === undefined
            ? { ok: true, requests: s.requests, decisions: s.decisions } as const
            : mismatch(s.first, s.requests, s.at)
        )
    )
  )

/**
 * Renders a replay for people.
 *
 * @example
 * ```ts
 * import { Replay } from "@rein/cli"
 *
 * Replay.render({ ok: true, requests: 1, decisions: 3 })
 * // "replayed 3 decisions of 1 request: every decision reproduces byte for byte"
 * ```
 * @since 0.1.0
 * @category rendering
 */
export const render = (r: ReplayReport): string =>
  r.ok
    ? `replayed ${r.decisions} decision${r.decisions === 1 ? "" : "s"} of ${r.requests} request${
      r.requests === 1 ? "" : "s"
    }: every decision reproduces byte for byte`
    : [
      r.decision === 0
        ? `replay mismatch in record ${r.record} (request ${r.requestId}): its spec is not what its contract gives, field ${r.field}:`
        : `replay mismatch in record ${r.record} (request ${r.requestId}), decision ${r.decision}, field ${r.field}:`,
      `  recorded: ${r.recorded}`,
      `  replayed: ${r.replayed}`
      // The journal is a file anyone may hand over: its ids and values shown with every control escaped.
    ].map((line) => printable(line)).join("\n")

/**
 * The `rein replay` command.
 *
 * @example
 * ```ts
 * import { Replay } from "@rein/cli"
 *
 * Replay.command // rein replay rec.jsonl [--json]
 * ```
 * @since 0.1.0
 * @category commands
 */
export const command = Command.make(
  "replay",
  {
    record: Args.text({ name: "record" }).pipe(
      Args.withDescription("A journal (JSONL) written by rein run --record or rein batch --record")
    ),
    json: Shared.json
  },
  (o): Effect.Effect<void, InputError, FileSystem.FileSystem | ExitStatus> =>
    Effect.gen(function*() {
      const r = yield* replayFile(o.record)
      if (r.ok) yield* Console.log(o.json ? json(r) : render(r))
      else if (o.json) yield* Console.log(json(r))
      else yield* Console.error(render(r))
      yield* exitWith(r.ok ? ExitCode.ok : ExitCode.mismatch)
    })
).pipe(Command.withDescription("Re-run the planner over a recorded journal; exit 3 at the first decision that differs"))
