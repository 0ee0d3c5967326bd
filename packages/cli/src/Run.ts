/**
 * `rein run`: one request under the contract, through `Rein.execute` — the built-in fake provider unless
 * the catalog names the real adapter — printing the outcome and every attempt, and recording the journal
 * when asked (`--record rec.jsonl`, appended: one line per request) for `rein replay` and `rein explain`.
 *
 * @since 0.1.0
 */
import { Command, Options } from "@effect/cli"
import * as FileSystem from "@effect/platform/FileSystem"
import type { Outcome } from "@rein/core"
import { Rein } from "@rein/core"
import { Clock, Console, Effect, Either, Layer, Option } from "effect"
import * as ExitCode from "./ExitCode.js"
import { InputError } from "./InputError.js"
import { loadScenario } from "./internal/againstCatalog.js"
import { attemptsTable } from "./internal/attempts.js"
import { loadCatalogAndContract } from "./internal/files.js"
import { json, num } from "./internal/format.js"
import * as Shared from "./internal/options.js"
import { printable } from "./internal/printable.js"
import { forCalls } from "./internal/providers.js"
import * as Recording from "./internal/record.js"
import type { ExitStatus } from "./internal/status.js"
import { exitWith } from "./internal/status.js"
import * as Telemetry from "./internal/telemetry.js"
import { tokenizer } from "./internal/tokens.js"
import * as Scenario from "./Scenario.js"

/**
 * What `rein run` reports (`--json`). Never the prompt; the answer's text only on success.
 *
 * @example
 * ```ts
 * import { Run } from "@rein/cli"
 *
 * const attempts = (r: Run.RunReport) => r.attempts.length
 * ```
 * @since 0.1.0
 * @category models
 */
export interface RunReport {
  readonly outcome: string
  readonly ok: boolean
  readonly endpoint: string | null
  readonly text: string | null
  readonly usage: Outcome.Completion["usage"] | null
  readonly cost: number | "unknown" | null
  readonly simulated: boolean | null
  readonly reason: string | null
  readonly attempts: ReadonlyArray<Outcome.AttemptRecord>
  readonly record: string | null
  /**
   * Why `--record` was asked for and the request's record was not written (a full disk: `a record could not be
   * written to rec.jsonl: no space left on the device`); `null` otherwise. The command then exits 1.
   */
  readonly recordError?: string | null | undefined
  /**
   * The outcome's request id (`Outcome.RequestId`): with `--record`, the id of its journal record (what
   * `rein explain` shows as `request …`); `null` when nothing was recorded.
   */
  readonly requestId: string | null
  /**
   * The breakers that refused the candidates left (`PlanExhausted`: which endpoint, its state, and in how many
   * milliseconds it may half-open); absent when no breaker refused one.
   */
  readonly breakers?: ReadonlyArray<Outcome.BreakerRefusal> | undefined
}

/**
 * A run's report from the executor's result.
 *
 * @example
 * ```ts
 * import { Either } from "effect"
 * import type { Outcome } from "@rein/core"
 * import { Run } from "@rein/cli"
 *
 * declare const result: Either.Either<Outcome.Completion, Outcome.Terminal>
 * const report = Run.report(result, null)
 * ```
 * @since 0.1.0
 * @category running
 */
export const report = (
  result: Either.Either<Outcome.Completion, Outcome.Terminal>,
  record: string | null,
  recordError: string | null = null
): RunReport =>
  Either.match(result, {
    onRight: (c) => ({
      outcome: "Completion",
      ok: true,
      endpoint: c.endpoint,
      text: c.text,
      usage: c.usage,
      cost: c.cost,
      simulated: c.simulated,
      reason: null,
      attempts: c.attempts,
      record,
      recordError,
      requestId: c.requestId ?? null
    }),
    onLeft: (e) => ({
      outcome: e._tag,
      ok: false,
      endpoint: null,
      text: null,
      usage: null,
      cost: null,
      simulated: null,
      reason: e._tag === "DeadlineExceeded"
        ? `${e.phase}: ${e.reason}`
        : e._tag === "BudgetExhausted"
        ? `${e.resource}: ${e.reason}`
        : e._tag === "Refused"
        ? `${e.refusal}: ${e.reason}`
        : e.reason,
      attempts: e.attempts,
      record,
      recordError,
      requestId: e.requestId ?? null,
      ...(e._tag === "PlanExhausted" && e.breakers !== undefined ? { breakers: e.breakers } : {})
    })
  })

/** `refused by the breaker of fake/a: open, may half-open in 3000 ms`. */
const breakerLine = (b: Outcome.BreakerRefusal): string =>
  `refused by the breaker of ${b.endpoint}: ${
    b.state === "open"
      ? `open, may half-open in ${num(Math.ceil(b.halfOpensInMillis))} ms`
      : "half-open, every probe slot taken"
  }`

/**
 * Renders a run for people.
 *
 * @example
 * ```ts
 * import { Run } from "@rein/cli"
 *
 * declare const report: Run.RunReport
 * console.log(Run.render(report))
 * ```
 * @since 0.1.0
 * @category rendering
 */
