/**
 * Batch runs spread over many processes and machines through PostgreSQL (`@rein/postgres`):
 * `rein batch --store postgres://… --run ID` starts the run (or joins it while it runs) and works on it;
 * `rein worker --store … --run ID` joins it with the same input, catalog and contract; `rein status --store …
 * --run ID` shows the whole run from any machine. The database holds no prompt: every worker reads the
 * input file itself, and refuses an item whose input is not the one submitted.
 *
 * @since 0.1.0
 */
import { Command, Options } from "@effect/cli"
import type * as FileSystem from "@effect/platform/FileSystem"
import type { SqlClient } from "@effect/sql"
import type { Guardrails, Resume } from "@rein/batch"
import { Rein } from "@rein/core"
import type { PgBatchRun, PgWorker } from "@rein/postgres"
import { Clock, Console, Effect, Either, Layer, Option, Predicate, Redacted } from "effect"
import * as ExitCode from "./ExitCode.js"
import { InputError } from "./InputError.js"
import { checkCapacity, loadScenario } from "./internal/againstCatalog.js"
import * as BatchLib from "./internal/batchLib.js"
import { inFile, loadCatalogAndContract } from "./internal/files.js"
import { json, num, table } from "./internal/format.js"
import * as InputAt from "./internal/inputAt.js"
import * as Interrupt from "./internal/interrupt.js"
import * as Shared from "./internal/options.js"
import * as Password from "./internal/password.js"
import * as Pg from "./internal/pg.js"
import { printable } from "./internal/printable.js"
import type { PromptItem } from "./internal/prompts.js"
import { streamLocated } from "./internal/prompts.js"
import { forCalls } from "./internal/providers.js"
import * as RunCaps from "./internal/runCaps.js"
import * as Sslmode from "./internal/sslmode.js"
import type { ExitStatus } from "./internal/status.js"
import { exitWith } from "./internal/status.js"
import { tokenizer } from "./internal/tokens.js"

/**
 * Where the run lives and what one process runs: the store's connection string, the run id, the input,
 * catalog and contract files (the same on every worker), the guardrails (decoded), the resume policy of a
 * new session, and a scenario or base URL for the endpoints.
 *
 * @example
 * ```ts
 * import { Guardrails } from "@rein/batch"
 * import type { Distributed } from "@rein/cli"
 *
 * const options: Distributed.WorkerOptions = {
 *   store: "postgres://localhost/rein", run: "nightly", input: "prompts.jsonl", catalog: "catalog.json",
 *   contract: "contract.json", guardrails: Guardrails.make({ concurrency: 8 }), resume: "reuse-successes"
 * }
 * ```
 * @since 0.1.0
 * @category models
 */
export interface WorkerOptions {
  readonly store: string
  readonly run: string
  readonly input: string
  readonly catalog: string
  readonly contract: string
  readonly guardrails: Guardrails.Guardrails
  /** The run's hard budget (recorded by the `start` that creates or restarts the run; a worker may repeat it). */
  readonly budget?: PgBatchRun.Budget | undefined
  readonly resume: Resume.Policy
  readonly scenario?: string | undefined
  readonly baseUrl?: string | undefined
}

/**
 * What one process reports: how the run was joined (`start` only), this worker's part, and the whole run.
 *
 * @example
 * ```ts
 * import type { Distributed } from "@rein/cli"
 *
 * const done = (r: Distributed.WorkerReport) => `${r.status.items.done}/${r.status.items.total}`
 * ```
 * @since 0.1.0
 * @category models
 */
export interface WorkerReport {
  readonly ok: boolean
  readonly started?: PgBatchRun.Started | undefined
  readonly worker: PgWorker.Summary
  readonly status: PgBatchRun.Status
}

