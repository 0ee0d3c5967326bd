/**
 * The decision loop shared by `Execute` (one answer) and `Streaming` (a committed stream): snapshot →
 * decide → acquire → wait → gate → attempt → settle, until an attempt succeeds or the planner stops.
 *
 * @internal
 */
import type { Fiber } from "effect"
import { Clock, Context, Duration, Effect, Either, Exit, FiberRef, LogLevel, Option, Random } from "effect"
import * as Budget from "../Budget.js"
import type { Endpoint } from "../Catalog.js"
import type { Contract } from "../Contract.js"
import * as Deadline from "../Deadline.js"
import type { FailureKind } from "../Failure.js"
import type * as Gate from "../Gate.js"
import { Gate as GateTag } from "../Gate.js"
import type * as Health from "../Health.js"
import { countRefusal, Health as HealthTag } from "../Health.js"
type Permit = Health.Permit
import type { Header, Service as JournalService, Writer } from "../Journal.js"
import { Journal } from "../Journal.js"
import * as Outcome from "../Outcome.js"
import * as Planner from "../Planner.js"
import type { AttemptContext, CompletionRequest, Provider } from "../Provider.js"
import { Telemetry as TelemetryTag } from "../Telemetry.js"
import * as Usage from "../Usage.js"
import * as Attempt from "./attempt.js"
import type { Service as ReinService } from "./context.js"
import { Rein } from "./context.js"
import { clampMillis, MAX_TIMER_MILLIS, sleepMillis, timeoutOptionMillis } from "./duration.js"
import { IDLE, keepMap } from "./maps.js"
import * as Refusals from "./refusals.js"
import * as Spec from "./spec.js"
import { construct } from "./stackless.js"
import * as Telemetry from "./telemetry.js"

/**
 * The failure table after a contract's narrowing and widening.
 *
 * @since 0.1.0
 */
export const effectiveTable = Spec.effectiveTable

const isSimulated = (endpoint: Endpoint, provider: Provider | undefined): boolean =>
  endpoint.simulated || provider?.simulated === true

/**
 * Builds the planner's static view of a request: the candidates in order with their capabilities and
 * pinned prices, the requirements, the retry policy and the effective failure table.
 *
 * @example
 * ```ts
 * import { Execute } from "@rein/core"
 * import type { Contract, Rein } from "@rein/core"
 *
 * declare const contract: Contract.Contract
 * declare const rein: Rein.Services
 * const spec = Execute.makeSpec(contract, rein.catalog.byId, rein.providers, 900, 400)
 * ```
 * @since 0.1.0
 */
export const makeSpec = (
  contract: Contract,
  endpoints: ReadonlyMap<string, Endpoint>,
  providers: ReadonlyMap<string, Provider>,
  inputTokens: number | null,
  maxOutputTokens: number | null,
  options: Spec.DeriveOptions = {}
): Planner.Spec => {
  const streaming = options.streaming === true
  return Spec.derive(
    contract,
    endpoints,
    (e) => {
      const provider = providers.get(e.provider)
      return {
        hasProvider: provider !== undefined && (!streaming || provider.stream !== undefined),
        simulated: provider?.simulated === true
      }
    },
    inputTokens,
    maxOutputTokens,
    options
  )
}

/** What a request itself uses that a candidate must support (see `Spec.Uses`). @internal */
export type Uses = Spec.Uses

/** What `request` uses, or `undefined` for a plain prompt (the common case: nothing allocated). @internal */
export const usesOf = (request: CompletionRequest): Uses | undefined => {
  const tools = request.tools
  const json = request.responseFormat === "json"
  if ((tools === undefined || tools.length === 0) && !json) return undefined
  let vendors: Array<string> | undefined
  for (const tool of tools ?? []) {
    if (tool.vendor !== undefined && !(vendors ??= []).includes(tool.vendor)) vendors.push(tool.vendor)
  }
  const uses = tools !== undefined && tools.length > 0
  return {
    tools: uses,
    structuredOutput: json,
    vendors,
    key: `${uses ? 1 : 0}${json ? 1 : 0}${vendors === undefined ? "" : JSON.stringify(vendors)}`
  }
}

/** What a contract resolves to under one Rein: the nested-retry check, and its specs per request shape. */
interface Resolved {
  /** The candidates the catalog does not know (a likely typo, refused before any call), or `null`. */
  readonly unknown: string | null
  /** Why a candidate's provider is refused (it retries internally), or `null`. */
  readonly nested: string | null
  readonly byShape: Map<string, Planner.Spec>
  /** The contract's deadline and teardown grace, converted once. */
  readonly deadlineNanos: bigint
  readonly graceMillis: number
  /** The last shape asked for: consecutive requests of one batch usually share it. */
  last: {
    readonly input: number | null
    readonly output: number | null
    readonly streaming: boolean
    readonly uses: string | undefined
    readonly spec: Planner.Spec
    /** The spec's candidate ids (`idsOf`), kept beside it: no lookup per request. */
    readonly ids: ReadonlyArray<string>
  } | undefined
}

const resolved = new WeakMap<ReinService, WeakMap<Contract, Resolved>>()
const SPECS_PER_CONTRACT = 256

/** Resolves a contract under a Rein once (its providers and catalog are fixed when the layer is built). */
const resolve = (rein: ReinService, contract: Contract): Resolved => {
  let byContract = resolved.get(rein)
  if (byContract === undefined) resolved.set(rein, byContract = new WeakMap())
  let found = byContract.get(contract)
  if (found === undefined) {
    let nested: string | null = null
    for (const id of contract.candidates) {
      const e = rein.catalog.byId.get(id)
      const p = e === undefined ? undefined : rein.providers.get(e.provider)
      if (e !== undefined && p !== undefined && p.internalMaxAttempts !== 1) {
        nested = Refusals.nestedRetries(e.provider, p.internalMaxAttempts)
        break
      }
    }
    const unknown = contract.candidates.filter((id) => !rein.catalog.byId.has(id))
    byContract.set(
      contract,
      found = {
        unknown: Refusals.unknownCandidates(unknown),
        nested,
        byShape: new Map(),
        last: undefined,
        deadlineNanos: Deadline.nanosOf(contract.deadline),
        graceMillis: Duration.toMillis(contract.teardownGrace)
      }
    )
  }
  return found
}

/** The spec is a pure function of these inputs: built once per contract and request shape (with its ids). */
const cachedSpec = (
  rein: ReinService,
  contract: Contract,
  entry: Resolved,
  inputTokens: number | null,
  maxOutputTokens: number | null,
  streaming: boolean,
  uses: Uses | undefined
): NonNullable<Resolved["last"]> => {
  const last = entry.last
  if (
    last !== undefined && last.input === inputTokens && last.output === maxOutputTokens &&
    last.streaming === streaming && last.uses === uses?.key
  ) {
    return last
  }
  const key = `${inputTokens}:${maxOutputTokens}:${streaming ? 1 : 0}${uses === undefined ? "" : `:${uses.key}`}`
  let spec = entry.byShape.get(key)
  if (spec === undefined) {
    if (entry.byShape.size >= SPECS_PER_CONTRACT) entry.byShape.clear()
    spec = makeSpec(contract, rein.catalog.byId, rein.providers, inputTokens, maxOutputTokens, { streaming, uses })
    entry.byShape.set(key, spec)
  }
  return entry.last = {
    input: inputTokens,
    output: maxOutputTokens,
    streaming,
    uses: uses?.key,
    spec,
    ids: idsOf(spec)
  }
}

const ids = new WeakMap<Planner.Spec, ReadonlyArray<string>>()
/** The candidate ids of a (cached) spec, computed once. */
const idsOf = (spec: Planner.Spec): ReadonlyArray<string> => {
  let found = ids.get(spec)
  if (found === undefined) ids.set(spec, found = spec.candidates.map((c) => c.id))
  return found
}

/** What a refusal knows about the request it refuses. */
interface Refusing {
  readonly fiber: Fiber.RuntimeFiber<unknown, unknown>
  readonly clock: Clock.Clock
  readonly context: Context.Context<Rein>
  readonly rein: ReinService
  readonly request: CompletionRequest
  readonly contract: Contract
  readonly streaming: boolean
}

