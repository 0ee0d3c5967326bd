import { describe, expect, it } from "@effect/vitest"
import { Batch, Guardrails } from "@rein/batch"
import type { Events, Result } from "@rein/batch"
import { Gate, Journal } from "@rein/core"
import { Chunk, Duration, Effect, Fiber, Layer, Option, Stream, TestClock } from "effect"
import { contract, counted, fail, hang, ok, scripted } from "./batch-helpers.js"

/** Forks `effect`, advances virtual time by `advance`, and joins. */
const runFor = <A, E>(effect: Effect.Effect<A, E>, advance: Duration.DurationInput = "1 hour") =>
  Effect.gen(function*() {
    const fiber = yield* Effect.fork(effect)
    yield* TestClock.adjust(advance)
    return yield* Fiber.join(fiber)
  })

const brief = <I>(r: Result.ItemResult<I>) =>
  r._tag === "Failed" ? `${r.itemId}:${r.category}` : `${r.itemId}:${r._tag}`

const prompts = (n: number) => Array.from({ length: n }, (_, i) => `p${i}`)

describe("Batch.run", () => {
  it.effect("every item runs under the contract and the run completes", () =>
    Effect.gen(function*() {
      const fake = scripted(() => ok(100))
      const summary = yield* runFor(
        Batch.run(prompts(10), { contract: contract(), guardrails: Guardrails.make({ concurrency: 3 }) }).pipe(
          Effect.provide(fake.layer)
        )
      )
      expect(summary.results).toHaveLength(10)
      expect(summary.results.every((r) => r._tag === "Succeeded")).toBe(true)
      expect(summary.termination.kind).toBe("completed")
      expect(summary.stats).toMatchObject({ accepted: 10, succeeded: 10, failed: 0, attempts: 10, tokensUsed: 100 })
      // Three at a time: 10 items of 100 ms take 400 ms.
      expect(Math.max(...fake.log.map((c) => c.startMillis))).toBe(300)
    }))

  it.effect("cap 10 tokens, the first call reports 100: only that item is called and succeeds, the rest get the cap's result", () =>
    Effect.gen(function*() {
      const fake = scripted(() => ok(10, { inputTokens: 60, outputTokens: 40 }))
      const summary = yield* runFor(
        Batch.run(prompts(5), {
          contract: contract(),
          guardrails: Guardrails.make({ concurrency: 3, capacity: { a: 1 }, maxTotalTokens: 10 })
        }).pipe(Effect.provide(fake.layer))
      )
      expect(fake.log).toHaveLength(1)
      // An array hands all of its items over: the two waiting for capacity and the two never started alike.
      expect(summary.results.map(brief).sort()).toEqual([
        "0:Succeeded",
        "1:batch_budget_exceeded",
        "2:batch_budget_exceeded",
        "3:batch_budget_exceeded",
        "4:batch_budget_exceeded"
      ])
      expect(summary.stats.accepted).toBe(5)
      expect(summary.termination).toMatchObject({ kind: "budget_exceeded", resource: "tokens" })
      expect(summary.termination.reason).toContain("100 of 10 tokens")
      expect(summary.stats.tokensUsed).toBe(100)
    }))

  it.effect("a failed attempt that reaches the cap turns into batch_budget_exceeded with the provider failure as cause", () =>
    Effect.gen(function*() {
      const fake = scripted(() => fail("server_error", { usage: { inputTokens: 50, outputTokens: 50 } }))
      const summary = yield* runFor(
        Batch.run(prompts(1), { contract: contract(), guardrails: Guardrails.make({ maxTotalTokens: 100 }) }).pipe(
          Effect.provide(fake.layer)
        )
      )
      expect(fake.log).toHaveLength(1)
      const [result] = summary.results
      expect(result?._tag).toBe("Failed")
      if (result?._tag !== "Failed") return
      expect(result.category).toBe("batch_budget_exceeded")
      expect(result.error._tag).toBe("BatchBudgetExceeded")
      if (result.error._tag !== "BatchBudgetExceeded") return
      expect(result.error.lastFailure).toEqual({ kind: "server_error", code: "server_error", endpoint: "a" })
      expect(result.error.reason).toBe("token cap reached: 100 of 100 tokens")
    }))

  it.effect("batch deadline, drain-active: the call in flight completes, the waiting items get batch_deadline_exceeded", () =>
    Effect.gen(function*() {
      const fake = scripted(() => ok(10_000))
      const src = counted(10)
      const summary = yield* runFor(
        Batch.run(src.source, {
          contract: contract(),
          guardrails: Guardrails.make({
            concurrency: 3,
            capacity: { a: 1 },
            batchDeadline: "5 seconds",
            abortMode: "drain-active"
          })
        }).pipe(Effect.provide(fake.layer))
      )
      expect(fake.log).toHaveLength(1)
      expect(fake.log[0]!.endMillis).toBe(10_000)
      expect(summary.results.map(brief)).toEqual([
        "1:batch_deadline_exceeded",
        "2:batch_deadline_exceeded",
        "0:Succeeded"
      ])
      expect(summary.termination.kind).toBe("batch_timeout")
      // Three items were accepted and materialised; nothing after the deadline was pulled.
      expect(src.state.materialised).toBe(3)
      expect(src.state.closed).toBe(true)
    }))

  it.effect("a batch deadline longer than the longest timer (2^31 - 1 ms) fires when due, not at the clamp", () =>
    Effect.gen(function*() {
      const fake = scripted(() => ok(10))
      // A source that never ends: only the batch deadline stops the run.
      const fiber = yield* Effect.fork(
        Batch.run<string>(Stream.concat(Stream.make("p0"), Stream.never), {
          contract: contract(),
          guardrails: Guardrails.make({ batchDeadline: "30 days" })
        }).pipe(Effect.provide(fake.layer))
      )
      // Each sleep is clamped to 2^31 - 1 ms (24.86 days); the run is still going a day later.
      yield* TestClock.adjust("25 days")
      expect(Option.isNone(yield* Fiber.poll(fiber))).toBe(true)
      yield* TestClock.adjust("5 days")
      const summary = yield* Fiber.join(fiber)
      expect(summary.termination.kind).toBe("batch_timeout")
      expect(summary.results.map(brief)).toEqual(["0:Succeeded"])
    }))

  it.effect("batch deadline, cancel-active: the call in flight is interrupted too", () =>
    Effect.gen(function*() {
      const fake = scripted(() => ok(10_000))
      const summary = yield* runFor(
        Batch.run(prompts(10), {
          contract: contract(),
          guardrails: Guardrails.make({
            concurrency: 3,
            capacity: { a: 1 },
            batchDeadline: "5 seconds",
            abortMode: "cancel-active"
          })
        }).pipe(Effect.provide(fake.layer))
      )
      expect(fake.log).toHaveLength(1)
      expect(fake.log[0]!.tornDown).toBe(true)
      expect(fake.log[0]!.endMillis).toBe(null)
      expect(summary.results.map(brief).sort()).toEqual(
        prompts(10).map((_, i) => `${i}:batch_deadline_exceeded`).sort()
      )
      expect(summary.termination.kind).toBe("batch_timeout")
      expect(summary.stats.unknownUsageAttempts).toBe(1)
    }))

  it.effect("cancel-active: an interrupted item's result carries its attempts as the journal has them, the interrupted one charged its reservation", () =>
    Effect.gen(function*() {
      // A 503, then a call that outlives the batch deadline.
      const fake = scripted((_, call) => call === 1 ? fail("overloaded", { latency: 10 }) : ok(10_000))
      const [summary, journal] = yield* runFor(
        Effect.zip(
          Batch.run(["p0"], {
            contract: contract({ budget: { cost: 1 } }),
            request: (prompt: string) => ({ prompt, inputTokens: 100, maxOutputTokens: 100 }),
            guardrails: Guardrails.make({ concurrency: 1, batchDeadline: "5 seconds", abortMode: "cancel-active" })
          }),
          Effect.flatMap(Journal.MemoryJournal, (j) => j.records)
        ).pipe(Effect.provide(Layer.merge(fake.layer, Journal.layerMemory)))
      )
      const [result] = summary.results
      if (result?._tag !== "Failed") throw new Error(`expected a failed item, got ${result?._tag}`)
      expect(result.category).toBe("batch_deadline_exceeded")
      const attempts = result.error.attempts
      expect(attempts.map((a) => a.status)).toEqual(["failure", "interrupted"])
      // 100 in, 100 out at 1e-6 and 2e-6: the worst case stays charged, as usage unknown after dispatch.
      expect(attempts[1]!.reservation).toEqual({ cost: 3e-4, tokens: 200 })
      expect(attempts[1]!.charged).toEqual({ cost: 3e-4, tokens: 200 })
      expect(attempts).toEqual(journal[0]!.attempts)
      expect(result.error).toMatchObject({ lastFailure: { kind: "overloaded", code: "overloaded", endpoint: "a" } })
    }))

  it.effect("fail-fast on authentication: one call, the rest batch_aborted, the trigger recorded", () =>
    Effect.gen(function*() {
      const fake = scripted(() => fail("authentication", { latency: 10 }))
      const events: Array<Events.Event> = []
      const summary = yield* runFor(
        Batch.run(prompts(10), {
          contract: contract(),
          guardrails: Guardrails.make({ concurrency: 3, capacity: { a: 1 }, abortOn: ["authentication"] }),
          onEvent: (e) => Effect.sync(() => void events.push(e))
        }).pipe(Effect.provide(fake.layer))
      )
      expect(fake.log).toHaveLength(1)
      expect(summary.results.map(brief).sort()).toEqual([
        "0:authentication",
        ...prompts(9).map((_, i) => `${i + 1}:batch_aborted`)
      ])
      expect(summary.termination).toMatchObject({ kind: "fail_fast", itemId: "0", category: "authentication" })
      expect(events.filter((e) => e._tag === "RunAborted")).toHaveLength(1)
    }))

  it.effect("the run's gate governs the items' calls only: observers run outside it", () =>
    Effect.gen(function*() {
      const fake = scripted(() => ok(10))
      const seen: Array<boolean> = []
      const summary = yield* runFor(
        Batch.run(prompts(3), {
          contract: contract(),
          guardrails: Guardrails.make({ concurrency: 2, abortOn: ["authentication"] }),
          // An observer that calls Rein itself must not have its calls admitted and counted as the item's.
          onEvent: () => Effect.map(Effect.serviceOption(Gate.Gate), (gate) => void seen.push(Option.isSome(gate)))
        }).pipe(Effect.provide(fake.layer))
      )
      expect(summary.stats.succeeded).toBe(3)
      expect(seen.length).toBeGreaterThan(0)
      expect(seen.every((inScope) => !inScope)).toBe(true)
    }))

  it.effect("an unconfigured category does not abort", () =>
    Effect.gen(function*() {
      const fake = scripted(() => fail("authentication"))
      const summary = yield* runFor(
        Batch.run(prompts(5), {
          contract: contract(),
          guardrails: Guardrails.make({ concurrency: 2, abortOn: ["insufficient_balance"] })
        }).pipe(Effect.provide(fake.layer))
      )
      expect(fake.log).toHaveLength(5)
      expect(summary.results.every((r) => r._tag === "Failed" && r.category === "authentication")).toBe(true)
      expect(summary.termination.kind).toBe("completed")
    }))

  it.effect("many items failing at once trip fail-fast once: the first trigger wins", () =>
    Effect.gen(function*() {
      const fake = scripted(() => fail("authentication", { latency: 100 }))
      const events: Array<Events.Event> = []
      const summary = yield* runFor(
        Batch.run(prompts(8), {
          contract: contract(),
          guardrails: Guardrails.make({ concurrency: 4, abortOn: ["authentication"] }),
          onEvent: (e) => Effect.sync(() => void events.push(e))
        }).pipe(Effect.provide(fake.layer))
      )
      // Four calls in flight finish together; only the first failure is the trigger.
      expect(fake.log).toHaveLength(4)
      expect(events.filter((e) => e._tag === "RunAborted")).toHaveLength(1)
      expect(summary.termination).toMatchObject({ kind: "fail_fast", category: "authentication" })
      expect(["0", "1", "2", "3"]).toContain(summary.termination._tag === "FailFast" ? summary.termination.itemId : "")
      expect(summary.results).toHaveLength(8)
      expect(summary.results.filter((r) => r._tag === "Failed" && r.category === "authentication")).toHaveLength(4)
      expect(summary.results.filter((r) => r._tag === "Failed" && r.category === "batch_aborted")).toHaveLength(4)
    }))

  it.effect("fail-fast stops an item waiting in backoff at once", () =>
    Effect.gen(function*() {
      const fake = scripted((prompt) =>
        prompt === "p0" ? fail("server_error") : fail("authentication", { latency: 50 })
      )
      const contractWithLongBackoff = contract({
        retry: { perEndpoint: 2, base: "30 seconds", factor: 1, max: "30 seconds", jitter: 0 }
      })
      const fiber = yield* Effect.fork(
        Batch.run(["p0", "p1"], {
          contract: contractWithLongBackoff,
          guardrails: Guardrails.make({ concurrency: 2, abortOn: ["authentication"] })
        }).pipe(Effect.provide(fake.layer))
      )
      yield* TestClock.adjust("50 millis")
      const summary = yield* Fiber.join(fiber)
      expect(summary.results.map(brief)).toEqual(["1:authentication", "0:batch_aborted"])
      const aborted = summary.results[1]
      if (aborted?._tag === "Failed") {
        expect(aborted.error).toMatchObject({ lastFailure: { kind: "server_error" } })
      }
    }))

  it.effect("an item deadline bounds admission waits and attempts", () =>
    Effect.gen(function*() {
      const fake = scripted(() => hang)
      const summary = yield* runFor(
        Batch.run(prompts(2), {
          contract: contract(),
          guardrails: Guardrails.make({ concurrency: 2, itemDeadline: "2 seconds", requestsPerMinute: 1 })
        }).pipe(Effect.provide(fake.layer))
      )
      // Both end at the same instant (2 s): completion order between them is a tie.
      expect(summary.results.map(brief).sort()).toEqual(["0:deadline_exceeded", "1:deadline_exceeded"])
      const phases = summary.results.map((r) =>
        r._tag === "Failed" && r.error._tag === "DeadlineExceeded" ? r.error.phase : ""
      )
      expect(phases.sort()).toEqual(["admission", "attempt"])
    }))

  it.effect("results in submission order on request", () =>
    Effect.gen(function*() {
      const fake = scripted((prompt) => ok(1000 - Number(prompt.slice(1)) * 100))
      const ordered = yield* runFor(
        Batch.run(prompts(5), {
          contract: contract(),
          guardrails: Guardrails.make({ concurrency: 5, order: "submission" })
        }).pipe(Effect.provide(fake.layer))
      )
      expect(ordered.results.map((r) => r.index)).toEqual([0, 1, 2, 3, 4])
      const completion = yield* runFor(
        Batch.run(prompts(5), { contract: contract(), guardrails: Guardrails.make({ concurrency: 5 }) }).pipe(
          Effect.provide(fake.layer)
        )
      )
      expect(completion.results.map((r) => r.index)).toEqual([4, 3, 2, 1, 0])
    }))
})

