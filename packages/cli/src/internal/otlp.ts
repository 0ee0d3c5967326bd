/**
 * The exporter of `--otlp` (`@effect/opentelemetry` over the fetch HTTP client), imported by
 * `internal/telemetry.ts` only when a collector is given: every other command starts without running these
 * modules (in the bundle, their code runs on first import).
 *
 * @internal
 */
import * as Otlp from "@effect/opentelemetry/Otlp"
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import { Layer } from "effect"

/** Traces and metrics exported over OTLP/HTTP (JSON) to the collector at `baseUrl`. @internal */
export const exporter = (baseUrl: string): Layer.Layer<never> =>
  Otlp.layerJson({ baseUrl, resource: { serviceName: "rein", serviceVersion: "0.1.0" } }).pipe(
    Layer.provide(FetchHttpClient.layer)
  )
