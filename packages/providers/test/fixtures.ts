import { NodeHttpClient } from "@effect/platform-node"
import type { Provider } from "@rein/core"
import { Catalog, Contract } from "@rein/core"
import { Cause, Effect, Exit, Tracer } from "effect"

/** A catalog endpoint served by `provider`, model `model`. */
export const endpoint = (
  id: string,
  provider: string,
  model: string,
  overrides: { readonly contextWindow?: number; readonly scope?: string } = {}
): Catalog.CatalogInput["endpoints"][number] => ({
  id,
  provider,
  model,
  ...(overrides.scope !== undefined ? { credentialScope: overrides.scope } : {}),
  capabilities: {
    contextWindow: overrides.contextWindow ?? 8_000,
    maxOutputTokens: 1_000,
    streaming: true
  },
  prices: { inputTokens: 1e-6, outputTokens: 2e-6 }
})

export const catalog = (...endpoints: Array<Catalog.CatalogInput["endpoints"][number]>) =>
  Catalog.make({ endpoints: endpoints as unknown as Catalog.CatalogInput["endpoints"] })

export const contract = (overrides: Partial<Contract.ContractInput> = {}) =>
  Contract.make({
    deadline: "10 seconds",
    attemptTimeout: "2 seconds",
    teardownGrace: "500 millis",
    candidates: ["a"],
    retry: { perEndpoint: 2, base: "10 millis", factor: 2, max: "100 millis", jitter: 0 },
    ...overrides
  })

/** The attempt context Rein would give a first attempt on `e`. */
export const attemptContext = (e: Catalog.Endpoint, timeoutMillis = 2_000): Provider.AttemptContext => ({
  attempt: 1,
  call: 1,
  endpoint: e,
  timeoutMillis,
  remainingMillis: timeoutMillis,
  reservation: { cost: null, tokens: null },
  maxOutputTokens: 64
})

export const request: Provider.CompletionRequest = { prompt: "hello", inputTokens: 20, maxOutputTokens: 64 }

export const httpLayer = NodeHttpClient.layer

/** Runs `effect` with a fresh Node HTTP client (its own agent, closed afterwards). */
export const withHttp = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.provide(effect, httpLayer)

/** Poll budget for socket events observed by the server. */
export const WITHIN = "3 seconds"

/** A span as `recordingTracer` keeps it: its name, attributes, events and how it ended (the cause as text). */
export interface RecordedSpan {
  readonly name: string
  readonly attributes: Record<string, unknown>
  readonly events: Array<{ readonly name: string; readonly attributes: Record<string, unknown> | undefined }>
  exit: string | undefined
}

/**
 * A `Tracer` that keeps every span it makes, with the text an exporter would get of it (an OpenTelemetry
 * exporter records a failed span's cause as its status message and exception events).
 */
export const recordingTracer = () => {
  const spans: Array<RecordedSpan> = []
  let next = 0
  const tracer = Tracer.make({
    span: (name, parent, context, links, startTime, kind) => {
      const recorded: RecordedSpan = { name, attributes: {}, events: [], exit: undefined }
      spans.push(recorded)
      const span: Tracer.Span = {
        _tag: "Span",
        name,
        spanId: `span-${++next}`,
        traceId: "trace",
        parent,
        context,
        status: { _tag: "Started", startTime },
        attributes: new Map(),
        links,
        sampled: true,
        kind,
        end: (_endTime, exit) => {
          recorded.exit = Exit.isFailure(exit) ? Cause.pretty(exit.cause) : "success"
        },
        attribute: (key, value) => {
          recorded.attributes[key] = value
        },
        event: (name, _time, attributes) => {
          recorded.events.push({ name, attributes })
        },
        addLinks: () => {}
      }
      return span
    },
    context: (f) => f()
  })
  return { tracer, spans }
}
