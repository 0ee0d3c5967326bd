/**
 * The interpreter: turns the planner's decisions into Effects. It owns the loop "snapshot → decide →
 * acquire → wait → attempt → settle", and nothing else decides: every retry, wait, fallback and stop is a
 * planner decision.
 *
 * Each attempt runs in its own fiber, bounded by `min(attemptTimeout, remaining)`. When that bound expires,
 * or the caller interrupts, the attempt is interrupted and given `teardownGrace` to finish its finalizers
 * (HTTP abort, process kill); Rein returns after the grace even if the provider ignores interruption, and
 * says so (`teardownUnconfirmed`). Caller interruption propagates as interruption, after teardown.
 *
 * @since 0.1.0
 */
import { Cause, Clock, Duration, Effect, Exit, Fiber, Option, Random, STM } from "effect"
import * as Budget from "./Budget.js"
import type { Endpoint } from "./Catalog.js"
import { scopeOf } from "./Catalog.js"
import type { Contract } from "./Contract.js"
import * as Deadline from "./Deadline.js"
import type { FailureKind, Rule } from "./Failure.js"
import { defaultTable, ProviderFailure } from "./Failure.js"
import { Rein } from "./internal/context.js"
import { clampMillis } from "./internal/duration.js"
import * as Outcome from "./Outcome.js"
import * as Planner from "./Planner.js"
import type { CompletionRequest, Provider, ProviderResponse } from "./Provider.js"
import * as Usage from "./Usage.js"

/**
 * The failure table after a contract's narrowing and widening.
 *
 * @since 0.1.0
 */
export const effectiveTable = (contract: Contract): { readonly [K in FailureKind]: Rule } => {
  const f = contract.failures
  if (f.noRetry.length + f.noFallback.length + f.alsoRetry.length + f.alsoFallback.length === 0) return defaultTable
  const table: Record<FailureKind, Rule> = { ...defaultTable }
  for (const kind of f.alsoRetry) table[kind] = { ...table[kind], retry: true }
  for (const kind of f.alsoFallback) table[kind] = { ...table[kind], fallback: "any" }
  for (const kind of f.noRetry) table[kind] = { ...table[kind], retry: false }
  for (const kind of f.noFallback) table[kind] = { ...table[kind], fallback: "none" }
  return table
}

const isSimulated = (endpoint: Endpoint, provider: Provider | undefined): boolean =>
  endpoint.simulated || provider?.simulated === true

/**
 * Builds the planner's static view of a request.
 *
 * @since 0.1.0
 */
export const makeSpec = (
  contract: Contract,
  endpoints: ReadonlyMap<string, Endpoint>,
  providers: ReadonlyMap<string, Provider>,
  inputTokens: number | null,
  maxOutputTokens: number | null,
  order: ReadonlyArray<string> = contract.candidates
): Planner.Spec => {
  const listed = new Set(contract.candidates)
  return {
    candidates: order.map((id): Planner.CandidateSpec => {
      const e = endpoints.get(id)
      const provider = e === undefined ? undefined : providers.get(e.provider)
      return e === undefined
        ? {
          id,
          listed: listed.has(id),
          known: false,
          hasProvider: false,
          scope: "",
          contextWindow: 0,
          maxOutputTokens: 0,
          tools: false,
          structuredOutput: false,
          streaming: false,
          simulated: false,
          prices: { inputTokens: 0, outputTokens: 0, request: 0 }
        }
        : {
          id,
          listed: listed.has(id),
          known: true,
          hasProvider: provider !== undefined,
          scope: scopeOf(e),
          contextWindow: e.capabilities.contextWindow,
          maxOutputTokens: e.capabilities.maxOutputTokens,
          tools: e.capabilities.tools,
          structuredOutput: e.capabilities.structuredOutput,
          streaming: e.capabilities.streaming && (provider === undefined || provider.stream !== undefined ||
            !contract.requires.streaming),
          simulated: isSimulated(e, provider),
          prices: { inputTokens: e.prices.inputTokens, outputTokens: e.prices.outputTokens, request: e.prices.request }
        }
    }),
    requires: {
      tools: contract.requires.tools,
      structuredOutput: contract.requires.structuredOutput,
      streaming: contract.requires.streaming
    },
    mode: contract.mode,
    allowSimulated: contract.allowSimulated,
    inputTokens,
    maxOutputTokens,
    attemptTimeoutMillis: Duration.toMillis(contract.attemptTimeout ?? contract.deadline),
    minAttemptMillis: contract.minAttempt === undefined ? 0 : Duration.toMillis(contract.minAttempt),
    retry: {
      perEndpoint: contract.retry.perEndpoint,
      baseMillis: Duration.toMillis(contract.retry.base),
      factor: contract.retry.factor,
      maxMillis: Duration.toMillis(contract.retry.max),
      jitter: contract.retry.jitter
    },
    table: effectiveTable(contract)
  }
}

