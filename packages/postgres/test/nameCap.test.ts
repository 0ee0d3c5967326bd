// The 512-byte cap on a shared name (internal/optionSchemas.ts): PgRunLimits' name and rateKey, and
// PgRateLimiterStore's keys. A longer one is refused as an invalid option (or a typed store error) naming the
// field and its size, never as the database being unavailable; one of exactly 512 bytes is taken.
import { RateLimiter } from "@effect/experimental"
import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Either } from "effect"
import { PgRateLimiterStore, PgRunLimits } from "../src/index.js"
import { available, fresh, PgLive } from "./pg.js"

// Letters no compression shortens (a seeded generator): the database's index rows hold ~2.7 KB.
let seed = 11
const noise = (length: number, prefix: string) =>
  prefix + Array.from({ length: length - prefix.length }, () => {
    seed = (seed * 1103515245 + 12345) % 2147483648
    return String.fromCharCode(97 + (seed % 26))
  }).join("")

describe.skipIf(!available)("the shared name's 512-byte cap", () => {
  layer(PgLive, { timeout: "120 seconds", excludeTestServices: true })((it) => {
    it.scoped("PgRunLimits: a name or rateKey over 512 bytes is InvalidOptions naming it; 512 bytes are taken", () =>
      Effect.gen(function*() {
        for (
          const [field, options] of [
            ["name", { name: noise(3000, fresh("n")) }],
            ["name", { name: noise(513, fresh("n")) }],
            // Two-byte letters: 257 of them are 514 bytes (a cap in characters would take them).
            ["name", { name: "é".repeat(257) }],
            ["rateKey", { name: fresh("r"), rateKey: noise(3000, fresh("k")) }]
          ] as const
        ) {
          const error = yield* Effect.flip(PgRunLimits.make({ concurrency: 1, maxTotalTokens: 10 }, options))
          expect(error.reason).toBe("InvalidOptions")
          expect(error.message).toContain(field)
          expect(error.message).toMatch(/Expected at most 512 bytes, actual (513|514|3000)/)
        }
        const limits = yield* PgRunLimits.make({ concurrency: 1, maxTotalTokens: 10 }, {
          name: noise(512, fresh("n")),
          rateKey: noise(512, fresh("k"))
        })
        expect(yield* limits.totals).toEqual({ tokens: 0, cost: 0 })
      }))

    it.scoped("PgRateLimiterStore: a key over 512 bytes is a store error (no statement) naming the key's size; 512 bytes are taken", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const store = yield* PgRateLimiterStore.make().pipe(Effect.provideService(SqlClient.SqlClient, sql))
        const limiter = yield* RateLimiter.make.pipe(Effect.provideService(RateLimiter.RateLimiterStore, store))
        for (const algorithm of ["token-bucket", "fixed-window"] as const) {
          const consume = (key: string) => limiter.consume({ key, limit: 10, window: "1 hour", algorithm })
          const error = yield* Effect.flip(consume(noise(3000, fresh(algorithm))))
          // Effect's RateLimiter carries the store's error as its reason.
          expect(error.reason).toBe("StoreError")
          expect(error.message).toMatch(/key: Expected at most 512 bytes, actual 3000/)
          expect(Either.isRight(yield* Effect.either(consume(noise(512, fresh(algorithm)))))).toBe(true)
        }
      }))
  })
})
