/**
 * Benchmark 11: endpoint health shared through PostgreSQL. A first attempt's acquire + complete (success) per
 * second on one healthy endpoint, in one process, the way the executor calls them (`unsafeAcquire` then
 * `unsafeComplete` when present, else the effects): core's in-memory `Health`, `PgHealth` on its fast path (the
 * breaker's mirror, no round trip while it is closed with a full window of successes), and `PgHealth` without it
 * (every acquire and complete asks the database), side by side, interleaved. The server is a throwaway PostgreSQL
 * on loopback (`@rein/postgres/testing/TestServer`, fsync off), so the round trip is the cheapest it can be.
 */
import { PgClient } from "@effect/sql-pg"
import { Health } from "@rein/core"
import { PgHealth } from "@rein/postgres"
import { TestServer } from "@rein/postgres/testing"
import { Clock, Effect, Either, Exit, Layer, Redacted, Scope } from "effect"
import type { Benchmark, Contender, RunOptions, Section } from "./harness.js"
import { fmtNs, fmtRatio, interleave, table } from "./harness.js"

const SUCCESS: Health.Result = { _tag: "success" }
const ENDPOINT = "bench/a"
const CANDIDATES = [ENDPOINT]

/** n first attempts, each acquired and completed as the executor does. */
const attempts = (health: Health.Service, n: number) =>
  Effect.gen(function*() {
    for (let i = 0; i < n; i++) {
      const now = yield* Clock.currentTimeNanos
      const fast = health.unsafeAcquire?.(now, ENDPOINT, "first", CANDIDATES)
      const acquired = fast ?? (yield* Effect.either(health.acquire(ENDPOINT, "first", { candidates: CANDIDATES })))
      if (Either.isLeft(acquired)) return yield* Effect.dieMessage(`refused: ${acquired.left}`)
      yield* health.unsafeComplete?.(now, acquired.right, SUCCESS) ?? health.complete(acquired.right, SUCCESS)
    }
  })

const run = async (options: RunOptions): Promise<Section> => {
  const scope = Effect.runSync(Scope.make())
  try {
    const server = await Effect.runPromise(Scope.extend(TestServer.start, scope))
    const layer = PgClient.layer({ url: Redacted.make(server.url), maxConnections: 4 })
    const context = await Effect.runPromise(Scope.extend(Layer.buildWithScope(layer, scope), scope))
    const provide = <A, E>(effect: Effect.Effect<A, E, PgClient.PgClient | Scope.Scope>) =>
      Effect.runPromise(Effect.provide(Scope.extend(effect, scope), context))
    const memory = Effect.runSync(Health.make())
    const fast = await provide(PgHealth.make({ name: "bench-fast" }))
    const slow = await provide(PgHealth.make({ name: "bench-slow", fastPath: false }))
    const contender = (name: string, health: Health.Service): Contender => ({
      name,
      run: (n) => Effect.runPromise(attempts(health, n))
    })
    const contenders: ReadonlyArray<Contender> = [
      contender("in-memory Health (core)", memory),
      contender("PgHealth, fast path (mirror; deposits added at the heartbeat)", fast),
      contender("PgHealth without fast path (the database on every acquire and complete)", slow)
    ]
    const timings = await interleave(contenders, {
      rounds: options.quick ? 2 : 7,
      sampleMillis: options.quick ? 100 : 400,
      log: options.log
    })
    const [inMemory, fastPath, trips] = timings
    const perSecond = (ns: number) => Math.round(1e9 / ns).toLocaleString("en-US")
    const rows = timings.map((t) => [
      t.name,
      fmtNs(t.median),
      `${fmtNs(t.min)}–${fmtNs(t.max)}`,
      perSecond(t.median),
      fmtRatio(t.median / inMemory!.median)
    ])
    const notes = [
      "One process, one healthy endpoint, a first attempt's acquire then complete (success) in a loop; median of",
      "interleaved rounds (wall ns per acquire + complete), min–max beside it; the machine's load is in the table",
      "at the top. PostgreSQL on loopback with fsync off: a real network round trip costs more."
    ].join("\n")
    return {
      markdown: `${notes}\n\n${
        table(["contender", "ns / acquire+complete", "min–max", "per second", "vs in-memory"], rows)
      }`,
      goals: [{
        benchmark: "11. shared health on PostgreSQL",
        goal: "a first attempt on a healthy endpoint costs no round trip on the fast path",
        measured: `${fmtNs(fastPath!.median)} ns on the fast path, ${fmtNs(trips!.median)} ns through the database`,
        status: fastPath!.median < trips!.median / 2 ? "PASS" : "FAIL"
      }]
    }
  } finally {
    await Effect.runPromise(Scope.close(scope, Exit.void))
  }
}

export const sharedHealth: Benchmark = {
  id: 11,
  title: "Shared health on PostgreSQL",
  requires: { module: "@rein/postgres", skipped: "skipped: @rein/postgres is not built" },
  run
}