/** What a tokenizer threw: user code, so a throw refuses its request instead of killing the caller's fiber. */
class TokenizerThrew {
  constructor(readonly error: unknown) {}
}

/** The tokenizer's count of a request that gives none, `null` without a tokenizer, or what the tokenizer threw. */
const tokenize = (rein: ReinService, request: CompletionRequest): number | null | TokenizerThrew => {
  if (rein.tokenizer === undefined) return null
  try {
    return rein.tokenizer(request)
  } catch (error) {
    return new TokenizerThrew(error)
  }
}

/**
 * Refuses a request before it starts (before the clock, before any call). Under a journal the refusal is a
 * record of its own — no decision, no attempt, the refusal and its reason as the outcome — so that every
 * request that reached Rein is on the record. Its spec holds the bounds the request gave (an invalid one
 * as `null`).
 */
const refuse = (
  refusing: Refusing,
  refusal: Outcome.Refused["refusal"],
  reason: string
): Effect.Effect<never, Outcome.Refused> => {
  const refused = (id: string | undefined) =>
    construct(Outcome.Refused, { refusal, reason, attempts: [], ...withId(id) })
  const journal = Context.getOption(refusing.context, Journal)
  const telemetry = Context.getOption(refusing.context, TelemetryTag)
  if (Option.isNone(journal) && Option.isNone(telemetry)) return Effect.fail(refused(refusing.request.id))
  const { clock, contract, fiber, rein, request, streaming } = refusing
  const counted = validCount(request.inputTokens, 0) ? request.inputTokens ?? tokenize(rein, request) : null
  // A tokenizer's count that is not one (NaN, negative, a throw) would reach the journal's spec, which cannot
  // hold it.
  const input = typeof counted === "number" && isCount(counted) ? counted : null
  const output = validCount(request.maxOutputTokens, 1) ? request.maxOutputTokens ?? null : null
  const spec = makeSpec(contract, rein.catalog.byId, rein.providers, input, output, { streaming })
  // Telemetry hook: a refused request gets its request span and outcome metric too (it ends at once).
  const nowNanos = clock.unsafeCurrentTimeNanos()
  return Effect.gen(function*() {
    // Under a journal the id is the record's (drawn when the request names none): the outcome carries it, and
    // so does the span.
    const id = Option.isNone(journal) ? request.id : request.id ?? (yield* requestId)
    const observed = Option.isNone(telemetry) ? undefined : Telemetry.open(fiber, telemetry.value, {
      contract,
      spec,
      endpoints: rein.catalog.byId,
      streaming,
      clock,
      originNanos: nowNanos,
      expiresNanos: nowNanos,
      gated: false
    }, id)
    const writer = Option.isNone(journal) || id === undefined ? undefined : yield* journal.value.begin({
      requestId: id,
      contract,
      endpoints: consulted(rein, spec),
      spec
    })
    const outcome = refused(id)
    const both = Telemetry.tee(writer, observed)
    if (both !== undefined) yield* both.end(outcome)
    return yield* Effect.fail(outcome)
  })
}

const consultedBySpec = new WeakMap<Planner.Spec, ReadonlyArray<Endpoint>>()
/** The catalog entries a spec consults (its known candidates): once per (cached) spec, whose catalog is fixed. */
const consulted = (rein: ReinService, spec: Planner.Spec): ReadonlyArray<Endpoint> => {
  let found = consultedBySpec.get(spec)
  if (found === undefined) {
    found = spec.candidates.flatMap((c) => {
      const e = rein.catalog.byId.get(c.id)
      return e === undefined ? [] : [e]
    })
    consultedBySpec.set(spec, found)
  }
  return found
}

// A safe integer, as `isCount` takes a tokenizer's: a request's 1e300 is the request's to fix, not a tokenizer's.
const validCount = (n: number | undefined, min: number): boolean =>
  n === undefined || (Number.isSafeInteger(n) && n >= min)

const isCount = (n: unknown): n is number => typeof n === "number" && Number.isSafeInteger(n) && n >= 0

/** Everything one request needs, resolved once. */
/** @internal */
export interface Env {
  readonly rein: ReinService
  /** The request's clock, read synchronously on the hot path. */
  readonly clock: Clock.Clock
  readonly request: CompletionRequest
  readonly contract: Contract
  readonly spec: Planner.Spec
  readonly ids: ReadonlyArray<string>
  readonly deadline: Deadline.Service
  /** The hard budget in force (the request's own, the shared one, or both), or `undefined`: none applies and
   * budget bookkeeping is skipped. */
  readonly budget: Budget.Service | undefined
  readonly health: Health.Service | undefined
  readonly gate: Gate.Service | undefined
  /** The journal's (and telemetry's) writer: set once, while the request is prepared (before it runs), so that
   * opening it copies no environment. */
  writer: Writer | undefined
  /** The request's id for its outcome: the caller's, or the journal's once drawn (set with `writer`). */
  requestId: string | undefined
  readonly graceMillis: number
}

/** @internal */
export interface Progress {
  /** The attempts' records so far (replaced by a one-element array at the first: see `finishAttempt`). */
  records: Array<Outcome.AttemptRecord>
  current: string | null
  tries: number
  rateLimited: number
  /** Attempts so far that were not rate-limited (the logical attempt number is one more). */
  counted: number
  last: { readonly kind: FailureKind; readonly retryAfterMillis: number | null; readonly code: string } | null
  /** The request's id, for the outcomes built from the progress (`Env.requestId`). */
  readonly requestId: string | undefined
}

/** What the loop hands back once an attempt has succeeded (for a stream: committed). */
/** @internal */
export interface Committed<S> {
  readonly payload: S
  readonly usage: Usage.Usage
  readonly endpoint: Endpoint
  readonly provider: Provider
  readonly progress: Progress
  /** Monotonic nanos when the attempt's own bound ends (its timeout, or the deadline). */
  readonly endsNanos: bigint
  readonly binding: "attempt" | "deadline"
  /**
   * Records the attempt (with its final usage or failure) and settles budget, health and gate. `atDeadline`: a
   * timeout the deadline ended although the attempt's own bound was its timeout (a stream's attempt end, paused
   * while the consumer holds deltas, reaches the deadline): recorded as the deadline's (`binding: "deadline"`).
   */
  readonly finish: (end: Attempt.AttemptEnd<unknown>, atDeadline?: boolean) => Effect.Effect<Outcome.AttemptRecord>
  /** `finish` as a synchronous step: the record, and the effect that settles it (`undefined`: nothing to do). */
  readonly finishNow: (
    end: Attempt.AttemptEnd<unknown>
  ) => readonly [Outcome.AttemptRecord, Effect.Effect<void> | undefined]
  /** After a committed stream failed: the planner's (recorded) verdict, always terminal. */
  readonly stopCommitted: Effect.Effect<Outcome.Terminal>
}

/** @internal */
export const causeOf = (p: Progress): Outcome.Cause | null =>
  p.last === null || p.current === null ? null : { kind: p.last.kind, code: p.last.code, endpoint: p.current }

const NO_HEALTH: Planner.Snapshot["health"] = Object.freeze(Object.create(null))
const SUCCESS: Health.Result = { _tag: "success" }
const NEUTRAL: Health.Result = { _tag: "neutral" }
const NO_TOKENS: Planner.Snapshot["retryTokens"] = { global: null, endpoints: Object.freeze(Object.create(null)) }

/** Resolves the request's environment, or refuses before any call. */
/** @internal */
export const prepare = (
  request: CompletionRequest,
  contract: Contract,
  streaming: boolean
): Effect.Effect<Env, Outcome.Refused, Rein> =>
  Effect.withFiberRuntime((fiber) => {
    const prepared = prepareIn(fiber, request, contract, streaming)
    return prepared instanceof Unnamed
      ? Effect.map(prepared.draw, (n) => prepared.named(n))
      : Effect.isEffect(prepared)
      ? prepared
      : Effect.succeed(prepared)
  })

