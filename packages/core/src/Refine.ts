/**
 * Semantic revisions: draft → check → revise, bounded. A transport retry repeats the same call; a
 * revision asks for a new candidate because the last one failed a check (schema, policy, quality). Both
 * spend calls, so both draw from one cap.
 *
 * `Refine.refine` runs the whole refinement inside one deadline and one shared budget built from the
 * contract (`Refine.sharing`): every draft is a full `Rein.execute` (its transport retries inside it), and
 * every check that calls a model does so through the same deadline, call cap and budget. Checks run in
 * order and a draft is accepted only when every one of them ran and passed. When the drafts are used up,
 * an optional deterministic fallback (a template, say) is checked the same way and, if accepted, labelled
 * as a fallback, never as a model's answer. Otherwise the outcome is `NeedsReview`, with the reason and
 * the full history of drafts, checks and attempts.
 *
 * The history holds no prompt and no provider text: draft text lives only in the success value. Feedback
 * is recorded, so checks must phrase it without quoting the draft (the built-in schema check gives paths
 * and expected types, never the actual values).
 *
 * @since 0.1.0
 */
import type { Either } from "effect"
import { Duration, Effect, Option, Schema } from "effect"
import * as Budget from "./Budget.js"
import type { Contract } from "./Contract.js"
import * as Deadline from "./Deadline.js"
import * as Execute from "./Execute.js"
import { Rein } from "./internal/context.js"
import { timeoutOptionMillis } from "./internal/duration.js"
import * as internal from "./internal/refine.js"
import * as Outcome from "./Outcome.js"
import type { CompletionRequest } from "./Provider.js"

// ---------------------------------------------------------------------------------------------------------
// Verdicts and checks
// ---------------------------------------------------------------------------------------------------------

/**
 * One piece of feedback for the next draft: where (a JSON path, or `""` for the whole answer) and what
 * is wrong. It is recorded in the history, so it must not quote provider text.
 *
 * @example
 * ```ts
 * import { Refine } from "@rein/core"
 *
 * const f: Refine.Feedback = { path: "items[0].price", message: "Expected number" }
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const Feedback = Schema.Struct({ path: Schema.String, message: Schema.String })

/**
 * @category models
 * @since 0.1.0
 */
export type Feedback = typeof Feedback.Type

/**
 * What a check says about a candidate: `Pass`; `Revise` (ask for a new draft, with feedback); or `Stop`
 * (no revision can fix it: end in review, with a normalised code).
 *
 * @example
 * ```ts
 * import { Refine } from "@rein/core"
 *
 * const verdicts: Array<Refine.Verdict> = [Refine.pass, Refine.revise("answer in English"), Refine.stop("pii")]
 * ```
 * @category models
 * @since 0.1.0
 */
export type Verdict =
  | { readonly _tag: "Pass" }
  | { readonly _tag: "Revise"; readonly feedback: ReadonlyArray<Feedback> }
  | { readonly _tag: "Stop"; readonly code: string }

/**
 * The candidate passes this check.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Refine } from "@rein/core"
 *
 * const nonEmpty = Refine.check("non_empty", (c) =>
 *   Effect.succeed(c.text.trim().length > 0 ? Refine.pass : Refine.revise("the answer was empty")))
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const pass: Verdict = { _tag: "Pass" }

/**
 * Ask for a new draft. Plain strings become feedback about the whole answer (`path: ""`).
 *
 * @example
 * ```ts
 * import { Refine } from "@rein/core"
 *
 * Refine.revise([{ path: "title", message: "at most 60 characters" }, "cite at least one source"])
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const revise = (feedback: string | Feedback | ReadonlyArray<string | Feedback>): Verdict => ({
  _tag: "Revise",
  feedback: (Array.isArray(feedback) ? feedback as ReadonlyArray<string | Feedback> : [feedback as string | Feedback])
    .map((f) => (typeof f === "string" ? { path: "", message: f } : f))
})

/**
 * No revision can fix this candidate: end in review (`permanent_failure`), recording `code`.
 *
 * @example
 * ```ts
 * import { Refine } from "@rein/core"
 *
 * Refine.stop("policy_violation")
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const stop = (code: string): Verdict => ({ _tag: "Stop", code })

/**
 * Where a candidate came from: a model draft, or the deterministic fallback.
 *
 * @category schemas
 * @since 0.1.0
 */
