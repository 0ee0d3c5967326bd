import { describe, expect, it } from "@effect/vitest"
import { Failure, Fake, Journal, Rein } from "@rein/core"
import type { Outcome, Provider, Streaming } from "@rein/core"
import { Chunk, Effect, Either, FastCheck as fc, Fiber, Layer, Stream, TestClock } from "effect"
import { catalog, contract, defaultCatalog, endpoint, layer } from "./fixtures.js"

const request = { prompt: "tell me", inputTokens: 50, maxOutputTokens: 100 }

const collect = (fake: Fake.Fake, overrides: Parameters<typeof contract>[0] = {}) =>
  Effect.gen(function*() {
    const fiber = yield* Effect.fork(Effect.either(
      Stream.runCollect(Rein.executeStream(request, contract(overrides))).pipe(Effect.provide(layer(fake)))
    ))
    yield* TestClock.adjust("1 minute")
    return Either.map(yield* Fiber.join(fiber), Chunk.toReadonlyArray)
  })

const texts = (events: ReadonlyArray<Streaming.Event>) =>
  events.flatMap((e) => (e._tag === "Delta" ? [`${e.endpoint}:${e.text}`] : []))

describe("Streaming", () => {
  it.effect("a complete stream emits its deltas, then the completion with usage", () =>
    Effect.gen(function*() {
      const fake = Fake.make({
        a: [Fake.succeed({ deltas: ["Hel", "lo"], usage: { inputTokens: 50, outputTokens: 2 } })]
      })
      const events = Either.getOrThrow(yield* collect(fake))
      expect(texts(events)).toEqual(["a:Hel", "a:lo"])
      const last = events[events.length - 1]!
      expect(last._tag).toBe("Completed")
      if (last._tag === "Completed") {
        expect(last.completion.text).toBe("Hello")
        expect(last.completion.usage).toEqual({ inputTokens: 50, outputTokens: 2 })
      }
    }))

  it.effect("a stream that fails before its first delta falls back", () =>
    Effect.gen(function*() {
      const fake = Fake.make({
        a: [Fake.fail("overloaded")],
        b: [Fake.succeed({ deltas: ["from ", "b"] })]
      })
      const events = Either.getOrThrow(yield* collect(fake, { retry: { perEndpoint: 0 } }))
      expect(texts(events)).toEqual(["b:from ", "b:b"])
    }))

  it.effect("a failure after the first delta is terminal: never another model's text", () =>
    Effect.gen(function*() {
      const fake = Fake.make({
        a: [Fake.fail("server_error", { afterDeltas: ["partial "] })],
        b: [Fake.succeed({ deltas: ["other model"] })]
      })
      const seen: Array<string> = []
      const fiber = yield* Effect.fork(Effect.either(
        Rein.executeStream(request, contract()).pipe(
          Stream.runForEach((e) => Effect.sync(() => e._tag === "Delta" && seen.push(`${e.endpoint}:${e.text}`))),
          Effect.provide(layer(fake))
        )
      ))
      yield* TestClock.adjust("1 minute")
      const result = yield* Fiber.join(fiber)
      expect(seen).toEqual(["a:partial "])
      expect(Either.isLeft(result) && result.left._tag).toBe("FailedSafe")
      expect((yield* fake.calls).map((c) => c.endpoint)).toEqual(["a"])
    }))

  it.effect("a stream that ends without its terminator is a failure, never a clean end", () =>
    Effect.gen(function*() {
      const truncated: Fake.Step = Fake.fail("transport", { afterDeltas: ["half an ans"], dispatched: true })
      const fake = Fake.make({ a: [truncated] })
      const provider = {
        ...fake.provider,
        // A stream that simply stops after a delta, without `done`.
        stream: () => Stream.make({ delta: "half an ans" })
      }
      const result = yield* Effect.either(
        Stream.runCollect(Rein.executeStream(request, contract({ candidates: ["a"] }))).pipe(
          Effect.provide(Rein.layer({ catalog: defaultCatalog, providers: { fake: provider } }))
        )
      )
      expect(Either.isLeft(result)).toBe(true)
      if (Either.isLeft(result)) {
        expect(result.left._tag).toBe("FailedSafe")
        expect(result.left.attempts[0]).toMatchObject({ status: "failure", code: "stream_truncated" })
      }
    }))

  it.effect("a streamed request is journaled when the stream ends, and replays", () =>
    Effect.gen(function*() {
      const fake = Fake.make({ a: [Fake.fail("overloaded")], b: [Fake.succeed({ deltas: ["x", "y"] })] })
      const records = yield* Effect.gen(function*() {
        const fiber = yield* Effect.fork(
          Stream.runDrain(Rein.executeStream(request, contract({ retry: { perEndpoint: 0 } })))
        )
        yield* TestClock.adjust("1 minute")
        yield* Fiber.join(fiber)
        return yield* Effect.flatMap(Journal.MemoryJournal, (j) => j.records)
      }).pipe(Effect.provide(Layer.merge(layer(fake), Journal.layerMemory)))
      expect(records).toHaveLength(1)
      expect(records[0]!.outcome).toMatchObject({ _tag: "Completion", endpoint: "b" })
      expect(records[0]!.attempts.map((a) => a.endpoint)).toEqual(["a", "b"])
      expect(Journal.replay(records[0]!)).toEqual(Either.right(2))
    }))

  it.effect("a consumer that stops early still closes the journal entry", () =>
    Effect.gen(function*() {
      const fake = Fake.make({ a: [Fake.succeed({ deltas: ["one", "two", "three"], latency: 10 })] })
      const records = yield* Effect.gen(function*() {
        const fiber = yield* Effect.fork(Stream.runCollect(Stream.take(Rein.executeStream(request, contract()), 1)))
        yield* TestClock.adjust("1 minute")
        yield* Fiber.join(fiber)
        return yield* Effect.flatMap(Journal.MemoryJournal, (j) => j.records)
      }).pipe(Effect.provide(Layer.merge(layer(fake), Journal.layerMemory)))
      expect(records).toHaveLength(1)
      expect(records[0]!.outcome._tag).toBe("Interrupted")
      // The committed attempt is on the record as interrupted (not as a truncated stream), charged in full.
      expect(records[0]!.attempts).toHaveLength(1)
      expect(records[0]!.attempts[0]).toMatchObject({
        status: "interrupted",
        failure: null,
        usage: "unknown",
        charged: { cost: 50 * 1e-6 + 100 * 2e-6, tokens: 150 }
      })
    }))
  it.effect("a provider whose stream function throws synchronously fails safe, and is journaled", () =>
    Effect.gen(function*() {
      const canary = "CANARY-stream-throw-9d41"
      const fake = Fake.make({})
      const provider: Provider.Provider = {
        ...fake.provider,
        stream: () => {
          throw new Error(`boom ${canary}`)
        }
      }
      const { records, result } = yield* Effect.gen(function*() {
        const result = yield* Effect.either(Stream.runCollect(Rein.executeStream(request, contract())))
        return { result, records: yield* Effect.flatMap(Journal.MemoryJournal, (j) => j.records) }
      }).pipe(
        Effect.provide(
          Layer.merge(Rein.layer({ catalog: defaultCatalog, providers: { fake: provider } }), Journal.layerMemory)
        )
      )
      expect(Either.isLeft(result)).toBe(true)
      if (Either.isRight(result)) return
      expect(result.left).toMatchObject({
        _tag: "FailedSafe",
        lastFailure: { kind: "unknown", code: "provider_defect" }
      })
      expect(result.left.attempts).toHaveLength(1)
      expect(JSON.stringify(result.left)).not.toContain(canary)
      expect(records.map((r) => r.outcome._tag)).toEqual(["FailedSafe"])
      expect(Journal.encode(records[0]!)).not.toContain(canary)
    }))
})