const refusingIn = (
  fiber: Fiber.RuntimeFiber<unknown, unknown>,
  request: CompletionRequest,
  contract: Contract,
  streaming: boolean
): Refusing => {
  const context = fiber.currentContext as Context.Context<Rein>
  const clock = Context.get(fiber.currentDefaultServices, Clock.Clock)
  return { fiber, clock, context, rein: Context.get(context, Rein), request, contract, streaming }
}

/**
 * `prepare` inside the running fiber: the environment at once when resolving it needs no effect, `Unnamed` when
 * only the request id's draw is left (a journal that opens synchronously, a request without an id), else the
 * effect that resolves it (or the refusal).
 *
 * @internal
 */
export const prepareIn = (
  fiber: Fiber.RuntimeFiber<unknown, unknown>,
  request: CompletionRequest,
  contract: Contract,
  streaming: boolean
): Prepared => {
  const context = fiber.currentContext as Context.Context<Rein>
  const clock = Context.get(fiber.currentDefaultServices, Clock.Clock)
  const rein = Context.get(context, Rein)
  // Refusals happen before the clock starts and before any call. (What a refusal needs is built only for
  // one: this runs once per request, and most are not refused.)
  if (contract.mode === "effectful") {
    return refuse(
      refusingIn(fiber, request, contract, streaming),
      "effectful_mode",
      Refusals.effectfulMode
    )
  }
  const validInput = validCount(request.inputTokens, 0)
  if (!validInput || !validCount(request.maxOutputTokens, 1)) {
    return refuse(
      refusingIn(fiber, request, contract, streaming),
      "invalid_request",
      Refusals.invalidBounds(request.inputTokens, request.maxOutputTokens, validInput)
    )
  }
  const inputTokens = request.inputTokens ?? tokenize(rein, request)
  if (inputTokens instanceof TokenizerThrew) {
    return refuse(
      refusingIn(fiber, request, contract, streaming),
      "invalid_request",
      Refusals.tokenizerThrew(inputTokens.error)
    )
  }
  // A tokenizer is user code: a count that is not a non-negative integer (NaN, negative, a fraction) would
  // make a NaN or negative reservation, which a budget would admit and count.
  if (inputTokens !== null && !isCount(inputTokens)) {
    return refuse(
      refusingIn(fiber, request, contract, streaming),
      "invalid_request",
      Refusals.invalidTokenizerCount(inputTokens)
    )
  }
  if ((contract.budget.cost !== undefined || contract.budget.tokens !== undefined) && inputTokens === null) {
    return refuse(
      refusingIn(fiber, request, contract, streaming),
      "no_input_bound",
      Refusals.noInputBound(contract.budget)
    )
  }
  const entry = resolve(rein, contract)
  if (entry.unknown !== null) {
    return refuse(refusingIn(fiber, request, contract, streaming), "unknown_candidate", entry.unknown)
  }
  if (entry.nested !== null) {
    return refuse(refusingIn(fiber, request, contract, streaming), "nested_retries", entry.nested)
  }
  const uses = usesOf(request)
  const shape = cachedSpec(rein, contract, entry, inputTokens, request.maxOutputTokens ?? null, streaming, uses)
  const spec = shape.spec
  // The optional services are read with `getOrElse` (no `Option` per lookup: this runs once per request).
  const outer = Context.getOrElse(context, Deadline.Deadline, NOTHING)
  const deadline = Deadline.startingNanos(clock.unsafeCurrentTimeNanos(), entry.deadlineNanos, outer)
  const limits = contract.budget
  const ownLimits = limits.cost !== undefined || limits.tokens !== undefined || limits.calls !== undefined
  const shared = Context.getOrElse(context, Budget.SharedBudget, NOTHING)
  // The request's own budget, then the shared one (see `Budget.both`).
  const own = ownLimits ? new Budget.InMemory(limits) : undefined
  const gate = Context.getOrElse(context, GateTag, NOTHING)
  const env: Env = {
    rein,
    clock,
    request,
    contract,
    spec,
    ids: shape.ids,
    deadline,
    budget: own === undefined ? shared : shared === undefined ? own : Budget.both(own, shared),
    health: Context.getOrElse(context, HealthTag, NOTHING),
    gate,
    writer: undefined,
    requestId: request.id,
    graceMillis: entry.graceMillis
  }
  // Telemetry hook: spans and metrics ride on the journal's writer hooks (nothing when no `Telemetry`); under a
  // journal they open with its writer, once the request's id is known (the caller's, else the journal's draw).
  const telemetry = Context.getOrElse(context, TelemetryTag, NOTHING)
  const observing = telemetry === undefined ? undefined : new Telemetry.Opening(fiber, telemetry, {
    contract,
    spec,
    endpoints: rein.catalog.byId,
    streaming,
    clock,
    originNanos: deadline.originNanos,
    expiresNanos: deadline.expiresNanos,
    gated: gate !== undefined
  })
  const journal = Context.getOrElse(context, Journal, NOTHING)
  if (journal === undefined) {
    env.writer = observing?.open(request.id)
    return env
  }
  return journaledEnv(fiber, journal, env, observing)
}

/**
 * The environment with the journal's writer (and telemetry's): opened in this step when the journal can
 * (`unsafeBegin`) and the request names itself; `Unnamed` when only the request id's draw is left (one effect,
 * which the caller runs before the request); else one effect for the id and `begin`.
 */
const journaledEnv = (
  fiber: Fiber.RuntimeFiber<unknown, unknown>,
  journal: JournalService,
  env: Env,
  observing: Telemetry.Opening | undefined
): Env | Unnamed | Effect.Effect<Env> => {
  const unsafeBegin = journal.unsafeBegin
  const request = env.request
  if (unsafeBegin !== undefined) {
    if (request.id === undefined) return new Unnamed(env, drawOf(fiber), unsafeBegin, observing)
    env.writer = Telemetry.tee(unsafeBegin(headerOf(env, request.id)), observing?.open(request.id))
    return env
  }
  const begin = (id: string) =>
    Effect.map(journal.begin(headerOf(env, id)), (writer) => {
      env.writer = Telemetry.tee(writer, observing?.open(id))
      return env
    })
  return request.id !== undefined
    ? begin(request.id)
    : Effect.flatMap(drawOf(fiber), (n) => begin(env.requestId = idOf(n)))
}

const NOTHING = (): undefined => undefined

/** A request's id when it names none: `req-` and a draw from the fiber's `Random`, in base 36. */
const idOf = (n: number): string => `req-${n.toString(36)}`

/** The request id's draw, from the fiber's own `Random` service read in this step (`Random.nextIntBetween`'s
 * draw without its step that reads the service). */
const drawOf = (fiber: Fiber.RuntimeFiber<unknown, unknown>): Effect.Effect<number> =>
  Context.get(fiber.currentDefaultServices, Random.Random).nextIntBetween(0, 0x7fffffff)

const requestId = Effect.map(Random.nextIntBetween(0, 0x7fffffff), idOf)

const headerOf = (env: Env, requestId: string): Header => ({
  requestId,
  contract: env.contract,
  endpoints: consulted(env.rein, env.spec),
  spec: env.spec
})

/**
 * A prepared request whose journal opens synchronously but whose id is still to be drawn: `named` opens the
 * writer once `draw` has run. (A class, so that a request allocates one object, not closures.)
 *
 * @internal
 */
export class Unnamed {
  constructor(
    readonly env: Env,
    readonly draw: Effect.Effect<number>,
    readonly unsafeBegin: (header: Header) => Writer,
    readonly observing: Telemetry.Opening | undefined
  ) {}
  named(n: number): Env {
    const env = this.env
    const id = env.requestId = idOf(n)
    env.writer = Telemetry.tee(this.unsafeBegin(headerOf(env, id)), this.observing?.open(id))
    return env
  }
}

/** What `prepareIn` gives: the environment, one still to be named, or the effect that resolves it. @internal */
export type Prepared = Env | Unnamed | Effect.Effect<Env, Outcome.Refused>

const UNLIMITED: Budget.Left = { cost: null, tokens: null, calls: null }

/** Settles a hold: at once on the budget's fast path (`undefined`), else the effect that settles it. */
const settle = (
  budget: Budget.Service,
  hold: Budget.Hold,
  charged: Budget.Charged
): Effect.Effect<void> | undefined => {
  if (budget.unsafeSettle === undefined) return budget.settle(hold, charged)
  budget.unsafeSettle(hold, charged)
  return undefined
}

