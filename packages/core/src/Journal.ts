/**
 * The journal: every decision with the exact inputs the planner consumed, so that afterwards a person can
 * say why each attempt was made — and prove it. `replay` re-runs the pure planner over the recorded
 * inputs and compares every decision byte for byte (canonical JSON); `explain` renders a timeline a
 * person can read. Provider output and network timing are inputs, never claimed reproducible.
 *
 * A record never holds prompts, provider text or secrets: the contract, the catalog entries consulted
 * (prices pinned as used), the planner's inputs and verdicts, attempt records and the outcome's kind.
 *
 * The format is a versioned Schema; a record of an unknown future version is refused.
 *
 * @since 0.1.0
 */
import type { PlatformError } from "@effect/platform/Error"
import * as FileSystem from "@effect/platform/FileSystem"
import { Chunk, Context, Duration, Effect, Either, Layer, Schema, Stream } from "effect"
import * as Canonical from "./Canonical.js"
import { Endpoint } from "./Catalog.js"
import { Contract } from "./Contract.js"
import { number as num } from "./Format.js"
import { formatParseError, onFirstUse } from "./internal/decode.js"
import { TOO_DEEP, tooDeep } from "./internal/jsonDepth.js"
import * as Lines from "./internal/lines.js"
import * as Derive from "./internal/spec.js"
import * as Outcome from "./Outcome.js"
import * as Planner from "./Planner.js"
import { Usage } from "./Usage.js"

/**
 * The journal format version this build writes. It also reads version 1 (before finish reasons, tool
 * calls and the `truncated` failure kind: its table lacks that row, which decodes to the default) and
 * version 2 (before the `Defect` outcome and the attempt record's `invalidUsage`).
 *
 * @category constants
 * @since 0.1.0
 */
export const VERSION = 3

/**
 * The planner's static inputs as a Schema (`Planner.Spec`: defined once, there).
 *
 * @example
 * ```ts
 * import { Journal, Planner } from "@rein/core"
 *
 * Journal.SpecSchema === Planner.Spec // true
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const SpecSchema = Planner.Spec

/**
 * A decision's inputs as a Schema (`Planner.Snapshot`).
 *
 * @example
 * ```ts
 * import { Journal, Planner } from "@rein/core"
 *
 * Journal.SnapshotSchema === Planner.Snapshot // true
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const SnapshotSchema = Planner.Snapshot

/**
 * A decision as a Schema (`Planner.Decision`).
 *
 * @example
 * ```ts
 * import { Journal, Planner } from "@rein/core"
 *
 * Journal.DecisionSchema === Planner.Decision // true
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const DecisionSchema = Planner.Decision

/**
 * How the request ended, without the answer's text.
 *
 * @category schemas
 * @since 0.1.0
 */
export const RecordedOutcome = Schema.Union(
  Schema.Struct({
    _tag: Schema.Literal("Completion"),
    endpoint: Schema.String,
    usage: Usage,
    cost: Schema.Union(Schema.Number, Schema.Literal("unknown")),
    simulated: Schema.Boolean,
    finishReason: Schema.optional(Outcome.FinishReason)
  }),
  Schema.Struct({
    _tag: Schema.Literal("DeadlineExceeded", "BudgetExhausted", "PlanExhausted", "FailedSafe", "Refused", "Halted"),
    reason: Schema.String,
    detail: Schema.NullOr(Schema.String),
    cause: Schema.NullOr(Outcome.Cause)
  }),
  Schema.Struct({ _tag: Schema.Literal("Interrupted") }),
  /** A defect (a bug in Rein or in a service it called), not an interruption: no message is kept. */
  Schema.Struct({ _tag: Schema.Literal("Defect") })
)

/**
 * One request's journal record.
 *
 * @example
 * ```ts
 * import { Journal } from "@rein/core"
 *
 * declare const line: string
 * const record = Journal.decodeLine(line) // Either<Journal.JournalRecord, Journal.JournalError>
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const JournalRecord = Schema.Struct({
  version: Schema.Literal(1, 2, VERSION),
  requestId: Schema.String,
  contract: Schema.encodedSchema(Contract),
  endpoints: Schema.Array(Schema.encodedSchema(Endpoint)),
  spec: SpecSchema,
  decisions: Schema.Array(Schema.Struct({ snapshot: SnapshotSchema, decision: DecisionSchema })),
  attempts: Schema.Array(Outcome.AttemptRecord),
  outcome: RecordedOutcome
})

/**
 * @category models
 * @since 0.1.0
 */
export type JournalRecord = typeof JournalRecord.Type

/**
 * A journal that cannot be read: bad JSON, a schema violation (with the path), or a future version.
 *
 * @category errors
 * @since 0.1.0
 */
