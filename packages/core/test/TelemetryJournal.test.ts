/**
 * Telemetry beside a journal: the request's entry is closed once, in the same step as without telemetry (the
 * pair of writers keeps `unsafeEnd`), and the span names the record's id (the journal's draw when the request
 * names none), the id `rein explain` reads.
 */
import { describe, expect, it } from "@effect/vitest"
import { Fake, Journal, Rein, Telemetry } from "@rein/core"
import type { Outcome, Provider, Streaming } from "@rein/core"
import {
  Effect,
  Either,
  Exit,
  FastCheck as fc,
  Fiber,
  Layer,
  Metric,
  MetricLabel,
  Random,
  RuntimeFlags,
  RuntimeFlagsPatch,
  Stream,
  Supervisor,
  TestClock
} from "effect"
import { catalog, contract, endpoint } from "./fixtures.js"
import { memoryTracing, tree } from "./telemetry-helpers.js"

const request: Provider.CompletionRequest = { prompt: "hello", inputTokens: 100, maxOutputTokens: 100 }

/** Counts every run-loop step of the fibers it supervises (the request's and its attempt's). */
class Steps extends Supervisor.AbstractSupervisor<number> {
  count = 0
  override get value() {
    return Effect.sync(() => this.count)
  }
  override onEffect() {
    this.count++
  }
}

const requestsEnded = (outcome: string) =>
  Effect.map(
    Metric.value(
      Metric.taggedWithLabels(Telemetry.metrics.requests, [MetricLabel.make("rein.outcome", outcome)])
    ),
    (s) => s.count
  )

describe("Telemetry beside a journal: the entry's end", () => {
  const never: Provider.Provider = { internalMaxAttempts: 1, simulated: true, call: () => Effect.never }
  const cat = catalog(endpoint("a"))
  const expiring = contract({ deadline: "1 second", candidates: ["a"], retry: { perEndpoint: 0 } })
  const rein = Rein.layer({ catalog: cat, providers: { fake: never }, health: false })
  const recorded: Array<Journal.JournalRecord> = []
  /** A sink that keeps the record when it is called and returns `Effect.void`: an `Exit`, nothing left to run. */
  const keeping = Layer.succeed(Journal.Journal, Journal.make((r) => (recorded.push(r), Effect.void)))
  /** Metrics, no spans: no tracer needed, and every end updates `rein_requests_total`. */
  const metricsOnly = Layer.succeed(Telemetry.Telemetry, Telemetry.make({ spans: false }))

  /** The run-loop steps of one request without an id that expires, under `layers`; its exit. */
  const run = (layers: Layer.Layer<never>) =>
    Effect.gen(function*() {
      const steps = new Steps()
      const fiber = yield* Effect.fork(
        Effect.exit(Rein.execute(request, expiring)).pipe(
          Effect.supervised(steps),
          Effect.withRuntimeFlagsPatch(RuntimeFlagsPatch.enable(RuntimeFlags.OpSupervision)),
          Effect.provide(Layer.merge(rein, layers)),
          Effect.withRandom(Random.make(3))
        )
      )
      yield* TestClock.adjust("1 second")
      const exit = yield* Fiber.join(fiber)
      return { steps: steps.count, exit }
    })

  it.effect("telemetry adds no step to a journaled request's end, and the record is written once, whole", () =>
    Effect.gen(function*() {
      recorded.length = 0
      const journaled = yield* run(keeping)
      expect(recorded).toHaveLength(1)
      const before = yield* requestsEnded("DeadlineExceeded")
      const both = yield* run(Layer.merge(keeping, metricsOnly))
      // Telemetry's end ran, once.
      expect((yield* requestsEnded("DeadlineExceeded")) - before).toBe(1)
      // One record more, the same as without telemetry (the outcome's id is the same seeded draw).
      expect(recorded).toHaveLength(2)
      expect(recorded[1]).toEqual(recorded[0])
      expect(recorded[1]!.outcome._tag).toBe("DeadlineExceeded")
      expect(both.exit).toEqual(journaled.exit)
      // Before, the pair of writers had no `unsafeEnd`: the entry closed through `end` (`Effect.suspend` around
      // the record's assembly, the sink's `Effect.void`, telemetry's `Effect.sync`, and their `zipRight`).
      expect(both.steps).toBe(journaled.steps)
    }))

  it.effect("with spans too: the request span ends once, after the record, and the end costs no step", () =>
    Effect.gen(function*() {
      recorded.length = 0
      const { exporter, layer: tracing } = memoryTracing()
      const journaled = yield* run(keeping)
      const both = yield* run(Layer.merge(keeping, Telemetry.layer)).pipe(Effect.provide(tracing))
      expect(recorded).toHaveLength(2)
      expect(both.steps).toBe(journaled.steps)
      const spans = tree(exporter).filter((s) => s.name === "rein.request")
      expect(spans).toHaveLength(1)
      expect(spans[0]!.attributes["rein.outcome"]).toBe("DeadlineExceeded")
    }))

  it.effect("a journal whose sink dies: the defect is the end's, and telemetry's end does not run (as `end`)", () =>
    Effect.gen(function*() {
      const dying = Layer.succeed(Journal.Journal, Journal.make(() => Effect.dieMessage("sink down")))
      const throwing = Layer.succeed(
        Journal.Journal,
        Journal.make(() => {
          throw new Error("sink threw")
        })
      )
      for (const journal of [dying, throwing]) {
        const before = yield* requestsEnded("DeadlineExceeded")
        const { exit } = yield* run(Layer.merge(journal, metricsOnly))
        expect(Exit.isFailure(exit)).toBe(true)
        if (Exit.isFailure(exit)) {
          // The request's own failure, then the end's defect.
          expect(exit.cause._tag).toBe("Sequential")
          expect(String(exit.cause)).toMatch(/sink (down|threw)/)
        }
        expect(yield* requestsEnded("DeadlineExceeded")).toBe(before)
      }
    }))

  it.effect("a sink whose effect is still to run: telemetry's end runs after it, once", () =>
    Effect.gen(function*() {
      const order: Array<string> = []
      const later = Layer.succeed(
        Journal.Journal,
        Journal.make(() => Effect.sync(() => void order.push("sink")))
      )
      const observing = Layer.succeed(Telemetry.Telemetry, {
        begin: () => ({
          decision: () => {},
          attempt: () => {},
          end: () => Effect.sync(() => void order.push("telemetry end")),
          unsafeEnd: () => (order.push("telemetry unsafeEnd"), Effect.void)
        })
      })
      yield* run(Layer.merge(later, observing))
      expect(order).toEqual(["sink", "telemetry end"])
    }))
})