/** Records an attempt's end with health: at once on its fast path (the metrics effect), else the effect. */
const complete = (
  health: Health.Service,
  atNanos: bigint,
  permit: Permit,
  result: Health.Result
): Effect.Effect<void> =>
  health.unsafeComplete === undefined ? health.complete(permit, result) : health.unsafeComplete(atNanos, permit, result)

/** The snapshot as of now, from the budget left and the jitter draw (health is read here, synchronously). */
const snapshotOf = (
  env: Env,
  progress: Progress,
  budget: Budget.Left,
  jitter: number | null,
  viewed?: Health.View,
  reading?: Now
): Planner.Snapshot => {
  const now = reading ?? env.clock.unsafeCurrentTimeNanos()
  const health = env.health
  const view = health === undefined
    ? undefined
    : health.unsafeView === undefined
    ? viewed
    : health.unsafeView(now, env.ids)
  return {
    elapsedMillis: Deadline.millisBetween(env.deadline.originNanos, now),
    remainingMillis: Math.max(0, Deadline.millisBetween(now, env.deadline.expiresNanos)),
    budget,
    attempts: progress.records.length,
    current: progress.current,
    triesOnCurrent: progress.tries,
    rateLimitedOnCurrent: progress.rateLimited,
    last: progress.last === null
      ? null
      : { kind: progress.last.kind, retryAfterMillis: progress.last.retryAfterMillis },
    health: view === undefined ? NO_HEALTH : view.health,
    retryTokens: view === undefined ? NO_TOKENS : view.retryTokens,
    committed: false,
    jitter
  }
}

/**
 * The snapshot the planner will consume: at once when every input can be read synchronously (no jitter to
 * draw, the budget and health on their fast paths), else the effect that reads them.
 */
const snapshotNow = (
  env: Env,
  progress: Progress,
  now?: Now
): Planner.Snapshot | Effect.Effect<Planner.Snapshot> => {
  const { budget, health } = env
  const slowHealth = health !== undefined && health.unsafeView === undefined
  const left = budget === undefined ? UNLIMITED : budget.unsafeLeft === undefined ? undefined : budget.unsafeLeft()
  if (left !== undefined && progress.last === null && !slowHealth) {
    return snapshotOf(env, progress, left, null, undefined, now)
  }
  return Effect.map(
    Effect.all([
      left !== undefined || budget === undefined ? Effect.succeed(left ?? UNLIMITED) : budget.left,
      progress.last === null ? Effect.succeed(null) : Random.next,
      slowHealth ? health.view(env.ids) : Effect.succeed(undefined)
    ]),
    ([left, jitter, view]) => snapshotOf(env, progress, left, jitter, view)
  )
}

/** The snapshot the planner will consume. */
const snapshot = (env: Env, progress: Progress): Effect.Effect<Planner.Snapshot> =>
  Effect.suspend(() => {
    const snap = snapshotNow(env, progress)
    return Effect.isEffect(snap) ? snap : Effect.succeed(snap)
  })

const decide = (env: Env, snap: Planner.Snapshot): Planner.Decision => {
  const decision = Planner.decide(env.spec, snap)
  env.writer?.decision(snap, decision)
  return decision
}

/** Runs one attempt, bounded, and continues with `k` (see `Attempt.bounded`). @internal */
export type RunAttempt<S, B> = (
  provider: Provider,
  context: AttemptContext,
  timeoutMillis: number,
  k: Attempt.Continue<S, B, Outcome.Terminal>
) => Effect.Effect<B, Outcome.Terminal>

/** How a request runs its attempts, and what it does with the committed one. @internal */
export interface Driver<S, B> {
  readonly attempt: RunAttempt<S, B>
  readonly commit: (committed: Committed<S>) => Effect.Effect<B, Outcome.Terminal>
}

/**
 * The decision loop: snapshot → decide → acquire → wait → gate → attempt → settle, until an attempt
 * succeeds (returned as `Committed`) or the planner stops (a terminal failure).
 *
 * DESIGN sketches retries as a `Schedule` and fallback as an `Effect.firstSuccessOf` fold. Both would be a
 * second decision site beside the planner (the schedule deciding "retry or not", the fold "which next"),
 * with inputs the journal could not record. Here the planner decides every step from one recorded
 * snapshot and this loop only interprets: the ordered-fold semantics (current endpoint, then the next
 * legal candidate, never back) and the exponential, jittered, Retry-After-aware, deadline-clamped backoff
 * live in `Planner.decide`, where replay can check them.
 *
 * The steps are plain functions that do their synchronous work directly and return an effect only where
 * something may suspend (a budget transaction, a wait, the gate, the attempt): every effect operation costs
 * on the hot path, and a request that needs none of these costs only its attempt.
 *
 * @internal
 */
export const loop = <S, B>(env: Env, driver: Driver<S, B>): Effect.Effect<B, Outcome.Terminal> =>
  Effect.suspend(() => run(env, driver))

/**
 * `loop`, started now: call it only while the request runs (it allocates the request's progress). `now`: the
 * clock's reading, when the caller read it in this same synchronous step (see `Now`).
 *
 * @internal
 */
export const run = <S, B>(env: Env, driver: Driver<S, B>, now?: Now): Effect.Effect<B, Outcome.Terminal> =>
  next(
    env,
    {
      records: NO_RECORDS.slice(),
      current: null,
      tries: 0,
      rateLimited: 0,
      counted: 0,
      last: null,
      requestId: env.requestId
    },
    driver,
    now
  )

// No records yet, as a list of objects: `[]` is a list of small integers to V8, another hidden class than a list
// that holds a record, so the readers of `progress.records`, optimized on first attempts, were deoptimized by the
// first retry or fallback of a process (`finishAttempt`'s `length`, inlined into `commit`; #22). Each request
// starts from a copy, of the one class every list of records has.
const NO_RECORDS: Array<Outcome.AttemptRecord> = [IDLE]
NO_RECORDS.pop()

/**
 * A reading of the request's clock taken in the current synchronous step, handed along the steps that follow
 * without an effect in between (the snapshot, the health slot's time, the attempt's start), so that a first
 * attempt reads the clock once (its request's start) instead of four times: each reading is a native call
 * and two `bigint`s. Never carried past an effect (a step after one reads the clock itself: `undefined`).
 *
 * @internal
 */
export type Now = bigint

/** Snapshot and decide (reading the budget and drawing jitter only when they matter). */
const next = <S, B>(
  env: Env,
  progress: Progress,
  driver: Driver<S, B>,
  now?: Now
): Effect.Effect<B, Outcome.Terminal> => {
  const snap = snapshotNow(env, progress, now)
  return Effect.isEffect(snap)
    ? Effect.flatMap(snap, (snap) => plan(env, progress, snap, driver))
    : plan(env, progress, snap, driver, now)
}

/** Decides, then acquires: the budget reservation (a transaction over the request's and the shared budget). */
const plan = <S, B>(
  env: Env,
  progress: Progress,
  snap: Planner.Snapshot,
  driver: Driver<S, B>,
  now?: Now
): Effect.Effect<B, Outcome.Terminal> => {
  const decision = decide(env, snap)
  if (decision._tag === "Stop") return Effect.fail(terminal(decision, progress, env.spec, snap))
  const budget = env.budget
  if (budget === undefined) return acquire(env, progress, decision, undefined, driver, now)
  // Another request took the shared budget since the snapshot: decide again on the fresh state.
  const reserved = budget.unsafeReserve === undefined ? undefined : budget.unsafeReserve(decision.reservation)
  if (reserved !== undefined) {
    return Either.isLeft(reserved)
      ? Effect.suspend(() => next(env, progress, driver))
      : acquire(env, progress, decision, reserved.right, driver, now)
  }
  return Effect.flatMap(
    reserveWithin(env, progress, budget, decision),
    (reserved) =>
      Either.isRight(reserved)
        ? acquire(env, progress, decision, reserved.right, driver)
        : reserved.left.reason === "unavailable"
        ? Effect.fail(unavailable(reserved.left, progress))
        : next(env, progress, driver)
  )
}