export class JournalError extends Schema.TaggedError<JournalError>()("JournalError", {
  reason: Schema.Literal("json", "schema", "version", "io", "length"),
  message: Schema.String,
  line: Schema.optional(Schema.Number)
}) {}

/**
 * What a journal learns when a request starts.
 *
 * @category models
 * @since 0.1.0
 */
export interface Header {
  readonly requestId: string
  readonly contract: Contract
  /** The catalog entries consulted, with their prices pinned as used. */
  readonly endpoints: ReadonlyArray<Endpoint>
  readonly spec: Planner.Spec
}

/**
 * Receives one request's decisions as they are made. `decision` and `attempt` are synchronous appends;
 * a record is assembled once, at `end` (or `unsafeEnd`, its synchronous form).
 *
 * @category models
 * @since 0.1.0
 */
export interface Writer {
  readonly decision: (snapshot: Planner.Snapshot, decision: Planner.Decision) => void
  readonly attempt: (record: Outcome.AttemptRecord) => void
  readonly end: (
    outcome: Outcome.Completion | Outcome.Terminal | { readonly _tag: "Interrupted" | "Defect" }
  ) => Effect.Effect<void>
  /**
   * `end`'s work done now, in the caller's step: the record assembled and handed to the sink, whose effect is
   * returned still to run (an `Exit`, such as `Effect.void`, needs no run: the executor then closes the entry
   * without an effect step of its own). Optional: a writer without it is closed through `end`. It may throw;
   * the executor takes a throw as `end`'s defect.
   */
  readonly unsafeEnd?: ((outcome: Parameters<Writer["end"]>[0]) => Effect.Effect<void>) | undefined
}

/**
 * What a journal does: opens one request's writer. A journal kept elsewhere (a file, a database) implements
 * `begin`; the writer's appends stay synchronous and the record is handed over at `end`.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Journal } from "@rein/core"
 *
 * const discard: Journal.Service = Journal.make(() => Effect.void)
 * ```
 * @category services
 * @since 0.1.0
 */
export interface Service {
  readonly begin: (header: Header) => Effect.Effect<Writer>
  /**
   * `begin` as a synchronous step, for a journal whose `begin` needs no effect (`Journal.make`'s): the
   * executor then opens the writer in the step that resolves the request, not in an effect of its own.
   * Optional: a journal without it is opened through `begin`.
   */
  readonly unsafeBegin?: ((header: Header) => Writer) | undefined
}

/**
 * The journal service. Provide one (`Journal.layerMemory`, `Journal.layerJsonl`) and every execution
 * records; without one, nothing is recorded and nothing is paid for.
 *
 * @category services
 * @since 0.1.0
 */
export class Journal extends Context.Tag("@rein/core/Journal")<Journal, Service>() {}

// Parsers compiled on first use: a process that loads the journal but never writes or reads one (the `rein`
// binary's commands) does not compile them.
const encodeContractSync = onFirstUse(() => Schema.encodeSync(Contract))
const encodeEndpointSync = onFirstUse(() => Schema.encodeSync(Endpoint))
const encodedContracts = new WeakMap<Contract, typeof Contract.Encoded>()
const encodedEndpoints = new WeakMap<Endpoint, typeof Endpoint.Encoded>()

// Contracts and catalog entries are immutable and shared by many requests: each is encoded once.
const encodeContract = (contract: Contract): typeof Contract.Encoded => {
  let encoded = encodedContracts.get(contract)
  if (encoded === undefined) encodedContracts.set(contract, encoded = encodeContractSync()(contract))
  return encoded
}
const encodeEndpoint = (endpoint: Endpoint): typeof Endpoint.Encoded => {
  let encoded = encodedEndpoints.get(endpoint)
  if (encoded === undefined) encodedEndpoints.set(endpoint, encoded = encodeEndpointSync()(endpoint))
  return encoded
}

// The executor hands the same (cached) list of consulted entries to every request of one contract and
// request shape: it is encoded once too.
const encodedLists = new WeakMap<ReadonlyArray<Endpoint>, ReadonlyArray<typeof Endpoint.Encoded>>()
const encodeEndpoints = (endpoints: ReadonlyArray<Endpoint>): ReadonlyArray<typeof Endpoint.Encoded> => {
  let encoded = encodedLists.get(endpoints)
  if (encoded === undefined) encodedLists.set(endpoints, encoded = endpoints.map(encodeEndpoint))
  return encoded
}

