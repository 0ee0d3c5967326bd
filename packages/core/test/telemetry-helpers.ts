/**
 * An OpenTelemetry SDK tracer (through `@effect/opentelemetry`) whose spans land in an in-memory exporter,
 * and helpers that read the exported span tree. Shared by the core and batch telemetry tests.
 */
import * as OtelResource from "@effect/opentelemetry/Resource"
import * as OtelTracer from "@effect/opentelemetry/Tracer"
import type { ReadableSpan } from "@opentelemetry/sdk-trace-base"
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base"
import { Layer } from "effect"

/** A fresh exporter and the layer that makes Effect's tracer export to it. */
export const memoryTracing = () => {
  const exporter = new InMemorySpanExporter()
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
  const layer = OtelTracer.layer.pipe(
    Layer.provide(OtelResource.layer({ serviceName: "rein-test" })),
    Layer.provide(Layer.succeed(OtelTracer.OtelTracerProvider, provider))
  )
  return { exporter, layer }
}

/** A span as the tests compare it: name, parent name, attributes, events. */
export interface Node {
  readonly name: string
  readonly parent: string | null
  readonly attributes: Readonly<Record<string, unknown>>
  readonly events: ReadonlyArray<{ readonly name: string; readonly attributes: Readonly<Record<string, unknown>> }>
  readonly startMillis: number
  readonly endMillis: number
  readonly status: number
}

const millisOf = (t: readonly [number, number]): number => t[0] * 1000 + t[1] / 1e6

const depth = (byId: ReadonlyMap<string, ReadableSpan>, s: ReadableSpan): number => {
  const parent = s.parentSpanContext === undefined ? undefined : byId.get(s.parentSpanContext.spanId)
  return parent === undefined ? 0 : 1 + depth(byId, parent)
}

/** The finished spans, in start order, each with its parent's name. */
export const tree = (exporter: InMemorySpanExporter): ReadonlyArray<Node> => {
  const spans: ReadonlyArray<ReadableSpan> = exporter.getFinishedSpans()
  const byId = new Map(spans.map((s) => [s.spanContext().spanId, s]))
  return [...spans]
    // By start, a parent before the children that start with it.
    .sort((x, y) => millisOf(x.startTime) - millisOf(y.startTime) || depth(byId, x) - depth(byId, y))
    .map((s) => ({
      name: s.name,
      parent: s.parentSpanContext === undefined ? null : byId.get(s.parentSpanContext.spanId)?.name ?? "(external)",
      attributes: s.attributes,
      events: s.events.map((e) => ({ name: e.name, attributes: e.attributes ?? {} })),
      startMillis: millisOf(s.startTime),
      endMillis: millisOf(s.endTime),
      status: s.status.code
    }))
}

/** Everything exported, as one string (for canary checks). */
export const dump = (exporter: InMemorySpanExporter): string =>
  JSON.stringify(
    exporter.getFinishedSpans().map((s) => ({
      name: s.name,
      attributes: s.attributes,
      events: s.events,
      status: s.status,
      links: s.links,
      resource: s.resource.attributes
    }))
  )