describe("Batch.drain", () => {
  it.effect("runs every item and returns how the run ended with the stats, as run would, keeping no result", () =>
    Effect.gen(function*() {
      const fake = scripted((prompt) => (prompt === "p3" ? fail("authentication") : ok(100)))
      const events: Array<Events.Event["_tag"]> = []
      const options = {
        contract: contract(),
        guardrails: Guardrails.make({ concurrency: 3 }),
        onEvent: (e: Events.Event) => Effect.sync(() => void events.push(e._tag))
      }
      const drained = yield* runFor(Batch.drain(prompts(8), options).pipe(Effect.provide(fake.layer)))
      const summary = yield* runFor(Batch.run(prompts(8), options).pipe(Effect.provide(fake.layer)))
      expect(Object.keys(drained).sort()).toEqual(["stats", "termination"])
      expect(drained.termination).toEqual(summary.termination)
      expect(drained.stats).toEqual(summary.stats)
      expect(drained.stats).toMatchObject({ accepted: 8, succeeded: 7, failed: 1 })
      // Both runs raised the same events: the results reach the observer.
      expect(events.filter((t) => t === "ItemCompleted")).toHaveLength(14)
      expect(events.filter((t) => t === "ItemFailed")).toHaveLength(2)
      expect(events.filter((t) => t === "RunCompleted")).toHaveLength(2)
    }))
})

