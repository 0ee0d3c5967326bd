// A rate under one per minute (`--rpm 0.5`, `tokensPerMinute: 0.5`): the shared bucket still admits one attempt
// at once and the next after 1/rate minutes, as the in-memory limiter does; a bucket whose capacity is under
// the one unit an attempt takes would admit nothing, ever, and every item would wait out its deadline.
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { PgRunLimits } from "../src/index.js"
import { available, fresh, PgLive } from "./pg.js"

describe.skipIf(!available)("PgRunLimits under one per minute", () => {
  layer(PgLive, { timeout: "60 seconds", excludeTestServices: true })((it) => {
    it.scoped("requestsPerMinute 0.5 and tokensPerMinute 0.5 admit the first attempt, then make the next wait", () =>
      Effect.gen(function*() {
        const requests = yield* PgRunLimits.make({ concurrency: 2, requestsPerMinute: 0.5 }, { name: fresh("under1") })
        const first = yield* requests.admit("e", 10)
        expect(first._tag).toBe("Hold")
        const second = yield* requests.admit("e", 10)
        expect(second._tag).toBe("Wait")
        // The wait is what refills one request at 0.5 a minute: at most two minutes, never "forever".
        expect(second._tag === "Wait" && second.millis).toBeLessThanOrEqual(120_000)
        const tokens = yield* PgRunLimits.make({ concurrency: 2, tokensPerMinute: 0.5 }, { name: fresh("under1") })
        expect((yield* tokens.admit("e", 10))._tag).toBe("Hold")
      }))
  })
})
