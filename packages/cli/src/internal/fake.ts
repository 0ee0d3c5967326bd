/**
 * The built-in fake provider of the CLI: every provider name the registry does not list runs on it. Each
 * call asks the scenario how the endpoint behaves at that moment and `Fake` from `@rein/core` plays the step.
 *
 * @internal
 */
import type { Provider } from "@rein/core"
import { Failure, Fake } from "@rein/core"
import { Clock, Context, Duration, Effect, Random } from "effect"
import type { Behaviour, Scenario } from "../Scenario.js"
import { tokenizer } from "./tokens.js"

const SIMULATED_TEXT = "(simulated answer)"

type Step = Fake.Step

// The status an HTTP provider would answer with, so that progress reads `503` as it would against a real one.
const HTTP_STATUS: Readonly<Record<string, string>> = {
  rate_limited: "http_429",
  overloaded: "http_503",
  server_error: "http_500",
  authentication: "http_401",
  permission_denied: "http_403",
  invalid_request: "http_400"
}
const codeOf = (kind: string): { readonly code?: string } => {
  const code = HTTP_STATUS[kind]
  return code === undefined ? {} : { code }
}

const toStep = (
  scenario: Scenario | undefined,
  behaviour: Behaviour,
  offsetMillis: number,
  u: number,
  inputTokens: number,
  maxOutputTokens: number
): Step => {
  const ok = (latency: number, outputTokens: number) =>
    Fake.succeed({
      text: SIMULATED_TEXT,
      latency: Duration.millis(latency),
      usage: { inputTokens, outputTokens: Math.min(outputTokens, maxOutputTokens) }
    })
  switch (behaviour.kind) {
    case "ok":
    case "drip":
      return ok(behaviour.latency, behaviour.outputTokens)
    case "stall":
      return Fake.hang
    case "fail": {
      if (u < behaviour.probability) {
        return Fake.fail(behaviour.failure, {
          ...codeOf(behaviour.failure),
          latency: Duration.millis(behaviour.latency),
          ...(behaviour.retryAfter === undefined ? {} : { retryAfter: Duration.millis(behaviour.retryAfter) })
        })
      }
      // The calls spared by the probability behave as the scenario's default (never recursively failing).
      const fallback = scenario?.default
      return fallback === undefined || fallback.kind === "fail"
        ? ok(200, 100)
        : toStep(scenario, fallback, offsetMillis, u, inputTokens, maxOutputTokens)
    }
    case "flap": {
      const position = offsetMillis % (behaviour.up + behaviour.down)
      return position < behaviour.up
        ? ok(behaviour.latency, 100)
        : Fake.fail(behaviour.failure, { ...codeOf(behaviour.failure), latency: Duration.millis(behaviour.latency) })
    }
  }
}

const sleep = (d: Duration.Duration) => (Duration.toMillis(d) > 0 ? Effect.sleep(d) : Effect.void)

/**
 * Plays one step as a `Fake` with that one step scripted would (its latency through `Effect.sleep`, then the
 * answer or the classified failure), without making that `Fake`: its call log and teardown count are never
 * read here, and making one per call was a visible share of a simulation's CPU.
 */
const play = (
  step: Step,
  request: Provider.CompletionRequest,
  context: Provider.AttemptContext
): Effect.Effect<Provider.ProviderResponse, Failure.ProviderFailure> => {
  switch (step._tag) {
    case "Succeed":
      return Effect.as(sleep(step.latency), { text: step.text, usage: step.usage })
    case "Fail": {
      const failure = new Failure.ProviderFailure({
        kind: step.kind,
        code: step.code,
        dispatched: step.dispatched,
        ...(step.retryAfterMillis !== undefined ? { retryAfterMillis: step.retryAfterMillis } : {})
      })
      return Effect.zipRight(sleep(step.latency), Effect.fail(failure))
    }
    case "Hang":
      return Effect.never
    default:
      return Fake.make({ [context.endpoint.id]: [step] }).provider.call(request, context)
  }
}

/**
 * A phase of one endpoint (or the scenario's default) as the fake plays it: every phase in one class, its end a
 * number (`Infinity`: none), so the per-call lookup reads one shape whichever behaviour the phase holds. An `ok` or
 * `drip` behaviour's answer (its latency's sleep, then the same text and usage) is made once per request shape and
 * played again by every call of that shape: an `Effect` is a description, and the answer is never changed.
 */