/** How one attempt ended, before it becomes a record. @internal */
type AttemptEnd =
  | { readonly _tag: "Success"; readonly response: ProviderResponse }
  | { readonly _tag: "Failure"; readonly failure: ProviderFailure }
  | { readonly _tag: "Timeout"; readonly confirmed: boolean }

const DEFECT = new ProviderFailure({ kind: "unknown", code: "provider_defect", dispatched: true })

const fromExit = (exit: Exit.Exit<ProviderResponse, ProviderFailure>): AttemptEnd => {
  if (Exit.isSuccess(exit)) return { _tag: "Success", response: exit.value }
  const failure = Cause.failureOption(exit.cause)
  // A defect or a self-interruption inside provider code is unclassifiable: `unknown`, never retried. Its
  // message is not kept: it may hold provider text.
  return { _tag: "Failure", failure: Option.isSome(failure) ? failure.value : DEFECT }
}

/** Interrupts the attempt and waits at most `grace` for its finalizers; `true` when teardown completed. */
const teardown = <A, E>(fiber: Fiber.RuntimeFiber<A, E>, graceMillis: number): Effect.Effect<boolean> =>
  Effect.zipRight(
    Fiber.interruptFork(fiber),
    Effect.map(Effect.timeoutOption(Fiber.await(fiber), Duration.millis(clampMillis(graceMillis))), Option.isSome)
  )

/**
 * Runs one provider call bounded by `timeoutMillis`, in its own fiber so that a provider ignoring
 * interruption cannot hold the caller past the teardown grace.
 *
 * @internal
 */
export const runAttempt = (
  call: Effect.Effect<ProviderResponse, ProviderFailure>,
  timeoutMillis: number,
  graceMillis: number
): Effect.Effect<AttemptEnd> =>
  Effect.uninterruptibleMask((restore) =>
    Effect.flatMap(
      Effect.forkDaemon(restore(call)),
      (fiber) =>
        restore(Effect.timeoutOption(Fiber.await(fiber), Duration.millis(clampMillis(timeoutMillis)))).pipe(
          Effect.onInterrupt(() => teardown(fiber, graceMillis)),
          Effect.flatMap((exit) =>
            Option.isSome(exit)
              ? Effect.succeed(fromExit(exit.value))
              : Effect.map(teardown(fiber, graceMillis), (confirmed): AttemptEnd => ({ _tag: "Timeout", confirmed }))
          )
        )
    )
  )

const refuse = (refusal: Outcome.Refused["refusal"], reason: string) =>
  Effect.fail(new Outcome.Refused({ refusal, reason, attempts: [] }))

const validCount = (n: number | undefined, min: number): boolean =>
  n === undefined || (Number.isFinite(n) && Number.isInteger(n) && n >= min)

/**
 * Executes one request under a contract (see `Rein.execute`).
 *
 * @since 0.1.0
 */
export const execute = (
  request: CompletionRequest,
  contract: Contract
): Effect.Effect<Outcome.Completion, Outcome.Terminal, Rein> =>
  Effect.flatMap(Rein, (rein) => {
    // Refusals happen before the clock starts and before any call.
    if (contract.mode === "effectful") {
      return refuse("effectful_mode", "effectful operations are not retried here; use a durable ledger")
    }
    if (!validCount(request.inputTokens, 0) || !validCount(request.maxOutputTokens, 1)) {
      return refuse("invalid_request", "inputTokens must be a non-negative integer, maxOutputTokens a positive one")
    }
    const inputTokens = request.inputTokens ?? (rein.tokenizer === undefined ? null : rein.tokenizer(request))
    if ((contract.budget.cost !== undefined || contract.budget.tokens !== undefined) && inputTokens === null) {
      return refuse("no_input_bound", "a hard cost or token budget needs an input-token bound (fail closed)")
    }
    for (const id of contract.candidates) {
      const e = rein.catalog.byId.get(id)
      const p = e === undefined ? undefined : rein.providers.get(e.provider)
      if (p !== undefined && p.internalMaxAttempts !== 1) {
        return refuse(
          "nested_retries",
          `provider ${JSON.stringify(e!.provider)} retries internally (${p.internalMaxAttempts} attempts)`
        )
      }
    }
    const spec = makeSpec(contract, rein.catalog.byId, rein.providers, inputTokens, request.maxOutputTokens ?? null)
    return run(rein, request, contract, spec)
  })