export const Source = Schema.Literal("model", "fallback")

/**
 * @category models
 * @since 0.1.0
 */
export type Source = typeof Source.Type

/**
 * What a check looks at. `draft` numbers model drafts from 1; the fallback comes after the last one.
 * `value` is the decoded value when the refinement has a `schema`, else the text.
 *
 * @example
 * ```ts
 * import { Refine } from "@rein/core"
 *
 * const label = (c: Refine.Candidate<string>) => `${c.source} #${c.draft}`
 * ```
 * @category models
 * @since 0.1.0
 */
export interface Candidate<A> {
  readonly draft: number
  readonly source: Source
  readonly text: string
  readonly value: A
}

/**
 * What a check may use. `execute` runs a model call under the refinement's shared deadline, call cap and
 * budget, and records its attempts in the check's history entry; `contract` defaults to the
 * refinement's (pass another to use a different judge model, still bounded by the shared limits).
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Refine } from "@rein/core"
 *
 * const judged = Refine.check("quality", (c, ctx) =>
 *   Effect.map(ctx.execute({ prompt: "Rate the answer PASS or FAIL.", inputTokens: 500, maxOutputTokens: 5 }),
 *     (verdict) => verdict.text.trim() === "PASS" ? Refine.pass : Refine.revise("be more specific")))
 * ```
 * @category models
 * @since 0.1.0
 */
export interface CheckContext {
  readonly execute: (
    request: CompletionRequest,
    contract?: Contract
  ) => Effect.Effect<Outcome.Completion, Outcome.Terminal>
}

/**
 * A named check. A check that needs a model uses `CheckContext.execute`; its terminal failure (no call
 * left, the deadline, a permanent failure) ends the refinement in review. Map any other error to a
 * verdict (usually `stop`).
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Refine } from "@rein/core"
 *
 * const short: Refine.Check<string> = Refine.check("short", (c) =>
 *   Effect.succeed(c.text.length <= 280 ? Refine.pass : Refine.revise("at most 280 characters")))
 * ```
 * @category models
 * @since 0.1.0
 */
export interface Check<in A, out R = never> {
  readonly name: string
  readonly run: (candidate: Candidate<A>, context: CheckContext) => Effect.Effect<Verdict, Outcome.Terminal, R>
}

/**
 * Makes a check.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Refine } from "@rein/core"
 *
 * const noTodo = Refine.check("no_todo", (c) =>
 *   Effect.succeed(c.text.includes("TODO") ? Refine.revise("remove placeholders") : Refine.pass))
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const check = <A, R = never>(
  name: string,
  run: (candidate: Candidate<A>, context: CheckContext) => Effect.Effect<Verdict, Outcome.Terminal, R>
): Check<A, R> => ({ name, run })

/**
 * Decodes a candidate's text as JSON against `schema` (one surrounding Markdown code fence is
 * tolerated). A failure revises with the failing paths and expected types as feedback, never the actual
 * values nor the parser's message (both quote provider text). Uses no call.
 *
 * @example
 * ```ts
 * import { Schema } from "effect"
 * import { Refine } from "@rein/core"
 *
 * const isInvoice = Refine.schemaCheck(Schema.Struct({ total: Schema.Number, currency: Schema.String }))
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const schemaCheck = <A, I>(schema: Schema.Schema<A, I, never>, name = "schema"): Check<unknown> => {
  const decode = internal.decodeJson(schema)
  return check(name, (c) => {
    const decoded = decode(c.text)
    return Effect.succeed(decoded._tag === "Right" ? pass : revise(decoded.left))
  })
}

// ---------------------------------------------------------------------------------------------------------
// History and outcomes
// ---------------------------------------------------------------------------------------------------------

/**
 * A terminal failure of a call, as its outcome tag and cause (never its prose).
 *
 * @category schemas
 * @since 0.1.0
 */
export const CallFailure = Schema.Struct({
  outcome: Schema.Literal("DeadlineExceeded", "BudgetExhausted", "PlanExhausted", "FailedSafe", "Refused", "Halted"),
  resource: Schema.NullOr(Schema.Literal("cost", "tokens", "calls")),
  cause: Schema.NullOr(Outcome.Cause)
})

/**
 * @category models
 * @since 0.1.0
 */
export type CallFailure = typeof CallFailure.Type

const attempts = Schema.Array(Outcome.AttemptRecord)

