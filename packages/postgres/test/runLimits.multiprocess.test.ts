// Batch runs in real processes sharing PgRunLimits: a token cap reached in one stops both, with one
// termination recorded once; a stop recorded anywhere reaches a running batch by LISTEN/NOTIFY, or by polling
// when it cannot listen.
import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import type { Termination } from "@rein/batch"
import { Effect } from "effect"
import { PgRunLimits } from "../src/index.js"
import { available, fresh, PgLive, Server } from "./pg.js"
import { bundle, spawnChild } from "./processes.js"

interface Summary {
  readonly termination: Termination.Termination
  readonly tokensUsed: number
  readonly calls: number
  readonly endedAfterMillis: number
}

const summaryOf = (stdout: string): Summary => JSON.parse(/^SUMMARY (.*)$/m.exec(stdout)![1]!)

const workers = (inputs: ReadonlyArray<Record<string, unknown>>) =>
  Effect.gen(function*() {
    const server = yield* Server
    const worker = yield* bundle("limits-worker")
    const children = yield* Effect.forEach(inputs, (input) =>
      spawnChild(worker, { url: server.url, pollMillis: 1000, listen: true, ...input }))
    yield* Effect.forEach(children, (c) =>
      c.waitFor(/READY\n/))
    return children
  })

describe.skipIf(!available)("batch runs in two processes sharing PgRunLimits", () => {
  layer(PgLive, { timeout: "120 seconds", excludeTestServices: true })((it) => {
    it.scoped(
      "a token cap reached in one process stops both, overshooting by at most the attempts in flight",
      () =>
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          const name = fresh("cap")
          const CAP = 200
          const input = { name, maxTotalTokens: CAP, items: 100, concurrency: 2, latencyMillis: 20 }
          const children = yield* workers([input, input])
          yield* Effect.forEach(children, (c) => c.send("GO"))
          const exits = yield* Effect.forEach(children, (c) => c.exited, { concurrency: "unbounded" })
          expect(exits.map((e) => e.code), children.map((c) => c.stderr()).join("\n")).toEqual([0, 0])
          const [a, b] = children.map((c) => summaryOf(c.stdout()))
          expect(a!.termination).toMatchObject({ kind: "budget_exceeded", resource: "tokens" })
          // One stop for the whole run: the second process ended with the first one's termination.
          expect(b!.termination).toEqual(a!.termination)
          const rows = yield* sql<{ readonly tokens: number; readonly stop_kind: string; readonly stop: string }>`
          SELECT tokens, stop_kind, stop FROM rein_run_limits WHERE name = ${name}`
          expect(rows[0]!.stop_kind).toBe("budget_exceeded")
          expect(JSON.parse(rows[0]!.stop)).toEqual(a!.termination)
          // The totals are both runs' usage, and exceed the cap by at most the attempts in flight (2 × 2, 10 each).
          expect(rows[0]!.tokens).toBe(a!.tokensUsed + b!.tokensUsed)
          expect(rows[0]!.tokens).toBeGreaterThanOrEqual(CAP)
          expect(rows[0]!.tokens).toBeLessThanOrEqual(CAP - 1 + 4 * 10)
          // Both took part, and neither ran its 100 items.
          expect(a!.calls).toBeGreaterThan(0)
          expect(b!.calls).toBeGreaterThan(0)
          expect(a!.calls + b!.calls).toBeLessThan(200 / 10 + 4 + 1)
        }),
      120_000
    )

    for (const listen of [true, false]) {
      it.scoped(
        listen
          ? "a stop recorded by another process ends a running batch through LISTEN/NOTIFY, before any poll"
          : "without LISTEN, the poll brings the stop",
        () =>
          Effect.gen(function*() {
            const name = fresh("notify")
            // Polling every 60 s with LISTEN (its first poll comes after 60 s: an end within 10 s can only come
            // from the notification), every 300 ms without it.
            const pollMillis = listen ? 60_000 : 300
            const [child] = yield* workers([{
              name,
              items: 100_000,
              concurrency: 2,
              latencyMillis: 20,
              pollMillis,
              listen
            }])
            yield* child!.send("GO")
            yield* Effect.sleep("500 millis")
            const sql = yield* SqlClient.SqlClient
            const here = yield* PgRunLimits.make({ concurrency: 1 }, { name, pollMillis: 60_000 }).pipe(
              Effect.provideService(SqlClient.SqlClient, sql)
            )
            const stop: Termination.Stop = {
              _tag: "FailFast",
              kind: "fail_fast",
              reason: "authentication failed on item 7",
              itemId: "item-7",
              category: "authentication"
            }
            expect(yield* here.stop(stop)).toEqual(stop)
            const exit = yield* child!.exited
            expect(exit.code, child!.stderr()).toBe(0)
            const summary = summaryOf(child!.stdout())
            expect(summary.termination).toEqual(stop)
            // It ended well before its first poll (with LISTEN), or within a few polls (without).
            expect(summary.endedAfterMillis).toBeLessThan(10_000)
            const rows = yield* sql<{ readonly stop_item_id: string }>`SELECT stop_item_id FROM rein_run_limits
              WHERE name = ${name}`
            expect(rows[0]!.stop_item_id).toBe("item-7")
          }),
        120_000
      )
    }
  })
})
