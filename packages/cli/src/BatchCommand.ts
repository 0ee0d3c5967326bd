/**
 * `rein batch`: runs every prompt of a JSONL file under the contract and the run's guardrails, through
 * `@rein/batch`'s checkpointed run: each item's terminal record is appended to the `--out` artifact (and
 * flushed) before its result counts, so a run cut short resumes with `--resume`, reusing what finished.
 * A live progress bar on a terminal (plain lines otherwise) on stderr; a summary table at the end.
 *
 * @since 0.1.0
 */
import { Command, Options } from "@effect/cli"
import * as FileSystem from "@effect/platform/FileSystem"
import type { Batch, Events, Guardrails, Resume, Stats, Termination } from "@rein/batch"
import { Rein } from "@rein/core"
import type { PgBatchRun } from "@rein/postgres"
import { Clock, Console, Effect, Either, Layer, Option } from "effect"
import * as Distributed from "./Distributed.js"
import * as ExitCode from "./ExitCode.js"
import { InputError } from "./InputError.js"
import { checkCapacity, loadScenario } from "./internal/againstCatalog.js"
import * as ArtifactLock from "./internal/artifactLock.js"
import * as BatchLib from "./internal/batchLib.js"
import * as Breakers from "./internal/breakers.js"
import * as Drift from "./internal/drift.js"
import { describeReadError, ensureParent, inFile, loadCatalogAndContract, readJson } from "./internal/files.js"
import { json, millis, num, table } from "./internal/format.js"
import * as Interrupt from "./internal/interrupt.js"
import * as Shared from "./internal/options.js"
import * as Progress from "./internal/progress.js"
import type { PromptItem } from "./internal/prompts.js"
import { countPrompts, streamPrompts } from "./internal/prompts.js"
import { forCalls } from "./internal/providers.js"
import * as Recording from "./internal/record.js"
import * as RunCaps from "./internal/runCaps.js"
import type { ExitStatus } from "./internal/status.js"
import { exitWith } from "./internal/status.js"
import * as Telemetry from "./internal/telemetry.js"
import { tokenizer } from "./internal/tokens.js"
import * as Scenario from "./Scenario.js"

/**
 * What `rein batch` reports at the end (`--json`).
 *
 * @example
 * ```ts
 * import { BatchCommand } from "@rein/cli"
 *
 * const reused = (r: BatchCommand.BatchReport) => r.stats.reused
 * ```
 * @since 0.1.0
 * @category models
 */
export interface BatchReport {
  readonly ok: boolean
  readonly out: string
  readonly items: number
  readonly termination: Termination.Termination
  readonly stats: Stats.Stats
  /** Successes by the endpoint that answered. */
  readonly byEndpoint: Readonly<Record<string, number>>
  /** Item durations (inside the item deadline), in milliseconds. */
  readonly latency: { readonly p50: number; readonly p90: number; readonly p99: number; readonly max: number }
  readonly elapsedMillis: number
  /** Breaker transitions, per endpoint and target state (`open`, `half_open`, `closed`). */
  readonly breakers: Progress.BreakerCounts
  /** The journal file every item's decisions were appended to (`--record`), or `null`. */
  readonly record?: string | null | undefined
  /**
   * Why some items' journal records were not written (`3 records could not be written to rec.jsonl: no space
   * left on the device`), or `null`; `ok` is then `false`. The artifact is written apart from it.
   */
  readonly recordError?: string | null | undefined
}

/**
 * The `q`-quantile (nearest rank) of numbers; 0 for none.
 *
 * @example
 * ```ts
 * import { BatchCommand } from "@rein/cli"
 *
 * BatchCommand.quantile([1, 2, 3, 4], 0.5) // 2
 * ```
 * @since 0.1.0
 * @category utils
 */
export const quantile = (values: ReadonlyArray<number>, q: number): number => {
  if (values.length === 0) return 0
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!
}

const unknownUsage = (n: number): string =>
  n === 0
    ? "none: every call reported its tokens"
    : `${n} call${n === 1 ? "" : "s"} reported no tokens: not in the totals above`

/**
 * The width the summary table fits in (a narrow terminal, or a pasted log): longer values wrap.
 *
 * @example
 * ```ts
 * import { BatchCommand } from "@rein/cli"
 *
 * BatchCommand.SUMMARY_WIDTH // 70
 * ```
 * @since 0.1.0
 * @category rendering
 */
export const SUMMARY_WIDTH = 70

