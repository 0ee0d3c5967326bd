/**
 * `rein plan`: what the planner would decide before the first attempt, without calling anything. For
 * each candidate in the contract's order, all eleven legality predicates with their verdicts and the
 * numbers behind them (worst-case cost against the budget left, context window against the tokens, …),
 * then the order in which the legal candidates would be tried and the first decision.
 *
 * The snapshot is the one the executor takes at the start of a request: the whole deadline remaining, the
 * contract's budget untouched, no attempts, no failure, no breaker state (a fresh process).
 *
 * @since 0.1.0
 */
import { Command, Options } from "@effect/cli"
import type { FileSystem } from "@effect/platform"
import type { Catalog, Contract, Provider } from "@rein/core"
import { Execute, Planner } from "@rein/core"
import { Console, Duration, Effect, Option } from "effect"
import * as ExitCode from "./ExitCode.js"
import { InputError } from "./InputError.js"
import { loadCatalogAndContract, readDecoded } from "./internal/files.js"
import { json, num, table } from "./internal/format.js"
import * as Shared from "./internal/options.js"
import { forPlanning } from "./internal/providers.js"
import { RequestFile } from "./internal/request.js"
import { decodeWith } from "./internal/schema.js"
import type { ExitStatus } from "./internal/status.js"
import { exitWith } from "./internal/status.js"
import { tokenizer } from "./internal/tokens.js"

/**
 * One predicate's verdict, with the numbers behind it whether it holds or not.
 *
 * @example
 * ```ts
 * import { Plan } from "@rein/cli"
 *
 * const v: Plan.PredicateVerdict = { predicate: "budget", holds: true, detail: "worst-case cost 0.001 ≤ 0.1 left" }
 * ```
 * @since 0.1.0
 * @category models
 */
export interface PredicateVerdict {
  readonly predicate: Planner.Predicate
  readonly holds: boolean
  readonly detail: string
}

/**
 * One candidate's plan.
 *
 * @example
 * ```ts
 * import { Plan } from "@rein/cli"
 *
 * const failing = (c: Plan.CandidatePlan) => c.predicates.filter((p) => !p.holds)
 * ```
 * @since 0.1.0
 * @category models
 */
export interface CandidatePlan {
  readonly endpoint: string
  readonly legal: boolean
  /** Its place in the order of trial (1-based), or null when it would not be tried. */
  readonly order: number | null
  readonly attemptsAllowed: number
  readonly reservation: Planner.Reservation
  readonly predicates: ReadonlyArray<PredicateVerdict>
}

/**
 * What `rein plan` reports.
 *
 * @example
 * ```ts
 * import { Plan } from "@rein/cli"
 *
 * const firstTried = (r: Plan.PlanReport) => r.order[0]
 * ```
 * @since 0.1.0
 * @category models
 */
export interface PlanReport {
  readonly request: {
    readonly inputTokens: number | null
    readonly maxOutputTokens: number | null
    /** Where the request's shape came from: a `--request` file, or the default when none was given. */
    readonly source?: "file" | "default" | undefined
  }
  readonly deadlineMillis: number
  readonly attemptTimeoutMillis: number
  readonly budget: Planner.Snapshot["budget"]
  readonly candidates: ReadonlyArray<CandidatePlan>
  /** The legal candidates, in the order they would be tried. */
  readonly order: ReadonlyArray<string>
  readonly decision:
    | {
      readonly _tag: "Attempt"
      readonly endpoint: string
      readonly timeoutMillis: number
      readonly binding: "attempt" | "deadline"
    }
    | { readonly _tag: "Stop"; readonly outcome: string; readonly reason: string }
}

/**
 * The snapshot before the first attempt of a request under `contract`.
 *
 * @example
 * ```ts
 * import { Contract } from "@rein/core"
 * import { Plan } from "@rein/cli"
 *
 * const snapshot = Plan.initialSnapshot(Contract.make({ deadline: "30 seconds", candidates: ["a"] }))
 * // { elapsedMillis: 0, remainingMillis: 30000, attempts: 0, … }
 * ```
 * @since 0.1.0
 * @category planning
 */
export const initialSnapshot = (contract: Contract.Contract): Planner.Snapshot => ({
  elapsedMillis: 0,
  remainingMillis: Duration.toMillis(contract.deadline),
  budget: {
    cost: contract.budget.cost ?? null,
    tokens: contract.budget.tokens ?? null,
    calls: contract.budget.calls ?? null
  },
  attempts: 0,
  current: null,
  triesOnCurrent: 0,
  rateLimitedOnCurrent: 0,
  last: null,
  health: {},
  retryTokens: { global: null, endpoints: {} },
  committed: false,
  jitter: null
})