/**
 * A candidate was produced (`completed`) or its call ended terminally (`failed`). A fallback has no
 * attempts.
 *
 * @example
 * ```ts
 * import { Refine } from "@rein/core"
 *
 * const calls = (e: Refine.DraftEvent) => e.attempts.length
 * ```
 * @category models
 * @since 0.1.0
 */
export class DraftEvent extends Schema.TaggedClass<DraftEvent>()("Draft", {
  draft: Schema.Number,
  source: Source,
  status: Schema.Literal("completed", "failed"),
  failure: Schema.NullOr(CallFailure),
  attempts
}) {}

/**
 * A check ran on a candidate. `verdict` is `failed` when the check could not finish (its own call ended
 * terminally, or the deadline cut it): such a candidate is never accepted.
 *
 * @example
 * ```ts
 * import { Refine } from "@rein/core"
 *
 * const revised = (e: Refine.CheckEvent) => e.verdict === "revise" ? e.feedback : []
 * ```
 * @category models
 * @since 0.1.0
 */
export class CheckEvent extends Schema.TaggedClass<CheckEvent>()("Check", {
  draft: Schema.Number,
  source: Source,
  check: Schema.String,
  verdict: Schema.Literal("pass", "revise", "stop", "failed"),
  feedback: Schema.Array(Feedback),
  /** The `stop` code. */
  code: Schema.NullOr(Schema.String),
  failure: Schema.NullOr(CallFailure),
  attempts
}) {}

/**
 * One entry of a refinement's history, in the order it happened.
 *
 * @category schemas
 * @since 0.1.0
 */
export const Event = Schema.Union(DraftEvent, CheckEvent)

/**
 * @category models
 * @since 0.1.0
 */
export type Event = typeof Event.Type

/**
 * Why a refinement ended without an accepted candidate.
 *
 * - `call_budget_exhausted`: the call cap ran out before a draft or a check could start;
 * - `budget_exhausted`: the cost or token budget could not admit the next call;
 * - `revision_budget_exhausted`: every draft (and the fallback) was sent back for revision;
 * - `permanent_failure`: a call failed in a way no retry fixes, or a check said `stop`;
 * - `deadline`: the deadline expired;
 * - `halted`: the enclosing run (a batch, through its gate) stopped admitting calls.
 *
 * @category schemas
 * @since 0.1.0
 */
export const Reason = Schema.Literal(
  "call_budget_exhausted",
  "budget_exhausted",
  "revision_budget_exhausted",
  "permanent_failure",
  "deadline",
  "halted"
)

/**
 * @category models
 * @since 0.1.0
 */
export type Reason = typeof Reason.Type

/**
 * No candidate was accepted: a person (or a caller's policy) must review. Carries the full history.
 * `cost` is unknown when any attempt's usage was.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Refine } from "@rein/core"
 *
 * declare const refined: Effect.Effect<Refine.Refined<string>, Refine.NeedsReview>
 * const orQueue = refined.pipe(Effect.catchTag("NeedsReview", (e) => Effect.succeed(`review: ${e.reason}`)))
 * ```
 * @category errors
 * @since 0.1.0
 */
export class NeedsReview extends Schema.TaggedError<NeedsReview>()("NeedsReview", {
  reason: Reason,
  message: Schema.String,
  /** Model drafts requested. */
  drafts: Schema.Number,
  /** Calls taken from the cap (every recorded attempt, drafts and checks). */
  calls: Schema.Number,
  cost: Schema.Union(Schema.Number, Schema.Literal("unknown")),
  history: Schema.Array(Event)
}) {}

/**
 * An accepted candidate: every check ran and passed. `source` says whether a model wrote it or it is the
 * deterministic fallback (then `completion` is `null`). `cost` and `calls` cover the whole refinement,
 * and `cost` is unknown when any attempt's usage was, even if the accepted draft's usage is known.
 *
 * @example
 * ```ts
 * import { Refine } from "@rein/core"
 *
 * const describe = (r: Refine.Refined<unknown>) =>
 *   `${r.source} draft ${r.draft} after ${r.calls} calls, cost ${r.cost}`
 * ```
 * @category models
 * @since 0.1.0
 */
export interface Refined<A> {
  readonly value: A
  readonly text: string
  readonly source: Source
  readonly draft: number
  /** Model drafts requested. */
  readonly drafts: number
  readonly completion: Outcome.Completion | null
  readonly calls: number
  readonly cost: number | "unknown"
  readonly history: ReadonlyArray<Event>
}

