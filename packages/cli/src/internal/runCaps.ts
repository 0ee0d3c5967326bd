/**
 * The caps of a run shared through `--store`: where they come from and who may set them. A run's caps (the
 * soft caps `--max-total-tokens` / `--max-total-cost`, the rates `--rpm` / `--tpm`, the hard budget
 * `--budget-cost` / `--budget-tokens` / `--budget-calls`) are fixed by the `rein batch --store` that starts
 * the run's session, recorded on the run, and read from it by every worker; a process that joins may repeat
 * them, and one that asks for other caps is refused, naming the flag.
 *
 * @internal
 */
import { Options } from "@effect/cli"
import type { Guardrails } from "@rein/batch"
import type { PgBatchRun } from "@rein/postgres"
import { Effect, Either, Option, ParseResult, Schema } from "effect"
import { InputError } from "../InputError.js"
import * as Shared from "./options.js"
import * as Pg from "./pg.js"

/** A cap as one number, by the flag that sets it. */
type Flat = Readonly<Record<string, number | undefined>>

const FLAGS = [
  ["--max-total-tokens", (c: PgBatchRun.Caps) => c.maxTotalTokens],
  ["--max-total-cost", (c: PgBatchRun.Caps) => c.maxTotalCost],
  ["--rpm", (c: PgBatchRun.Caps) => c.requestsPerMinute],
  ["--tpm", (c: PgBatchRun.Caps) => c.tokensPerMinute],
  ["--budget-cost", (c: PgBatchRun.Caps) => c.budget?.cost],
  ["--budget-tokens", (c: PgBatchRun.Caps) => c.budget?.tokens],
  ["--budget-calls", (c: PgBatchRun.Caps) => c.budget?.calls]
] as const

const flatten = (caps: PgBatchRun.Caps): Flat => Object.fromEntries(FLAGS.map(([flag, of]) => [flag, of(caps)]))

/** The caps a process asks for: those of its guardrails and budget. @internal */
export const asked = (
  guardrails: Guardrails.Guardrails | undefined,
  budget: PgBatchRun.Budget | undefined
): PgBatchRun.Caps => ({
  maxTotalTokens: guardrails?.maxTotalTokens,
  maxTotalCost: guardrails?.maxTotalCost,
  requestsPerMinute: guardrails?.requestsPerMinute,
  tokensPerMinute: guardrails?.tokensPerMinute,
  budget
})

const show = (n: number | undefined) => n === undefined ? "none" : String(n)

/**
 * Refuses the caps a process asked for that are not the run's: a cap given must be the one on record (a
 * cap not given is the run's). One line per flag. @internal
 */
export const check = (
  runId: string,
  wanted: PgBatchRun.Caps,
  onRecord: PgBatchRun.Caps
): Either.Either<void, InputError> => {
  const mine = flatten(wanted)
  const theirs = flatten(onRecord)
  const lines = FLAGS.flatMap(([flag]) =>
    mine[flag] === undefined || mine[flag] === theirs[flag]
      ? []
      : [
        `${flag}: ${show(mine[flag])} asked, run ${JSON.stringify(runId)} has ${show(theirs[flag])}: ` +
        "a run's caps are fixed when its session starts (rein batch --store); pass the same, or none"
      ]
  )
  return lines.length === 0 ? Either.void : Either.left(new InputError({ message: lines.join("\n") }))
}

const BUDGET_FLAGS: Readonly<Record<string, string>> = {
  cost: "--budget-cost",
  tokens: "--budget-tokens",
  calls: "--budget-calls"
}

/**
 * One line per flag: its first issue. A flag's value is decoded against an optional field (a union with
 * `undefined`), whose second member would add "Expected undefined" for the same value.
 */
const budgetMessage = (issues: ReadonlyArray<ParseResult.ArrayFormatterIssue>): string => {
  const lines = new Map<string, string>()
  for (const issue of issues) {
    const field = String(issue.path[0] ?? "")
    if (!lines.has(field)) lines.set(field, `${BUDGET_FLAGS[field] ?? field}: ${issue.message}`)
  }
  return [...lines.values()].join("\n")
}

/**
 * The hard budget of `--budget-*` (`undefined`: none given); a bad value names its flag. Its schema is
 * `@rein/postgres`'s, loaded only when a flag is given (`pg.ts`). @internal
 */
export const decodeBudget = (flags: {
  readonly cost: Option.Option<number>
  readonly tokens: Option.Option<number>
  readonly calls: Option.Option<number>
}): Effect.Effect<PgBatchRun.Budget | undefined, InputError> => {
  const given: Record<string, number> = {}
  for (const [k, v] of Object.entries(flags)) if (Option.isSome(v)) given[k] = v.value
  if (Object.keys(given).length === 0) return Effect.succeed(undefined)
  return Effect.flatMap(Pg.load, ({ PgBatchRun }) =>
    Either.mapLeft(
      Schema.decodeUnknownEither(PgBatchRun.Budget)(given),
      (e) =>
        new InputError({
          message: budgetMessage(ParseResult.ArrayFormatter.formatErrorSync(e))
        })
    ))
}

/** `--budget-cost`, `--budget-tokens`, `--budget-calls`. @internal */
export const budgetOptions = {
  budgetCost: Shared.number("budget-cost", "a number").pipe(
    Options.withDescription(
      "Hard cost cap in dollars of a run shared through --store, for all its workers (set by rein batch --store)"
    ),
    Options.optional
  ),
  budgetTokens: Shared.number("budget-tokens", "a non-negative integer").pipe(
    Options.withDescription("Hard token cap of a run shared through --store, for all its workers"),
    Options.optional
  ),
  budgetCalls: Shared.number("budget-calls", "a non-negative integer").pipe(
    Options.withDescription("Hard cap on calls (attempts) of a run shared through --store, for all its workers"),
    Options.optional
  )
}

/** The flags of the run's soft caps and rates on `rein worker`: checked against the run's, never set by it. @internal */
export const workerOptions = {
  maxTotalTokens: Shared.number("max-total-tokens", "a number").pipe(
    Options.withDescription(
      "The run's soft token cap, if you repeat it: it must be the run's (set by rein batch --store)"
    ),
    Options.optional
  ),
  maxTotalCost: Shared.number("max-total-cost", "a number").pipe(
    Options.withDescription("The run's soft cost cap, if you repeat it: it must be the run's"),
    Options.optional
  ),
  rpm: Shared.number("rpm", "a number").pipe(
    Options.withDescription("The run's attempts per minute, if you repeat them: they must be the run's"),
    Options.optional
  ),
  tpm: Shared.number("tpm", "a number").pipe(
    Options.withDescription("The run's tokens per minute, if you repeat them: they must be the run's"),
    Options.optional
  ),
  ...budgetOptions
}