describe("Batch.stream", () => {
  it.effect("yields each result as it happens and ends normally, in submission order on request", () =>
    Effect.gen(function*() {
      const fake = scripted((prompt) => ok(1000 - Number(prompt.slice(1)) * 100))
      const results = yield* runFor(
        Stream.runCollect(
          Batch.stream(prompts(6), {
            contract: contract(),
            guardrails: Guardrails.make({ concurrency: 3, order: "submission" })
          })
        ).pipe(Effect.provide(fake.layer))
      )
      expect(Chunk.toReadonlyArray(results).map((r) => r.index)).toEqual([0, 1, 2, 3, 4, 5])
    }))

  it.effect("an infinite async source stops at the batch deadline and is closed", () =>
    Effect.gen(function*() {
      const fake = scripted(() => ok(1000))
      const state = { materialised: 0, closed: false }
      async function* forever() {
        try {
          for (let i = 0;; i++) {
            state.materialised++
            yield `p${i}`
          }
        } finally {
          state.closed = true
        }
      }
      const fiber = yield* Effect.fork(
        Stream.runCollect(
          Batch.stream(forever(), {
            contract: contract(),
            guardrails: Guardrails.make({ concurrency: 2, batchDeadline: "2500 millis" })
          })
        ).pipe(Effect.provide(fake.layer))
      )
      for (let i = 0; i < 10; i++) {
        yield* TestClock.adjust("500 millis")
        yield* Effect.promise(() => new Promise((resolve) => setImmediate(resolve)))
      }
      const results = Chunk.toReadonlyArray(yield* Fiber.join(fiber))
      // 2 at a time, 1 s each: 0-1 s, 1-2 s, then two started at 2 s drain to 3 s.
      expect(results.map(brief).sort()).toEqual(prompts(6).map((_, i) => `${i}:Succeeded`))
      expect(state.materialised).toBe(6)
      expect(state.closed).toBe(true)
    }))

  it.effect("ending the stream early interrupts the run and closes the source", () =>
    Effect.gen(function*() {
      const fake = scripted(() => ok(100))
      const src = counted()
      const results = yield* runFor(
        Stream.runCollect(
          Batch.stream(src.source, { contract: contract(), guardrails: Guardrails.make({ concurrency: 3 }) }).pipe(
            Stream.take(4)
          )
        ).pipe(Effect.provide(fake.layer))
      )
      expect(Chunk.size(results)).toBe(4)
      expect(src.state.closed).toBe(true)
      expect(fake.log.filter((c) => c.endMillis === null).every((c) => c.tornDown)).toBe(true)
    }))

  it.effect("an Effect Stream works as a source", () =>
    Effect.gen(function*() {
      const fake = scripted(() => ok(10))
      const results = yield* runFor(
        Stream.runCollect(
          Batch.stream(Stream.range(0, 9).pipe(Stream.map((i) => `p${i}`)), {
            contract: contract(),
            guardrails: Guardrails.make({ concurrency: 4 })
          })
        ).pipe(Effect.provide(fake.layer))
      )
      expect(Chunk.size(results)).toBe(10)
    }))
})
