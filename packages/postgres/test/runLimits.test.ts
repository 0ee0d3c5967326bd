// PgRunLimits when the run's row is gone (deleted while its processes run, or never created): a charge, the
// totals and a stop answer as `RunLimits.Service` allows — the charge stops the run (fail closed) with a reason
// that names the run, the totals are the last ones read, the stop stops this process — and never die.
import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import type { Termination } from "@rein/batch"
import { Effect, Exit, Option } from "effect"
import { PgRunLimits } from "../src/index.js"
import { available, fresh, PgLive } from "./pg.js"

describe.skipIf(!available)("PgRunLimits without its run's row", () => {
  layer(PgLive, { timeout: "60 seconds", excludeTestServices: true })((it) => {
    it.scoped("charge fails closed naming the run, totals and stop answer; nothing dies", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const name = fresh("gone")
        const limits = yield* PgRunLimits.make({ concurrency: 2, maxTotalTokens: 1_000 }, {
          name,
          pollMillis: 60_000,
          heartbeatMillis: 20_000,
          ttlMillis: 60_000
        })
        expect(yield* limits.charge({ tokens: 10, cost: 0 })).toEqual(Option.none())
        expect(yield* limits.totals).toEqual({ tokens: 10, cost: 0 })
        yield* sql`DELETE FROM rein_run_limits WHERE name = ${name}`

        const charged = yield* Effect.exit(limits.charge({ tokens: 10, cost: 0 }))
        expect(Exit.isSuccess(charged), String(charged)).toBe(true)
        const trip = Exit.isSuccess(charged) ? charged.value : Option.none()
        expect(Option.isSome(trip)).toBe(true)
        if (Option.isNone(trip)) return
        expect(trip.value.kind).toBe("budget_exceeded")
        expect(trip.value.reason).toBe(
          `the shared totals of run ${JSON.stringify(name)} could not be recorded (run ${
            JSON.stringify(name)
          } has no row in rein_run_limits (deleted, or never created)): stopped, failing closed`
        )

        const totals = yield* Effect.exit(limits.totals)
        expect(totals).toEqual(Exit.succeed({ tokens: 10, cost: 0 }))

        const stop: Termination.Stop = { _tag: "BatchTimeout", kind: "batch_timeout", reason: "deadline" }
        expect(yield* Effect.exit(limits.stop(stop))).toEqual(Exit.succeed(stop))
        expect(yield* limits.stopped).toEqual(Option.some(stop))
      }))
  })
})
