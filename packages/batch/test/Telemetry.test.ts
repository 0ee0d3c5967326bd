import { describe, expect, it } from "@effect/vitest"
import { Batch, Guardrails } from "@rein/batch"
import { Telemetry } from "@rein/core"
import { Effect, Fiber, Metric, MetricLabel, TestClock } from "effect"
import { dump, memoryTracing, tree } from "../../core/test/telemetry-helpers.js"
import { contract, fail, ok, scripted } from "./batch-helpers.js"

const count = (m: Metric.Metric.Counter<number>, labels: ReadonlyArray<readonly [string, string]> = []) =>
  Effect.map(Metric.value(Metric.taggedWithLabels(m, labels.map(([k, v]) => MetricLabel.make(k, v)))), (s) => s.count)

const progress = Effect.all([
  count(Telemetry.metrics.batchAccepted),
  count(Telemetry.metrics.batchDone, [["rein.batch.item.result", "Succeeded"]]),
  count(Telemetry.metrics.batchDone, [["rein.batch.item.result", "Failed"]]),
  count(Telemetry.metrics.batchFailed, [["rein.batch.item.category", "invalid_request"]]),
  count(Telemetry.metrics.batchInFlight)
])

describe("batch telemetry", () => {
  it.effect(
    "a run span with an item span per item, each item's request span beneath it, and the rate limit's wait as a gate event",
    () =>
      Effect.gen(function*() {
        const { exporter, layer: tracing } = memoryTracing()
        // p1 fails once (retried); p2 fails safe (invalid_request is neither retried nor fallen back from).
        const fake = scripted((prompt, call) =>
          prompt === "p1" && call === 1 ? fail("overloaded") : prompt === "p2" ? fail("invalid_request") : ok(10)
        )
        const before = yield* progress
        const fiber = yield* Effect.fork(
          Batch.run(["p0", "p1", "p2", "p3"], {
            contract: contract({ retry: { perEndpoint: 1, base: "100 millis", jitter: 0 } }),
            guardrails: Guardrails.make({ concurrency: 4, requestsPerMinute: 4 })
          }).pipe(Effect.provide(fake.layer), Effect.provide(Telemetry.layer), Effect.provide(tracing))
        )
        yield* TestClock.adjust("1 hour")
        const summary = yield* Fiber.join(fiber)
        expect(summary.stats).toMatchObject({ accepted: 4, succeeded: 3, failed: 1 })

        const spans = tree(exporter)
        const run = spans.filter((s) => s.name === "rein.batch.run")
        const items = spans.filter((s) => s.name === "rein.batch.item")
          .sort((x, y) => Number(x.attributes["rein.batch.item.index"]) - Number(y.attributes["rein.batch.item.index"]))
        const requests = spans.filter((s) => s.name === "rein.request")
        expect(run).toHaveLength(1)
        expect(run[0]!.parent).toBeNull()
        expect(run[0]!.attributes).toMatchObject({
          "rein.batch.termination": "completed",
          "rein.batch.accepted": 4,
          "rein.batch.succeeded": 3,
          "rein.batch.failed": 1
        })
        expect(
          items.map((s) => [s.parent, s.attributes["rein.batch.item.id"], s.attributes["rein.batch.item.outcome"]])
        )
          .toEqual([
            ["rein.batch.run", "0", "Completion"],
            ["rein.batch.run", "1", "Completion"],
            ["rein.batch.run", "2", "FailedSafe"],
            ["rein.batch.run", "3", "Completion"]
          ])
        expect(requests.map((s) => s.parent)).toEqual(Array(4).fill("rein.batch.item"))
        expect(spans.filter((s) => s.name === "chat model-a").map((s) => s.parent)).toEqual(
          Array(5).fill("rein.request")
        )
        // The four first attempts take the minute's four tokens at once: p1's retry, due after its 100 ms
        // backoff, waits at the gate for the bucket to refill one token (15 s after the start).
        const waits = requests.flatMap((r) => r.events.filter((e) => e.name === "rein.wait").map((e) => e.attributes))
        expect(waits).toEqual([
          { "rein.wait.kind": "backoff", "rein.wait.millis": 100, "rein.endpoint": "a" },
          { "rein.wait.kind": "gate", "rein.wait.millis": 14_900, "rein.endpoint": "a" }
        ])
        expect(dump(exporter)).not.toContain("answer to")

        const after = yield* progress
        expect(after.map((n, i) => n - before[i]!)).toEqual([4, 3, 1, 1, 0])
      })
  )

  it.effect("without Telemetry a run opens no span", () =>
    Effect.gen(function*() {
      const { exporter, layer: tracing } = memoryTracing()
      const fake = scripted(() => ok(0))
      const fiber = yield* Effect.fork(
        Batch.run(["p0", "p1"], { contract: contract(), guardrails: Guardrails.make({ concurrency: 2 }) }).pipe(
          Effect.provide(fake.layer),
          Effect.provide(tracing)
        )
      )
      yield* TestClock.adjust("1 minute")
      yield* Fiber.join(fiber)
      expect(exporter.getFinishedSpans()).toEqual([])
    }))
})