// PostgreSQL is loaded here, when a command connects to a store, and not at start-up (internal/pg.ts).
// Another scheme (`mysql://`, a bare host name) is refused before any connection is tried, without echoing the
// value (it may hold a password); a connection that fails says why (`reasonOf`).
const connect = (store: string): Layer.Layer<SqlClient.SqlClient, InputError> =>
  /^postgres(ql)?:\/\//i.test(store)
    ? Layer.unwrapEffect(Effect.map(Pg.load, ({ PgClient }) =>
      Layer.mapError(
        PgClient.layer({ url: Redacted.make(Sslmode.asParsed(store)), maxConnections: 8 }),
        (e) => new InputError({ message: `--store: cannot connect: ${e.message}${reasonOf(e.cause, store)}` })
      )))
    : Layer.fail(new InputError({ message: "--store: Expected a postgres:// or postgresql:// connection string" }))

/** The longest server message a connection error quotes. */
const REASON_CHARS = 300

/**
 * Why a connection failed, never quoting the connection string: an SSL failure said in words
 * (`Sslmode.reasonOf`: self-signed, unknown CA, another host's certificate…); its errno (`ECONNREFUSED`); the server's
 * refusal with its SQLSTATE (`password authentication failed for user "rein" (SQLSTATE 28P01)`, `database "x"
 * does not exist`: the server never echoes a password, and the string's password, were it in the message, is
 * masked); or a string that is not a URL (Node's error carries the whole string, password included: only its
 * kind is said).
 */
const reasonOf = (cause: unknown, store: string): string => {
  const ssl = Sslmode.reasonOf(cause, store)
  if (ssl !== undefined) return ssl
  const message = Predicate.hasProperty(cause, "message") ? cause.message : undefined
  const code = Predicate.hasProperty(cause, "code") ? cause.code : undefined
  if (typeof code !== "string") return ""
  if (/^E[A-Z]+$/.test(code)) return ` (${code})`
  if (code === "ERR_INVALID_URL") return " (not a valid URL)"
  // Another TLS refusal (`CERT_HAS_EXPIRED`): its code.
  if (/^[A-Z][A-Z_]+$/.test(code) && code.includes("_")) return ` (${code})`
  if (!/^[0-9A-Z]{5}$/.test(code) || typeof message !== "string") return ""
  const masked = Password.maskIn(message, store)
  const bounded = masked.length > REASON_CHARS ? `${masked.slice(0, REASON_CHARS)}…` : masked
  return `: ${bounded} (SQLSTATE ${code})${Sslmode.refusalHint(code, message)}`
}

/** A store error as bad input; an unknown run says which command starts one (a worker or status joins it). */
const fromStore = <A, R>(effect: Effect.Effect<A, PgBatchRun.PgBatchError, R>) =>
  Effect.mapError(effect, (e) =>
    new InputError({
      message: `--store: ${e.message}${
        e.reason === "NotFound" ? " (rein batch --store URL --run ID --input … starts a run; then workers join it)" : ""
      }`
    }))

const request = (item: PromptItem) => ({
  id: item.id,
  prompt: item.prompt,
  system: item.system,
  inputTokens: item.inputTokens,
  maxOutputTokens: item.maxOutputTokens
})