const recordedOutcome = (
  outcome: Outcome.Completion | Outcome.Terminal | { readonly _tag: "Interrupted" | "Defect" }
): typeof RecordedOutcome.Type => {
  if (!("_tag" in outcome)) {
    return {
      _tag: "Completion",
      endpoint: outcome.endpoint,
      usage: outcome.usage,
      cost: outcome.cost,
      simulated: outcome.simulated,
      ...(outcome.finishReason === undefined ? {} : { finishReason: outcome.finishReason })
    }
  }
  switch (outcome._tag) {
    case "Interrupted":
      return { _tag: "Interrupted" }
    case "Defect":
      return { _tag: "Defect" }
    case "DeadlineExceeded":
      return { _tag: outcome._tag, reason: outcome.reason, detail: outcome.phase, cause: outcome.lastFailure }
    case "BudgetExhausted":
      return { _tag: outcome._tag, reason: outcome.reason, detail: outcome.resource, cause: outcome.lastFailure }
    case "PlanExhausted":
      // Breakers refused the candidates left (Health's refusal): the record says so; its decisions say which.
      return {
        _tag: outcome._tag,
        reason: outcome.reason,
        detail: outcome.breakers === undefined
          ? null
          : outcome.breakers.some((b) => b.state === "open")
          ? "breaker_open"
          : "no_probe_slot",
        cause: outcome.lastFailure
      }
    case "Halted":
      return { _tag: outcome._tag, reason: outcome.reason, detail: null, cause: outcome.lastFailure }
    case "FailedSafe":
      return { _tag: outcome._tag, reason: outcome.reason, detail: null, cause: outcome.lastFailure }
    case "Refused":
      return { _tag: outcome._tag, reason: outcome.reason, detail: outcome.refusal, cause: null }
  }
}

/**
 * Makes a journal that hands each finished record to `sink`. Its writer opens without an effect
 * (`unsafeBegin`) and closes in the request's last step (`unsafeEnd`): a request under it pays for its record,
 * not for opening it, and a sink that returns an `Exit` (`Effect.void`, `Effect.succeed`) is not run as an effect.
 *
 * @example
 * ```ts
 * import { Effect, Layer } from "effect"
 * import { Journal } from "@rein/core"
 *
 * const lines: Array<string> = []
 * const JournalLive = Layer.succeed(
 *   Journal.Journal,
 *   Journal.make((record) => Effect.sync(() => void lines.push(Journal.encode(record))))
 * )
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const make = (sink: (record: JournalRecord) => Effect.Effect<void>): Service => {
  const unsafeBegin = (header: Header): Writer => new Recording(header, sink)
  return { begin: (header) => Effect.sync(() => unsafeBegin(header)), unsafeBegin }
}

/**
 * `make`'s writer: one object per request (not a closure per method). Its lists start at their first entry,
 * sized to it (an empty array's first `push` reserves room for 17; a request makes one decision and one
 * attempt as a rule).
 */
class Recording implements Writer {
  private decisions: Array<{ snapshot: Planner.Snapshot; decision: Planner.Decision }> | undefined = undefined
  private attempts: Array<Outcome.AttemptRecord> | undefined = undefined
  private ended = false
  constructor(
    private readonly header: Header,
    private readonly sink: (record: JournalRecord) => Effect.Effect<void>
  ) {}
  decision(snapshot: Planner.Snapshot, decision: Planner.Decision): void {
    if (this.decisions === undefined) this.decisions = [{ snapshot, decision }]
    else this.decisions.push({ snapshot, decision })
  }
  attempt(record: Outcome.AttemptRecord): void {
    if (this.attempts === undefined) this.attempts = [record]
    else this.attempts.push(record)
  }
  // Lazy: a stream's finalizer builds `finish` then `end`, and the record must see the attempt `finish` appends.
  end(outcome: Parameters<Writer["end"]>[0]): Effect.Effect<void> {
    return Effect.suspend(() => this.unsafeEnd(outcome))
  }
  unsafeEnd(outcome: Parameters<Writer["end"]>[0]): Effect.Effect<void> {
    if (this.ended) return Effect.void
    this.ended = true
    const header = this.header
    return this.sink({
      version: VERSION,
      requestId: header.requestId,
      contract: encodeContract(header.contract),
      endpoints: encodeEndpoints(header.endpoints),
      spec: header.spec,
      decisions: this.decisions ?? [],
      attempts: this.attempts ?? [],
      outcome: recordedOutcome(outcome)
    })
  }
}

/**
 * What the in-memory journal gives to read: the records written so far.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Journal } from "@rein/core"
 *
 * const count = (memory: Journal.MemoryJournalService) => Effect.map(memory.records, (records) => records.length)
 * ```
 *
 * @category services
 * @since 0.1.0
 */
export interface MemoryJournalService {
  readonly records: Effect.Effect<ReadonlyArray<JournalRecord>>
}