export const render = (r: RunReport): string => {
  const lines: Array<string> = []
  if (r.ok) {
    const usage = r.usage === null || r.usage === "unknown"
      ? "usage unknown"
      : `${r.usage.inputTokens} in / ${r.usage.outputTokens} out`
    lines.push(
      `outcome: success on ${r.endpoint}${r.simulated === true ? " (simulated)" : ""}; ${usage}; cost ${
        r.cost === null || r.cost === "unknown" ? "unknown" : num(r.cost)
      }`
    )
    // The provider's text, shown on a terminal: its lines kept, every escape sequence and control escaped.
    lines.push(`answer: ${printable(r.text ?? "", true)}`)
  } else {
    lines.push(`outcome: ${r.outcome}: ${r.reason ?? ""}`)
    for (const b of r.breakers ?? []) lines.push(breakerLine(b))
  }
  lines.push(`attempts: ${r.attempts.length}`)
  if (r.attempts.length > 0) lines.push(attemptsTable(r.attempts))
  if (r.recordError !== undefined && r.recordError !== null) {
    lines.push(`not recorded: ${r.recordError}`)
  } else if (r.record !== null) {
    const as = r.requestId === null ? "" : ` as request ${r.requestId}`
    lines.push(`recorded to ${r.record}${as} (rein replay / rein explain)`)
  } else if (r.requestId !== null) lines.push(`request ${r.requestId}`)
  return lines.join("\n")
}

/**
 * What to run.
 *
 * @example
 * ```ts
 * import { Run } from "@rein/cli"
 *
 * const options: Run.RunOptions = { catalog: "catalog.json", contract: "contract.json", prompt: "Hello", record: "rec.jsonl" }
 * ```
 * @since 0.1.0
 * @category models
 */
export interface RunOptions {
  readonly catalog: string
  readonly contract: string
  readonly prompt: string
  readonly system?: string | undefined
  readonly inputTokens?: number | undefined
  readonly maxOutputTokens?: number | undefined
  readonly record?: string | undefined
  /** The mode of a record file the run creates (default 0600). */
  readonly fileMode?: number | undefined
  readonly scenario?: string | undefined
  readonly baseUrl?: string | undefined
}

const positive = (flag: string, n: number | undefined): Effect.Effect<void, InputError> =>
  n === undefined || (Number.isInteger(n) && n > 0)
    ? Effect.void
    : Effect.fail(new InputError({ message: `${flag}: Expected a positive integer, actual ${n}` }))

/**
 * Executes one request as `rein run` does.
 *
 * @example
 * ```ts
 * import { Run } from "@rein/cli"
 *
 * const report = Run.execute({ catalog: "examples/catalog.json", contract: "examples/contract.json", prompt: "Hello" })
 * ```
 * @since 0.1.0
 * @category running
 */
export const execute = (options: RunOptions): Effect.Effect<RunReport, InputError, FileSystem.FileSystem> =>
  Effect.scoped(Effect.gen(function*() {
    yield* positive("--input-tokens", options.inputTokens)
    yield* positive("--max-output-tokens", options.maxOutputTokens)
    const { catalog, contract } = yield* loadCatalogAndContract(options.catalog, options.contract)
    const scenario = yield* loadScenario(options.scenario, catalog)
    const originMillis = yield* Clock.currentTimeMillis
    const providers = yield* forCalls(catalog, {
      scenario,
      originMillis,
      baseUrl: Option.fromNullable(options.baseUrl)
    })
    const rein = Rein.layer({
      catalog,
      providers,
      tokenizer,
      health: scenario === undefined ? {} : Scenario.healthConfig(scenario)
    }).pipe(Layer.mapError((e) => new InputError({ message: `scenario health: ${e.message}` })))
    const recording = yield* Recording.open(options.record, options.fileMode)
    const result = yield* Rein.execute({
      prompt: options.prompt,
      system: options.system,
      inputTokens: options.inputTokens,
      maxOutputTokens: options.maxOutputTokens
    }, contract).pipe(
      Effect.either,
      Effect.provide(rein),
      Effect.provide(recording.context)
    )
    const notWritten = yield* recording.notWritten
    return report(result, notWritten === undefined ? options.record ?? null : null, notWritten ?? null)
  }))

/**
 * The `rein run` command.
 *
 * @example
 * ```ts
 * import { Run } from "@rein/cli"
 *
 * Run.command // rein run --catalog C --contract K --prompt "…" [--record rec.jsonl] [--json]
 * ```
 * @since 0.1.0
 * @category commands
 */
export const command = Command.make(
  "run",
  {
    catalog: Shared.catalog,
    contract: Shared.contract,
    prompt: Options.text("prompt").pipe(Options.withDescription("The prompt (never recorded)")),
    system: Options.text("system").pipe(Options.withDescription("A system prompt"), Options.optional),
    inputTokens: Shared.number("input-tokens", "a positive integer").pipe(
      Options.withDescription("An upper bound of the prompt's tokens (default: its UTF-8 bytes + 16)"),
      Options.optional
    ),
    maxOutputTokens: Shared.number("max-output-tokens", "a positive integer").pipe(
      Options.withDescription("The output bound (default: the endpoint's maximum)"),
      Options.optional
    ),
    record: Shared.record,
    fileMode: Shared.fileMode,
    scenario: Shared.scenario,
    baseUrl: Shared.baseUrl,
    otlp: Telemetry.otlp,
    json: Shared.json
  },
  (o): Effect.Effect<void, InputError, FileSystem.FileSystem | ExitStatus> =>
    Effect.gen(function*() {
      const r = yield* execute({
        catalog: o.catalog,
        contract: o.contract,
        prompt: o.prompt,
        system: Option.getOrUndefined(o.system),
        inputTokens: Option.getOrUndefined(o.inputTokens),
        maxOutputTokens: Option.getOrUndefined(o.maxOutputTokens),
        record: Option.getOrUndefined(o.record),
        fileMode: yield* Shared.decodeFileMode(o.fileMode),
        scenario: Option.getOrUndefined(o.scenario),
        baseUrl: Option.getOrUndefined(o.baseUrl)
      }).pipe(Telemetry.around(o.otlp, false))
      yield* Console.log(o.json ? json(r) : render(r))
      yield* exitWith(r.ok && (r.recordError ?? null) === null ? ExitCode.ok : ExitCode.failed)
    })
).pipe(Command.withDescription("Execute one request under the contract; print the outcome and every attempt"))
