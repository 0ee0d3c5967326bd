/**
 * The words of refusals that name their fix.
 *
 * @internal
 */
import type { Contract } from "../Contract.js"
import type { FailureKind, Rule } from "../Failure.js"
import { defaultTable } from "../Failure.js"
import { describe } from "./decode.js"

/**
 * Why a request with a hard cost or token budget and no input-token bound is refused, and the three ways
 * out: a bound on the request, a tokenizer that counts its prompt, or no cost or token limit.
 *
 * @internal
 */
export const noInputBound = (budget: Contract["budget"]): string => {
  const which = budget.cost !== undefined && budget.tokens !== undefined
    ? "cost and token budgets (budget.cost, budget.tokens) need"
    : budget.cost !== undefined
    ? "cost budget (budget.cost) needs"
    : "token budget (budget.tokens) needs"
  return `the contract's hard ${which} an upper bound on the request's input tokens, and it has none ` +
    "(fail closed: the worst case cannot be reserved): give the request `inputTokens`, or a tokenizer that " +
    "counts its prompt (`Rein.layer({ tokenizer })`; with `ReinLanguageModel.layer`, its `inputTokens` option " +
    "or a model's `Tokenizer` that can count the prompt), or limit only `calls`"
}

/**
 * Why an effectful request is refused, and the two ways out.
 *
 * @internal
 */
export const effectfulMode = "the contract's mode is \"effectful\", and Rein does not retry effectful operations: " +
  "dispatch the call through a durable ledger (`@rein/ledger`), or give the contract `mode: \"read-only\"` or " +
  "`\"advisory\"` if the call changes nothing"

/**
 * Why a request whose token bounds are not counts is refused, naming the bound and its value (a number, never
 * the prompt).
 *
 * @internal
 */
export const invalidBounds = (inputTokens: unknown, maxOutputTokens: unknown, validInput: boolean): string =>
  validInput
    ? `the request's maxOutputTokens is ${describe(maxOutputTokens)}: give a positive integer, or leave it out ` +
      "(each candidate's own output limit is used)"
    : `the request's inputTokens is ${describe(inputTokens)}: give a non-negative integer, or leave it out ` +
      "(with a budget on cost or tokens, a tokenizer must then count the prompt)"

/**
 * Why a request is refused when the tokenizer's count is not a count (user code: a count that is not a
 * non-negative integer would make a NaN or negative reservation).
 *
 * @internal
 */
export const invalidTokenizerCount = (count: number): string =>
  `the tokenizer (\`Rein.layer({ tokenizer })\`) counted ${describe(count)} input tokens: make it return a ` +
  "non-negative integer, or give the request `inputTokens`"

/**
 * Why a request is refused when the tokenizer threw. Only the thrown value's kind is named (its message may quote
 * the prompt, which no refusal carries).
 *
 * @internal
 */
export const tokenizerThrew = (error: unknown): string =>
  `the tokenizer (\`Rein.layer({ tokenizer })\`) threw ${
    error instanceof Error ? describe(error.name) : `a ${typeof error}`
  }: make it return a non-negative integer, or give the request \`inputTokens\``

/**
 * Why a contract naming endpoints the catalog does not know is refused (a likely typo), or `null` when there
 * are none.
 *
 * @internal
 */
export const unknownCandidates = (ids: ReadonlyArray<string>): string | null =>
  ids.length === 0 ? null : ids.length === 1
    ? `candidate ${describe(ids[0])} is not in the catalog: correct the contract's candidates, or add the ` +
      "endpoint to the catalog"
    : `candidates ${ids.map(describe).join(", ")} are not in the catalog: correct the contract's candidates, or ` +
      "add the endpoints to the catalog"

/**
 * Why a provider that retries internally is refused (its retries would multiply Rein's), and the fix.
 *
 * @internal
 */
export const nestedRetries = (provider: string, attempts: number): string =>
  `provider ${JSON.stringify(provider)} retries internally (${attempts} attempts), under Rein's own retries: ` +
  "turn its SDK's retries off and declare `internalMaxAttempts: 1`"

/**
 * What to change after a `FailedSafe` stop (said on the outcome, after the planner's own reason, which replay
 * compares and so stays as it was): what the failure's kind needs, or the contract's `failures` when the
 * contract narrowed the default.
 *
 * @internal
 */
export const failedSafeFix = (kind: FailureKind, rule: Rule): string => {
  const byDefault = defaultTable[kind]
  if (byDefault.retry !== rule.retry || byDefault.fallback !== rule.fallback) {
    return `the contract's \`failures\` (noRetry, noFallback) stop ${kind}: take it out of them to retry or fall back`
  }
  switch (kind) {
    case "content_filtered":
      return "the provider refused the content: change the prompt, or list content_filtered in the contract's " +
        "`failures.alsoRetry` or `failures.alsoFallback`"
    case "invalid_request":
      return "the provider rejected the request itself, as any model would: change the request (see the code)"
    default:
      return "Rein does not retry a failure it cannot classify: see the code, and have the provider report a " +
        "status or code its adapter classifies"
  }
}

/** What to change after a stream failed once committed (its first delta was visible). @internal */
export const committedFix = "output was already visible, so it cannot be retried or replaced: run the request " +
  "again if the partial answer can be discarded"

/**
 * One candidate a refusal excluded: the predicate that excluded it first and the planner's words for it.
 *
 * @internal
 */
export interface Excluded {
  readonly endpoint: string
  readonly predicate: string
  readonly why: string
}

/** At most this many candidates are named in a no-legal-candidate refusal; the rest are counted. */
const NAMED_CANDIDATES = 5

/**
 * What to say when no candidate is legal before any attempt, after the planner's reason (which names the first
 * candidate, and which replay compares, so it stays as recorded): why each other candidate was not legal (the
 * first `NAMED_CANDIDATES` in all, then how many more), then the fix for each predicate that excluded one, in
 * the order they first appear. Endpoint ids, predicates and the planner's verdicts only: never the prompt.
 *
 * @internal
 */
export const noLegalCandidate = (reason: string, excluded: ReadonlyArray<Excluded>): string => {
  const others = excluded.slice(1, NAMED_CANDIDATES).map((e) => `${e.endpoint} (${e.predicate}: ${e.why})`)
  const more = excluded.length - NAMED_CANDIDATES
  const also = others.length === 0
    ? ""
    : `; also not legal: ${others.join(", ")}${more > 0 ? `, and ${more} more` : ""}`
  const fixes = [...new Set(excluded.map((e) => e.predicate))].map(noLegalCandidateFix).filter((f) => f !== undefined)
  return [`${reason}${also}`, ...fixes].join("; ")
}

/** What to change for the predicate that excluded a candidate (`undefined`: none to say). */
const noLegalCandidateFix = (predicate: string): string | undefined => {
  switch (predicate) {
    case "listed":
      return "register a provider for each candidate's `provider` in `Rein.layer({ providers })`, and list the " +
        "candidates in the catalog"
    case "capable":
      return "lower the request's bounds, drop the capability it requires, add a candidate that has it, or, if " +
        "the model has it, declare it in the catalog entry's `capabilities` (`tools: true`, …)"
    case "simulation":
      return "give the contract `allowSimulated: true` (tests, examples), or a real candidate"
    default:
      return undefined
  }
}