/**
 * The in-memory journal's contents.
 *
 * @category services
 * @since 0.1.0
 */
export class MemoryJournal
  extends Context.Tag("@rein/core/Journal/MemoryJournal")<MemoryJournal, MemoryJournalService>()
{}

/**
 * An in-memory journal (records kept for the life of the layer), with `MemoryJournal` to read them. Its sink
 * keeps the record when it is called and returns `Effect.void`: a request closes its entry without an effect
 * step (see `make`). A read is a copy: later records do not change what was read.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Journal } from "@rein/core"
 *
 * const records = Effect.flatMap(Journal.MemoryJournal, (j) => j.records).pipe(Effect.provide(Journal.layerMemory))
 * ```
 * @category layers
 * @since 0.1.0
 */
export const layerMemory: Layer.Layer<Journal | MemoryJournal> = Layer.effectContext(
  Effect.sync(() => {
    const records: Array<JournalRecord> = []
    return Context.make(Journal, make((record) => (records.push(record), Effect.void))).pipe(
      Context.add(MemoryJournal, { records: Effect.sync((): ReadonlyArray<JournalRecord> => records.slice()) })
    )
  })
)

/**
 * Encodes a record as one canonical JSON line (no trailing newline). A record holding a value JSON cannot
 * carry faithfully (a non-finite number) could not be read back, so it throws `Canonical.CanonicalError`,
 * a defect, instead of writing a line that replay would misread.
 *
 * @category encoding
 * @since 0.1.0
 */
export const encode = (record: JournalRecord): string => Canonical.unsafeEncode(record)

const decodeRecord = onFirstUse(() =>
  Schema.decodeUnknownEither(JournalRecord, { errors: "all", onExcessProperty: "error" })
)

/**
 * Decodes one JSONL line, refusing a future version with a clear error.
 *
 * @category decoding
 * @since 0.1.0
 */
export const decodeLine = (line: string, lineNumber?: number): Either.Either<JournalRecord, JournalError> => {
  const at = lineNumber === undefined ? {} : { line: lineNumber }
  let json: unknown
  // Refused unparsed: V8 parses deeply nested arrays at ~50 times their size in memory.
  if (tooDeep(line)) return Either.left(new JournalError({ reason: "json", message: TOO_DEEP, ...at }))
  try {
    json = JSON.parse(line)
  } catch {
    return Either.left(new JournalError({ reason: "json", message: "not valid JSON", ...at }))
  }
  const version = typeof json === "object" && json !== null ? (json as { version?: unknown }).version : undefined
  if (typeof version === "number" && version > VERSION) {
    return Either.left(
      new JournalError({
        reason: "version",
        message: `journal version ${version} is newer than this build reads (${VERSION})`,
        ...at
      })
    )
  }
  return Either.mapLeft(
    decodeRecord()(json),
    (e) => new JournalError({ reason: "schema", message: formatParseError(e), ...at })
  )
}

/**
 * A journal appended to a JSONL file, one request per line, written when the request ends. A new file is
 * created with `mode` (default `0o600`: records hold what the model answered); an existing one keeps its own.
 *
 * @example
 * ```ts
 * import { NodeFileSystem } from "@effect/platform-node"
 * import { Layer } from "effect"
 * import { Journal } from "@rein/core"
 *
 * const JournalLive = Journal.layerJsonl("rec.jsonl").pipe(Layer.provide(NodeFileSystem.layer))
 * ```
 * @category layers
 * @since 0.1.0
 */
export const layerJsonl = (
  path: string,
  options?: { readonly mode?: number | undefined }
): Layer.Layer<Journal, PlatformError, FileSystem.FileSystem> =>
  Layer.scoped(
    Journal,
    Effect.gen(function*() {
      const fs = yield* FileSystem.FileSystem
      const file = yield* fs.open(path, { flag: "a", mode: options?.mode ?? 0o600 })
      const lock = yield* Effect.makeSemaphore(1)
      const encoder = new TextEncoder()
      return make((record) =>
        lock.withPermits(1)(file.writeAll(encoder.encode(`${encode(record)}\n`))).pipe(
          // A journal that cannot be written must not fail the request it records.
          Effect.catchAll((e) => Effect.logWarning("rein: journal append failed", e.message))
        )
      )
    })
  )

/**
 * The longest journal line a reader accepts, in bytes (16 MiB). A record holds no prompt and no provider
 * text: its size is the contract, the catalog entries of its candidates, and one snapshot and decision per
 * attempt (about 0.4 KB per candidate each). `rein run` over the example catalog writes a 5.5 KB record (3
 * candidates, 1 attempt); 16 MiB holds some 400 attempts over 100 candidates, while a file that is not a
 * journal (no newline at all: `/dev/zero`, a binary) is refused after 16 MiB instead of being read whole.
 *
 * @category decoding
 * @since 0.1.0
 */