/**
 * The effectful reservation (a remote store), bounded by the deadline: a store that hangs ends the request as
 * `DeadlineExceeded` at admission, never after its deadline. Disconnected: the deadline does not wait for the
 * store to finish interrupting (a database client may try to cancel its query first, over the same network).
 * A deadline past the longest timer waits in clamped sleeps (`timeoutOptionMillis`): the live clock never
 * fires a longer one.
 */
const reserveWithin = (
  env: Env,
  progress: Progress,
  budget: Budget.Service,
  decision: Planner.Attempt
): Effect.Effect<Either.Either<Budget.Hold, Budget.Shortfall>, Outcome.Terminal> => {
  const remaining = Deadline.millisBetween(env.clock.unsafeCurrentTimeNanos(), env.deadline.expiresNanos)
  const reserve = Effect.disconnect(Effect.either(budget.reserve(decision.reservation)))
  const expired = () => expiredAtAdmission(progress, `reserving the budget for ${decision.endpoint}`)
  return remaining <= MAX_TIMER_MILLIS
    ? Effect.timeoutFail(reserve, { duration: Duration.millis(clampMillis(remaining)), onTimeout: expired })
    : Effect.flatMap(
      timeoutOptionMillis(reserve, remaining),
      (reserved) => Option.isSome(reserved) ? Effect.succeed(reserved.value) : Effect.fail(expired())
    )
}

/** What a refused reservation needed, for `BudgetExhausted`: only an amount (a record holds no NaN). */
const neededOf = (needed: number | undefined): { readonly needed?: number } =>
  needed !== undefined && Number.isFinite(needed) && needed >= 0 ? { needed } : {}

/** The budget could not be consulted (its store did not answer): refused, and said so. */
const unavailable = (shortfall: Budget.Shortfall, progress: Progress) =>
  construct(Outcome.BudgetExhausted, {
    resource: shortfall.resource,
    reason: `the ${shortfall.resource} budget could not be consulted (its store is unavailable)`,
    lastFailure: causeOf(progress),
    attempts: progress.records,
    unavailable: true,
    ...neededOf(shortfall.needed),
    ...withId(progress.requestId)
  })

/**
 * Takes the probe slot and retry token right after the reservation: on health's fast path in one synchronous
 * step (nothing runs in between), else through its effect.
 */
const acquire = <S, B>(
  env: Env,
  progress: Progress,
  decision: Planner.Attempt,
  hold: Budget.Hold | undefined,
  driver: Driver<S, B>,
  now?: Now
): Effect.Effect<B, Outcome.Terminal> => {
  const health = env.health
  if (health === undefined) return wait({ env, progress, decision, hold, permit: undefined }, driver, now)
  // The slot is for when the attempt starts: after its wait. The fast path may decline (undefined): then the effect.
  let acquired: Either.Either<Permit, Health.Refusal> | undefined
  if (health.unsafeAcquire !== undefined) {
    const at = now ?? env.clock.unsafeCurrentTimeNanos()
    acquired = health.unsafeAcquire(
      decision.waitMillis <= 0 ? at : at + millisToNanos(decision.waitMillis),
      decision.endpoint,
      decision.role,
      env.ids
    )
  }
  if (acquired !== undefined) return acquiredOrNot(env, progress, decision, hold, acquired, driver, now)
  return Effect.flatMap(
    Effect.either(
      health.acquire(decision.endpoint, decision.role, { candidates: env.ids, afterMillis: decision.waitMillis })
    ).pipe(Effect.onInterrupt(() => giveBack(env, hold))),
    (acquired) => acquiredOrNot(env, progress, decision, hold, acquired, driver)
  )
}

const millisToNanos = (millis: number): bigint => millis <= 0 ? 0n : BigInt(Math.round(millis * 1e6))

/**
 * Gives back a reservation whose attempt never started, whole, call included: no call was made, and the cap
 * counts calls made (a call made is never refunded). The one rule for every give-back: a refusal by health, a
 * closing gate, expiry at admission, an interruption before the call.
 */
const giveBack = (env: Env, hold: Budget.Hold | undefined): Effect.Effect<void> =>
  env.budget === undefined || hold === undefined ? Effect.void : env.budget.release(hold)

/** Refused (another request took the slot or the last token since the snapshot): the refusal is counted
 * (`rein_admissions_refused_total`), the reservation is given back whole, call included (no call was made),
 * and the planner decides again. Else on to the wait. */
const acquiredOrNot = <S, B>(
  env: Env,
  progress: Progress,
  decision: Planner.Attempt,
  hold: Budget.Hold | undefined,
  acquired: Either.Either<Permit, Health.Refusal>,
  driver: Driver<S, B>,
  now?: Now
): Effect.Effect<B, Outcome.Terminal> =>
  Either.isLeft(acquired)
    ? Effect.zipRight(
      Effect.zipRight(countRefusal(acquired.left), giveBack(env, hold)),
      Effect.suspend(() => next(env, progress, driver))
    )
    : wait({ env, progress, decision, hold, permit: acquired.right }, driver, now)

/** Waits out the decision's backoff (stopped at once by a closing gate), then asks the gate. */
const wait = <S, B>(step: Step, driver: Driver<S, B>, now?: Now): Effect.Effect<B, Outcome.Terminal> => {
  const { decision, env, progress } = step
  if (decision.waitMillis <= 0) return admit(step, driver, now)
  const i = progress.records.length - 1
  progress.records[i] = { ...progress.records[i]!, backoffMillis: decision.waitMillis }
  const sleep = sleepMillis(decision.waitMillis)
  return Effect.flatMap(
    (env.gate === undefined
      ? Effect.as(sleep, undefined)
      : Effect.raceFirst(Effect.as(sleep, undefined), env.gate.closed))
      .pipe(Effect.onInterrupt(() => release(step))),
    (closed) =>
      closed === undefined
        ? admit(step, driver)
        : Effect.zipRight(release(step), Effect.fail(halted(closed.reason, progress)))
  )
}

/** One decided and acquired attempt, on its way to the provider. */
interface Step {
  readonly env: Env
  readonly progress: Progress
  readonly decision: Planner.Attempt
  /** The budget's hold, when a budget applies. */
  readonly hold: Budget.Hold | undefined
  readonly permit: Permit | undefined
}

/** Gives back what an attempt that never started holds: its probe slot and its whole reservation. */
const release = (step: Step): Effect.Effect<void> =>
  Effect.zipRight(
    giveBack(step.env, step.hold),
    Effect.suspend(() =>
      step.permit === undefined || step.env.health === undefined
        ? Effect.void
        : complete(step.env.health, step.env.clock.unsafeCurrentTimeNanos(), step.permit, NEUTRAL)
    )
  )

/** Asks the gate (which bounds its own wait by the time left: see `Gate`), then starts the attempt. */
const admit = <S, B>(step: Step, driver: Driver<S, B>, now?: Now): Effect.Effect<B, Outcome.Terminal> => {
  const { decision, env, progress } = step
  const endpoint = env.rein.catalog.byId.get(decision.endpoint)!
  const gate = env.gate
  if (gate === undefined) return start(step, endpoint, undefined, driver, now)
  const asked = now ?? env.clock.unsafeCurrentTimeNanos()
  const remainingMillis = Math.max(0, Deadline.millisBetween(asked, env.deadline.expiresNanos))
  if (remainingMillis <= 0) return Effect.zipRight(release(step), Effect.fail(expiredAtAdmission(progress, endpoint)))
  const ask: Gate.Ask = {
    endpoint,
    role: decision.role,
    attempt: progress.counted + 1,
    call: decision.attempt,
    reservation: decision.reservation,
    remainingMillis
  }
  if (gate.unsafeTryAdmit !== undefined) {
    const ticket = gate.unsafeTryAdmit(ask)
    // Admitted in this step: the attempt starts as of the same reading.
    if (Option.isSome(ticket)) return start(step, endpoint, ticket.value, driver, asked)
  }
  return Effect.flatMap(
    Effect.either(gate.admit(ask)).pipe(Effect.onInterrupt(() => release(step))),
    (admitted) => {
      if (admitted._tag === "Right") return start(step, endpoint, admitted.right, driver)
      return Effect.zipRight(
        release(step),
        Effect.fail(
          admitted.left._tag === "GateClosed"
            ? halted(admitted.left.reason, progress)
            : expiredAtAdmission(progress, endpoint)
        )
      )
    }
  )
}

