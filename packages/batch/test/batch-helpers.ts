// A catalog, a contract and a provider whose behaviour is chosen per item (from the prompt), with a log of
// every call: when it started and ended (virtual time), and whether it was torn down.
import { Catalog, Contract, Failure, Rein } from "@rein/core"
import type { Provider } from "@rein/core"
import { Clock, Duration, Effect, Fiber, TestClock } from "effect"

export const endpoint = (id: string, provider = "fake"): Catalog.CatalogInput["endpoints"][number] => ({
  id,
  provider,
  model: `model-${id}`,
  capabilities: { contextWindow: 100_000, maxOutputTokens: 1_000 },
  prices: { inputTokens: 1e-6, outputTokens: 2e-6, request: 0 }
})

export const catalog = Catalog.make({ endpoints: [endpoint("a"), endpoint("b")] })

export const contract = (overrides: Partial<Contract.ContractInput> = {}) =>
  Contract.make({
    deadline: "10 minutes",
    candidates: ["a"],
    allowSimulated: true,
    retry: { perEndpoint: 2, base: "100 millis", factor: 2, max: "2 seconds", jitter: 0 },
    ...overrides
  })

/** What one call does. */
export type Step =
  | {
    readonly _tag: "ok"
    readonly latency: number
    readonly usage: { readonly inputTokens: number; readonly outputTokens: number } | "unknown"
  }
  | {
    readonly _tag: "fail"
    readonly kind: Failure.FailureKind
    readonly latency: number
    readonly retryAfter?: number
    readonly usage?: { readonly inputTokens: number; readonly outputTokens: number }
  }
  | { readonly _tag: "hang" }

export const ok = (latency = 0, usage: Extract<Step, { _tag: "ok" }>["usage"] = { inputTokens: 5, outputTokens: 5 }) =>
  ({ _tag: "ok", latency, usage }) as const

export const fail = (
  kind: Failure.FailureKind,
  options: {
    readonly latency?: number
    readonly retryAfter?: number
    readonly usage?: { readonly inputTokens: number; readonly outputTokens: number }
  } = {}
): Step => ({ _tag: "fail", kind, latency: options.latency ?? 0, ...options })

export const hang: Step = { _tag: "hang" }

export interface Call {
  readonly prompt: string
  readonly attempt: number
  /** The request's physical call number (429s included), which scripts are keyed on. */
  readonly call: number
  readonly startMillis: number
  endMillis: number | null
  tornDown: boolean
  readonly seq: number
}

/**
 * A provider whose calls follow `script(prompt, call)` (`call`: the request's physical call number, from 1);
 * `log` holds every call in start order. `marks`
 * lets a test record events in the same sequence as call starts and ends.
 */
export const scripted = (script: (prompt: string, call: number) => Step) => {
  const log: Array<Call> = []
  const sequence: Array<
    { readonly what: "start" | "end"; readonly call: Call; readonly tokens: number } | {
      readonly what: "mark"
      readonly label: string
    }
  > = []
  const provider: Provider.Provider = {
    internalMaxAttempts: 1,
    simulated: true,
    call: (request, context) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const call: Call = {
          prompt: request.prompt,
          attempt: context.attempt,
          call: context.call,
          startMillis: now,
          endMillis: null,
          tornDown: false,
          seq: log.length
        }
        log.push(call)
        sequence.push({ what: "start", call, tokens: 0 })
        const step = script(request.prompt, context.call)
        const end = (tokens: number) =>
          Effect.flatMap(Clock.currentTimeMillis, (t) =>
            Effect.sync(() => {
              call.endMillis = t
              sequence.push({ what: "end", call, tokens })
            }))
        const body = Effect.gen(function*() {
          switch (step._tag) {
            case "hang":
              return yield* Effect.never
            case "ok": {
              if (step.latency > 0) yield* Effect.sleep(Duration.millis(step.latency))
              yield* end(step.usage === "unknown" ? 0 : step.usage.inputTokens + step.usage.outputTokens)
              return { text: `answer to ${request.prompt}`, usage: step.usage }
            }
            case "fail": {
              if (step.latency > 0) yield* Effect.sleep(Duration.millis(step.latency))
              yield* end(step.usage === undefined ? 0 : step.usage.inputTokens + step.usage.outputTokens)
              return yield* Effect.fail(
                new Failure.ProviderFailure({
                  kind: step.kind,
                  code: step.kind,
                  dispatched: true,
                  ...(step.retryAfter !== undefined ? { retryAfterMillis: step.retryAfter } : {}),
                  ...(step.usage !== undefined ? { usage: step.usage } : {})
                })
              )
            }
          }
        })
        return yield* body.pipe(Effect.onInterrupt(() => Effect.sync(() => void (call.tornDown = true))))
      })
  }
  return {
    provider,
    log,
    sequence,
    mark: (label: string) => Effect.sync(() => void sequence.push({ what: "mark", label })),
    layer: Rein.layer({ catalog, providers: { fake: provider }, health: false })
  }
}

/** A generator over `n` prompts (or forever) that counts what it materialised and whether it was closed. */
export const counted = (n: number = Number.POSITIVE_INFINITY, prompt = (i: number) => `p${i}`) => {
  const state = { materialised: 0, closed: false }
  function* gen() {
    try {
      for (let i = 0; i < n; i++) {
        state.materialised++
        yield prompt(i)
      }
    } finally {
      state.closed = true
    }
  }
  return { source: gen(), state }
}

/** Runs `effect` under the TestClock, advancing virtual time by `advance` (the run's whole life, as a rule). */
export const runFor = <A, E>(effect: Effect.Effect<A, E>, advance: Duration.DurationInput = "1 hour") =>
  Effect.flatMap(Effect.fork(effect), (fiber) => Effect.zipRight(TestClock.adjust(advance), Fiber.join(fiber)))

/** `n` prompts: `p0`, `p1`, … */
export const prompts = (n: number): Array<string> => Array.from({ length: n }, (_, i) => `p${i}`)