export const MAX_LINE_BYTES = 16 * 1024 * 1024

/**
 * A complete line of a journal file (without its newline) and its 1-based number.
 *
 * @category models
 * @since 0.1.0
 */
export interface Line {
  readonly text: string
  readonly number: number
}

/**
 * Splits the bytes of a journal (read from `path`, named in errors) into its complete lines: memory holds one
 * line at a time, never the file. A line longer than `maxLineBytes` (default `MAX_LINE_BYTES`) fails with a
 * `JournalError` of reason `"length"` naming the file and the line, as soon as its bytes pass the bound,
 * without reading the rest. A final line without a newline (a write cut short) is not emitted.
 *
 * @example
 * ```ts
 * import { Stream } from "effect"
 * import { Journal } from "@rein/core"
 *
 * const bytes = Stream.make(new TextEncoder().encode("{}\n{}\ntorn"))
 * const lines = Journal.splitLines(bytes, { path: "rec.jsonl" }) // 2 lines: "torn" has no newline
 * ```
 * @category decoding
 * @since 0.1.0
 */
export const splitLines = <E, R>(
  bytes: Stream.Stream<Uint8Array, E, R>,
  options: { readonly path: string; readonly maxLineBytes?: number | undefined }
): Stream.Stream<Line, E | JournalError, R> => {
  const max = options.maxLineBytes ?? MAX_LINE_BYTES
  return Lines.splitLines(bytes, max, (line) =>
    new JournalError({
      reason: "length",
      message: `${options.path}:${line}: line longer than ${max} bytes (not a journal record)`,
      line
    }))
}

/**
 * The complete lines of a journal file, read as a stream (see `splitLines` for the line bound).
 *
 * @example
 * ```ts
 * import { NodeFileSystem } from "@effect/platform-node"
 * import { Effect, Stream } from "effect"
 * import { Journal } from "@rein/core"
 *
 * const count = Journal.streamLines("rec.jsonl").pipe(
 *   Stream.runCount,
 *   Effect.provide(NodeFileSystem.layer)
 * ) // Effect<number, Journal.JournalError>
 * ```
 * @category decoding
 * @since 0.1.0
 */
export const streamLines = (
  path: string,
  options?: { readonly maxLineBytes?: number | undefined }
): Stream.Stream<Line, JournalError, FileSystem.FileSystem> =>
  Stream.unwrap(Effect.map(FileSystem.FileSystem, (fs) =>
    splitLines(
      fs.stream(path).pipe(
        Stream.mapError((e) => new JournalError({ reason: "io", message: `cannot read ${path}: ${e.message}` }))
      ),
      { path, maxLineBytes: options?.maxLineBytes }
    )))

/**
 * The records of a JSONL journal, read as a stream (one line in memory at a time; see `streamLines` for
 * the line bound). Blank lines are skipped; a final line without a newline (a write cut short) is ignored;
 * any other bad line is an error naming its line number.
 *
 * @example
 * ```ts
 * import { NodeFileSystem } from "@effect/platform-node"
 * import { Effect, Stream } from "effect"
 * import { Journal } from "@rein/core"
 *
 * const failed = Journal.streamJsonl("rec.jsonl").pipe(
 *   Stream.filter((record) => record.outcome._tag !== "Completion"),
 *   Stream.runCount,
 *   Effect.provide(NodeFileSystem.layer)
 * )
 * ```
 * @category decoding
 * @since 0.1.0
 */
export const streamJsonl = (
  path: string,
  options?: { readonly maxLineBytes?: number | undefined }
): Stream.Stream<JournalRecord, JournalError, FileSystem.FileSystem> =>
  streamLines(path, options).pipe(
    Stream.filter((line) => line.text.trim() !== ""),
    Stream.mapEffect((line) => decodeLine(line.text, line.number))
  )

/**
 * Reads every record of a JSONL journal. A final line without a newline (a write cut short) is ignored;
 * any other bad line is an error naming its line number, and a line longer than `MAX_LINE_BYTES` one of
 * reason `"length"` (the file is read as a stream: see `streamJsonl`). The array holds every record at
 * once (some kilobytes each): for a journal of any size, fold it with `streamJsonl` instead (as `rein
 * replay` and `rein explain` do), which holds one record at a time.
 *
 * @category decoding
 * @since 0.1.0
 */
export const readJsonl = (
  path: string
): Effect.Effect<ReadonlyArray<JournalRecord>, JournalError, FileSystem.FileSystem> =>
  Effect.map(Stream.runCollect(streamJsonl(path)), Chunk.toReadonlyArray)

