/**
 * Which provider runs each catalog endpoint. Convention (documented in the README and `--help`):
 *
 * - provider `openai-compatible`: the OpenAI-compatible HTTP adapter of `@rein/providers`. Its base URL
 *   comes from `--base-url` or the `REIN_BASE_URL` environment variable; its API key only from the
 *   `REIN_API_KEY` environment variable (never a flag, held as `Redacted`, never printed or recorded).
 * - any other provider name: the built-in fake, scripted by a scenario's endpoint behaviour (or answering
 *   at once without one). A fake is simulated: the contract must say `allowSimulated: true`.
 *
 * @internal
 */
import type { Catalog, Provider } from "@rein/core"
import { Fake } from "@rein/core"
import type { Scope } from "effect"
import type { Option } from "effect"
import { Clock, Effect, Random } from "effect"
import type { InputError } from "../InputError.js"
import type { Scenario } from "../Scenario.js"
import { behaviourAt } from "../Scenario.js"

/** The provider name that selects the real HTTP adapter. @internal */
export const REAL = "openai-compatible"

/** An upper bound of a prompt's tokens: its UTF-8 bytes plus chat framing (a token is at least one byte). */
export const tokenizer = (request: Provider.CompletionRequest): number =>
  Buffer.byteLength(request.prompt, "utf8") + Buffer.byteLength(request.system ?? "", "utf8") + 16

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
  behaviour: Scenario["default"],
  offsetMillis: number,
  u: number,
  inputTokens: number,
  maxOutputTokens: number
): Step => {
  const ok = (latency: number, outputTokens: number) =>
    Fake.succeed({
      text: SIMULATED_TEXT,
      latency: `${latency} millis`,
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
          latency: `${behaviour.latency} millis`,
          ...(behaviour.retryAfter === undefined ? {} : { retryAfter: `${behaviour.retryAfter} millis` })
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
        : Fake.fail(behaviour.failure, { ...codeOf(behaviour.failure), latency: `${behaviour.latency} millis` })
    }
  }
}

/**
 * The built-in fake: each call asks the scenario how the endpoint behaves at this moment (offset from
 * `originMillis` on the effect's `Clock`, so virtual time drives it in `simulate`), and `Fake` plays that
 * step (latency through `Effect.sleep`, the failure as a classified `ProviderFailure`). Probabilities are
 * drawn from the effect's `Random`, seeded in `simulate`.
 *
 * @internal
 */
export const scripted = (scenario: Scenario | undefined, originMillis: number): Provider.Provider => ({
  internalMaxAttempts: 1,
  simulated: true,
  call: (request, context) =>
    Effect.flatMap(Effect.zip(Clock.currentTimeMillis, Random.next), ([now, u]) => {
      const offset = now - originMillis
      const behaviour = scenario === undefined
        ? { kind: "ok" as const, latency: 0, outputTokens: 100 }
        : behaviourAt(scenario, context.endpoint.id, offset)
      const inputTokens = request.inputTokens ?? tokenizer(request)
      const step = toStep(scenario, behaviour, offset, u, inputTokens, context.maxOutputTokens)
      return Fake.make({ [context.endpoint.id]: [step] }).provider.call(request, context)
    })
})

const placeholder = (simulated: boolean): Provider.Provider => ({
  internalMaxAttempts: 1,
  simulated,
  call: () => Effect.dieMessage("rein plan never calls a provider")
})

/** Providers for planning only: present, labelled as they would run, never called. @internal */
export const forPlanning = (catalog: Catalog.Catalog): ReadonlyMap<string, Provider.Provider> =>
  new Map(catalog.endpoints.map((e) => [e.provider, placeholder(e.provider !== REAL)]))

/** Whether any endpoint of the catalog needs the real adapter. @internal */
export const needsReal = (catalog: Catalog.Catalog): boolean => catalog.endpoints.some((e) => e.provider === REAL)

/**
 * Providers for calls: the fake for every fake provider name, the HTTP adapter for `openai-compatible`.
 *
 * @internal
 */
export const forCalls = (
  catalog: Catalog.Catalog,
  options: {
    readonly scenario: Scenario | undefined
    readonly originMillis: number
    readonly baseUrl: Option.Option<string>
  }
): Effect.Effect<ReadonlyMap<string, Provider.Provider>, InputError, Scope.Scope> =>
  Effect.gen(function*() {
    const providers = new Map<string, Provider.Provider>()
    const fake = scripted(options.scenario, options.originMillis)
    for (const e of catalog.endpoints) if (e.provider !== REAL) providers.set(e.provider, fake)
    if (needsReal(catalog)) {
      // Loaded only when needed: the HTTP stack costs a second of start-up that fake runs should not pay.
      const { real } = yield* Effect.promise(() => import("./real.js"))
      providers.set(REAL, yield* real(options.baseUrl))
    }
    return providers
  })
