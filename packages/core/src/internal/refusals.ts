/**
 * The words of refusals that name their fix.
 *
 * @internal
 */
import type { Contract } from "../Contract.js"

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