/**
 * A replay that did not reproduce: the first decision that differs, and the first field in it. Decision 0
 * is the record itself: its spec is not the one its contract and catalog entries give, and `field` names
 * the contract field (`contract.retry.max`) whose copies disagree. A decision whose snapshot does not fit
 * the recorded contract (more time than `contract.deadline`, more budget than `contract.budget.cost`)
 * names that contract field.
 *
 * @category errors
 * @since 0.1.0
 */
export class ReplayMismatch extends Schema.TaggedError<ReplayMismatch>()("ReplayMismatch", {
  requestId: Schema.String,
  decision: Schema.Number,
  field: Schema.String,
  recorded: Schema.String,
  replayed: Schema.String
}) {}

/**
 * Re-runs the planner over each recorded snapshot and compares the decision byte for byte. Succeeds with
 * the number of decisions reproduced.
 *
 * @example
 * ```ts
 * import { Either } from "effect"
 * import { Journal } from "@rein/core"
 *
 * declare const record: Journal.JournalRecord
 * const result = Journal.replay(record) // Right(3) or Left(ReplayMismatch { decision: 2, field: "waitMillis", … })
 * ```
 * @category replay
 * @since 0.1.0
 */
export const replay = (record: JournalRecord): Either.Either<number, ReplayMismatch> => {
  const derived = derivedSpec(record)
  if (derived._tag === "Left") return Either.left(derived.left)
  const contract = derived.right
  for (const [i, entry] of record.decisions.entries()) {
    const misfit = outsideContract(record.requestId, contract, entry.snapshot, i + 1)
    if (misfit !== undefined) return Either.left(misfit)
    const replayed = Planner.decide(record.spec, entry.snapshot)
    const field = Canonical.firstDifference(entry.decision, replayed)
    if (field !== undefined) {
      return Either.left(
        new ReplayMismatch({
          requestId: record.requestId,
          decision: i + 1,
          field,
          recorded: shown(pick(entry.decision, field)),
          replayed: shown(pick(replayed, field))
        })
      )
    }
  }
  return Either.right(record.decisions.length)
}

const decodeContract = onFirstUse(() => Schema.decodeUnknownEither(Contract))
const decodeEndpoint = onFirstUse(() => Schema.decodeUnknownEither(Endpoint))

/**
 * The record holds the contract and the planner's spec: replay checks that the spec is the one the
 * contract and the recorded catalog entries give (taking from it only what they do not decide: the
 * request's token bounds, whether it streams, and what the providers said), so that neither copy can be
 * edited alone. Succeeds with the decoded contract.
 */
const derivedSpec = (record: JournalRecord): Either.Either<Contract, ReplayMismatch> => {
  const mismatch = (field: string, recorded: string, replayed: string) =>
    new ReplayMismatch({ requestId: record.requestId, decision: 0, field, recorded, replayed })
  const contract = decodeContract()(record.contract)
  if (contract._tag === "Left") {
    return Either.left(mismatch("contract", shown(record.contract), formatParseError(contract.left)))
  }
  const endpoints = new Map<string, Endpoint>()
  for (const [i, encoded] of record.endpoints.entries()) {
    const e = decodeEndpoint()(encoded)
    if (e._tag === "Left") {
      return Either.left(mismatch(`endpoints[${i}]`, shown(encoded), formatParseError(e.left)))
    }
    endpoints.set(e.right.id, e.right)
  }
  const recorded = record.spec
  const facts = new Map(recorded.candidates.map((c) => [c.id, c]))
  const spec = Derive.derive(
    contract.right,
    endpoints,
    (e) => ({
      hasProvider: facts.get(e.id)?.hasProvider ?? false,
      simulated: facts.get(e.id)?.simulated ?? false
    }),
    recorded.inputTokens,
    recorded.maxOutputTokens,
    { streaming: recorded.requires.streaming, uses: usesOf(recorded) }
  )
  // A record of versions 1 and 2 has no copy of the contract's unplanned fields: nothing to compare them with.
  const field = Canonical.firstDifference(recorded, comparable(recorded, spec))
  if (field === undefined) return Either.right(contract.right)
  return Either.left(
    mismatch(
      `${Derive.sourceOf(contract.right, field)} (spec.${field})`,
      shown(pick(recorded, field)),
      shown(pick(spec, field))
    )
  )
}

/**
 * The derived spec as far as the record has copies to compare it with: a record of versions 1 and 2 has no copy
 * of the contract's unplanned fields, and one written before `truncation` and `retry.maxRetryAfter` were copied
 * has not those two.
 */
