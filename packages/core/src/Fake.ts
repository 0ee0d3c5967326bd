/**
 * Scripted providers for tests, examples and simulation. Each endpoint gets a script of steps, consumed
 * one per call (the last step repeats): succeed with usage after a latency, fail with a kind (and
 * Retry-After), hang, ignore interruption for a while, report no usage. Latencies use `Effect.sleep`, so
 * `TestClock` drives them. A fake is simulated: its results are labelled, and a contract must allow
 * simulation for it to run.
 *
 * @since 0.1.0
 */
import { Clock, Duration, Effect, Ref } from "effect"
import { Stream } from "effect"
import type { FailureKind } from "./Failure.js"
import { ProviderFailure } from "./Failure.js"
import { sleepMillis } from "./internal/duration.js"
import type { FinishReason, ToolCall } from "./Outcome.js"
import type { AttemptContext, CompletionRequest, Provider, ProviderResponse, StreamPart } from "./Provider.js"
import type { Tokens } from "./Usage.js"

/**
 * One scripted call.
 *
 * @category models
 * @since 0.1.0
 */
export type Step =
  | {
    readonly _tag: "Succeed"
    readonly text: string
    readonly usage: Tokens | "unknown"
    readonly latency: Duration.Duration
    readonly deltas?: ReadonlyArray<string> | undefined
    /** Why the model stopped (`"length"`: cut at the output limit; the contract's `truncation` decides). */
    readonly finishReason?: FinishReason | undefined
    /** Tool calls the answer makes (on `call`: a stream part has no tool calls, only its opaque payload). */
    readonly toolCalls?: ReadonlyArray<ToolCall> | undefined
  }
  | {
    readonly _tag: "Fail"
    readonly kind: FailureKind
    readonly code: string
    readonly latency: Duration.Duration
    readonly retryAfterMillis?: number | undefined
    readonly dispatched: boolean
    readonly usage?: Tokens | undefined
    /**
     * Raw provider text, as a real provider's error body would carry: the failure's `cause` is an `Error`
     * with this message and body. Classification ignores it; Rein must never record it.
     */
    readonly rawMessage?: string | undefined
    /** For streams: deltas emitted before the failure. */
    readonly afterDeltas?: ReadonlyArray<string> | undefined
  }
  | { readonly _tag: "Hang" }
  | { readonly _tag: "Stubborn"; readonly ignoreFor: Duration.Duration; readonly then: Step }
  | { readonly _tag: "Defect"; readonly message: string }
  | { readonly _tag: "Dynamic"; readonly choose: (nowMillis: number) => Step }

/**
 * A successful call after `latency` (default 0), with usage (default 10 in / 10 out; `"unknown"` for none),
 * and optionally a finish reason and tool calls (a `"length"` finish is a truncated answer: what it means
 * is the contract's `truncation`).
 *
 * @example
 * ```ts
 * import { Fake } from "@rein/core"
 *
 * Fake.succeed({ text: "ok", usage: { inputTokens: 100, outputTokens: 20 }, latency: "50 millis" })
 * Fake.succeed({ text: "cut at the li", finishReason: "length" })
 * Fake.succeed({
 *   text: "",
 *   finishReason: "tool-calls",
 *   toolCalls: [{ id: "call_1", name: "weather", params: { city: "Oslo" } }]
 * })
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const succeed = (options: {
  readonly text?: string
  readonly usage?: Tokens | "unknown"
  readonly latency?: Duration.DurationInput
  readonly deltas?: ReadonlyArray<string>
  readonly finishReason?: FinishReason
  readonly toolCalls?: ReadonlyArray<ToolCall>
} = {}): Step => ({
  _tag: "Succeed",
  text: options.text ?? options.deltas?.join("") ?? "ok",
  usage: options.usage ?? { inputTokens: 10, outputTokens: 10 },
  latency: Duration.decode(options.latency ?? 0),
  deltas: options.deltas,
  finishReason: options.finishReason,
  toolCalls: options.toolCalls
})

/**
 * A failed call of the given kind after `latency` (default 0). `dispatched` defaults to true except for
 * `transport` failures (a connect-phase failure). `rawMessage` plants provider text in the failure (as its
 * `cause`), for leak tests.
 *
 * @example
 * ```ts
 * import { Fake } from "@rein/core"
 *
 * Fake.fail("rate_limited", { retryAfter: "300 millis" })
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const fail = (kind: FailureKind, options: {
  readonly code?: string
  readonly latency?: Duration.DurationInput
  readonly retryAfter?: Duration.DurationInput
  readonly dispatched?: boolean
  readonly usage?: Tokens
  readonly rawMessage?: string
  readonly afterDeltas?: ReadonlyArray<string>
} = {}): Step => ({
  _tag: "Fail",
  kind,
  code: options.code ?? kind,
  latency: Duration.decode(options.latency ?? 0),
  retryAfterMillis: options.retryAfter === undefined ? undefined : Duration.toMillis(options.retryAfter),
  dispatched: options.dispatched ?? kind !== "transport",
  usage: options.usage,
  rawMessage: options.rawMessage,
  afterDeltas: options.afterDeltas
})

/**
 * A call that never answers (interruptible).
 *
 * @category constructors
 * @since 0.1.0
 */
