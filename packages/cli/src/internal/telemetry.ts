/**
 * The CLI's telemetry: `--otlp URL` (or `OTEL_EXPORTER_OTLP_ENDPOINT`) exports the run's traces and metrics
 * over OTLP/HTTP (JSON) through `@effect/opentelemetry`, flushed when the command ends; `--metrics` prints
 * Rein's metrics at the end (on stderr, so `--json` output stays one document).
 *
 * @internal
 */
import { Options } from "@effect/cli"
import { Format, Telemetry } from "@rein/core"
import type { MetricPair } from "effect"
import { Config, Console, Effect, Layer, Metric, MetricState, Option } from "effect"
import { InputError } from "../InputError.js"

/** `--otlp URL` (optional). @internal */
export const otlp = Options.text("otlp").pipe(
  Options.withDescription(
    "Export traces and metrics over OTLP/HTTP to this collector (e.g. http://localhost:4318; else OTEL_EXPORTER_OTLP_ENDPOINT)"
  ),
  Options.optional
)

/** `--metrics`: print the run's metrics at the end. @internal */
export const printMetrics = Options.boolean("metrics").pipe(
  Options.withDescription(
    "Print Rein's metrics (attempts, fallbacks, waits, tokens, batch progress) at the end, on stderr"
  )
)

/** Where the collector's URL came from, and the URL. */
type Found = readonly [field: string, url: string]

/** The collector's base URL: the option, else the standard environment variable; checked as an http(s) URL. */
const endpoint = (option: Option.Option<string>): Effect.Effect<Option.Option<string>, InputError> =>
  Effect.flatMap(
    Option.isSome(option)
      ? Effect.succeed(Option.some<Found>(["--otlp", option.value]))
      : Effect.map(
        Effect.orElseSucceed(Config.option(Config.string("OTEL_EXPORTER_OTLP_ENDPOINT")), () => Option.none<string>()),
        Option.map((url): Found => ["OTEL_EXPORTER_OTLP_ENDPOINT", url])
      ),
    (found) => {
      if (Option.isNone(found)) return Effect.succeed(Option.none<string>())
      const [field, url] = found.value
      const parsed = URL.canParse(url) ? new URL(url) : undefined
      return parsed !== undefined && (parsed.protocol === "http:" || parsed.protocol === "https:")
        ? Effect.succeed(Option.some(url))
        : Effect.fail(new InputError({ message: `${field}: Expected an http(s) URL of an OTLP collector` }))
    }
  )

/**
 * The exporter's modules, imported only when a collector is given. One that cannot load (a partial install)
 * is an `InputError`, one line, as a bad URL is.
 */
const loadOtlp = Effect.tryPromise({
  try: () => import("./otlp.js"),
  catch: (e) =>
    new InputError({
      message: `--otlp: the OTLP exporter could not be loaded (${e instanceof Error ? e.message : String(e)})`
    })
})

/**
 * Runs `effect` with telemetry: exported to the collector when one is given, recorded for `--metrics` when
 * asked; else exactly `effect` (no telemetry, nothing paid).
 *
 * @internal
 */
export const around =
  (url: Option.Option<string>, print: boolean) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | InputError, R> =>
    Effect.flatMap(endpoint(url), (baseUrl) => {
      if (Option.isNone(baseUrl) && !print) return effect
      const exporter = Option.isNone(baseUrl)
        ? Layer.empty
        : Layer.unwrapEffect(Effect.map(loadOtlp, (otlp) => otlp.exporter(baseUrl.value)))
      const observed = Effect.provide(effect, Layer.merge(Telemetry.layer, exporter))
      return print
        ? Effect.tap(observed, () => Effect.flatMap(Metric.snapshot, (m) => Console.error(render(m))))
        : observed
    })

/** Rein's metrics (and the GenAI ones), one line each: `name{label=value,…} value`. @internal */
export const render = (pairs: ReadonlyArray<MetricPair.MetricPair.Untyped>): string =>
  pairs
    .filter((p) => p.metricKey.name.startsWith("rein") || p.metricKey.name.startsWith("gen_ai."))
    .map((p) => {
      const labels = p.metricKey.tags.map((t) => `${t.key}=${t.value}`).join(",")
      return `${p.metricKey.name}${labels === "" ? "" : `{${labels}}`} ${valueOf(p.metricState)}`
    })
    .sort()
    .join("\n")

const num = Format.number

const valueOf = (state: MetricState.MetricState.Untyped): string => {
  if (MetricState.isCounterState(state)) return num(Number(state.count))
  if (MetricState.isGaugeState(state)) return num(Number(state.value))
  if (MetricState.isHistogramState(state)) {
    return state.count === 0 ? "count=0" : `count=${state.count} sum=${num(state.sum)} max=${num(state.max)}`
  }
  if (MetricState.isFrequencyState(state)) return [...state.occurrences].map(([k, v]) => `${k}=${v}`).join(",")
  return "?"
}