/** One attempt under way: what its record and its settlement need. */
interface Running {
  readonly step: Step
  readonly endpoint: Endpoint
  readonly provider: Provider
  /** The gate's ticket (`undefined` without a gate). */
  readonly ticket: unknown
  readonly startNanos: bigint
  readonly timeoutMillis: number
  readonly binding: "attempt" | "deadline"
  readonly context: AttemptContext
  /** Set once the attempt is recorded: it is never recorded twice. */
  finished: boolean
}

/** Runs the attempt; a success is handed back (committed), a failure recorded and planned past. */
const start = <S, B>(
  step: Step,
  endpoint: Endpoint,
  ticket: unknown,
  driver: Driver<S, B>,
  now?: Now
): Effect.Effect<B, Outcome.Terminal> => {
  const { decision, env, progress } = step
  const provider = env.rein.providers.get(endpoint.provider)!
  const startNanos = now ?? env.clock.unsafeCurrentTimeNanos()
  const remainingAtStart = Math.max(0, Deadline.millisBetween(startNanos, env.deadline.expiresNanos))
  // A late timer or a gate that waited too long: no attempt starts at or after the deadline. (The gate's
  // ticket, if any, is the gate's to close: this attempt never reached `settle`.)
  if (remainingAtStart <= 0) return Effect.zipRight(release(step), Effect.fail(expiredAtAdmission(progress, endpoint)))
  // The gate may have waited: the attempt never runs past the deadline.
  const timeoutMillis = Math.min(decision.timeoutMillis, remainingAtStart)
  const binding: "attempt" | "deadline" = decision.binding === "deadline" || remainingAtStart <= decision.timeoutMillis
    ? "deadline"
    : "attempt"
  // The planner numbers calls (`decision.attempt` is one more than the attempts so far); the logical attempt
  // leaves out the rate-limited ones.
  const context: AttemptContext = {
    attempt: progress.counted + 1,
    call: decision.attempt,
    endpoint,
    timeoutMillis,
    remainingMillis: remainingAtStart,
    reservation: decision.reservation,
    maxOutputTokens: env.request.maxOutputTokens ?? endpoint.capabilities.maxOutputTokens
  }
  return driver.attempt(
    provider,
    context,
    timeoutMillis,
    new Attempting(step, endpoint, provider, ticket, startNanos, timeoutMillis, binding, context, driver)
  )
}

/**
 * One attempt under way, and what `Attempt.bounded` calls once it ended (its `Continue`). A class, not
 * closures: its methods live on the prototype, so an attempt allocates this one object rather than one
 * function per step (`then`, `interrupted`, `finish`, `finishNow` were four closures per attempt).
 */
class Attempting<S, B> implements Running, Attempt.Continue<S, B, Outcome.Terminal> {
  finished = false
  constructor(
    readonly step: Step,
    readonly endpoint: Endpoint,
    readonly provider: Provider,
    readonly ticket: unknown,
    readonly startNanos: bigint,
    readonly timeoutMillis: number,
    readonly binding: "attempt" | "deadline",
    readonly context: AttemptContext,
    readonly driver: Driver<S, B>
  ) {}

  // A gate that cancels requests in flight interrupts the attempt itself, with its caller (see
  // `Gate.Running`): one interruption to wait for, not the caller's and then, from the caller, the attempt's.
  started(fiber: Fiber.RuntimeFiber<unknown, unknown>): void {
    const gate = this.step.env.gate
    if (gate !== undefined && gate.unsafeRunning !== undefined) gate.unsafeRunning(this.ticket, fiber)
  }

  // The attempt's end is handled while interruption is still held off (see `Attempt.bounded`): the record
  // and the settlement happen before any interruption can land.
  then(end: Attempt.AttemptEnd<S>, fiber?: Fiber.RuntimeFiber<unknown, unknown>): Effect.Effect<B, Outcome.Terminal> {
    return end._tag === "Success"
      ? this.driver.commit(new CommittedAttempt(this, end.payload, end.usage))
      : failedAttempt(this, finishAttempt(this, end, fiber), end, this.driver, fiber)
  }

  // Interrupted by the caller while the attempt ran: recorded as `interrupted`, and since it may have been
  // sent, its reservation stays charged. Never after the attempt was recorded (a guard: `bounded` hands the
  // end over before interruption lands).
  interrupted(end: Attempt.AttemptEnd<never>): Effect.Effect<void> {
    if (this.finished) return Effect.void
    const settling = finishAttempt(this, end)[1]
    return settling === undefined ? Effect.void : settling
  }
}

/** What the driver is handed once an attempt succeeded: the payload, and how to finish and judge it. (A
 * class for the same reason as `Attempting`; `stopCommitted` is built only when a committed stream fails.) */
class CommittedAttempt<S> implements Committed<S> {
  readonly endpoint: Endpoint
  readonly provider: Provider
  readonly progress: Progress
  readonly binding: "attempt" | "deadline"
  constructor(private readonly running: Running, readonly payload: S, readonly usage: Usage.Usage) {
    this.endpoint = running.endpoint
    this.provider = running.provider
    this.progress = running.step.progress
    this.binding = running.binding
  }

  get endsNanos(): bigint {
    return this.running.startNanos + BigInt(Math.round(this.running.timeoutMillis * 1e6))
  }

  finishNow(end: Attempt.AttemptEnd<unknown>): readonly [Outcome.AttemptRecord, Effect.Effect<void> | undefined] {
    return finishAttempt(this.running, end)
  }

  finish(end: Attempt.AttemptEnd<unknown>, atDeadline = false): Effect.Effect<Outcome.AttemptRecord> {
    return Effect.suspend(() => {
      const [record, settling] = finishAttempt(this.running, end, undefined, atDeadline ? "deadline" : undefined)
      return settling === undefined ? Effect.succeed(record) : Effect.as(settling, record)
    })
  }

  get stopCommitted(): Effect.Effect<Outcome.Terminal> {
    const { endpoint, progress } = this
    const env = this.running.step.env
    return Effect.suspend(() =>
      Effect.map(snapshot(env, progress), (snap) => {
        const decision = decide(env, { ...snap, committed: true })
        return decision._tag === "Stop"
          ? terminal(decision, progress, env.spec, snap)
          : construct(Outcome.FailedSafe, {
            reason: `the stream has committed: no retry, no fallback; ${Refusals.committedFix}`,
            lastFailure: causeOf(progress) ?? { kind: "unknown", code: "unknown", endpoint: endpoint.id },
            attempts: progress.records,
            ...withId(progress.requestId)
          })
      })
    )
  }
}

// Their maps outlive a full collection between runs (see `internal/maps.ts`): the placeholders have the kinds
// of the real fields (a double for the timeout, a bigint for the start, a string for the binding).
const IDLE_STEP: Step = { env: IDLE, progress: IDLE, decision: IDLE, hold: undefined, permit: undefined }
keepMap(
  new CommittedAttempt(
    keepMap(new Attempting(IDLE_STEP, IDLE, IDLE, undefined, 0n, 0.5, "attempt", IDLE, IDLE)),
    IDLE,
    "unknown"
  )
)

/**
 * A failed attempt, recorded: its settlement, then the deadline's verdict or the next decision. `fiber`: the
 * caller's, when this runs in one of its steps (see `Attempt.Continue`).
 */
const failedAttempt = <S, B>(
  running: Running,
  [record, settling]: readonly [Outcome.AttemptRecord, Effect.Effect<void> | undefined],
  end: Attempt.AttemptEnd<S>,
  driver: Driver<S, B>,
  fiber: Fiber.RuntimeFiber<unknown, unknown> | undefined
): Effect.Effect<B, Outcome.Terminal> => {
  const { binding, step } = running
  const { env, progress } = step
  // An attempt bound by the deadline that timed out ends the request: its verdict is known now (no clock to
  // read after the settlement), so it is built here rather than in a suspended step after it.
  const rest = end._tag === "Timeout" && binding === "deadline"
    ? failIn(fiber, deadlineExceeded(running, record))
    : Effect.suspend((): Effect.Effect<B, Outcome.Terminal> =>
      end._tag === "Timeout" && env.clock.unsafeCurrentTimeNanos() >= env.deadline.expiresNanos
        ? Effect.fail(deadlineExceeded(running, record))
        : next(env, progress, driver)
    )
  return settling === undefined ? rest : Effect.zipRight(settling, rest)
}