export const hang: Step = { _tag: "Hang" }

/**
 * A call that ignores interruption for `ignoreFor`, then behaves as `then`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const stubborn = (ignoreFor: Duration.DurationInput, then: Step = hang): Step => ({
  _tag: "Stubborn",
  ignoreFor: Duration.decode(ignoreFor),
  then
})

/**
 * A call whose provider code throws (a defect), with a message that must never be recorded.
 *
 * @category constructors
 * @since 0.1.0
 */
export const defect = (message: string): Step => ({ _tag: "Defect", message })

/**
 * A step chosen when the call arrives, from the (virtual) clock: for outages and recoveries over time.
 *
 * @example
 * ```ts
 * import { Fake } from "@rein/core"
 *
 * // 503 for the first five minutes, then healthy.
 * const outage = Fake.dynamic((now) => (now < 300_000 ? Fake.fail("overloaded") : Fake.succeed()))
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const dynamic = (choose: (nowMillis: number) => Step): Step => ({ _tag: "Dynamic", choose })

/**
 * One call the fake received.
 *
 * @category models
 * @since 0.1.0
 */
export interface Call {
  readonly endpoint: string
  readonly attempt: number
  readonly call: number
  readonly timeoutMillis: number
  readonly remainingMillis: number
}

/**
 * A scripted provider and what it saw.
 *
 * @category models
 * @since 0.1.0
 */
export interface Fake {
  readonly provider: Provider
  /** Every call received, in order. */
  readonly calls: Effect.Effect<ReadonlyArray<Call>>
  /** Calls whose teardown (finalizer) has run. */
  readonly teardowns: Effect.Effect<number>
}

const toFailure = (step: Extract<Step, { _tag: "Fail" }>): ProviderFailure => {
  const failure = new ProviderFailure({
    kind: step.kind,
    code: step.code,
    dispatched: step.dispatched,
    ...(step.retryAfterMillis !== undefined ? { retryAfterMillis: step.retryAfterMillis } : {}),
    ...(step.usage !== undefined ? { usage: step.usage } : {})
  })
  if (step.rawMessage !== undefined) {
    // The provider's own error travels as the failure's `cause`, the way an adapter keeps the SDK error it
    // classified (an own, non-enumerable property, as `new Error(message, { cause })` installs it). Its text
    // is in the message and in an enumerable body: anything that serialised, logged or rendered the failure
    // would show it.
    Object.defineProperty(failure, "cause", {
      value: Object.assign(new Error(step.rawMessage), { body: { error: { message: step.rawMessage } } }),
      configurable: true,
      enumerable: false,
      writable: true
    })
  }
  return failure
}