// ---------------------------------------------------------------------------------------------------------
// Sharing one deadline and one budget
// ---------------------------------------------------------------------------------------------------------

const sharingImpl = <A, E, R>(self: Effect.Effect<A, E, R>, contract: Contract): Effect.Effect<A, E, R> =>
  Effect.gen(function*() {
    const own = yield* Budget.make(contract.budget)
    // An enclosing shared budget (a batch run, a tenant, an outer `sharing`) must keep binding: reserve
    // against both (`Budget.both`) rather than shadow it.
    const outer = yield* Effect.serviceOption(Budget.SharedBudget)
    const budget = Option.isNone(outer) ? own : Budget.both(own, outer.value)
    return yield* Effect.provideService(self, Budget.SharedBudget, budget)
  }).pipe(Deadline.within(contract.deadline))

/**
 * Runs an effect so that every `Rein.execute` inside it shares one deadline (the contract's, nested in
 * any enclosing one) and one budget (the contract's cost, tokens and calls, on top of any enclosing
 * shared budget). `Refine.refine` runs inside it; wrap a larger program (an input step, then a
 * refinement) to put it all under one cap.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Contract, Rein, Refine } from "@rein/core"
 *
 * declare const contract: Contract.Contract
 * const pipeline = Effect.gen(function*() {
 *   const facts = yield* Rein.execute({ prompt: "Extract the facts …", inputTokens: 800 }, contract)
 *   return yield* Refine.refine({ prompt: `Write from: ${facts.text}`, inputTokens: 1200 }, contract, {
 *     checks: [],
 *     maxDrafts: 2
 *   })
 * }).pipe(Refine.sharing(contract))
 * ```
 * @category combinators
 * @since 0.1.0
 */
export const sharing: {
  (contract: Contract): <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  <A, E, R>(self: Effect.Effect<A, E, R>, contract: Contract): Effect.Effect<A, E, R>
} = ((...args: [Contract] | [Effect.Effect<unknown, unknown, unknown>, Contract]) =>
  args.length === 1
    ? <A, E, R>(self: Effect.Effect<A, E, R>) => sharingImpl(self, args[0])
    : sharingImpl(args[0], args[1])) as never

// ---------------------------------------------------------------------------------------------------------
// Refine
// ---------------------------------------------------------------------------------------------------------

/**
 * Builds the next draft's request from the original request and the last candidate's feedback.
 *
 * @category models
 * @since 0.1.0
 */
export type Reviser = (
  request: CompletionRequest,
  feedback: ReadonlyArray<Feedback>,
  draft: number
) => CompletionRequest

/**
 * The default reviser: appends a feedback section to the original prompt, and raises `inputTokens` (when
 * given) by an upper bound of the appended text's tokens, so admission never under-reserves. The previous
 * draft is not repeated: the model writes a new one.
 *
 * @example
 * ```ts
 * import { Refine } from "@rein/core"
 *
 * Refine.appendFeedback({ prompt: "Give JSON.", inputTokens: 10 }, [{ path: "total", message: "is missing" }], 2)
 * // { prompt: "Give JSON.\n\nA previous answer was rejected. …\n- total: is missing", inputTokens: 10 + … }
 * ```
 * @category defaults
 * @since 0.1.0
 */
export const appendFeedback: Reviser = (request, feedback) => {
  if (feedback.length === 0) return request
  const lines = feedback.map((f) => (f.path === "" ? `- ${f.message}` : `- ${f.path}: ${f.message}`))
  const section = `\n\nA previous answer was rejected. Write a new answer that fixes these problems:\n${
    lines.join("\n")
  }`
  return {
    ...request,
    prompt: request.prompt + section,
    ...(request.inputTokens !== undefined ? { inputTokens: request.inputTokens + internal.tokenBound(section) } : {})
  }
}

/**
 * Options of a refinement.
 *
 * - `checks`: run in order on each candidate; the first non-pass ends that candidate's checks;
 * - `maxDrafts`: the most model drafts (a non-negative integer; 0 goes straight to the fallback);
 * - `fallback`: a deterministic candidate (a template) checked when the drafts are used up;
 * - `revise`: builds the next request (default `appendFeedback`);
 * - `schema`: decode each candidate's text as JSON first (an implicit first check named `"schema"`);
 *   the accepted value is the decoded one.
 *
 * @category models
 * @since 0.1.0
 */