describe("Telemetry beside a journal: the span's request id is the record's", () => {
  const cat = catalog(endpoint("a"), endpoint("b"))
  const requestIdOf = (exporter: ReturnType<typeof memoryTracing>["exporter"]) =>
    tree(exporter).filter((s) => s.name === "rein.request").map((s) => s.attributes["rein.request_id"])

  /** How each path opens the journal: synchronously (`unsafeBegin`), or through `begin` (an effect). */
  const journals = (records: Array<Journal.JournalRecord>) => {
    const made = Journal.make((r) => Effect.sync(() => void records.push(r)))
    return {
      sync: Layer.succeed(Journal.Journal, made),
      effect: Layer.succeed(Journal.Journal, { begin: made.begin })
    }
  }

  const setups = {
    Completion: { script: { a: [Fake.succeed()] }, request },
    PlanExhausted: { script: { a: [Fake.fail("overloaded")], b: [Fake.fail("overloaded")] }, request },
    // Refused before the clock starts (an invalid bound): the refusal's own path.
    Refused: { script: {}, request: { ...request, maxOutputTokens: 0 } }
  } as const

  const runOne = (
    kind: keyof typeof setups,
    id: string | undefined,
    opening: "sync" | "effect",
    streaming: boolean
  ) =>
    Effect.gen(function*() {
      const setup = setups[kind]
      const fake = Fake.make(setup.script)
      const records: Array<Journal.JournalRecord> = []
      const { exporter, layer: tracing } = memoryTracing()
      const req = { ...setup.request, ...(id === undefined ? {} : { id }) }
      const c = contract({ candidates: ["a", "b"], retry: { perEndpoint: 0 } })
      const completed = (events: Iterable<Streaming.Event>) => {
        for (const e of events) if (e._tag === "Completed") return Effect.succeed(e.completion)
        return Effect.dieMessage("a stream without its completion")
      }
      const executed = streaming
        ? Effect.flatMap(Stream.runCollect(Rein.executeStream(req, c)), completed)
        : Rein.execute(req, c)
      const result: Either.Either<Outcome.Completion, Outcome.Terminal> = yield* Effect.gen(function*() {
        const fiber = yield* Effect.fork(Effect.either(executed))
        yield* TestClock.adjust("1 minute")
        return yield* Fiber.join(fiber)
      }).pipe(
        Effect.provide(Layer.mergeAll(
          Rein.layer({ catalog: cat, providers: { fake: fake.provider }, health: false }),
          journals(records)[opening],
          Telemetry.layer
        )),
        Effect.provide(tracing)
      )
      const outcome = Either.isRight(result) ? result.right : result.left
      return { outcome, records, spanIds: requestIdOf(exporter) }
    })

  it.effect.prop(
    "every outcome's span carries its record's id: the caller's, else the journal's draw",
    {
      kind: fc.constantFrom(...(Object.keys(setups) as Array<keyof typeof setups>)),
      id: fc.option(fc.string({ minLength: 1, maxLength: 12 }), { nil: undefined }),
      opening: fc.constantFrom("sync" as const, "effect" as const),
      streaming: fc.boolean(),
      seed: fc.integer()
    },
    ({ id, kind, opening, seed, streaming }) =>
      Effect.gen(function*() {
        const { outcome, records, spanIds } = yield* runOne(kind, id, opening, streaming).pipe(
          Effect.withRandom(Random.make(seed))
        )
        expect("_tag" in outcome ? outcome._tag : "Completion").toBe(kind)
        expect(records).toHaveLength(1)
        expect(outcome.requestId).toBe(records[0]!.requestId)
        if (id !== undefined) expect(records[0]!.requestId).toBe(id)
        expect(spanIds).toEqual([records[0]!.requestId])
      }),
    { fastCheck: { numRuns: 40 } }
  )

  it.effect("without a journal: the caller's id, else none (no attribute)", () =>
    Effect.gen(function*() {
      const { exporter, layer: tracing } = memoryTracing()
      const fake = Fake.make({ a: [Fake.succeed(), Fake.succeed()] })
      const rein = Rein.layer({ catalog: cat, providers: { fake: fake.provider }, health: false })
      const c = contract({ candidates: ["a"] })
      yield* Effect.zipRight(Rein.execute({ ...request, id: "caller-1" }, c), Rein.execute(request, c)).pipe(
        Effect.provide(Layer.merge(rein, Telemetry.layer)),
        Effect.provide(tracing)
      )
      expect(requestIdOf(exporter)).toEqual(["caller-1", undefined])
    }))
})