/**
 * Renders the summary table, fitted to `SUMMARY_WIDTH` columns.
 *
 * @example
 * ```ts
 * import { BatchCommand } from "@rein/cli"
 *
 * declare const report: BatchCommand.BatchReport
 * console.log(BatchCommand.render(report))
 * // with what to change after a stop (`Termination.fix` of `@rein/batch`), as `rein batch` prints it:
 * // BatchCommand.render(report, "raise the cost limit (--max-total-cost) …")
 * ```
 * @since 0.1.0
 * @category rendering
 */
export const render = (r: BatchReport, fix?: string | undefined): string => {
  const s = r.stats
  const categories = Object.entries(s.byCategory).map(([k, v]) => `${k} ${v}`).join(", ")
  const endpoints = Object.entries(r.byEndpoint).map(([k, v]) => `${k} ${v}`).join(", ")
  const rows: Array<Array<string>> = [
    ["termination", `${r.termination.kind}: ${r.termination.reason}${fix === undefined ? "" : `; ${fix}`}`],
    ["items", `${r.items} in the input, ${s.accepted} accepted`],
    [
      "results",
      `${s.succeeded} succeeded, ${s.failed} failed, ${s.reused} reused${s.planned > 0 ? `, ${s.planned} planned` : ""}`
    ],
    ["by category", categories === "" ? "-" : categories],
    ["answered by", endpoints === "" ? "-" : endpoints],
    ["attempts", `${s.attempts} (${s.retries} retries, ${s.fallbacks} fallbacks, ${s.rateLimited} rate-limited)`],
    ["tokens used", String(s.tokensUsed)],
    ["cost used", `${num(s.costUsed)}${s.costComplete ? "" : " (incomplete: the cost function failed)"}`],
    ["breakers", Progress.breakerSummary(r.breakers)],
    ["unknown usage", unknownUsage(s.unknownUsageAttempts)],
    ["admission waits", `${s.admissionWaits} (${millis(s.admissionWaitMillis)})`],
    [
      "item latency",
      `p50 ${millis(r.latency.p50)}, p90 ${millis(r.latency.p90)}, p99 ${millis(r.latency.p99)}, max ${
        millis(r.latency.max)
      }`
    ],
    ["elapsed", millis(r.elapsedMillis)],
    ["artifact", `${r.out} (continue or reuse it with --resume)`],
    ...(r.recordError !== undefined && r.recordError !== null
      ? [["journal", `not written: ${r.recordError}`]]
      : r.record === undefined || r.record === null
      ? []
      : [["journal", `${r.record} (one record per request: rein replay / rein explain)`]])
  ]
  return [`batch ${r.ok ? "completed" : "did not complete cleanly"}`, table(rows, "  ", SUMMARY_WIDTH)].join("\n")
}

/**
 * What to run: files, resume, guardrails (in their JSON form, e.g. `{ concurrency: 4, itemDeadline: "30 seconds" }`).
 *
 * @example
 * ```ts
 * import { BatchCommand } from "@rein/cli"
 *
 * const options: BatchCommand.BatchOptions = {
 *   input: "prompts.jsonl", catalog: "catalog.json", contract: "contract.json", out: "run.jsonl",
 *   resume: "reuse-successes", overwrite: false, guardrails: { concurrency: 4 }, progress: "plain"
 * }
 * ```
 * @since 0.1.0
 * @category models
 */
export interface BatchOptions {
  readonly input: string
  readonly catalog: string
  readonly contract: string
  readonly out: string
  readonly resume: Resume.Policy | undefined
  readonly overwrite: boolean
  /** The mode of an artifact (and a journal file) the run creates (default 0600). */
  readonly fileMode?: number | undefined
  /** Append each item's journal record (its decisions) to this JSONL file, as `rein run --record` does. */
  readonly record?: string | undefined
  readonly guardrailsFile?: string | undefined
  readonly guardrails: Readonly<Record<string, unknown>>
  readonly scenario?: string | undefined
  readonly baseUrl?: string | undefined
  readonly progress: Progress.Mode
  /** The command that resumes this run, printed when it is interrupted (Ctrl-C). */
  readonly resumeWith?: string | undefined
  /** The environment variables the run read (by its catalog's provider names), named when it is interrupted. */
  readonly environmentRead?: ((providers: ReadonlyArray<string>) => ReadonlyArray<string>) | undefined
}

