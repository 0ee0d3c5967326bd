/**
 * The outcome of each Rein request a stream makes, handed to the caller when the request ends. It rides on
 * Rein's journal hooks (a `Journal` in the stream's context, which the executor opens for every request it
 * runs there): the writer keeps the attempt records as they are made and reports at its `end`, which the
 * executor calls once per request however it ends (completed, failed, interrupted, the consumer stopped
 * early: the streaming executor's finalizer ends it). A journal the caller had in that context still gets
 * every record.
 *
 * @internal
 */
import { Journal } from "@rein/core"
import type { Outcome, Usage } from "@rein/core"
import { Effect } from "effect"

/** A request that answered: where, what it used and cost, and its attempts (no text). @internal */
export interface Completed {
  readonly _tag: "Completed"
  readonly requestId: string
  readonly endpoint: string
  readonly usage: Usage.Usage
  readonly cost: number | "unknown"
  readonly finishReason: Outcome.FinishReason | undefined
  readonly simulated: boolean
  readonly attempts: ReadonlyArray<Outcome.AttemptRecord>
}

/** A request that ended without an answer or a terminal outcome: interrupted, or a defect. @internal */
export interface Stopped {
  readonly _tag: "Interrupted" | "Defect"
  readonly requestId: string
  readonly attempts: ReadonlyArray<Outcome.AttemptRecord>
}

/** How one request ended. @internal */
export type CallOutcome = Completed | Outcome.Terminal | Stopped

type Ending = Parameters<Journal.Writer["end"]>[0]

const outcomeOf = (requestId: string, ending: Ending, attempts: ReadonlyArray<Outcome.AttemptRecord>): CallOutcome => {
  if (!("_tag" in ending)) {
    return {
      _tag: "Completed",
      requestId,
      endpoint: ending.endpoint,
      usage: ending.usage,
      cost: ending.cost,
      finishReason: ending.finishReason,
      simulated: ending.simulated,
      attempts: ending.attempts
    }
  }
  switch (ending._tag) {
    case "Interrupted":
    case "Defect":
      return { _tag: ending._tag, requestId, attempts: [...attempts] }
    default:
      return ending
  }
}

/** Keeps one request's attempt records and reports its outcome at `end`. */
class Reporting implements Journal.Writer {
  private readonly attempts: Array<Outcome.AttemptRecord> = []
  constructor(
    private readonly requestId: string,
    private readonly report: (outcome: CallOutcome) => Effect.Effect<void>
  ) {}
  decision(): void {}
  attempt(record: Outcome.AttemptRecord): void {
    this.attempts.push(record)
  }
  // Read when it runs, not when it is built: the streaming executor builds the end of an interrupted stream
  // before it records the attempt that was running.
  end(ending: Ending): Effect.Effect<void> {
    return Effect.suspend(() => this.report(outcomeOf(this.requestId, ending, this.attempts)))
  }
}

/** Both writers: the caller's journal's, then the report (which runs even if the journal's end dies). */
const both = (theirs: Journal.Writer, mine: Journal.Writer): Journal.Writer => ({
  decision: (snapshot, decision) => theirs.decision(snapshot, decision),
  attempt: (record) => {
    theirs.attempt(record)
    mine.attempt(record)
  },
  end: (ending) => Effect.ensuring(Effect.suspend(() => theirs.end(ending)), mine.end(ending))
})

/** A journal that reports each request's outcome, and hands every record to `theirs` too, if given. @internal */
export const reporting = (
  report: (outcome: CallOutcome) => Effect.Effect<void>,
  theirs: Journal.Service | undefined
): Journal.Service => {
  const mine = (header: Journal.Header): Journal.Writer => new Reporting(header.requestId, report)
  if (theirs === undefined) return { begin: (header) => Effect.sync(() => mine(header)), unsafeBegin: mine }
  const unsafeBegin = theirs.unsafeBegin
  return {
    begin: (header) => Effect.map(theirs.begin(header), (writer) => both(writer, mine(header))),
    unsafeBegin: unsafeBegin === undefined ? undefined : (header) => both(unsafeBegin(header), mine(header))
  }
}