const comparable = (recorded: Planner.Spec, spec: Planner.Spec): Planner.Spec => {
  const { contract, ...rest } = spec
  if (recorded.contract === undefined || contract === undefined) return rest
  if (recorded.contract.truncation !== undefined) return spec
  const { maxRetryAfterMillis: _m, truncation: _t, ...older } = contract
  return { ...rest, contract: older }
}

/**
 * What the recorded request used (tools, a JSON response format, provider-defined tools' vendors): like its
 * token bounds, an input of the request, not of the contract. A contract's own `requires` is within it.
 */
const usesOf = (spec: JournalRecord["spec"]): Derive.Uses | undefined => {
  const r = spec.requires
  return r.tools || r.structuredOutput || r.vendors !== undefined
    ? { tools: r.tools, structuredOutput: r.structuredOutput, vendors: r.vendors, key: "" }
    : undefined
}

/** Rounding of nanosecond readings to milliseconds. */
const SLACK_MILLIS = 1e-6

/**
 * Whether a snapshot fits the recorded contract: no more time than its deadline (an enclosing deadline may
 * give less), no more budget than its limits (a shared budget may leave less).
 */
const outsideContract = (
  requestId: string,
  contract: Contract,
  snap: Planner.Snapshot,
  decision: number
): ReplayMismatch | undefined => {
  const misfit = (field: string, recorded: string, replayed: string) =>
    new ReplayMismatch({ requestId, decision, field, recorded, replayed })
  const deadline = Duration.toMillis(contract.deadline)
  if (snap.remainingMillis > 0 && snap.elapsedMillis + snap.remainingMillis > deadline + SLACK_MILLIS) {
    return misfit(
      "contract.deadline",
      `${snap.elapsedMillis} ms elapsed + ${snap.remainingMillis} ms remaining`,
      `a ${deadline} ms deadline`
    )
  }
  for (const resource of ["cost", "tokens", "calls"] as const) {
    const limit = contract.budget[resource]
    const left = snap.budget[resource]
    if (limit !== undefined && (left === null || left > limit * (1 + 1e-12))) {
      return misfit(`contract.budget.${resource}`, `${left === null ? "unlimited" : left} left`, `a limit of ${limit}`)
    }
  }
  return undefined
}

/** A value as a mismatch shows it: its canonical JSON (`null` when absent), else what it is (`NaN`). */
const shown = (value: unknown): string =>
  Either.getOrElse(Canonical.encode(value === undefined ? null : value), () => String(value))

const pick = (value: unknown, path: string): unknown => {
  if (path === "(root)" || path === "") return value
  let current: unknown = value
  for (const part of path.split(/\.|\[|\]/).filter((p) => p !== "")) {
    if (current === null || typeof current !== "object") return undefined
    current = (current as Record<string, unknown>)[part]
  }
  return current
}

/**
 * A readable account of one request, for tools.
 *
 * @category models
 * @since 0.1.0
 */
export interface Explanation {
  readonly requestId: string
  readonly steps: ReadonlyArray<{
    readonly decision: number
    readonly atMillis: number
    readonly remainingMillis: number
    readonly budgetLeft: { readonly cost: number | null; readonly tokens: number | null; readonly calls: number | null }
    readonly chosen: string | null
    readonly action: string
    readonly why: string
    readonly rejected: ReadonlyArray<
      { readonly endpoint: string; readonly role: string; readonly failed: Readonly<Record<string, string>> }
    >
    readonly attempt: {
      readonly endpoint: string
      readonly status: string
      readonly failure: string | null
      readonly code: string | null
      readonly retryAfterMillis: number | null
      readonly startMillis: number
      readonly endMillis: number
      readonly charged: { readonly cost: number; readonly tokens: number }
    } | null
  }>
  readonly outcome: string
}

const budgetText = (
  b: { readonly cost: number | null; readonly tokens: number | null; readonly calls: number | null }
) => {
  const parts = [
    b.cost === null ? null : `cost ${num(b.cost)}`,
    b.tokens === null ? null : `tokens ${b.tokens}`,
    b.calls === null ? null : `calls ${b.calls}`
  ].filter((p) => p !== null)
  return parts.length === 0 ? "unlimited" : `${parts.join(", ")} left`
}

/**
 * Explains a record: each decision, why the chosen attempt was allowed, why each other candidate was not
 * (the failing predicate, with its numbers), the waits and their reasons, each attempt's result, and the
 * outcome. `json` for tools, `text` for people.
 *
 * @example
 * ```ts
 * import { Journal } from "@rein/core"
 *
 * declare const record: Journal.JournalRecord
 * console.log(Journal.explain(record).text)
 * ```
 * @category formatting
 * @since 0.1.0
 */