// Guardrail fields and the flags that set them, so that a bad value names the flag the user typed.
const FLAGS: Readonly<Record<string, string>> = {
  concurrency: "--concurrency",
  itemDeadline: "--item-deadline",
  batchDeadline: "--batch-deadline",
  abortOn: "--abort-on",
  abortMode: "--abort-mode",
  maxTotalTokens: "--max-total-tokens",
  maxTotalCost: "--max-total-cost",
  requestsPerMinute: "--rpm",
  tokensPerMinute: "--tpm",
  rateLimitRetries: "--rate-limit-retries",
  order: "--order",
  dryRun: "--dry-run"
}

const decodeGuardrails = (
  fromFile: Readonly<Record<string, unknown>>,
  fromFlags: Readonly<Record<string, unknown>>,
  file: string | undefined
): Effect.Effect<Guardrails.Guardrails, InputError> =>
  Effect.flatMap(
    BatchLib.load,
    ({ Guardrails }) =>
      Either.mapLeft(Guardrails.decode({ ...fromFile, ...fromFlags }), (e) =>
        new InputError({
          message: e.message.split("\n").map((line) => {
            const field = line.split(/[.:]/)[0] ?? ""
            if (field in fromFlags) return `${FLAGS[field] ?? field}${line.slice(field.length)}`
            return file === undefined ? `guardrails: ${line}` : inFile(file, line)
          }).join("\n")
        }))
  )

const isObject = (u: unknown): u is Readonly<Record<string, unknown>> =>
  typeof u === "object" && u !== null && !Array.isArray(u)

const request = (item: PromptItem) => ({
  id: item.id,
  prompt: item.prompt,
  system: item.system,
  inputTokens: item.inputTokens,
  maxOutputTokens: item.maxOutputTokens
})

/** The scenario's breaker settings, or the defaults. */
const healthOf = (scenario: Scenario.Scenario | undefined) =>
  scenario === undefined ? {} : Scenario.healthConfig(scenario)

/**
 * Runs a batch as `rein batch` does, drawing progress on stderr.
 *
 * @example
 * ```ts
 * import { BatchCommand } from "@rein/cli"
 *
 * const report = BatchCommand.execute({
 *   input: "examples/prompts.jsonl", catalog: "examples/catalog.json", contract: "examples/contract.json",
 *   out: ".tmp/run.jsonl", resume: undefined, overwrite: true, guardrails: { concurrency: 4 }, progress: "plain"
 * })
 * ```
 * @since 0.1.0
 * @category running
 */