/**
 * `Effect.fail(error)`, as an `Exit` when `fiber` (the caller's, running this step) has no span for the error
 * to carry: then `Effect.fail` would read the fiber's span in a step of its own and find none. An expiry's
 * verdict, settled in the caller's step, is then its result already (see `Attempt.restoreUnlessDone`).
 */
const failIn = <E extends object>(fiber: Fiber.RuntimeFiber<unknown, unknown> | undefined, error: E) =>
  fiber === undefined || fiber.currentSpan?._tag === "Span" ? Effect.fail(error) : Exit.fail(error)

/** The deadline expired while `running`'s attempt ran (binding `deadline`) or tore down (binding `attempt`). */
const deadlineExceeded = (running: Running, record: Outcome.AttemptRecord): Outcome.DeadlineExceeded => {
  const { binding, context, step } = running
  const { decision, progress } = step
  return construct(Outcome.DeadlineExceeded, {
    phase: binding === "deadline" ? "attempt" : "teardown",
    reason: binding === "deadline"
      ? `the deadline expired during call ${context.call} on ${decision.endpoint}`
      : `the deadline expired while call ${context.call} tore down`,
    lastFailure: causeOf(progress),
    teardownUnconfirmed: record.teardownUnconfirmed,
    attempts: progress.records,
    ...withId(progress.requestId)
  })
}

/**
 * Records the attempt; the effect settles budget, health and gate (only where there is work). `fiber`: the
 * caller's, when this runs in one of its steps (see `Attempt.Continue`).
 */
const finishAttempt = (
  running: Running,
  end: Attempt.AttemptEnd<unknown>,
  fiber?: Fiber.RuntimeFiber<unknown, unknown>,
  binding: "attempt" | "deadline" = running.binding
): readonly [Outcome.AttemptRecord, Effect.Effect<void> | undefined] => {
  running.finished = true
  const endNanos = running.step.env.clock.unsafeCurrentTimeNanos()
  const { charged, kind, record } = recordOf(running, end, endNanos, binding)
  const progress = running.step.progress
  // Most requests make one attempt: a one-element array (an empty one grows to 17 slots on its first push).
  if (progress.records.length === 0) progress.records = [record]
  else progress.records.push(record)
  running.step.env.writer?.attempt(record)
  if (progress.current === record.endpoint) progress.tries++
  else {
    progress.current = record.endpoint
    progress.tries = 1
    progress.rateLimited = 0
  }
  if (kind === "rate_limited") progress.rateLimited++
  else progress.counted++
  if (kind !== null) progress.last = { kind, retryAfterMillis: record.retryAfterMillis, code: record.code! }
  return [record, settlements(running, end, record, kind, charged, endNanos, fiber)]
}

/** The record of an ended attempt (`binding`: the bound that ended it), with its failure kind and charge. */
const recordOf = (
  running: Running,
  end: Attempt.AttemptEnd<unknown>,
  endNanos: bigint,
  binding: "attempt" | "deadline"
) => {
  const { context, endpoint, provider, startNanos, step, timeoutMillis } = running
  const { decision, env } = step
  const reported: Usage.Usage = end._tag === "Success"
    ? end.usage
    : end._tag === "Failure" && end.failure.usage !== undefined
    ? end.failure.usage
    : "unknown"
  const dispatched = end._tag === "Failure" ? end.failure.dispatched : true
  // Usage that is not a count (NaN, ±Infinity, negative), or whose cost is not finite, is unknown usage: the
  // reservation stays charged, and the record says why (`invalidUsage`).
  const priced = reported === "unknown" ? null : Usage.isCount(reported) ? Usage.cost(reported, endpoint.prices) : NaN
  const invalidUsage = priced !== null && !(Number.isFinite(priced) && priced >= 0)
  const usage = invalidUsage ? "unknown" : reported
  const actualCost = invalidUsage ? null : priced
  const charged = Budget.charge(decision.reservation, { dispatched, usage, actualCost })
  const failure = end._tag === "Failure" ? end.failure : undefined
  const status: Outcome.AttemptStatus = end._tag === "Success"
    ? "success"
    : failure !== undefined
    ? "failure"
    : end._tag === "Interrupted"
    ? "interrupted"
    : binding === "deadline"
    ? "deadline"
    : "timeout"
  const kind: FailureKind | null = failure !== undefined
    ? failure.kind
    : end._tag === "Timeout"
    ? "timeout"
    : null
  const record: Outcome.AttemptRecord = {
    attempt: context.attempt,
    call: context.call,
    endpoint: decision.endpoint,
    role: decision.role,
    startMillis: Deadline.millisBetween(env.deadline.originNanos, startNanos),
    endMillis: Deadline.millisBetween(env.deadline.originNanos, endNanos),
    timeoutMillis,
    binding,
    dispatched,
    status,
    failure: kind,
    code: failure !== undefined ? failure.code : end._tag === "Timeout" ? `${status}_expired` : null,
    retryAfterMillis: failure === undefined ? null : Spec.boundRetryAfter(failure.retryAfterMillis, env.contract),
    backoffMillis: 0,
    reservation: decision.reservation,
    usage,
    charged: { cost: charged.cost, tokens: charged.tokens },
    billingBoundViolation: charged.violation,
    teardownUnconfirmed: (end._tag === "Timeout" || end._tag === "Interrupted") && !end.confirmed,
    simulated: isSimulated(endpoint, provider)
  }
  const answered = (end._tag === "Success" || end._tag === "Failure") &&
    (end.finishReason !== undefined || end.toolCalls !== undefined)
  const full = invalidUsage ? { ...record, invalidUsage } : record
  return { charged, kind, record: answered ? withAnswer(full, end) : full }
}

/** `first` then `effect` (`undefined`: nothing), skipping what does nothing. */
const chain = (
  first: Effect.Effect<void> | undefined,
  effect: Effect.Effect<void> | undefined
): Effect.Effect<void> | undefined =>
  effect === undefined || effect === Effect.void ? first : first === undefined ? effect : Effect.zipRight(first, effect)

/** Settles an ended attempt with budget, health and gate: only the effects that do something (most
 * successful attempts have none). */
const settlements = (
  running: Running,
  end: Attempt.AttemptEnd<unknown>,
  record: Outcome.AttemptRecord,
  kind: FailureKind | null,
  charged: Budget.Charged,
  endNanos: bigint,
  fiber: Fiber.RuntimeFiber<unknown, unknown> | undefined
): Effect.Effect<void> | undefined => {
  const { endpoint, step, ticket } = running
  const { env, hold, permit } = step
  // The settling effects in order, chained as they come: most attempts have none or one (the health metrics),
  // so no array and no `Effect.all` (this runs once per attempt).
  let effects: Effect.Effect<void> | undefined
  if (env.budget !== undefined && hold !== undefined) effects = chain(effects, settle(env.budget, hold, charged))
  if (record.invalidUsage === true) {
    effects = chain(
      effects,
      Effect.logWarning("rein: the provider reported usage that is not a count; charged as unknown usage").pipe(
        Effect.annotateLogs({ endpoint: record.endpoint, attempt: record.attempt })
      )
    )
  }
  if (kind !== null) {
    // Failures are logged with machine data only (kind, code, endpoint): never provider text.
    effects = chain(effects, fiber === undefined ? logFailed(record, kind) : logFailedIn(fiber, record, kind))
  }
  const health = env.health
  if (permit !== undefined && health !== undefined) {
    // Caller interruption is not a failure kind, and says nothing about the endpoint.
    const result: Health.Result = end._tag === "Success"
      ? SUCCESS
      : kind === null
      ? NEUTRAL
      : env.spec.table[kind].health
      ? { _tag: "failure", kind, retryAfterMillis: record.retryAfterMillis }
      : NEUTRAL
    effects = chain(effects, complete(health, endNanos, permit, result))
    if ((end._tag === "Timeout" || end._tag === "Interrupted") && !end.confirmed) {
      // Degraded until the abandoned attempt finally ends.
      effects = chain(
        effects,
        Effect.flatMap(
          health.degrade(endpoint.id),
          (undo) => Effect.asVoid(Effect.forkDaemon(Effect.zipRight(end.settled, undo)))
        )
      )
    }
  }
  const gate = env.gate
  if (gate !== undefined) {
    effects = chain(
      effects,
      gate.unsafeSettle !== undefined ? gate.unsafeSettle(ticket, record) : gate.settle(ticket, record)
    )
  }
  return effects
}