describe("Streaming: pulls after the first delta", () => {
  /** A provider whose stream sends one delta, then nothing, until torn down (`closed` counts teardowns). */
  const stalling = () => {
    const state = { closed: 0 }
    const provider: Provider.Provider = {
      internalMaxAttempts: 1,
      call: () => Effect.die("not called"),
      stream: () =>
        Stream.concat(Stream.make<Array<Provider.StreamPart>>({ delta: "first" }), Stream.never).pipe(
          Stream.ensuring(Effect.sync(() => void (state.closed += 1)))
        )
    }
    const rein = Rein.layer({ catalog: catalog(endpoint("a")), providers: { fake: provider } })
    return { state, rein }
  }

  it.effect("a stream that stalls after its first delta ends at the deadline, its connection closed", () =>
    Effect.gen(function*() {
      const { rein, state } = stalling()
      const seen: Array<string> = []
      const fiber = yield* Effect.fork(Effect.either(
        Rein.executeStream(request, contract({ candidates: ["a"], deadline: "10 seconds" })).pipe(
          Stream.runForEach((e) => Effect.sync(() => e._tag === "Delta" && seen.push(e.text))),
          Effect.provide(rein)
        )
      ))
      yield* TestClock.adjust("9 seconds")
      expect(fiber.unsafePoll()).toBeNull()
      yield* TestClock.adjust("2 seconds")
      const result: Either.Either<void, Outcome.Terminal> = yield* Fiber.join(fiber)
      expect(seen).toEqual(["first"])
      expect(Either.isLeft(result) && result.left._tag).toBe("DeadlineExceeded")
      expect(state.closed).toBe(1)
    }))

  it.effect("a consumer interrupted while a pull waits closes the provider's stream", () =>
    Effect.gen(function*() {
      const { rein, state } = stalling()
      const seen: Array<string> = []
      const fiber = yield* Effect.fork(
        Rein.executeStream(request, contract({ candidates: ["a"] })).pipe(
          Stream.runForEach((e) => Effect.sync(() => e._tag === "Delta" && seen.push(e.text))),
          Effect.provide(rein)
        )
      )
      yield* TestClock.adjust("1 second")
      expect(seen).toEqual(["first"])
      yield* Fiber.interrupt(fiber)
      expect(state.closed).toBe(1)
    }))
})