export const execute = (options: BatchOptions): Effect.Effect<BatchReport, InputError, FileSystem.FileSystem> =>
  Effect.scoped(Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    if (options.resume !== undefined && options.overwrite) {
      return yield* new InputError({
        message: "--resume and --overwrite together: --resume continues " + options.out +
          ", --overwrite starts it again; pass one of them"
      })
    }
    const { catalog, contract } = yield* loadCatalogAndContract(options.catalog, options.contract)
    const { ArtifactStore, Checkpoint, Fingerprint, Identity, JsonlStore } = yield* BatchLib.load
    const fileGuardrails = options.guardrailsFile === undefined ? {} : yield* Effect.flatMap(
      readJson(options.guardrailsFile, "guardrails"),
      (json) =>
        isObject(json)
          ? Effect.succeed(json)
          : Effect.fail(new InputError({ message: `${options.guardrailsFile}: Expected a JSON object of guardrails` }))
    )
    const guardrails = yield* decodeGuardrails(fileGuardrails, options.guardrails, options.guardrailsFile)
    yield* checkCapacity(guardrails.capacity, catalog, options.guardrailsFile)
    const scenario = yield* loadScenario(options.scenario, catalog)
    // The input is counted (bytes only) and checked readable now, but decoded as the run pulls it.
    const total = yield* countPrompts(options.input)
    const items = streamPrompts(options.input)
    const identity = yield* Either.mapLeft(
      Identity.fromContract(contract, catalog, {
        promptVersion: "1",
        parserVersion: "text",
        applicationVersion: "rein-cli/0.1.0"
      }),
      (e) => new InputError({ message: inFile(options.contract, e.message) })
    )

    // A fresh run never appends to someone's file by accident: resume it, or overwrite it, explicitly.
    const existing = yield* fs.stat(options.out).pipe(
      Effect.flatMap((info) =>
        info.type === "Directory"
          ? Effect.fail(new InputError({ message: `--out ${options.out}: a directory, not a file` }))
          : Effect.succeed(Number(info.size))
      ),
      Effect.catchTags({
        SystemError: (e) =>
          e.reason === "NotFound"
            ? Effect.succeed(0)
            : Effect.fail(new InputError({ message: `--out ${options.out}: ${describeReadError(e)}` })),
        BadArgument: (e) => Effect.fail(new InputError({ message: `--out ${options.out}: ${describeReadError(e)}` }))
      })
    )
    if (existing > 0 && options.resume === undefined && !options.overwrite) {
      return yield* new InputError({
        message: `${options.out} already exists: pass --resume to continue it, or --overwrite to start again`
      })
    }
    yield* ensureParent(options.out)
    // One run writes one artifact at a time: a second run on it fails here, naming it (released with the scope).
    yield* ArtifactLock.acquire(options.out)

    const started = yield* Clock.currentTimeMillis
    const providers = yield* forCalls(catalog, {
      scenario,
      originMillis: started,
      baseUrl: Option.fromNullable(options.baseUrl)
    })
    const recording = yield* Recording.open(options.record, options.fileMode)
    const display = yield* Progress.make(total, options.progress)
    const store = JsonlStore.layer({
      path: options.out,
      overwrite: options.overwrite && options.resume === undefined,
      mode: options.fileMode
    })
      .pipe(Layer.provide(Layer.succeed(FileSystem.FileSystem, fs)))
    // Resumed, the artifact is read once, by the run's open, which also says whether it was written under
    // another identity.
    const artifacts = options.resume !== undefined && existing > 0
      ? Drift.resumedWithWarning(
        ArtifactStore.ArtifactStore,
        store,
        { out: options.out, identity, fingerprint: Fingerprint.identity(identity) },
        Console.error
      )
      : store

    const summary: Batch.Summary<PromptItem> = yield* Checkpoint.run(items, {
      contract,
      guardrails,
      request: (item: PromptItem) => request(item),
      itemId: (item: PromptItem) => item.id,
      progress: display.progress,
      onEvent: (event: Events.Event) => display.onEvent(event),
      checkpoint: { identity, resume: options.resume ?? "none" }
    }).pipe(
      Effect.provide(Layer.merge(
        Rein.layer({ catalog, providers, tokenizer, health: false }),
        Layer.merge(
          Breakers.layer(healthOf(scenario), display.transitions, Checkpoint.unsafeItemId),
          artifacts
        )
      )),
      Effect.provide(recording.context),
      Effect.onInterrupt(() =>
        Effect.flatMap(
          Interrupt.reusable(fs, options.out),
          (saved) =>
            display.interrupted(Interrupt.message({ out: options.out, saved, total }, {
              resumeWith: options.resumeWith,
              environment: options.environmentRead?.(catalog.endpoints.map((e) => e.provider))
            }))
        )
      ),
      Effect.mapError((e) =>
        e._tag === "InputError" ? e : new InputError({
          message: e._tag === "ArtifactError"
            ? Drift.artifactMessage(options.out, e)
            : `${options.input}: ${e.message}`
        })
      )
    )
    yield* display.finish
    const ended = yield* Clock.currentTimeMillis

    // No prototype: an endpoint called `constructor` is counted like any other.
    const byEndpoint: Record<string, number> = Object.create(null)
    const durations: Array<number> = []
    for (const r of summary.results) {
      if (r._tag === "Succeeded") {
        byEndpoint[r.completion.endpoint] = (byEndpoint[r.completion.endpoint] ?? 0) + 1
        durations.push(r.durationMillis)
      } else if (r._tag === "Failed") durations.push(r.durationMillis)
    }
    const recordError = (yield* recording.notWritten) ?? null
    return {
      ok: summary.termination.kind === "completed" && summary.stats.failed === 0 && recordError === null,
      out: options.out,
      items: total,
      termination: summary.termination,
      stats: summary.stats,
      byEndpoint,
      latency: {
        p50: quantile(durations, 0.5),
        p90: quantile(durations, 0.9),
        p99: quantile(durations, 0.99),
        max: quantile(durations, 1)
      },
      elapsedMillis: ended - started,
      breakers: yield* display.breakers,
      record: recordError === null ? options.record ?? null : null,
      recordError
    }
  }))