interface Progress {
  readonly records: Array<Outcome.AttemptRecord>
  current: string | null
  tries: number
  last: { readonly kind: FailureKind; readonly retryAfterMillis: number | null; readonly code: string } | null
}

const causeOf = (p: Progress): Outcome.Cause | null =>
  p.last === null || p.current === null ? null : { kind: p.last.kind, code: p.last.code, endpoint: p.current }

const NO_HEALTH = {}
const NO_TOKENS = { global: null, endpoints: {} }

const run = (
  rein: Rein["Type"],
  request: CompletionRequest,
  contract: Contract,
  spec: Planner.Spec
): Effect.Effect<Outcome.Completion, Outcome.Terminal> =>
  Effect.gen(function*() {
    const deadline = yield* Deadline.make(contract.deadline)
    const budget = yield* Budget.make(contract.budget)
    const shared = yield* Effect.serviceOption(Budget.SharedBudget)
    const graceMillis = Duration.toMillis(contract.teardownGrace)
    const left = Option.isNone(shared)
      ? budget.left
      : STM.zipWith(budget.left, shared.value.left, Budget.minLeft)
    const reserve = (r: Planner.Reservation) =>
      Option.isNone(shared) ? budget.reserve(r) : STM.zipRight(budget.reserve(r), shared.value.reserve(r))
    const settle = (r: Planner.Reservation, c: { cost: number; tokens: number }) =>
      STM.commit(
        Option.isNone(shared) ? budget.settle(r, c) : STM.zipRight(budget.settle(r, c), shared.value.settle(r, c))
      )
    const progress: Progress = { records: [], current: null, tries: 0, last: null }
    const offset = (now: bigint) => Deadline.millisBetween(deadline.originNanos, now)

    while (true) {
      const now = yield* Clock.currentTimeNanos
      const remainingMillis = Math.max(0, Deadline.millisBetween(now, deadline.expiresNanos))
      const budgetLeft = yield* STM.commit(left)
      const jitter = progress.last === null ? null : yield* Random.next
      const decision = Planner.decide(spec, {
        elapsedMillis: offset(now),
        remainingMillis,
        budget: budgetLeft,
        attempts: progress.records.length,
        current: progress.current,
        triesOnCurrent: progress.tries,
        last: progress.last === null
          ? null
          : { kind: progress.last.kind, retryAfterMillis: progress.last.retryAfterMillis },
        health: NO_HEALTH,
        retryTokens: NO_TOKENS,
        committed: false,
        jitter
      })
      if (decision._tag === "Stop") return yield* Effect.fail(terminal(decision, progress))

      const reserved = yield* Effect.either(STM.commit(reserve(decision.reservation)))
      // A concurrent request took the shared budget between the snapshot and the reservation: decide again
      // on the fresh state.
      if (reserved._tag === "Left") continue
      if (decision.waitMillis > 0) {
        const lastIndex = progress.records.length - 1
        progress.records[lastIndex] = new Outcome.AttemptRecord({
          ...progress.records[lastIndex]!,
          backoffMillis: decision.waitMillis
        })
        yield* Effect.sleep(Duration.millis(clampMillis(decision.waitMillis))).pipe(
          Effect.onInterrupt(() => settle(decision.reservation, { cost: 0, tokens: 0 }))
        )
      }

      const endpoint = rein.catalog.byId.get(decision.endpoint)!
      const provider = rein.providers.get(endpoint.provider)!
      const startNanos = yield* Clock.currentTimeNanos
      const maxOutputTokens = request.maxOutputTokens ?? endpoint.capabilities.maxOutputTokens
      const end = yield* runAttempt(
        provider.call(request, {
          attempt: decision.attempt,
          endpoint,
          timeoutMillis: decision.timeoutMillis,
          remainingMillis: Math.max(0, Deadline.millisBetween(startNanos, deadline.expiresNanos)),
          reservation: decision.reservation,
          maxOutputTokens
        }),
        decision.timeoutMillis,
        graceMillis
      ).pipe(
        // Interrupted by the caller after dispatch: the reservation stays charged.
        Effect.onInterrupt(() =>
          settle(decision.reservation, Budget.charge(decision.reservation, UNKNOWN_AFTER_DISPATCH))
        )
      )
      const endNanos = yield* Clock.currentTimeNanos
      const usage: Usage.Usage = end._tag === "Success"
        ? end.response.usage
        : end._tag === "Failure" && end.failure.usage !== undefined
        ? end.failure.usage
        : "unknown"
      const dispatched = end._tag === "Failure" ? end.failure.dispatched : true
      const actualCost = usage === "unknown" ? null : Usage.cost(usage, endpoint.prices)
      const charged = Budget.charge(decision.reservation, { dispatched, usage, actualCost })
      yield* settle(decision.reservation, charged)

      const failure = end._tag === "Failure" ? end.failure : undefined
      const timedOut = end._tag === "Timeout"
      const status: Outcome.AttemptStatus = end._tag === "Success"
        ? "success"
        : failure !== undefined
        ? "failure"
        : decision.binding === "deadline"
        ? "deadline"
        : "timeout"
      const kind: FailureKind | null = failure !== undefined ? failure.kind : timedOut ? "timeout" : null
      const code = failure !== undefined ? failure.code : timedOut ? `${status}_expired` : null
      const record = new Outcome.AttemptRecord({
        attempt: decision.attempt,
        endpoint: decision.endpoint,
        role: decision.role,
        startMillis: offset(startNanos),
        endMillis: offset(endNanos),
        timeoutMillis: decision.timeoutMillis,
        binding: decision.binding,
        dispatched,
        status,
        failure: kind,
        code,
        retryAfterMillis: failure?.retryAfterMillis ?? null,
        backoffMillis: 0,
        reservation: decision.reservation,
        usage,
        charged: { cost: charged.cost, tokens: charged.tokens },
        billingBoundViolation: charged.violation,
        teardownUnconfirmed: end._tag === "Timeout" && !end.confirmed,
        simulated: isSimulated(endpoint, provider)
      })
      progress.records.push(record)
      if (progress.current === decision.endpoint) progress.tries++
      else {
        progress.current = decision.endpoint
        progress.tries = 1
      }

      if (end._tag === "Success") {
        return new Outcome.Completion({
          text: end.response.text,
          endpoint: endpoint.id,
          provider: endpoint.provider,
          model: endpoint.model,
          usage,
          cost: totalCost(progress.records),
          simulated: record.simulated,
          attempts: progress.records
        })
      }
      progress.last = { kind: kind!, retryAfterMillis: record.retryAfterMillis, code: code! }
      if (timedOut) {
        const after = yield* Clock.currentTimeNanos
        const expired = after >= deadline.expiresNanos
        if (decision.binding === "deadline" || expired) {
          return yield* Effect.fail(
            new Outcome.DeadlineExceeded({
              phase: decision.binding === "deadline" ? "attempt" : "teardown",
              reason: decision.binding === "deadline"
                ? `the deadline expired during attempt ${decision.attempt} on ${decision.endpoint}`
                : `the deadline expired while attempt ${decision.attempt} tore down`,
              cause: causeOf(progress),
              teardownUnconfirmed: record.teardownUnconfirmed,
              attempts: progress.records
            })
          )
        }
      }
    }
  })