export interface Options<A, R> {
  readonly checks: ReadonlyArray<Check<NoInfer<A>, R>>
  readonly maxDrafts: number
  readonly fallback?: Effect.Effect<string, never, R> | undefined
  readonly revise?: Reviser | undefined
}

/**
 * Drafts, checks and revises under one contract, until every check passes or the drafts, calls, budget
 * or deadline run out (see the module summary). Each draft is a full `Rein.execute` under `contract`;
 * the whole refinement runs under `Refine.sharing(contract)`, so drafts and model-backed checks share one
 * deadline, one call cap and one budget.
 *
 * @example
 * ```ts
 * import { Effect, Schema } from "effect"
 * import { Contract, Refine } from "@rein/core"
 *
 * declare const contract: Contract.Contract
 * const Invoice = Schema.Struct({ total: Schema.Number, currency: Schema.String })
 *
 * const invoice = Refine.refine({ prompt: "Extract the invoice as JSON …", inputTokens: 900 }, contract, {
 *   schema: Invoice,
 *   // An object literal takes the decoded type from `schema` (a generic `Refine.check` needs it spelled out).
 *   checks: [{
 *     name: "positive",
 *     run: (c) => Effect.succeed(c.value.total > 0 ? Refine.pass : Refine.revise("total must be positive"))
 *   }],
 *   maxDrafts: 2,
 *   fallback: Effect.succeed(JSON.stringify({ total: 0, currency: "EUR" }))
 * })
 * // Effect<Refine.Refined<{ total: number; currency: string }>, Refine.NeedsReview, Rein.Rein>
 * ```
 * @category execution
 * @since 0.1.0
 */
export const refine: {
  <A, I, R = never>(
    request: CompletionRequest,
    contract: Contract,
    options: Options<A, R> & { readonly schema: Schema.Schema<A, I, never> }
  ): Effect.Effect<Refined<A>, NeedsReview, Rein | R>
  <R = never>(
    request: CompletionRequest,
    contract: Contract,
    options: Options<string, R> & { readonly schema?: undefined }
  ): Effect.Effect<Refined<string>, NeedsReview, Rein | R>
} = <A, R>(
  request: CompletionRequest,
  contract: Contract,
  options: Options<A, R> & { readonly schema?: Schema.Schema<A, unknown, never> | undefined }
): Effect.Effect<Refined<A>, NeedsReview, Rein | R> => {
  const decode: (text: string) => Either.Either<A, ReadonlyArray<Feedback>> = options.schema === undefined
    ? (text) => ({ _tag: "Right", right: text as A }) as Either.Either<A, ReadonlyArray<Feedback>>
    : internal.decodeJson(options.schema)
  return sharing(run(request, contract, options, decode), contract)
}

/** One refinement in progress: its inputs, the history so far and the model drafts requested. */
interface Run<A, R> {
  readonly request: CompletionRequest
  readonly contract: Contract
  readonly options: Options<A, R> & { readonly schema?: unknown }
  readonly decode: (text: string) => Either.Either<A, ReadonlyArray<Feedback>>
  readonly reviser: Reviser
  readonly graceMillis: number
  /** What a check's model calls go through: `Rein.execute` under this refinement's `Rein`. */
  readonly ctx: CheckContext
  readonly history: Array<Event>
  drafts: number
}

/** How a candidate ended when it was not accepted: sent back with feedback, or to review. */
type Rejected =
  | { readonly revise: ReadonlyArray<Feedback> }
  | { readonly reason: Reason; readonly message: string }

const review = <A, R>(run: Run<A, R>, reason: Reason, message: string) =>
  Effect.fail(
    new NeedsReview({
      reason,
      message,
      drafts: run.drafts,
      calls: callsOf(run.history),
      cost: costOf(run.history),
      history: run.history
    })
  )

const checkEvent = (
  candidate: Pick<Candidate<unknown>, "draft" | "source">,
  name: string,
  verdict: CheckEvent["verdict"],
  extra: Partial<Pick<CheckEvent, "feedback" | "code" | "failure" | "attempts">> = {}
) =>
  new CheckEvent({
    draft: candidate.draft,
    source: candidate.source,
    check: name,
    verdict,
    feedback: extra.feedback ?? [],
    code: extra.code ?? null,
    failure: extra.failure ?? null,
    attempts: extra.attempts ?? []
  })