// `rein batch --store URL --run ID`: the run in PostgreSQL, started or joined, and this process one of its workers.
const onStore = (
  store: string,
  o: {
    readonly run: Option.Option<string>
    readonly input: string
    readonly catalog: string
    readonly contract: string
    readonly resume: boolean
    readonly resumePolicy: Option.Option<Resume.Policy>
    readonly guardrails: Option.Option<string>
    readonly scenario: Option.Option<string>
    readonly baseUrl: Option.Option<string>
    readonly json: boolean
  },
  flags: Readonly<Record<string, unknown>>,
  budget: PgBatchRun.Budget | undefined
) =>
  Effect.gen(function*() {
    if (Option.isNone(o.run)) return yield* new InputError({ message: "--store needs --run ID (the run's id)" })
    const file = Option.getOrUndefined(o.guardrails)
    const fromFile = file === undefined ? {} : yield* Effect.flatMap(
      readJson(file, "guardrails"),
      (json) =>
        isObject(json)
          ? Effect.succeed(json)
          : Effect.fail(new InputError({ message: `${file}: Expected a JSON object of guardrails` }))
    )
    const guardrails = yield* decodeGuardrails(fromFile, flags, file)
    const report = yield* Distributed.start({
      store,
      run: o.run.value,
      input: o.input,
      catalog: o.catalog,
      contract: o.contract,
      guardrails,
      budget,
      resume: o.resume ? Option.getOrElse(o.resumePolicy, () => "reuse-successes" as const) : "reuse-successes",
      scenario: Option.getOrUndefined(o.scenario),
      baseUrl: Option.getOrUndefined(o.baseUrl)
    }).pipe(Distributed.onInterruptRejoin(o.run.value))
    yield* Distributed.report(report, o.json)
  })

/**
 * The `rein batch` command.
 *
 * @example
 * ```ts
 * import { BatchCommand } from "@rein/cli"
 *
 * BatchCommand.command // rein batch --input prompts.jsonl --catalog C --contract K --out run.jsonl [--resume] …
 * ```
 * @since 0.1.0
 * @category commands
 */
