import { describe, expect, it } from "@effect/vitest"
import { ArtifactStore, Batch, Guardrails, Identity, Resume } from "@rein/batch"
import type { Events, Result } from "@rein/batch"
import type { Rein } from "@rein/core"
import { Chunk, Effect, Fiber, Random, Stream, TestClock } from "effect"
import * as fc from "effect/FastCheck"
import type { Step } from "./batch-helpers.js"
import { contract, counted, fail, hang, ok, scripted } from "./batch-helpers.js"

const Usage = fc.record({ inputTokens: fc.integer({ min: 0, max: 30 }), outputTokens: fc.integer({ min: 0, max: 30 }) })

const StepArb: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ latency: fc.integer({ min: 0, max: 3_000 }), usage: Usage }).map(({ latency, usage }) =>
    ok(latency, usage)
  ),
  fc.record({
    kind: fc.constantFrom(...(["server_error", "rate_limited", "authentication", "invalid_request"] as const)),
    latency: fc.integer({ min: 0, max: 2_000 }),
    usage: fc.option(Usage, { nil: undefined })
  }).map(({ kind, latency, usage }) =>
    fail(kind, { latency, retryAfter: 500, ...(usage !== undefined ? { usage } : {}) })
  ),
  fc.constant(hang)
)

const Guardrail = fc.oneof(
  fc.constant({ _tag: "none" } as const),
  fc.integer({ min: 1, max: 12_000 }).map((millis) => ({ _tag: "deadline", millis }) as const),
  fc.constant({ _tag: "failFast" } as const),
  fc.integer({ min: 1, max: 150 }).map((tokens) => ({ _tag: "tokens", tokens }) as const)
)