const holdsDetail = (
  p: Planner.Predicate,
  spec: Planner.Spec,
  snap: Planner.Snapshot,
  c: Planner.CandidateSpec,
  index: number,
  reservation: Planner.Reservation
): string => {
  const maxOut = spec.maxOutputTokens ?? c.maxOutputTokens
  switch (p) {
    case "listed":
      return `#${index + 1} of the contract's candidates, in the catalog, provider registered`
    case "capable": {
      const needs = (["tools", "structuredOutput", "streaming"] as const).filter((k) => spec.requires[k])
      const window = spec.inputTokens === null
        ? `max output ${maxOut} ≤ ${c.maxOutputTokens}; window ${c.contextWindow} unchecked (no input bound)`
        : `window ${c.contextWindow} ≥ ${spec.inputTokens} input + ${maxOut} output`
      return needs.length === 0 ? window : `${window}; has ${needs.join(", ")}`
    }
    case "mode":
      return `mode ${spec.mode}`
    case "simulation":
      return c.simulated ? "simulated, and the contract allows simulation" : "not simulated"
    case "deadline":
      return `${num(snap.remainingMillis)} ms remaining > ${num(spec.minAttemptMillis)} ms minimum attempt`
    case "budget": {
      const b = snap.budget
      if (b.cost === null && b.tokens === null) return "no cost or token limit"
      if (reservation.cost === null) {
        return "unchecked without an input bound (rein run bounds it from the prompt; without one it refuses)"
      }
      const parts = [
        b.cost === null ? null : `worst-case cost ${num(reservation.cost)} ≤ ${num(b.cost)} left`,
        b.tokens === null || reservation.tokens === null
          ? null
          : `worst-case tokens ${reservation.tokens} ≤ ${b.tokens} left`
      ].filter((s) => s !== null)
      return parts.join("; ")
    }
    case "calls":
      return snap.budget.calls === null ? "no call cap" : `${snap.budget.calls} calls left`
    case "retryBudget":
      return "a first attempt needs no retry token"
    case "health":
      return "breaker closed (no failures seen yet)"
    case "failureAllows":
      return "no failure yet"
    case "uncommitted":
      return "nothing streamed yet"
  }
}

/**
 * Plans a request: every candidate's verdicts with numbers, the order of trial, the first decision.
 *
 * @example
 * ```ts
 * import { Catalog, Contract } from "@rein/core"
 * import { Plan } from "@rein/cli"
 *
 * declare const catalog: Catalog.Catalog
 * declare const contract: Contract.Contract
 * const report = Plan.make(catalog, contract, { inputTokens: 900, maxOutputTokens: 400 })
 * console.log(Plan.render(report))
 * ```
 * @since 0.1.0
 * @category running
 */
export const make = (
  catalog: Catalog.Catalog,
  contract: Contract.Contract,
  request: PlanReport["request"],
  providers: ReadonlyMap<string, Provider.Provider> = forPlanning(catalog)
): PlanReport => {
  const spec = Execute.makeSpec(contract, catalog.byId, providers, request.inputTokens, request.maxOutputTokens)
  const snapshot = initialSnapshot(contract)
  const decision = Planner.decide(spec, snapshot)
  const legal = decision.candidates.filter((c) => c.legal).map((c) => c.endpoint)
  const candidates = spec.candidates.map((c, i): CandidatePlan => {
    const verdict = decision.candidates.find((v) => v.endpoint === c.id)
    const reservation = Planner.reservationFor(spec, c)
    const position = legal.indexOf(c.id)
    return {
      endpoint: c.id,
      legal: verdict?.legal ?? false,
      order: position < 0 ? null : position + 1,
      attemptsAllowed: 1 + spec.retry.perEndpoint,
      reservation,
      predicates: Planner.predicates.map((p): PredicateVerdict => {
        const v = verdict?.verdicts[p] ?? "not evaluated"
        return v === true
          ? { predicate: p, holds: true, detail: holdsDetail(p, spec, snapshot, c, i, reservation) }
          : { predicate: p, holds: false, detail: v }
      })
    }
  })
  return {
    request,
    deadlineMillis: snapshot.remainingMillis,
    attemptTimeoutMillis: spec.attemptTimeoutMillis,
    budget: snapshot.budget,
    candidates,
    order: legal,
    decision: decision._tag === "Attempt"
      ? {
        _tag: "Attempt",
        endpoint: decision.endpoint,
        timeoutMillis: decision.timeoutMillis,
        binding: decision.binding
      }
      : { _tag: "Stop", outcome: decision.outcome, reason: decision.reason }
  }
}

const budgetText = (b: Planner.Snapshot["budget"]): string => {
  const parts = [
    b.cost === null ? null : `cost ${num(b.cost)}`,
    b.tokens === null ? null : `${b.tokens} tokens`,
    b.calls === null ? null : `${b.calls} calls`
  ].filter((p) => p !== null)
  return parts.length === 0 ? "unlimited" : parts.join(", ")
}