class Played {
  private inputTokens = -1
  private maxOutputTokens = -1
  private answer: Effect.Effect<Provider.ProviderResponse> | undefined = undefined
  readonly answers: boolean
  constructor(readonly from: number, readonly until: number, readonly behaviour: Behaviour) {
    this.answers = behaviour.kind === "ok" || behaviour.kind === "drip"
  }

  /** The answer of an `ok` or `drip` behaviour (`answers`) to a request of that shape. */
  answerTo(inputTokens: number, maxOutputTokens: number): Effect.Effect<Provider.ProviderResponse> {
    if (this.answer === undefined || this.inputTokens !== inputTokens || this.maxOutputTokens !== maxOutputTokens) {
      const b = this.behaviour as Extract<Behaviour, { readonly kind: "ok" | "drip" }>
      const step = toStep(undefined, b, 0, 0, inputTokens, maxOutputTokens) as Extract<Step, { _tag: "Succeed" }>
      this.answer = Effect.as(sleep(step.latency), { text: step.text, usage: step.usage })
      this.inputTokens = inputTokens
      this.maxOutputTokens = maxOutputTokens
    }
    return this.answer
  }
}

const NO_SCENARIO: Behaviour = { kind: "ok", latency: 0, outputTokens: 100 }

/** The phases of every endpoint the scenario scripts (own entries only: `constructor` is an endpoint like any other). */
const phasesOf = (scenario: Scenario | undefined): Map<string, ReadonlyArray<Played>> =>
  new Map(
    Object.entries(scenario?.endpoints ?? {}).map(([id, phases]) => [
      id,
      phases.map((p) => new Played(p.from, p.until ?? Infinity, p.behaviour))
    ])
  )

/** The phase of `phases` at `offsetMillis` (as `behaviourAt`: the first that holds it, else the default). */
const phaseAt = (phases: ReadonlyArray<Played> | undefined, otherwise: Played, offsetMillis: number): Played => {
  if (phases !== undefined) {
    for (const phase of phases) {
      // Both bounds read before either is compared: an `until` first read once optimized would deoptimize.
      const { from, until } = phase
      if (offsetMillis >= from && offsetMillis < until) return phase
    }
  }
  return otherwise
}

/**
 * The built-in fake: each call asks the scenario how the endpoint behaves at this moment (offset from
 * `originMillis` on the effect's `Clock`, so virtual time drives it in `simulate`), and `Fake` plays that
 * step (latency through `Effect.sleep`, the failure as a classified `ProviderFailure`). Probabilities are
 * drawn from the effect's `Random`, seeded in `simulate`.
 *
 * @internal
 */
export const scripted = (scenario: Scenario | undefined, originMillis: number): Provider.Provider => {
  const phases = phasesOf(scenario)
  const otherwise = new Played(0, Infinity, scenario === undefined ? NO_SCENARIO : scenario.default)
  // One call at `now` with the draw `u`: the scenario's behaviour then, played.
  const playAt = (
    now: number,
    u: number,
    request: Provider.CompletionRequest,
    context: Provider.AttemptContext
  ): Effect.Effect<Provider.ProviderResponse, Failure.ProviderFailure> => {
    const offset = now - originMillis
    const phase = phaseAt(phases.get(context.endpoint.id), otherwise, offset)
    const inputTokens = request.inputTokens ?? tokenizer(request)
    return phase.answers
      ? phase.answerTo(inputTokens, context.maxOutputTokens)
      : play(toStep(scenario, phase.behaviour, offset, u, inputTokens, context.maxOutputTokens), request, context)
  }
  return {
    internalMaxAttempts: 1,
    simulated: true,
    // The fiber's own clock and random (the effect's `Clock` and `Random`), read in one step: the clock's
    // reading, then a draw.
    call: (request, context) =>
      Effect.withFiberRuntime((fiber) => {
        const now = Context.get(fiber.currentDefaultServices, Clock.Clock).unsafeCurrentTimeMillis()
        return Effect.flatMap(
          Context.get(fiber.currentDefaultServices, Random.Random).next,
          (u) => playAt(now, u, request, context)
        )
      })
  }
}
