/**
 * What a trace of one request shows. Endpoint `a` answers 429 with Retry-After 1 s: Rein waits the second
 * and retries; `a` answers 429 again, now with Retry-After 30 s, which cannot fit the 10 s deadline, so
 * Rein falls back — skipping `c`, whose worst-case cost does not fit the budget — to `b`. The spans go to
 * the OpenTelemetry SDK (through `@effect/opentelemetry`); this example keeps them in memory and prints
 * them as a tree (a `ConsoleSpanExporter` in place of the memory exporter prints each span as an object).
 *
 * Run: `pnpm build && node examples/dist/core/telemetry.js`
 */
import * as OtelResource from "@effect/opentelemetry/Resource"
import * as OtelTracer from "@effect/opentelemetry/Tracer"
import type { ReadableSpan } from "@opentelemetry/sdk-trace-base"
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base"
import { Catalog, Contract, Fake, Rein, Telemetry } from "@rein/core"
import type { Outcome } from "@rein/core"
import { Effect, Layer } from "effect"

const endpoint = (id: string, price: number) => ({
  id,
  provider: "fake",
  model: `model-${id}`,
  capabilities: { contextWindow: 8_000, maxOutputTokens: 500 },
  prices: { inputTokens: price, outputTokens: price }
})

const catalog = Catalog.make({ endpoints: [endpoint("a", 1e-6), endpoint("c", 1e-3), endpoint("b", 1e-6)] })
const contract = Contract.make({
  deadline: "10 seconds",
  candidates: ["a", "c", "b"],
  budget: { cost: 0.01 },
  retry: { perEndpoint: 2, base: "100 millis", jitter: 0 },
  allowSimulated: true
})
const fake = Fake.make({
  a: [
    Fake.fail("rate_limited", { retryAfter: "1 second", code: "http_429" }),
    Fake.fail("rate_limited", { retryAfter: "30 seconds", code: "http_429" })
  ],
  b: [Fake.succeed({ usage: { inputTokens: 100, outputTokens: 42 }, latency: "120 millis" })]
})

const exporter = new InMemorySpanExporter()
const Tracing = OtelTracer.layer.pipe(
  Layer.provide(OtelResource.layer({ serviceName: "rein-example" })),
  Layer.provide(Layer.succeed(
    OtelTracer.OtelTracerProvider,
    new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
  ))
)

const SHOWN =
  /^(gen_ai\.(request\.model|system|usage\..*)|error\.type|rein\.(outcome|endpoint|attempts|waits|attempt\.role|attempt\.reason|failure\.code|retry_after_millis|charged\.cost))$/

const millis = (t: readonly [number, number]) => t[0] * 1000 + t[1] / 1e6

/** The finished spans as an indented tree: times from the request's start, the main attributes, the events. */
export const render = (spans: ReadonlyArray<ReadableSpan>): string => {
  const origin = Math.min(...spans.map((s) => millis(s.startTime)))
  const at = (t: readonly [number, number]) => `+${Math.round(millis(t) - origin)} ms`
  const attributes = (s: ReadableSpan | { readonly attributes?: ReadableSpan["attributes"] }) =>
    Object.entries(s.attributes ?? {}).filter(([k]) =>
      SHOWN.test(k) || k.startsWith("rein.wait") ||
      k === "rein.predicate" || k === "rein.reason"
    )
      .map(([k, v]) => `${k}=${typeof v === "number" ? Number(v.toPrecision(4)) : String(v)}`)
  const lines: Array<string> = []
  const walk = (span: ReadableSpan, indent: string): void => {
    lines.push(`${indent}${span.name} [${at(span.startTime)} … ${at(span.endTime)}] ${attributes(span).join(" ")}`)
    for (const e of span.events) lines.push(`${indent}  · ${at(e.time)} ${e.name} ${attributes(e).join(" ")}`)
    const children = spans.filter((c) => c.parentSpanContext?.spanId === span.spanContext().spanId)
    for (const child of children) walk(child, `${indent}  `)
  }
  for (const root of spans.filter((s) => s.parentSpanContext === undefined)) walk(root, "")
  return lines.join("\n")
}

/** Executes the request with telemetry on and returns the printed span tree. */
export const program: Effect.Effect<string, Outcome.Terminal> = Effect.gen(function*() {
  exporter.reset()
  yield* Rein.execute({ prompt: "hello", inputTokens: 100, maxOutputTokens: 100 }, contract).pipe(
    Effect.provide(Layer.merge(Rein.layer({ catalog, providers: { fake: fake.provider } }), Telemetry.layer))
  )
  const text = render(exporter.getFinishedSpans())
  console.log(text)
  return text
}).pipe(Effect.provide(Tracing))

if (process.argv[1]?.endsWith("telemetry.js")) Effect.runPromise(program)
