/**
 * The spans of one bridged `@effect/ai` call, without provider text. `@effect/ai` ends its own span
 * (`LanguageModel.generateText`, `LanguageModel.streamText`) with the call's exit, and an `HttpResponseError`
 * carries the provider's error body in its message (an OpenAI 400 can quote the prompt back; a 2xx that did
 * not decode carries the raw answer in its `ParseError`): an OpenTelemetry exporter writes that cause into
 * the span's status message and exception event. Inside a bridged call the current tracer is wrapped so
 * that a failed span ends with the error's tag and HTTP status only; attributes, events, timing and the
 * span tree are the tracer's own.
 *
 * @internal
 */
import { Cause, Effect, Exit, Stream, Tracer } from "effect"
import * as Stages from "./stages.js"

/** An error as a span may show it: its tag and status, never its text. */
const withheld = (error: unknown): Error => {
  const record = typeof error === "object" && error !== null ? error as Record<string, unknown> : {}
  const tag = typeof record._tag === "string" ? record._tag : "Error"
  const response = record.response
  const status = typeof response === "object" && response !== null
    ? (response as Record<string, unknown>).status
    : undefined
  const shown = new Error(
    typeof status === "number" ? `${tag}: status ${status} (provider text withheld)` : `${tag} (provider text withheld)`
  )
  shown.name = tag
  shown.stack = `${shown.name}: ${shown.message}`
  return shown
}

/** A cause with every failure and defect replaced by what `withheld` shows of it. */
const withholdCause = (cause: Cause.Cause<unknown>): Cause.Cause<unknown> => {
  switch (cause._tag) {
    case "Fail":
      return Cause.fail(withheld(cause.error))
    case "Die":
      return Cause.die(withheld(cause.defect))
    case "Sequential":
      return Cause.sequential(withholdCause(cause.left), withholdCause(cause.right))
    case "Parallel":
      return Cause.parallel(withholdCause(cause.left), withholdCause(cause.right))
    default:
      return cause
  }
}

const withholdExit = (exit: Exit.Exit<unknown, unknown>): Exit.Exit<unknown, unknown> =>
  Exit.isSuccess(exit) ? exit : Exit.failCause(withholdCause(exit.cause))

const wrapped = new WeakMap<Tracer.Tracer, Tracer.Tracer>()

/** `tracer`, whose spans end without the failure's text (cached: one wrapper per tracer). */
const quietOf = (tracer: Tracer.Tracer): Tracer.Tracer => {
  const found = wrapped.get(tracer)
  if (found !== undefined) return found
  const quiet = Tracer.make({
    span: (name, parent, context, links, startTime, kind, options) => {
      const span = tracer.span(name, parent, context, links, startTime, kind, options)
      // The span itself as prototype (an exporter's own class checks still hold), `end` withheld.
      const shown: Tracer.Span = Object.create(span)
      Object.defineProperty(shown, "end", {
        value: (endTime: bigint, exit: Exit.Exit<unknown, unknown>) => span.end(endTime, withholdExit(exit))
      })
      return shown
    },
    context: tracer.context
  })
  wrapped.set(tracer, quiet)
  return quiet
}

/**
 * Effect's own tracer, the one a program runs with when it provides none: its spans go nowhere, so a call
 * under it is left as it is (no wrapper, nothing allocated).
 */
const native = Effect.runSync(Effect.tracer)

/** Runs one bridged call with its spans ending without provider text. @internal */
export const quiet = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.flatMap(Effect.tracer, (tracer) => tracer === native ? effect : Effect.withTracer(effect, quietOf(tracer)))

/**
 * `quiet` for a streamed call: its span is made, and ended, under the wrapped tracer. Under Effect's own
 * tracer the stream is left as it is (no scope, no stage per chunk). @internal
 */
export const quietStream = <A, E, R>(stream: Stream.Stream<A, E, R>): Stream.Stream<A, E, R> =>
  Stages.unwrap(
    Effect.map(
      Effect.tracer,
      (tracer) =>
        tracer === native
          ? stream
          : Stream.unwrapScoped(Effect.as(Effect.withTracerScoped(quietOf(tracer)), stream))
    )
  )