/** A check's context that collects the attempts of its model calls as they end (success or terminal). */
const recording = (ctx: CheckContext, recorded: Array<Outcome.AttemptRecord>): CheckContext => ({
  execute: (req, con) =>
    ctx.execute(req, con).pipe(
      Effect.tap((done) => Effect.sync(() => recorded.push(...done.attempts))),
      Effect.tapError((e) => Effect.sync(() => recorded.push(...e.attempts)))
    )
})

/** Runs one check on a candidate and records it; `undefined` when it passed, else how the candidate ended. */
const runCheck = <A, R>(run: Run<A, R>, candidate: Candidate<A>, c: Check<A, R>) =>
  Effect.gen(function*() {
    const recorded: Array<Outcome.AttemptRecord> = []
    const left = yield* Deadline.remainingMillis
    if (left <= 0) {
      run.history.push(checkEvent(candidate, c.name, "failed"))
      return { reason: "deadline", message: `the deadline expired before check ${c.name}` } as const
    }
    // Bounded by the deadline plus the teardown grace, so a model call inside the check ends on its
    // own deadline (and reports its attempts) before this bound cuts the check.
    const result = yield* timeoutOptionMillis(
      Effect.either(c.run(candidate, recording(run.ctx, recorded))),
      left + run.graceMillis
    )
    if (Option.isNone(result)) {
      run.history.push(checkEvent(candidate, c.name, "failed", { attempts: recorded }))
      return { reason: "deadline", message: `the deadline expired during check ${c.name}` } as const
    }
    if (result.value._tag === "Left") {
      const failure = callFailure(result.value.left)
      run.history.push(checkEvent(candidate, c.name, "failed", { failure, attempts: recorded }))
      return {
        reason: reasonOf(failure),
        message: `check ${c.name} could not finish: its call ended with ${failure.outcome}`
      } as const
    }
    const verdict = result.value.right
    switch (verdict._tag) {
      case "Pass":
        run.history.push(checkEvent(candidate, c.name, "pass", { attempts: recorded }))
        return undefined
      case "Revise":
        run.history.push(checkEvent(candidate, c.name, "revise", { feedback: verdict.feedback, attempts: recorded }))
        return { revise: verdict.feedback } as const
      case "Stop":
        run.history.push(checkEvent(candidate, c.name, "stop", { code: verdict.code, attempts: recorded }))
        return { reason: "permanent_failure", message: `check ${c.name} stopped: ${verdict.code}` } as const
    }
  })

/** Runs the checks on a candidate in order; `undefined` when all passed, else how this candidate ended. */
const checkAll = <A, R>(run: Run<A, R>, candidate: Candidate<A>) =>
  Effect.gen(function*() {
    for (const c of run.options.checks) {
      const ended: Rejected | undefined = yield* runCheck(run, candidate, c)
      if (ended !== undefined) return ended
    }
    return undefined
  })

/** Decodes (when there is a schema), then checks; `accepted` is an accepted candidate. */
const judge = <A, R>(run: Run<A, R>, draft: number, source: Source, text: string) =>
  Effect.gen(function*() {
    const decoded = run.decode(text)
    if (decoded._tag === "Left") {
      run.history.push(checkEvent({ draft, source }, "schema", "revise", { feedback: decoded.left }))
      return { revise: decoded.left } as const
    }
    if (run.options.schema !== undefined) run.history.push(checkEvent({ draft, source }, "schema", "pass"))
    const ended = yield* checkAll(run, { draft, source, text, value: decoded.right })
    return ended === undefined ? { accepted: decoded.right } as const : ended
  })

const refined = <A, R>(
  run: Run<A, R>,
  accepted: { readonly value: A; readonly text: string; readonly source: Source; readonly draft: number },
  completion: Outcome.Completion | null
): Refined<A> => ({
  ...accepted,
  drafts: run.drafts,
  completion,
  calls: callsOf(run.history),
  cost: costOf(run.history),
  history: run.history
})