// Runs one worker (after starting the run when `start`), then reads the whole run's status.
const work = (options: WorkerOptions, start: boolean) =>
  Effect.gen(function*() {
    const { Migrations, PgBatchRun, PgWorker } = yield* Pg.load
    const { catalog, contract } = yield* loadCatalogAndContract(options.catalog, options.contract)
    yield* checkCapacity(options.guardrails.capacity, catalog, undefined)
    const { Identity } = yield* BatchLib.load
    const identity = yield* Either.mapLeft(
      Identity.fromContract(contract, catalog, {
        promptVersion: "1",
        parserVersion: "text",
        applicationVersion: "rein-cli/0.1.0"
      }),
      (e) => new InputError({ message: inFile(options.contract, e.message) })
    )
    const scenario = yield* loadScenario(options.scenario, catalog)
    // The worker reads its items by index, in bounded memory; a start submits them a chunk at a time (the
    // database finds two items with one id, and the error names both lines).
    const itemAt = yield* InputAt.open(options.input)
    yield* Effect.mapError(Migrations.run, (e) => new InputError({ message: `--store: ${e.message}` }))
    const started = start
      ? yield* PgBatchRun.start({
        runId: options.run,
        identity,
        resume: options.resume,
        items: streamLocated(options.input),
        request: (located) => request(located.item),
        itemId: (located) => located.item.id,
        input: (located) => located.item,
        where: (located) => `line ${located.line}`,
        contract,
        guardrails: options.guardrails,
        budget: options.budget
      }).pipe(
        Effect.mapError((e) =>
          e._tag === "InputError"
            ? e
            : new InputError({
              message: e.reason !== "InvalidInput"
                ? `--store: ${e.message}`
                : e.index === undefined
                ? `--run: ${e.message}`
                : `${options.input}: ${e.message}`
            })
        )
      )
      : undefined
    // The run's caps are its session's: this process may repeat them, never change them.
    yield* RunCaps.check(
      options.run,
      RunCaps.asked(options.guardrails, options.budget),
      yield* fromStore(PgBatchRun.caps(options.run))
    )
    const providers = yield* forCalls(catalog, {
      scenario,
      originMillis: yield* Clock.currentTimeMillis,
      baseUrl: Option.fromNullable(options.baseUrl)
    })
    const worker = yield* PgWorker.run({
      runId: options.run,
      item: itemAt,
      request,
      itemId: (item) => item.id,
      identity,
      contract,
      guardrails: options.guardrails
    }).pipe(
      Effect.provide(Rein.layer({ catalog, providers, tokenizer, health: false })),
      // The soft caps, rates and budget on record, shared with every worker of the run.
      Effect.provide(PgBatchRun.sharedLimits(options.run, options.guardrails)),
      Effect.mapError((e) =>
        e._tag === "InputError" ? e : e._tag === "PgBatchError"
          ? new InputError({ message: `--store: ${e.message}` })
          : new InputError({ message: `${options.input}: ${e.message}` })
      )
    )
    const status = yield* fromStore(PgBatchRun.status(options.run))
    return {
      ok: status.status === "finished" && Object.keys(status.byCategory).every((c) => c === "ok"),
      started,
      worker,
      status
    } satisfies WorkerReport
  })

/**
 * Starts the run (or joins it while it runs) and works on it, as `rein batch --store` does.
 *
 * @example
 * ```ts
 * import { Guardrails } from "@rein/batch"
 * import { Distributed } from "@rein/cli"
 *
 * const report = Distributed.start({
 *   store: "postgres://localhost/rein", run: "nightly", input: "prompts.jsonl", catalog: "catalog.json",
 *   contract: "contract.json", guardrails: Guardrails.make({ concurrency: 8 }), resume: "reuse-successes"
 * })
 * ```
 * @since 0.1.0
 * @category running
 */
export const start = (options: WorkerOptions): Effect.Effect<WorkerReport, InputError, FileSystem.FileSystem> =>
  Effect.scoped(Effect.provide(work(options, true), connect(options.store)))

/**
 * Joins a run as one more worker, as `rein worker` does.
 *
 * @example
 * ```ts
 * import { Guardrails } from "@rein/batch"
 * import { Distributed } from "@rein/cli"
 *
 * const report = Distributed.join({
 *   store: "postgres://localhost/rein", run: "nightly", input: "prompts.jsonl", catalog: "catalog.json",
 *   contract: "contract.json", guardrails: Guardrails.make({ concurrency: 8 }), resume: "reuse-successes"
 * })
 * ```
 * @since 0.1.0
 * @category running
 */
export const join = (options: WorkerOptions): Effect.Effect<WorkerReport, InputError, FileSystem.FileSystem> =>
  Effect.scoped(Effect.provide(work(options, false), connect(options.store)))

/**
 * Renders a run's status as a table.
 *
 * @example
 * ```ts
 * import { Distributed } from "@rein/cli"
 * import type { PgBatchRun } from "@rein/postgres"
 *
 * declare const status: PgBatchRun.Status
 * console.log(Distributed.renderStatus(status))
 * // with what to change after its stop (`Termination.fix` of `@rein/batch`), as `rein status` prints it:
 * // Distributed.renderStatus(status, "give the run more time (--batch-deadline) …")
 * ```
 * @since 0.1.0
 * @category rendering
 */