export const explain = (record: JournalRecord): { readonly json: Explanation; readonly text: string } => {
  const steps: Array<Explanation["steps"][number]> = []
  let attemptIndex = 0
  for (const [i, { decision, snapshot }] of record.decisions.entries()) {
    const rejected = decision.candidates
      .filter((c) => !c.legal || (decision._tag === "Attempt" && c.endpoint !== decision.endpoint))
      .filter((c) => !(decision._tag === "Attempt" && c.endpoint === decision.endpoint))
      .map((c) => ({
        endpoint: c.endpoint,
        role: c.role,
        failed: Object.fromEntries(
          Object.entries(c.verdicts).filter(([, v]) => v !== true).map(([k, v]) => [k, String(v)])
        )
      }))
    let action: string
    let why: string
    let attempt: Explanation["steps"][number]["attempt"] = null
    if (decision._tag === "Attempt") {
      const wait = decision.waitMillis > 0
        ? `after a ${num(decision.waitMillis)} ms wait (${
          decision.waitReason === "retry_after"
            ? `Retry-After ${num(snapshot.last?.retryAfterMillis ?? 0)} ms`
            : "backoff"
        }), `
        : ""
      action = `attempt ${decision.attempt} on ${decision.endpoint} (${decision.role})`
      why = `${wait}all 11 predicates hold; timeout ${num(decision.timeoutMillis)} ms (${
        decision.binding === "deadline" ? "the remaining deadline" : "the attempt timeout"
      }); reserved ${decision.reservation.cost === null ? "no cost bound" : `cost ${num(decision.reservation.cost)}`}${
        decision.reservation.tokens === null ? "" : `, ${decision.reservation.tokens} tokens`
      }`
      const a = record.attempts[attemptIndex++]
      if (a !== undefined) {
        attempt = {
          endpoint: a.endpoint,
          status: a.status,
          failure: a.failure,
          code: a.code,
          retryAfterMillis: a.retryAfterMillis,
          startMillis: a.startMillis,
          endMillis: a.endMillis,
          charged: a.charged
        }
      }
    } else {
      action = `stop: ${decision.outcome}${decision.phase === null ? "" : ` (${decision.phase})`}`
      why = decision.reason
    }
    steps.push({
      decision: i + 1,
      atMillis: snapshot.elapsedMillis,
      remainingMillis: snapshot.remainingMillis,
      budgetLeft: snapshot.budget,
      chosen: decision._tag === "Attempt" ? decision.endpoint : null,
      action,
      why,
      rejected,
      attempt
    })
  }
  const o = record.outcome
  const outcome = o._tag === "Completion"
    ? `success on ${o.endpoint}; usage ${
      o.usage === "unknown" ? "unknown" : `${o.usage.inputTokens} in / ${o.usage.outputTokens} out`
    }; cost ${o.cost === "unknown" ? "unknown" : num(o.cost)}${o.simulated ? " (simulated)" : ""}`
    : o._tag === "Interrupted"
    ? "interrupted by the caller"
    : o._tag === "Defect"
    ? "a defect (a bug in Rein or in a service it called), not an interruption"
    : `${o._tag}${o.detail === null ? "" : ` (${o.detail})`}: ${o.reason}${
      o.cause === null ? "" : `; last failure ${o.cause.kind} (${o.cause.code}) on ${o.cause.endpoint}`
    }`
  const lines: Array<string> = [
    `request ${record.requestId}: candidates ${record.spec.candidates.map((c) => c.id).join(" → ")}`
  ]
  for (const s of steps) {
    lines.push(
      `#${s.decision} at +${num(s.atMillis)} ms, ${num(s.remainingMillis)} ms remaining, budget ${
        budgetText(s.budgetLeft)
      }`
    )
    lines.push(`  → ${s.action}: ${s.why}`)
    for (const r of s.rejected) {
      const failed = Object.entries(r.failed)
      if (failed.length > 0) {
        lines.push(`  ✗ ${r.endpoint} (${r.role}): ${failed.map(([k, v]) => `${k}: ${v}`).join("; ")}`)
      }
    }
    if (s.attempt !== null) {
      const a = s.attempt
      lines.push(
        `  ${a.status === "success" ? "✓" : "✗"} ${a.endpoint} ${a.status}${
          a.failure === null ? "" : ` ${a.failure} (${a.code})`
        }${a.retryAfterMillis === null ? "" : `, Retry-After ${num(a.retryAfterMillis)} ms`}, +${num(a.startMillis)}…+${
          num(a.endMillis)
        } ms, charged cost ${num(a.charged.cost)} / ${a.charged.tokens} tokens`
      )
    }
  }
  lines.push(`outcome: ${outcome}`)
  return { json: { requestId: record.requestId, steps, outcome }, text: lines.join("\n") }
}