/**
 * Makes a fake provider from per-endpoint scripts (keyed by endpoint id). An endpoint without a script
 * succeeds at once. Pass `options.simulated: false` to use it where a real provider would be expected.
 *
 * Give Rein its `provider`, under the provider name of the catalog's endpoints (the contract must allow
 * simulation: `allowSimulated: true`); `calls` and `teardowns` are what it saw.
 *
 * @example
 * ```ts
 * import { Catalog, Fake, Rein } from "@rein/core"
 *
 * declare const catalog: Catalog.Catalog // endpoints "openai/mini" and "anthropic/haiku", provider "fake"
 * const fake = Fake.make({
 *   "openai/mini": [Fake.fail("overloaded"), Fake.succeed({ text: "second time lucky" })],
 *   "anthropic/haiku": [Fake.succeed()]
 * })
 * const ReinLive = Rein.layer({ catalog, providers: { fake: fake.provider } }) // not `{ fake }`
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const make = (
  scripts: Readonly<Record<string, ReadonlyArray<Step>>> | ReadonlyMap<string, ReadonlyArray<Step>>,
  options: { readonly simulated?: boolean; readonly internalMaxAttempts?: number } = {}
): Fake => {
  // By id in a Map: an endpoint called `constructor` has its own script, not `Object`'s.
  const byEndpoint: ReadonlyMap<string, ReadonlyArray<Step>> = scripts instanceof Map
    ? scripts
    : new Map(Object.entries(scripts))
  const cursors = new Map<string, number>()
  const calls = Ref.unsafeMake<ReadonlyArray<Call>>([])
  const teardowns = Ref.unsafeMake(0)
  const next = (endpoint: string): Step => {
    const script = byEndpoint.get(endpoint)
    if (script === undefined || script.length === 0) return DEFAULT
    const i = cursors.get(endpoint) ?? 0
    cursors.set(endpoint, i + 1)
    return script[Math.min(i, script.length - 1)]!
  }
  const record = (ctx: AttemptContext) =>
    Ref.update(calls, (cs) => [...cs, {
      endpoint: ctx.endpoint.id,
      attempt: ctx.attempt,
      call: ctx.call,
      timeoutMillis: ctx.timeoutMillis,
      remainingMillis: ctx.remainingMillis
    }])
  const play = (step: Step): Effect.Effect<ProviderResponse, ProviderFailure> => {
    switch (step._tag) {
      case "Succeed":
        return Effect.as(sleep(step.latency), answerOf(step))
      case "Fail":
        return Effect.zipRight(sleep(step.latency), Effect.fail(toFailure(step)))
      case "Hang":
        return Effect.never
      case "Stubborn":
        return Effect.zipRight(Effect.uninterruptible(sleepFor(step.ignoreFor)), play(step.then))
      case "Defect":
        return Effect.die(new Error(step.message))
      case "Dynamic":
        return Effect.flatMap(Clock.currentTimeMillis, (now) => play(step.choose(now)))
    }
  }
  const call = (_request: CompletionRequest, ctx: AttemptContext) =>
    Effect.suspend(() => {
      const step = next(ctx.endpoint.id)
      return Effect.zipRight(record(ctx), play(step)).pipe(
        Effect.onInterrupt(() => Ref.update(teardowns, (n) => n + 1))
      )
    })
  const stream = (_request: CompletionRequest, ctx: AttemptContext): Stream.Stream<StreamPart, ProviderFailure> =>
    Stream.unwrap(Effect.sync(() => {
      const step = next(ctx.endpoint.id)
      const head = Stream.fromEffect(record(ctx)).pipe(Stream.drain)
      switch (step._tag) {
        case "Succeed": {
          const deltas = step.deltas ?? [step.text]
          const parts = deltas.map((delta, i): StreamPart =>
            i === deltas.length - 1
              ? {
                delta,
                usage: step.usage,
                done: true,
                ...(step.finishReason === undefined ? {} : { finishReason: step.finishReason })
              }
              : { delta }
          )
          return Stream.concat(head, Stream.fromIterable(parts).pipe(Stream.tap(() => sleep(step.latency))))
        }
        case "Fail":
          return Stream.concat(
            head,
            Stream.concat(
              Stream.fromIterable((step.afterDeltas ?? []).map((delta): StreamPart => ({ delta }))),
              Stream.fromEffect(Effect.zipRight(sleep(step.latency), Effect.fail(toFailure(step))))
            )
          )
        default:
          return Stream.concat(head, Stream.fromEffect(play(step)).pipe(Stream.map((r) => ({ delta: r.text }))))
      }
    }))
  return {
    provider: {
      internalMaxAttempts: options.internalMaxAttempts ?? 1,
      simulated: options.simulated ?? true,
      call,
      stream
    },
    calls: Ref.get(calls),
    teardowns: Ref.get(teardowns)
  }
}

/** A scripted success as the provider's answer (finish reason and tool calls only when scripted). */
const answerOf = (step: Extract<Step, { _tag: "Succeed" }>): ProviderResponse => ({
  text: step.text,
  usage: step.usage,
  ...(step.finishReason === undefined ? {} : { finishReason: step.finishReason }),
  ...(step.toolCalls === undefined ? {} : { toolCalls: step.toolCalls })
})

const DEFAULT: Step = succeed()

/** A scripted wait; one past the longest timer sleeps in clamped waits until it is due (`sleepMillis`). */
const sleepFor = (d: Duration.Duration) => sleepMillis(Duration.toMillis(d))

/** A scripted latency: none at all when zero. */
const sleep = (d: Duration.Duration) => (Duration.toMillis(d) > 0 ? sleepFor(d) : Effect.void)