/**
 * Renders a plan for people.
 *
 * @example
 * ```ts
 * import { Plan } from "@rein/cli"
 *
 * declare const report: Plan.PlanReport
 * console.log(Plan.render(report))
 * ```
 * @since 0.1.0
 * @category rendering
 */
export const render = (report: PlanReport): string => {
  const r = report.request
  const lines: Array<string> = [
    `request: ${r.inputTokens === null ? "no input bound" : `${r.inputTokens} input tokens`}, ${
      r.maxOutputTokens === null ? "max output per endpoint" : `${r.maxOutputTokens} max output tokens`
    }${r.source === "default" ? " (the default: give yours with --request, e.g. examples/request.json)" : ""}`,
    `deadline ${num(report.deadlineMillis)} ms, attempt timeout ${num(report.attemptTimeoutMillis)} ms, budget ${
      budgetText(report.budget)
    }`,
    ""
  ]
  for (const c of report.candidates) {
    const head = c.legal ? `#${c.order} ${c.endpoint}: legal` : `${c.endpoint}: not legal`
    const reserve = c.reservation.cost === null
      ? "no reservation (no input bound)"
      : `reserves cost ${num(c.reservation.cost)} / ${c.reservation.tokens} tokens per attempt`
    lines.push(`${head} — ${reserve}; up to ${c.attemptsAllowed} attempts`)
    lines.push(table(c.predicates.map((p) => [p.holds ? "✓" : "✗", p.predicate, p.detail]), "  "))
    lines.push("")
  }
  lines.push(`order of trial: ${report.order.length === 0 ? "none" : report.order.join(" → ")}`)
  const d = report.decision
  lines.push(
    d._tag === "Attempt"
      ? `first decision: attempt ${d.endpoint} with a ${num(d.timeoutMillis)} ms timeout (${
        d.binding === "attempt" ? "the attempt timeout" : "the remaining deadline"
      })`
      : `first decision: stop with ${d.outcome}: ${d.reason}`
  )
  return lines.join("\n")
}

const decodeRequest = decodeWith(RequestFile)

/**
 * The request `rein plan` plans without `--request`: the shape of `examples/request.json` (900 input tokens,
 * 400 output tokens), so that the budget and window predicates are checked with numbers, not left unchecked.
 *
 * @example
 * ```ts
 * import { Plan } from "@rein/cli"
 *
 * Plan.defaultRequest // { inputTokens: 900, maxOutputTokens: 400 }
 * ```
 * @since 0.1.0
 * @category request
 */
export const defaultRequest = { inputTokens: 900, maxOutputTokens: 400 } as const

/**
 * Loads the catalog, contract and optional request file, and plans.
 *
 * @example
 * ```ts
 * import { Plan } from "@rein/cli"
 *
 * const report = Plan.fromFiles({ catalog: "examples/catalog.json", contract: "examples/contract.json" })
 * ```
 * @since 0.1.0
 * @category running
 */
export const fromFiles = (files: {
  readonly catalog: string
  readonly contract: string
  readonly request?: string | undefined
}): Effect.Effect<PlanReport, InputError, FileSystem.FileSystem> =>
  Effect.gen(function*() {
    const { catalog, contract } = yield* loadCatalogAndContract(files.catalog, files.contract)
    if (files.request === undefined) {
      return make(catalog, contract, { ...defaultRequest, source: "default" })
    }
    const request = yield* readDecoded(files.request, "request", decodeRequest)
    const inputTokens = request.inputTokens ??
      (request.prompt === undefined ? null : tokenizer({ prompt: request.prompt, system: request.system }))
    return make(catalog, contract, { inputTokens, maxOutputTokens: request.maxOutputTokens ?? null, source: "file" })
  })

/**
 * The `rein plan` command.
 *
 * @example
 * ```ts
 * import { Plan } from "@rein/cli"
 *
 * Plan.command // rein plan --catalog C --contract K [--request R] [--json]
 * ```
 * @since 0.1.0
 * @category commands
 */
export const command = Command.make(
  "plan",
  {
    catalog: Shared.catalog,
    contract: Shared.contract,
    request: Shared.file("request").pipe(
      Options.withDescription(
        "A request (JSON): { inputTokens, maxOutputTokens } or { prompt } (default 900 input, 400 output tokens; " +
          "see examples/request.json)"
      ),
      Options.optional
    ),
    json: Shared.json
  },
  (o): Effect.Effect<void, InputError, FileSystem.FileSystem | ExitStatus> =>
    Effect.gen(function*() {
      const report = yield* fromFiles({
        catalog: o.catalog,
        contract: o.contract,
        request: Option.getOrUndefined(o.request)
      })
      yield* Console.log(o.json ? json(report) : render(report))
      yield* exitWith(ExitCode.ok)
    })
).pipe(Command.withDescription("Show each candidate's legality verdicts with their numbers and the order of trial"))
