// PgRateLimiterStore under Effect's RateLimiter, in one process against a real PostgreSQL: two stores (two
// processes' worth of leases) on one key share it, for both algorithms; a key is one shape.
import { RateLimiter } from "@effect/experimental"
import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Duration, Effect, Either } from "effect"
import { PgRateLimiterStore } from "../src/index.js"
import { available, fresh, PgLive } from "./pg.js"

const limiterOn = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const store = yield* PgRateLimiterStore.make().pipe(Effect.provideService(SqlClient.SqlClient, sql))
  return yield* RateLimiter.make.pipe(Effect.provideService(RateLimiter.RateLimiterStore, store))
})

describe.skipIf(!available)("PgRateLimiterStore", () => {
  layer(PgLive, { timeout: "120 seconds", excludeTestServices: true })((it) => {
    it.scoped("token bucket: two stores on one key admit a full bucket between them, then refuse", () =>
      Effect.gen(function*() {
        const [a, b] = [yield* limiterOn, yield* limiterOn]
        const key = fresh("bucket")
        // 10 tokens, refilled one per hour: no refill during the test.
        const consume = (limiter: RateLimiter.RateLimiter) =>
          Effect.either(limiter.consume({ key, limit: 10, window: "10 hours", algorithm: "token-bucket" }))
        const answers = [] as Array<boolean>
        for (let i = 0; i < 8; i++) answers.push(Either.isRight(yield* consume(i % 2 === 0 ? a : b)))
        for (let i = 0; i < 4; i++) answers.push(Either.isRight(yield* consume(i % 2 === 0 ? b : a)))
        expect(answers.filter((x) => x)).toHaveLength(10)
        const refused = yield* Effect.flip(a.consume({ key, limit: 10, window: "10 hours", algorithm: "token-bucket" }))
        expect(refused.reason).toBe("Exceeded")
      }))

    it.scoped("token bucket with delay: the calls past a full bucket are told to wait their turn", () =>
      Effect.gen(function*() {
        const limiter = yield* limiterOn
        const key = fresh("delay")
        const delays = yield* Effect.forEach(
          [1, 2, 3, 4, 5],
          () => limiter.consume({ key, limit: 3, window: "3 seconds", algorithm: "token-bucket", onExceeded: "delay" })
        )
        // 3 at once, then one more a second (the refill) each, less the real time that passed between the calls.
        const millis = delays.map((d) => Duration.toMillis(d.delay))
        expect(millis.slice(0, 3)).toEqual([0, 0, 0])
        for (const [i, nominal] of [[3, 1000], [4, 2000]] as const) {
          expect(millis[i]).toBeLessThanOrEqual(nominal)
          expect(millis[i]).toBeGreaterThan(nominal - 500)
        }
      }))

    it.scoped("fixed window: two stores share one count, and refuse past the limit until the window ends", () =>
      Effect.gen(function*() {
        const [a, b] = [yield* limiterOn, yield* limiterOn]
        const key = fresh("window")
        const consume = (limiter: RateLimiter.RateLimiter) =>
          Effect.either(limiter.consume({ key, limit: 3, window: "10 hours" }))
        const answers = [
          yield* consume(a),
          yield* consume(b),
          yield* consume(a),
          yield* consume(b)
        ].map(Either.isRight)
        expect(answers).toEqual([true, true, true, false])
      }))

    it.scoped("a key created with one shape refuses a call with another", () =>
      Effect.gen(function*() {
        const limiter = yield* limiterOn
        const key = fresh("shape")
        yield* limiter.consume({ key, limit: 10, window: "1 minute", algorithm: "token-bucket" })
        const refused = yield* Effect.flip(
          limiter.consume({ key, limit: 20, window: "1 minute", algorithm: "token-bucket" })
        )
        expect(refused.reason).toBe("StoreError")
        expect(refused.message).toMatch(/on record/)
      }))
  })
})