/**
 * Logs a failed attempt at debug level, when the fiber logs debug at all. Below the minimum level the log
 * would be dropped anyway, but `annotateLogs` around it is not free: it sets the annotations' fiber ref and
 * restores it (each a hash of the annotation map), on every failed or expired attempt. With a thousand
 * expiries at once that was a visible share of the expiry path.
 */
const logFailed = (record: Outcome.AttemptRecord, kind: FailureKind): Effect.Effect<void> =>
  Effect.withFiberRuntime((fiber) => logFailedIn(fiber, record, kind) ?? Effect.void)

const DEBUG = LogLevel.Debug.ordinal

/**
 * `logFailed`, decided in a step of `fiber` that is running now (the caller's, when it settles an attempt in
 * its own step): `undefined` when the fiber does not log debug, so the settlement has no step for it at all.
 */
const logFailedIn = (
  fiber: Fiber.RuntimeFiber<unknown, unknown>,
  record: Outcome.AttemptRecord,
  kind: FailureKind
): Effect.Effect<void> | undefined =>
  // `LogLevel.greaterThan`, without its `dual` and `Order` calls: levels are ordered by their ordinal.
  fiber.getFiberRef(FiberRef.currentMinimumLogLevel).ordinal > DEBUG
    ? undefined
    : Effect.logDebug("rein: attempt failed").pipe(
      Effect.annotateLogs({
        endpoint: record.endpoint,
        attempt: record.attempt,
        kind,
        code: record.code ?? "",
        status: record.status
      })
    )

/** A record with what it may keep of the answer: the finish reason and tool-call names and counts. */
const withAnswer = (
  record: Outcome.AttemptRecord,
  end: {
    readonly finishReason?: Outcome.FinishReason | undefined
    readonly toolCalls?: ReadonlyArray<Outcome.ToolCallCount> | undefined
  }
): Outcome.AttemptRecord => ({
  ...record,
  ...(end.finishReason === undefined ? {} : { finishReason: end.finishReason }),
  ...(end.toolCalls === undefined ? {} : { toolCalls: end.toolCalls })
})

/** The deadline expired before an attempt could start: waiting for admission to an endpoint, or `doing`. */
const expiredAtAdmission = (progress: Progress, doing: Endpoint | string) =>
  construct(Outcome.DeadlineExceeded, {
    phase: "admission",
    reason: `the deadline expired ${typeof doing === "string" ? doing : `waiting for admission to ${doing.id}`}`,
    lastFailure: causeOf(progress),
    teardownUnconfirmed: progress.records.some((r) => r.teardownUnconfirmed),
    attempts: progress.records,
    ...withId(progress.requestId)
  })

const NO_ID: { readonly requestId?: string } = {}

/**
 * An outcome's `requestId` field: `{ requestId }` when the request has an id, else nothing (the field stays
 * absent, not `undefined`).
 *
 * @internal
 */
export const withId = (requestId: string | undefined): { readonly requestId?: string } =>
  requestId === undefined ? NO_ID : { requestId }

/** @internal */
export const halted = (reason: string, progress: Progress) =>
  construct(Outcome.Halted, {
    reason,
    lastFailure: causeOf(progress),
    attempts: progress.records,
    ...withId(progress.requestId)
  })

/** @internal */
export const totalCost = (records: ReadonlyArray<Outcome.AttemptRecord>): number | "unknown" => {
  let total = 0
  for (const r of records) {
    if (r.usage === "unknown" && r.dispatched) return "unknown"
    total += r.charged.cost
  }
  return total
}

/**
 * The planner's reason (which replay compares, so it stays as recorded) and, on the outcome only, what to change.
 */
const withFix = (reason: string, fix: string | undefined): string => fix === undefined ? reason : `${reason}; ${fix}`

/** What to change after a `FailedSafe` stop: in the planner's order, a kind that forbids both, else a commit. */
const failedSafeFix = (spec: Planner.Spec, cause: Outcome.Cause): string => {
  const rule = spec.table[cause.kind]
  return !rule.retry && rule.fallback === "none" ? Refusals.failedSafeFix(cause.kind, rule) : Refusals.committedFix
}

const STATIC: ReadonlyArray<Planner.Predicate> = ["listed", "capable", "mode", "simulation"]
/** The predicates of the contract's policy (as `Planner`'s): every one but the dynamic ones (time, budget, health). */
const POLICY: ReadonlyArray<Planner.Predicate> = [...STATIC, "failureAllows", "uncommitted"]

/** Each candidate a refusal excluded, by the first predicate that did (the one `Planner`'s reason names). */
const excludedBy = (decision: Planner.Stop): ReadonlyArray<Refusals.Excluded> =>
  decision.candidates.flatMap((c) => {
    const predicate = STATIC.find((p) => c.verdicts[p] !== true)
    return predicate === undefined ? [] : [{ endpoint: c.endpoint, predicate, why: String(c.verdicts[predicate]) }]
  })

/**
 * The breakers that refused the candidates the policy allows (every predicate but the dynamic ones), with when
 * each may half-open, as the snapshot the stop was decided on has them; none when no breaker refused one.
 */
const breakersOf = (
  decision: Planner.Stop,
  snap: Planner.Snapshot
): { readonly breakers?: ReadonlyArray<Outcome.BreakerRefusal> } => {
  const breakers: Array<Outcome.BreakerRefusal> = []
  for (const c of decision.candidates) {
    if (c.verdicts.health === true || !POLICY.every((p) => c.verdicts[p] === true)) continue
    const view = Object.hasOwn(snap.health, c.endpoint) ? snap.health[c.endpoint] : undefined
    if (view === undefined || view.state === "closed") continue
    breakers.push({ endpoint: c.endpoint, state: view.state, halfOpensInMillis: Math.max(0, view.opensInMillis) })
  }
  return breakers.length === 0 ? {} : { breakers }
}

/** @internal */
export const terminal = (
  decision: Planner.Stop,
  progress: Progress,
  spec: Planner.Spec,
  snap: Planner.Snapshot
): Outcome.Terminal => {
  const attempts = progress.records
  const cause = causeOf(progress)
  const id = withId(progress.requestId)
  switch (decision.outcome) {
    case "DeadlineExceeded":
      return construct(Outcome.DeadlineExceeded, {
        phase: decision.phase ?? "admission",
        reason: decision.reason,
        lastFailure: cause,
        teardownUnconfirmed: attempts.some((a) => a.teardownUnconfirmed),
        attempts,
        ...id
      })
    case "BudgetExhausted":
      return construct(Outcome.BudgetExhausted, {
        resource: decision.resource ?? "cost",
        reason: decision.reason,
        lastFailure: cause,
        attempts,
        ...neededOf(Planner.neededFor(spec, decision)),
        ...id
      })
    case "PlanExhausted":
      return construct(Outcome.PlanExhausted, {
        reason: decision.reason,
        lastFailure: cause,
        attempts,
        ...breakersOf(decision, snap),
        ...id
      })
    case "FailedSafe": {
      const last = cause ?? { kind: "unknown" as const, code: "unknown", endpoint: "" }
      return construct(Outcome.FailedSafe, {
        reason: withFix(decision.reason, failedSafeFix(spec, last)),
        lastFailure: last,
        attempts,
        ...id
      })
    }
    case "Refused":
      return construct(Outcome.Refused, {
        refusal: "no_legal_candidate",
        reason: Refusals.noLegalCandidate(decision.reason, excludedBy(decision)),
        attempts,
        ...id
      })
  }
}