// The pulls after the first delta run in a reader fiber that pulls on, up to a bound, while the consumer is busy
// (`internal/pull.ts`): the consumer must see exactly what it saw when each pull ran on its request.
describe("Streaming: pulls run ahead of the consumer", () => {
  const READ_AHEAD = 32
  type Tail = "done" | "fail" | "cut" | "stall" | "stubborn"
  const failure = new Failure.ProviderFailure({ kind: "server_error", code: "http_500", dispatched: true })

  /**
   * A provider whose stream sends `deltas` one per chunk, all ready at once, then `tail`: the terminator, a
   * failure, nothing (truncated), or a pull that never ends (`stubborn`: one that ignores interruption for an
   * hour). `pulled` counts the deltas pulled, `running` the tail's pulls still running, `closed` teardowns.
   */
  const chunked = (deltas: ReadonlyArray<string>, tail: Tail) => {
    const state = { pulled: 0, running: 0, closed: 0 }
    const stalled = Effect.sync(() => void (state.running += 1)).pipe(
      Effect.zipRight(tail === "stall" ? Effect.never : Effect.uninterruptible(Effect.sleep("1 hour"))),
      Effect.ensuring(Effect.sync(() => void (state.running -= 1)))
    )
    const rest: Stream.Stream<Provider.StreamPart, Failure.ProviderFailure> = tail === "done"
      ? Stream.make({ delta: "", done: true })
      : tail === "fail"
      ? Stream.fail(failure)
      : tail === "cut"
      ? Stream.empty
      : Stream.fromEffect(Effect.as(stalled, { delta: "never" }))
    const provider: Provider.Provider = {
      internalMaxAttempts: 1,
      call: () => Effect.die("not called"),
      stream: () =>
        Stream.fromIterable(deltas.map((delta): Provider.StreamPart => ({ delta }))).pipe(
          Stream.rechunk(1),
          Stream.tap(() => Effect.sync(() => void (state.pulled += 1))),
          Stream.concat(rest),
          Stream.ensuring(Effect.sync(() => void (state.closed += 1)))
        )
    }
    return { state, rein: Rein.layer({ catalog: catalog(endpoint("a")), providers: { fake: provider } }) }
  }

  /** Runs the stream in a fiber: each delta seen, then `pause(delta)` (the consumer's own work). */
  const consume = (
    rein: ReturnType<typeof chunked>["rein"],
    pause: (delta: string, index: number) => Effect.Effect<void>,
    deadline = "10 seconds",
    attemptTimeout?: string
  ) =>
    Effect.gen(function*() {
      const seen: Array<string> = []
      const bounds = {
        candidates: ["a"] as const,
        deadline,
        ...(attemptTimeout === undefined ? {} : { attemptTimeout })
      }
      const fiber = yield* Effect.fork(Effect.either(
        Rein.executeStream(request, contract(bounds)).pipe(
          Stream.runForEach((e) =>
            e._tag === "Delta" ? Effect.suspend(() => pause(e.text, seen.push(e.text) - 1)) : Effect.void
          ),
          Effect.provide(rein)
        )
      ))
      return { seen, fiber }
    })

  const tagOf = (result: Either.Either<void, Outcome.Terminal>) => Either.isLeft(result) ? result.left._tag : "ok"

  it.effect("a deadline that comes while pulled chunks wait ends the stream there: they are never delivered", () =>
    Effect.gen(function*() {
      const { rein, state } = chunked(["a", "b", "c", "d"], "done")
      const { fiber, seen } = yield* consume(rein, (delta) => delta === "b" ? Effect.sleep("11 seconds") : Effect.void)
      yield* TestClock.adjust("1 minute")
      expect(tagOf(yield* Fiber.join(fiber))).toBe("DeadlineExceeded")
      expect(seen).toEqual(["a", "b"])
      expect(state.closed).toBe(1)
    }))

  it.effect("a failure pulled after chunks that wait is delivered after them, in order", () =>
    Effect.gen(function*() {
      const { rein, state } = chunked(["a", "b", "c"], "fail")
      const { fiber, seen } = yield* consume(rein, () => Effect.void)
      yield* TestClock.adjust("1 minute")
      const result = yield* Fiber.join(fiber)
      expect(seen).toEqual(["a", "b", "c"])
      expect(tagOf(result)).toBe("FailedSafe")
      if (Either.isLeft(result)) expect(result.left.attempts[0]).toMatchObject({ code: "http_500" })
      expect(state.closed).toBe(1)
    }))

  for (const tail of ["stall", "stubborn"] as const) {
    it.effect(`a consumer interrupted while a pull runs ahead of it ends that pull within the grace (${tail})`, () =>
      Effect.gen(function*() {
        const { rein, state } = chunked(["a", "b", "c"], tail)
        const { fiber, seen } = yield* consume(rein, (delta) => delta === "b" ? Effect.never : Effect.void)
        yield* TestClock.adjust("1 second")
        expect(seen).toEqual(["a", "b"])
        const interrupting = yield* Effect.fork(Fiber.interrupt(fiber))
        // The reader's grace, then the provider stream's close: 250 ms each at most.
        yield* TestClock.adjust("500 millis")
        expect(interrupting.unsafePoll()).not.toBeNull()
        if (tail === "stall") expect(state.running).toBe(0)
        expect(state.closed).toBe(1)
      }))

    it.effect(`a deadline while a pull runs ahead of a busy consumer ends it, and the stream within the grace (${tail})`, () =>
      Effect.gen(function*() {
        const { rein, state } = chunked(["a", "b"], tail)
        const { fiber, seen } = yield* consume(
          rein,
          (delta) => delta === "b" ? Effect.sleep("20 seconds") : Effect.void
        )
        yield* TestClock.adjust("10 seconds")
        // No pull runs past the end, whether or not the consumer waits for it.
        if (tail === "stall") expect(state.running).toBe(0)
        yield* TestClock.adjust("10 seconds")
        yield* TestClock.adjust("500 millis")
        expect(fiber.unsafePoll()).not.toBeNull()
        expect(tagOf(yield* Fiber.join(fiber))).toBe("DeadlineExceeded")
        expect(seen).toEqual(["a", "b"])
        expect(state.closed).toBe(1)
      }))
  }

  // The attempt timeout is the provider's: it counts the time the stream waits on the provider, and is paused
  // while the consumer holds a delta. (It counted the consumer's time: a consumer slower than the timeout failed
  // an attempt whose provider had answered every chunk at once.)
  it.effect("a consumer slower than the attempt timeout does not time the attempt out", () =>
    Effect.gen(function*() {
      const { rein, state } = chunked(["a", "b", "c", "d"], "done")
      const { fiber, seen } = yield* consume(rein, () => Effect.sleep("5 seconds"), "1 minute", "3 seconds")
      yield* TestClock.adjust("1 minute")
      expect(tagOf(yield* Fiber.join(fiber))).toBe("ok")
      expect(seen).toEqual(["a", "b", "c", "d"])
      expect(state.closed).toBe(1)
    }))

  for (const tail of ["stall", "stubborn"] as const) {
    it.effect(`a provider that stalls while the consumer waits still times the attempt out (${tail})`, () =>
      Effect.gen(function*() {
        const { rein, state } = chunked(["a", "b"], tail)
        const { fiber, seen } = yield* consume(rein, () => Effect.sleep("5 seconds"), "1 minute", "3 seconds")
        // Held 5 s after each of two deltas, then 3 s waiting on the provider: the attempt ends at 13 s.
        yield* TestClock.adjust("12900 millis")
        expect(fiber.unsafePoll()).toBeNull()
        expect(seen).toEqual(["a", "b"])
        yield* TestClock.adjust("100 millis")
        // The reader's grace, then the provider stream's close: 250 ms each at most.
        yield* TestClock.adjust("500 millis")
        expect(fiber.unsafePoll()).not.toBeNull()
        const result = yield* Fiber.join(fiber)
        expect(tagOf(result)).toBe("FailedSafe")
        if (Either.isLeft(result)) {
          expect(result.left.attempts.map((a) => [a.status, a.binding, a.endMillis])).toEqual([
            // A pull that ignores interruption is let go after the reader's grace.
            ["timeout", "attempt", tail === "stall" ? 13_000 : 13_250]
          ])
        }
        if (tail === "stall") expect(state.running).toBe(0)
        expect(state.closed).toBe(1)
      }))
  }

  it.effect("the deadline still ends a slow consumer's stream: the attempt timeout's pause never passes it", () =>
    Effect.gen(function*() {
      const deltas = Array.from({ length: 10 }, (_, i) => `${i}`)
      const { rein, state } = chunked(deltas, "done")
      const { fiber, seen } = yield* consume(rein, () => Effect.sleep("5 seconds"), "12 seconds", "3 seconds")
      yield* TestClock.adjust("1 minute")
      // Asked for the fourth delta at 15 s, after the deadline: the stream ends there.
      const result = yield* Fiber.join(fiber)
      expect(tagOf(result)).toBe("DeadlineExceeded")
      expect(seen).toEqual(["0", "1", "2"])
      expect(state.closed).toBe(1)
      // The record names the bound that ended it: the deadline (the attempt's own end was paused past it).
      if (Either.isLeft(result)) {
        expect(result.left.attempts.map((a) => [a.status, a.binding, a.failure, a.code, a.endMillis])).toEqual([
          ["deadline", "deadline", "timeout", "deadline_expired", 15_000]
        ])
      }
    }))

  it.effect.prop(
    "ready chunks, any consumer pauses: every delta, whatever the attempt timeout, until the deadline",
    {
      pauses: fc.array(fc.constantFrom(0, 0, 1, 3, 7), { minLength: 1, maxLength: 40 }),
      timeout: fc.constantFrom(1, 2, 5)
    },
    ({ pauses, timeout }) =>
      Effect.gen(function*() {
        const deltas = pauses.map((_, i) => `${i}`)
        const { rein, state } = chunked(deltas, "done")
        const { fiber, seen } = yield* consume(
          rein,
          (_, i) => Effect.sleep(`${pauses[i]!} seconds`),
          "30 seconds",
          `${timeout} seconds`
        )
        yield* TestClock.adjust("10 minutes")
        const result = yield* Fiber.join(fiber)
        let now = 0
        let delivered = 0
        while (delivered < deltas.length && (delivered === 0 || now < 30)) now += pauses[delivered++]!
        expect(seen).toEqual(deltas.slice(0, delivered))
        expect(tagOf(result)).toBe(now >= 30 ? "DeadlineExceeded" : "ok")
        expect(state.closed).toBe(1)
        // An outcome of the deadline has a record of the deadline: never an attempt timeout's.
        if (Either.isLeft(result)) {
          expect(result.left.attempts.map((a) => [a.status, a.binding])).toEqual([["deadline", "deadline"]])
        }
      })
  )

  it.effect("the reader never holds more than READ_AHEAD pulled chunks the consumer has not taken", () =>
    Effect.gen(function*() {
      const { rein, state } = chunked(Array.from({ length: 500 }, (_, i) => `${i}`), "done")
      const { fiber, seen } = yield* consume(rein, (delta) => delta === "1" ? Effect.sleep("5 seconds") : Effect.void)
      yield* TestClock.adjust("1 second")
      expect(seen).toEqual(["0", "1"])
      expect(state.pulled).toBeLessThanOrEqual(2 + READ_AHEAD)
      yield* TestClock.adjust("5 seconds")
      expect(tagOf(yield* Fiber.join(fiber))).toBe("ok")
      expect(seen).toHaveLength(500)
    }))

  // The reference: each pull runs when the consumer asks, and takes no time (every chunk is ready).
  it.effect.prop(
    "ready chunks: every delta in order until the consumer asks after the deadline, then the stream's own end",
    {
      pauses: fc.array(fc.constantFrom(0, 0, 0, 0, 1, 3), { minLength: 1, maxLength: 90 }),
      tail: fc.constantFrom<Tail>("done", "fail", "cut")
    },
    ({ pauses, tail }) =>
      Effect.gen(function*() {
        const deltas = pauses.map((_, i) => `${i}`)
        const { rein, state } = chunked(deltas, tail)
        const { fiber, seen } = yield* consume(rein, (_, i) => Effect.sleep(`${pauses[i]!} seconds`))
        yield* TestClock.adjust("10 minutes")
        const result = yield* Fiber.join(fiber)
        let now = 0
        let delivered = 0
        while (delivered < deltas.length && (delivered === 0 || now < 10)) now += pauses[delivered++]!
        expect(seen).toEqual(deltas.slice(0, delivered))
        expect(tagOf(result)).toBe(now >= 10 ? "DeadlineExceeded" : tail === "done" ? "ok" : "FailedSafe")
        expect(state.closed).toBe(1)
      })
  )
})