/** Requests the next model draft (revised by the last feedback) and judges it. */
const modelDraft = <A, R>(run: Run<A, R>, feedback: ReadonlyArray<Feedback>) =>
  Effect.gen(function*() {
    run.drafts++
    const draft = run.drafts
    const next = draft === 1 ? run.request : run.reviser(run.request, feedback, draft)
    const done = yield* Effect.either(Execute.execute(next, run.contract))
    if (done._tag === "Left") {
      const failure = callFailure(done.left)
      run.history.push(
        new DraftEvent({ draft, source: "model", status: "failed", failure, attempts: done.left.attempts })
      )
      return yield* review(run, reasonOf(failure), `draft ${draft} ended with ${failure.outcome}`)
    }
    const completion = done.right
    run.history.push(
      new DraftEvent({ draft, source: "model", status: "completed", failure: null, attempts: completion.attempts })
    )
    const verdict = yield* judge(run, draft, "model", completion.text)
    if ("accepted" in verdict) {
      return refined(run, { value: verdict.accepted, text: completion.text, source: "model", draft }, completion)
    }
    if ("reason" in verdict) return yield* review(run, verdict.reason, verdict.message)
    return verdict
  })

/** When the drafts are used up: the fallback, checked the same way, else review. */
const fallbackDraft = <A, R>(run: Run<A, R>) =>
  Effect.gen(function*() {
    const maxDrafts = run.options.maxDrafts
    const exhausted = maxDrafts === 0 ? "no model draft was allowed" : `all ${maxDrafts} drafts were revised`
    if (run.options.fallback === undefined) return yield* review(run, "revision_budget_exhausted", exhausted)
    // The fallback is deterministic and makes no call, but its checks still run and still draw calls.
    const draft = run.drafts + 1
    const text = yield* run.options.fallback
    run.history.push(new DraftEvent({ draft, source: "fallback", status: "completed", failure: null, attempts: [] }))
    const verdict = yield* judge(run, draft, "fallback", text)
    if ("accepted" in verdict) {
      return refined(run, { value: verdict.accepted, text, source: "fallback", draft }, null)
    }
    if ("reason" in verdict) return yield* review(run, verdict.reason, verdict.message)
    return yield* review(run, "revision_budget_exhausted", `${exhausted}, and the fallback was sent back too`)
  })

const run = <A, R>(
  request: CompletionRequest,
  contract: Contract,
  options: Options<A, R> & { readonly schema?: unknown },
  decode: (text: string) => Either.Either<A, ReadonlyArray<Feedback>>
): Effect.Effect<Refined<A>, NeedsReview, Rein | R> =>
  Effect.gen(function*() {
    const maxDrafts = options.maxDrafts
    if (!Number.isInteger(maxDrafts) || maxDrafts < 0) {
      return yield* Effect.dieMessage(`Refine: maxDrafts must be a non-negative integer, got ${String(maxDrafts)}`)
    }
    const rein = yield* Rein
    const state: Run<A, R> = {
      request,
      contract,
      options,
      decode,
      reviser: options.revise ?? appendFeedback,
      graceMillis: Duration.toMillis(contract.teardownGrace),
      ctx: { execute: (req, c) => Effect.provideService(Execute.execute(req, c ?? contract), Rein, rein) },
      history: [],
      drafts: 0
    }
    let feedback: ReadonlyArray<Feedback> = []
    while (state.drafts < maxDrafts) {
      const drafted: Refined<A> | { readonly revise: ReadonlyArray<Feedback> } = yield* modelDraft(state, feedback)
      if (!("revise" in drafted)) return drafted
      feedback = drafted.revise
    }
    return yield* fallbackDraft(state)
  })

const allAttempts = function*(history: ReadonlyArray<Event>): Generator<Outcome.AttemptRecord> {
  for (const e of history) yield* e.attempts
}

const callsOf = (history: ReadonlyArray<Event>): number => history.reduce((n, e) => n + e.attempts.length, 0)

const costOf = (history: ReadonlyArray<Event>): number | "unknown" => internal.totalCost(allAttempts(history))

const callFailure = (e: Outcome.Terminal): CallFailure => ({
  outcome: e._tag,
  resource: e._tag === "BudgetExhausted" ? e.resource : null,
  cause: e._tag === "Refused" ? null : e.lastFailure
})

const reasonOf = (f: CallFailure): Reason => {
  switch (f.outcome) {
    case "DeadlineExceeded":
      return "deadline"
    case "BudgetExhausted":
      return f.resource === "calls" ? "call_budget_exhausted" : "budget_exhausted"
    case "Halted":
      return "halted"
    default:
      return "permanent_failure"
  }
}