export const renderStatus = (s: PgBatchRun.Status, fix?: string | undefined): string => {
  const categories = Object.entries(s.byCategory).map(([k, v]) => `${k} ${v}`).join(", ")
  const rows: Array<Array<string>> = [
    ["status", s.status],
    [
      "stop",
      s.stop === null ? "-" : `${s.stop.kind}: ${printable(s.stop.reason)}${fix === undefined ? "" : `; ${fix}`}`
    ],
    ["stopped at", s.stoppedAt ?? "-"],
    ["items", `${s.items.total}: ${s.items.done} done, ${s.items.leased} leased, ${s.items.pending} pending`],
    ["by category", categories === "" ? "-" : categories],
    ["cost", `${num(s.cost)}${s.unknownCost > 0 ? ` (${s.unknownCost} items of unknown cost)` : ""}`],
    ["fenced out", String(s.fencedOut)],
    ["started", `${s.startedAt} (${Math.round(s.elapsedMillis)} ms ago)`],
    ["deadline", s.deadlineMillis === null ? "-" : `${s.deadlineMillis} ms`]
  ]
  return [`run ${printable(s.runId)}`, table(rows, "  ", 70)].join("\n")
}

const render = (r: WorkerReport, fix: string | undefined): string => {
  const w = r.worker
  const head = r.started === undefined
    ? `worker ${printable(w.owner)} joined run ${printable(r.status.runId)}`
    : `${r.started.session} run ${
      printable(r.status.runId)
    }: ${r.started.items} items, ${r.started.reopened} to run again`
  return [
    head,
    `this worker: ${w.leased} leased, ${w.stats.succeeded} succeeded, ${w.stats.failed} failed, ${w.swept} given the stop's record, ${w.fencedOut} fenced out (${w.termination.kind})`,
    renderStatus(r.status, fix)
  ].join("\n")
}

/** The options `rein worker` and `rein status` share with `rein batch --store`. @internal */
export const store = Options.text("store").pipe(
  Options.withPseudoName("URL"),
  Options.withDescription("The PostgreSQL connection string of a run shared by many workers (postgres://…)")
)

/** `--run ID`. @internal */
export const run = Options.text("run").pipe(
  Options.withPseudoName("ID"),
  Options.withDescription("The run's id in the store")
)

/**
 * On an interruption (Ctrl-C), says on stderr that the run stays in the store and the command line that
 * rejoins it (this process's own, its password masked). @internal
 */
export const onInterruptRejoin = (run: string) => <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.onInterrupt(
    effect,
    () => Console.error(Interrupt.rejoinMessage(run, process.argv, process.cwd(), process.env))
  )

/** Prints a report and sets the exit code. @internal */
export const report = (r: WorkerReport, asJson: boolean): Effect.Effect<void, never, ExitStatus> =>
  Effect.flatMap(BatchLib.load, ({ Termination }) =>
    Effect.zipRight(
      Console.log(asJson ? json(r) : render(r, r.status.stop === null ? undefined : Termination.fix(r.status.stop))),
      exitWith(r.ok ? ExitCode.ok : ExitCode.failed)
    ))

/**
 * The `rein status` command.
 *
 * @example
 * ```ts
 * import { Distributed } from "@rein/cli"
 *
 * Distributed.statusCommand // rein status --store postgres://… --run ID [--json]
 * ```
 * @since 0.1.0
 * @category commands
 */
export const statusCommand = Command.make(
  "status",
  { store, run, json: Shared.json },
  (o): Effect.Effect<void, InputError> =>
    Effect.gen(function*() {
      const { PgBatchRun } = yield* Pg.load
      const status = yield* fromStore(PgBatchRun.status(o.run)).pipe(Effect.provide(connect(o.store)))
      // What to change after its stop comes from `@rein/batch`, loaded only for a run that stopped.
      const fix = status.stop === null ? undefined : (yield* BatchLib.load).Termination.fix(status.stop)
      yield* Console.log(o.json ? json(status) : renderStatus(status, fix))
    })
).pipe(Command.withDescription("Show a run shared through --store: its progress, stop and summary"))