const UNKNOWN_AFTER_DISPATCH = { dispatched: true, usage: "unknown", actualCost: null } as const

const totalCost = (records: ReadonlyArray<Outcome.AttemptRecord>): number | "unknown" => {
  let total = 0
  for (const r of records) {
    if (r.usage === "unknown" && r.dispatched) return "unknown"
    total += r.charged.cost
  }
  return total
}

const terminal = (decision: Planner.Stop, progress: Progress): Outcome.Terminal => {
  const attempts = progress.records
  const cause = causeOf(progress)
  switch (decision.outcome) {
    case "DeadlineExceeded":
      return new Outcome.DeadlineExceeded({
        phase: decision.phase ?? "admission",
        reason: decision.reason,
        cause,
        teardownUnconfirmed: attempts.some((a) => a.teardownUnconfirmed),
        attempts
      })
    case "BudgetExhausted":
      return new Outcome.BudgetExhausted({
        resource: decision.resource ?? "cost",
        reason: decision.reason,
        cause,
        attempts
      })
    case "PlanExhausted":
      return new Outcome.PlanExhausted({ reason: decision.reason, cause, attempts })
    case "FailedSafe":
      return new Outcome.FailedSafe({
        reason: decision.reason,
        cause: cause ?? { kind: "unknown", code: "unknown", endpoint: "" },
        attempts
      })
    case "Refused":
      return new Outcome.Refused({ refusal: "no_legal_candidate", reason: decision.reason, attempts })
  }
}
