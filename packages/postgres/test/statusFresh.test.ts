// `rein status` (PgBatchRun.status) on a database no run was started on: no Rein tables yet.
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Logger, LogLevel } from "effect"
import { Migrations, PgBatchRun } from "../src/index.js"
import { available, PgLive } from "./pg.js"

describe.skipIf(!available)("the status of a run on a fresh database", () => {
  layer(PgLive, { timeout: "60 seconds", excludeTestServices: true })((it) => {
    it.effect("is NotFound, with no warning, before and after the tables exist (was Unavailable: relation does not exist)", () =>
      Effect.gen(function*() {
        const warnings: Array<unknown> = []
        const logged = Logger.replace(
          Logger.defaultLogger,
          Logger.make(({ message }) => {
            warnings.push(message)
          })
        )
        const before = yield* Effect.flip(PgBatchRun.status("nope")).pipe(
          Effect.provide(logged),
          Logger.withMinimumLogLevel(LogLevel.Warning)
        )
        expect(before).toMatchObject({ reason: "NotFound", message: "no run \"nope\"" })
        expect(warnings).toEqual([])
        yield* Migrations.run
        const after = yield* Effect.flip(PgBatchRun.status("nope"))
        expect(after).toMatchObject({ reason: "NotFound", message: "no run \"nope\"" })
      }))
  })
})