/**
 * The `rein worker` command.
 *
 * @example
 * ```ts
 * import { Distributed } from "@rein/cli"
 *
 * Distributed.workerCommand // rein worker --store postgres://… --run ID --input F --catalog C --contract K …
 * ```
 * @since 0.1.0
 * @category commands
 */
export const workerCommand = Command.make(
  "worker",
  {
    store,
    run,
    input: Shared.file("input").pipe(Options.withDescription("The run's input file (the same on every worker)")),
    catalog: Shared.catalog,
    contract: Shared.contract,
    concurrency: Shared.number("concurrency", "a positive integer").pipe(
      Options.withDescription("Items at once in this worker (default 8)"),
      Options.optional
    ),
    itemDeadline: Options.text("item-deadline").pipe(
      Options.withPseudoName("DURATION"),
      Options.withDescription("Deadline of each item, e.g. \"30 seconds\""),
      Options.optional
    ),
    abortOn: Options.text("abort-on").pipe(
      Options.withPseudoName("CATEGORY"),
      Options.withDescription("A failure category that stops the whole run (repeatable), e.g. authentication"),
      Options.repeated,
      Options.optional
    ),
    abortMode: Shared.choice("abort-mode", ["drain-active", "cancel-active"]).pipe(
      Options.withDescription("On a stop: let this worker's calls in flight finish, or cancel them"),
      Options.optional
    ),
    ...RunCaps.workerOptions,
    scenario: Shared.scenario,
    baseUrl: Shared.baseUrl,
    json: Shared.json
  },
  (o): Effect.Effect<void, InputError, FileSystem.FileSystem | ExitStatus> =>
    Effect.gen(function*() {
      const guardrails = yield* decodeFlags({
        concurrency: o.concurrency,
        itemDeadline: o.itemDeadline,
        abortMode: o.abortMode,
        abortOn: Option.filter(o.abortOn, (xs) => xs.length > 0),
        maxTotalTokens: o.maxTotalTokens,
        maxTotalCost: o.maxTotalCost,
        requestsPerMinute: o.rpm,
        tokensPerMinute: o.tpm
      })
      const budget = yield* RunCaps.decodeBudget({ cost: o.budgetCost, tokens: o.budgetTokens, calls: o.budgetCalls })
      const r = yield* join({
        store: o.store,
        run: o.run,
        input: o.input,
        catalog: o.catalog,
        contract: o.contract,
        guardrails,
        budget,
        resume: "reuse-successes",
        scenario: Option.getOrUndefined(o.scenario),
        baseUrl: Option.getOrUndefined(o.baseUrl)
      }).pipe(onInterruptRejoin(o.run))
      yield* report(r, o.json)
    })
).pipe(
  Command.withDescription(
    "Join a run shared through --store as one more worker. The run's caps (--max-total-tokens, --max-total-cost, " +
      "--rpm, --tpm, --budget-*) are the ones rein batch --store recorded when the run started, shared by every " +
      "worker: pass none, or the same (other values are refused, naming the flag)"
  )
)

const FLAGS: Readonly<Record<string, string>> = {
  concurrency: "--concurrency",
  itemDeadline: "--item-deadline",
  abortOn: "--abort-on",
  abortMode: "--abort-mode",
  maxTotalTokens: "--max-total-tokens",
  maxTotalCost: "--max-total-cost",
  requestsPerMinute: "--rpm",
  tokensPerMinute: "--tpm"
}

/** The guardrails of `rein worker`'s flags; a bad value names its flag. @internal */
const decodeFlags = (flags: Readonly<Record<string, Option.Option<unknown>>>) => {
  const given: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(flags)) if (Option.isSome(v)) given[k] = v.value
  return Effect.flatMap(
    BatchLib.load,
    ({ Guardrails }) =>
      Either.mapLeft(Guardrails.decode(given), (e) =>
        new InputError({
          message: e.message.split("\n").map((line) => {
            const field = line.split(/[.:]/)[0] ?? ""
            return field in FLAGS ? `${FLAGS[field]}${line.slice(field.length)}` : line
          }).join("\n")
        }))
  )
}
