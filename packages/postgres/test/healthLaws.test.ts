// Core's health laws — the same property suites the in-memory Health passes — run unchanged against PgHealth on a
// real PostgreSQL, with its fast path and without it (every acquisition and completion through the database).
// Each case gets a health of its own name. The laws move time with the TestClock; here the database's clock is
// that TestClock too: every statement's `now` is the virtual time (the only thing substituted), so a cooldown of
// 5 000 ms is judged by the database at exactly 5 000 virtual ms.
import { SqlClient } from "@effect/sql"
import { describe, layer } from "@effect/vitest"
import type { Health } from "@rein/core"
import { HealthLaws } from "@rein/core/testing"
import { Duration, Effect, Exit, FastCheck, Scope, TestContext } from "effect"
import type { PgHealth } from "../src/index.js"
import { makeWith } from "../src/internal/healthMake.js"
import { available, fresh, PgLive } from "./pg.js"

// Each case migrates, creates a health and reads it (a few round trips): fewer runs than in memory, the same laws.
const RUNS = 15

const millis = (d: Duration.DurationInput | undefined) => d === undefined ? undefined : Duration.toMillis(d)

/** Core's settings as PgHealth's options (durations in milliseconds). */
export const optionsOf = (config: Partial<Health.Config>, extra: Partial<PgHealth.Options>): PgHealth.Options => {
  const entries = Object.entries({
    consecutiveFailures: config.consecutiveFailures,
    windowSize: config.windowSize,
    minimumVolume: config.minimumVolume,
    failureRatio: config.failureRatio,
    cooldownMillis: millis(config.cooldown),
    cooldownGrowth: config.cooldownGrowth,
    maxCooldownMillis: millis(config.maxCooldown),
    probes: config.probes,
    capacity: config.capacity,
    depositRatio: config.depositRatio
  }).filter(([, v]) => v !== undefined)
  return { ...Object.fromEntries(entries), ...extra }
}

const suite = (fastPath: boolean) =>
  layer(PgLive, { timeout: "300 seconds", excludeTestServices: true })((it) => {
    for (const [index, law] of HealthLaws.laws(() => Effect.die("replaced per test")).entries()) {
      it.effect(law.name, () =>
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          const clock = yield* Effect.clock
          let scope: Scope.CloseableScope | undefined
          const make: HealthLaws.Make = (config) =>
            makeWith(
              optionsOf(config, { name: fresh("law"), fastPath, queryTimeoutMillis: 600_000 }),
              { sql, listen: undefined },
              (sql) => sql`${clock.unsafeCurrentTimeMillis()}::float8`
            ).pipe(Scope.extend(scope!), Effect.orDie)
          const cases = HealthLaws.laws(make)[index]!.cases
          // Seeded: a failure names the case and reproduces.
          for (const check of FastCheck.sample(cases, { numRuns: RUNS, seed: 20261202 })) {
            scope = yield* Scope.make()
            const exit = yield* Effect.exit(check)
            yield* Scope.close(scope, Exit.void)
            yield* exit
          }
        }).pipe(Effect.provide(TestContext.TestContext)))
    }
  })

describe.skipIf(!available)("the health laws, against PgHealth on a real PostgreSQL (fast path)", () => suite(true))
describe.skipIf(!available)(
  "the health laws, against PgHealth through the database only (no fast path)",
  () => suite(false)
)