export const command = Command.make(
  "batch",
  {
    input: Shared.file("input").pipe(
      Options.withDescription("Prompts, one per line: a JSON string, or { id, prompt, inputTokens?, maxOutputTokens? }")
    ),
    catalog: Shared.catalog,
    contract: Shared.contract,
    out: Shared.file("out").pipe(
      Options.withDescription("The artifact (JSONL): one record per finished item"),
      Options.optional
    ),
    store: Distributed.store.pipe(Options.optional),
    run: Distributed.run.pipe(Options.optional),
    resume: Options.boolean("resume").pipe(
      Options.withDescription("Continue an existing artifact, reusing its successes (see --resume-policy)")
    ),
    resumePolicy: Shared.choice("resume-policy", ["reuse-successes", "reuse-all", "none"]).pipe(
      Options.withDescription("What --resume reuses: successes (default), all terminal records, or nothing"),
      Options.optional
    ),
    overwrite: Options.boolean("overwrite").pipe(
      Options.withDescription("Start a fresh artifact even if --out exists")
    ),
    fileMode: Shared.fileMode,
    record: Shared.record,
    guardrails: Shared.file("guardrails").pipe(
      Options.withDescription("Guardrails as JSON (flags override its fields)"),
      Options.optional
    ),
    concurrency: Shared.number("concurrency", "a positive integer").pipe(
      Options.withDescription("Items at once (default 8)"),
      Options.optional
    ),
    itemDeadline: Options.text("item-deadline").pipe(
      Options.withPseudoName("DURATION"),
      Options.withDescription("Deadline of each item, e.g. \"30 seconds\""),
      Options.optional
    ),
    batchDeadline: Options.text("batch-deadline").pipe(
      Options.withPseudoName("DURATION"),
      Options.withDescription("Deadline of the whole run, e.g. \"10 minutes\""),
      Options.optional
    ),
    maxTotalTokens: Shared.number("max-total-tokens", "a number").pipe(
      Options.withDescription("Soft cap on tokens (with --store: the whole run's, for every worker)"),
      Options.optional
    ),
    maxTotalCost: Shared.number("max-total-cost", "a number").pipe(
      Options.withDescription("Soft cap on cost (with --store: the whole run's, for every worker)"),
      Options.optional
    ),
    rpm: Shared.number("rpm", "a number").pipe(Options.withDescription("Attempts per minute"), Options.optional),
    tpm: Shared.number("tpm", "a number").pipe(Options.withDescription("Tokens per minute"), Options.optional),
    ...RunCaps.budgetOptions,
    abortOn: Options.text("abort-on").pipe(
      Options.withPseudoName("CATEGORY"),
      Options.withDescription("A failure category that stops the run (repeatable), e.g. authentication"),
      Options.repeated,
      // Shown as optional in the usage line (`[--abort-on text...]`): none is the default.
      Options.optional
    ),
    abortMode: Shared.choice("abort-mode", ["drain-active", "cancel-active"]).pipe(
      Options.withDescription("On a stop: let calls in flight finish, or cancel them"),
      Options.optional
    ),
    rateLimitRetries: Shared.number("rate-limit-retries", "a non-negative integer").pipe(
      Options.withDescription("429 retries per endpoint, apart from the contract's retries"),
      Options.optional
    ),
    order: Shared.choice("order", ["completion", "submission"]).pipe(
      Options.withDescription("Order of results"),
      Options.optional
    ),
    dryRun: Options.boolean("dry-run").pipe(Options.withDescription("Walk the input without calling any provider")),
    scenario: Shared.scenario,
    baseUrl: Shared.baseUrl,
    otlp: Telemetry.otlp,
    metrics: Telemetry.printMetrics,
    json: Shared.json
  },
  (o): Effect.Effect<void, InputError, FileSystem.FileSystem | ExitStatus> =>
    Effect.gen(function*() {
      const flags: Record<string, unknown> = {}
      const set = (field: string, value: Option.Option<unknown>) => {
        if (Option.isSome(value)) flags[field] = value.value
      }
      set("concurrency", o.concurrency)
      set("itemDeadline", o.itemDeadline)
      set("batchDeadline", o.batchDeadline)
      set("maxTotalTokens", o.maxTotalTokens)
      set("maxTotalCost", o.maxTotalCost)
      set("requestsPerMinute", o.rpm)
      set("tokensPerMinute", o.tpm)
      set("abortMode", o.abortMode)
      set("rateLimitRetries", o.rateLimitRetries)
      set("order", o.order)
      const abortOn = Option.getOrElse(o.abortOn, () => [])
      if (abortOn.length > 0) flags.abortOn = abortOn
      if (o.dryRun) flags.dryRun = true
      const budget = yield* RunCaps.decodeBudget({ cost: o.budgetCost, tokens: o.budgetTokens, calls: o.budgetCalls })
      if (Option.isSome(o.store)) {
        if (Option.isSome(o.record)) {
          return yield* new InputError({
            message: "--record journals a run of this process (--out FILE); with --store, leave --record out"
          })
        }
        return yield* onStore(o.store.value, o, flags, budget)
      }
      if (budget !== undefined) {
        return yield* new InputError({
          message: "--budget-cost, --budget-tokens and --budget-calls are a run's shared budget: they need --store " +
            "(a single process's caps are --max-total-cost and --max-total-tokens)"
        })
      }
      if (Option.isNone(o.out)) return yield* new InputError({ message: "pass --out FILE (or --store URL --run ID)" })
      const report = yield* execute({
        input: o.input,
        catalog: o.catalog,
        contract: o.contract,
        out: o.out.value,
        resume: o.resume ? Option.getOrElse(o.resumePolicy, () => "reuse-successes" as const) : undefined,
        overwrite: o.overwrite,
        fileMode: yield* Shared.decodeFileMode(o.fileMode),
        record: Option.getOrUndefined(o.record),
        guardrailsFile: Option.getOrUndefined(o.guardrails),
        guardrails: flags,
        scenario: Option.getOrUndefined(o.scenario),
        baseUrl: Option.getOrUndefined(o.baseUrl),
        progress: o.json ? "off" : process.stderr.isTTY === true ? "tty" : "plain",
        resumeWith: Interrupt.resumeCommand(process.argv, process.cwd(), process.env),
        environmentRead: (providers) =>
          Interrupt.environmentRead(
            { providers, baseUrlFlag: Option.isSome(o.baseUrl), otlpFlag: Option.isSome(o.otlp) },
            process.env
          )
      }).pipe(Telemetry.around(o.otlp, o.metrics))
      const { Termination } = yield* BatchLib.load
      const t = report.termination
      yield* Console.log(
        o.json ? json(report) : render(report, t.kind === "completed" ? undefined : Termination.fix(t))
      )
      yield* exitWith(report.ok ? ExitCode.ok : ExitCode.failed)
    })
).pipe(
  Command.withDescription(
    "Run every prompt of a JSONL file under the contract and guardrails, checkpointed to --out (resumable). " +
      "With --store URL --run ID the run lives in PostgreSQL and other processes join it (rein worker): the " +
      "session this command starts fixes the run's caps (--max-total-tokens, --max-total-cost, --rpm, --tpm, " +
      "--budget-cost, --budget-tokens, --budget-calls) for every worker, counted once for the whole run"
  )
)