describe("Batch properties", () => {
  it.effect.prop(
    "every accepted item gets exactly one terminal result, whatever guardrail stops the run and whenever",
    {
      items: fc.integer({ min: 0, max: 12 }),
      scripts: fc.array(fc.array(StepArb, { minLength: 1, maxLength: 3 }), { minLength: 1, maxLength: 12 }),
      concurrency: fc.integer({ min: 1, max: 4 }),
      guardrail: Guardrail,
      abortMode: fc.constantFrom(...(["drain-active", "cancel-active"] as const)),
      order: fc.constantFrom(...(["completion", "submission"] as const)),
      seed: fc.integer()
    },
    ({ abortMode, concurrency, guardrail, items, order, scripts, seed }) =>
      Effect.gen(function*() {
        const fake = scripted((prompt, call) => {
          const script = scripts[Number(prompt.slice(1)) % scripts.length]!
          return script[Math.min(call - 1, script.length - 1)]!
        })
        const src = counted(items)
        const events: Array<Events.Event> = []
        const guardrails = Guardrails.make({
          concurrency,
          abortMode,
          order,
          itemDeadline: "20 seconds",
          ...(guardrail._tag === "deadline" ? { batchDeadline: guardrail.millis } : {}),
          ...(guardrail._tag === "failFast" ? { abortOn: ["authentication"] } : {}),
          ...(guardrail._tag === "tokens" ? { maxTotalTokens: guardrail.tokens } : {})
        })
        const fiber = yield* Effect.fork(
          Batch.run(src.source, {
            contract: contract({
              retry: { perEndpoint: 1, base: "300 millis", factor: 2, max: "1 second", jitter: 0.5 }
            }),
            guardrails,
            onEvent: (e) => Effect.sync(() => void events.push(e))
          }).pipe(Effect.provide(fake.layer), Effect.withRandom(Random.make(seed)))
        )
        yield* TestClock.adjust("10 minutes")
        const summary = yield* Fiber.join(fiber)

        // Exactly one result per accepted item; accepted = materialised; the source was closed.
        expect(summary.results).toHaveLength(summary.stats.accepted)
        expect(src.state.materialised).toBe(summary.stats.accepted)
        expect(summary.results.map((r) => r.index).sort((a, b) => a - b)).toEqual(
          Array.from({ length: summary.stats.accepted }, (_, i) => i)
        )
        expect(src.state.closed).toBe(true)
        if (order === "submission") {
          expect(summary.results.map((r) => r.index)).toEqual(summary.results.map((_, i) => i))
        }

        const aborted = events.filter((e): e is typeof Events.RunAborted.Type => e._tag === "RunAborted")
        expect(aborted.length).toBe(summary.termination.kind === "completed" ? 0 : 1)
        expect(events[0]?._tag).toBe("RunStarted")
        expect(events.at(-1)?._tag).toBe("RunCompleted")
        if (aborted.length === 0) {
          expect(summary.stats.accepted).toBe(items)
          return
        }
        const stopAt = aborted[0]!.at
        // Nothing starts after the stop.
        for (const call of fake.log) expect(call.startMillis).toBeLessThanOrEqual(stopAt)
        if (summary.termination.kind === "budget_exceeded") {
          // Overshoot is bounded by the usage of the attempts in flight when the cap was reached.
          const inFlight = fake.sequence.filter((e) =>
            e.what === "end" && e.call.startMillis <= stopAt && e.call.endMillis !== null && e.call.endMillis >= stopAt
          )
          const bound = inFlight.reduce((n, e) => n + (e.what === "end" ? e.tokens : 0), 0)
          const cap = guardrail._tag === "tokens" ? guardrail.tokens : 0
          expect(summary.stats.tokensUsed).toBeGreaterThanOrEqual(cap)
          expect(summary.stats.tokensUsed - cap).toBeLessThanOrEqual(bound)
        }
      }),
    { fastCheck: { numRuns: 60 } }
  )

  it.effect.prop(
    "a collection hands every item over: each gets exactly one terminal result, record and event, whatever stops the run, whenever, in either abort mode",
    {
      items: fc.integer({ min: 0, max: 12 }),
      kind: fc.constantFrom(...(["array", "chunk", "set"] as const)),
      scripts: fc.array(fc.array(StepArb, { minLength: 1, maxLength: 3 }), { minLength: 1, maxLength: 12 }),
      concurrency: fc.integer({ min: 1, max: 4 }),
      guardrail: fc.oneof(
        Guardrail,
        fc.integer({ min: 1, max: 100 }).map((c) => ({ _tag: "cost", cost: c / 1e6 }) as const)
      ),
      abortMode: fc.constantFrom(...(["drain-active", "cancel-active"] as const)),
      order: fc.constantFrom(...(["completion", "submission"] as const)),
      form: fc.constantFrom(...(["run", "stream"] as const)),
      seed: fc.integer()
    },
    ({ abortMode, concurrency, form, guardrail, items, kind, order, scripts, seed }) =>
      Effect.gen(function*() {
        const fake = scripted((prompt, attempt) => {
          const script = scripts[Number(prompt.slice(1)) % scripts.length]!
          return script[Math.min(attempt - 1, script.length - 1)]!
        })
        const prompts = Array.from({ length: items }, (_, i) => `p${i}`)
        const source = kind === "array" ? prompts : kind === "chunk" ? Chunk.fromIterable(prompts) : new Set(prompts)
        const events: Array<Events.Event> = []
        const records: Array<ArtifactStore.ItemRecord> = []
        const opened: ArtifactStore.Opened = {
          manifest: yield* ArtifactStore.makeManifest(Identity.make({
            provider: "scripted",
            model: "a-1",
            promptVersion: "p1",
            parserVersion: "j1",
            applicationVersion: "a1"
          })),
          truncatedBytes: 0,
          append: (record) => Effect.sync(() => void records.push(record))
        }
        const toRecord = (r: Result.Succeeded<string> | Result.Failed<string>) =>
          Effect.succeed(Resume.makeRecord({
            itemId: r.itemId,
            index: r.index,
            promptFingerprint: r.item,
            inputFingerprint: r.item,
            identityFingerprint: opened.manifest.identityFingerprint,
            outcome: r._tag === "Succeeded" ? "success" : "failure",
            category: r._tag === "Succeeded" ? "ok" : r.category,
            usage: "unknown",
            cost: "unknown",
            attempts: 0,
            durationMillis: r.durationMillis
          }))
        const options: Batch.Options<string> = {
          contract: contract({
            retry: { perEndpoint: 1, base: "300 millis", factor: 2, max: "1 second", jitter: 0.5 }
          }),
          guardrails: Guardrails.make({
            concurrency,
            abortMode,
            order,
            itemDeadline: "20 seconds",
            ...(guardrail._tag === "deadline" ? { batchDeadline: guardrail.millis } : {}),
            ...(guardrail._tag === "failFast" ? { abortOn: ["authentication"] } : {}),
            ...(guardrail._tag === "tokens" ? { maxTotalTokens: guardrail.tokens } : {}),
            ...(guardrail._tag === "cost" ? { maxTotalCost: guardrail.cost } : {})
          }),
          artifacts: { opened, toRecord },
          onEvent: (e) => Effect.sync(() => void events.push(e))
        }
        // `stream` (with its window of accepted items in submission order) and `run` alike.
        const results: Effect.Effect<
          Pick<Batch.Summary<string>, "results" | "termination" | "stats">,
          unknown,
          Rein.Rein
        > = form === "run"
          ? Batch.run(source, options)
          : Effect.map(Stream.runCollect(Batch.stream(source, options)), (chunk) => {
            const end = events.find((e) => e._tag === "RunCompleted")!
            return { results: Chunk.toReadonlyArray(chunk), termination: end.termination, stats: end.stats }
          })
        const fiber = yield* Effect.fork(
          results.pipe(Effect.provide(fake.layer), Effect.withRandom(Random.make(seed)))
        )
        yield* TestClock.adjust("10 minutes")
        const summary = yield* Fiber.join(fiber)

        // Every item, exactly once, with its submission index: as a result, a record and an event.
        const everyIndex = prompts.map((_, i) => i)
        const sorted = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)
        expect(summary.stats.accepted).toBe(items)
        expect(sorted(summary.results.map((r) => r.index))).toEqual(everyIndex)
        expect(summary.results.every((r) => r.itemId === String(r.index) && r.item === `p${r.index}`)).toBe(true)
        expect(sorted(records.map((r) => r.index))).toEqual(everyIndex)
        const ended = events.filter((e) => e._tag === "ItemCompleted" || e._tag === "ItemFailed")
        expect(sorted(ended.map((e) => (e as { readonly index: number }).index))).toEqual(everyIndex)
        if (order === "submission") expect(summary.results.map((r) => r.index)).toEqual(everyIndex)

        // An item never called after the stop gets the stop's own result, and its record is never reused.
        const collateral = {
          completed: undefined,
          batch_timeout: "batch_deadline_exceeded",
          fail_fast: "batch_aborted",
          budget_exceeded: "batch_budget_exceeded",
          artifact_error: "batch_aborted"
        }[summary.termination.kind]
        const called = new Set(fake.log.map((c) => c.prompt))
        for (const r of summary.results) {
          if (called.has(r.item)) continue
          expect(r._tag === "Failed" ? r.category : r._tag).toBe(collateral)
        }
        for (const r of records) if (r.category.startsWith("batch_")) expect(r.reusable).toBe(false)
      }),
    { fastCheck: { numRuns: 60 } }
  )
})
