// A database lost while a request needs it: the request ends by its deadline with a typed outcome that says
// the budget's store was unavailable, never hangs, never admits beyond the slice it already holds.
import { PgClient } from "@effect/sql-pg"
import { describe, expect, it } from "@effect/vitest"
import { Catalog, Contract, Fake, Rein } from "@rein/core"
import { Clock, Effect, Exit, Fiber, Layer, Redacted, Scope, TestClock, TestContext } from "effect"
import { PgBudget } from "../src/index.js"
import { TestServer } from "../src/testing.js"
import { available, fresh } from "./pg.js"
import * as Proxy from "./proxy.js"

// $1 per 100,000 tokens in and out: a request of 100 + 100 tokens reserves $0.002, one of 100 + 30,000 $0.301,
// three times what a process leasing 5% of the pool at a time can hold (two grants at most: a prefetch and a top-up).
const catalog = Catalog.make({
  endpoints: [{
    id: "a",
    provider: "fake",
    model: "model-a",
    capabilities: {
      contextWindow: 100_000,
      maxOutputTokens: 50_000,
      tools: true,
      structuredOutput: true,
      streaming: true
    },
    prices: { inputTokens: 1e-5, outputTokens: 1e-5, request: 0 }
  }]
})
const small = { prompt: "hi", inputTokens: 100, maxOutputTokens: 100 }
const large = { prompt: "hi", inputTokens: 100, maxOutputTokens: 30_000 }
const contract = (deadline: string) => Contract.make({ deadline, candidates: ["a"], allowSimulated: true })

const reinWith = (fake: Fake.Fake) => Rein.layer({ catalog, providers: { fake: fake.provider } })

/** A client of `url` built in the current scope. */
const clientOf = (url: string) => Layer.build(PgClient.layer({ url: Redacted.make(url), maxConnections: 4 }))

describe.skipIf(!available)("a database lost mid-request", () => {
  it.live(
    "a stopped server: a reservation beyond the slice ends at once as BudgetExhausted marked unavailable",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const serverScope = yield* Scope.make()
        const server = yield* Scope.extend(TestServer.start, serverScope)
        const context = yield* clientOf(server.url)
        // Slices of 5% of what is free: about $0.05, enough for the small request, not for the large one.
        const budget = yield* PgBudget.make({ name: fresh("stopped"), cost: 1, slice: 0.05 }).pipe(
          Effect.provide(context)
        )
        const fake = Fake.make({ a: [Fake.succeed({ usage: { inputTokens: 100, outputTokens: 100 } })] })
        const run = <A, E>(effect: Effect.Effect<A, E, Rein.Rein>) =>
          effect.pipe(Effect.provide(reinWith(fake)), Effect.provideService(PgBudget.SharedBudget, budget))
        yield* run(Rein.execute(small, contract("10 seconds")))

        yield* Scope.close(serverScope, Exit.void)
        const started = yield* Clock.currentTimeMillis
        const exit = yield* Effect.exit(run(Rein.execute(large, contract("10 seconds"))))
        const took = (yield* Clock.currentTimeMillis) - started

        expect(Exit.isFailure(exit), String(exit)).toBe(true)
        const error = Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error : undefined
        expect(error?._tag, String(exit)).toBe("BudgetExhausted")
        expect(error?._tag === "BudgetExhausted" && error.unavailable).toBe(true)
        expect(error?._tag === "BudgetExhausted" && error.resource).toBe("cost")
        // Refused by the store's own bound (queryTimeoutMillis, 2 s by default) at the latest, long before the deadline.
        expect(took).toBeLessThan(5000)
        expect((yield* fake.calls).length).toBe(1)
        // What the slice already covers is still admitted without the database.
        const fast = budget.unsafeReserve!({ cost: 0.002, tokens: null })
        expect(fast !== undefined && fast._tag === "Right").toBe(true)
      })),
    30_000
  )

  it.live(
    "a database that stops answering: the request ends at its deadline as DeadlineExceeded (admission), not later",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const server = yield* TestServer.start
        const proxy = yield* Proxy.start(server.port)
        const context = yield* clientOf(`postgres://rein@127.0.0.1:${proxy.port}/postgres`)
        // From here, time is virtual: the deadline and the budget's own query bound fire only when the test says.
        yield* Effect.gen(function*() {
          const budget = yield* PgBudget.make({
            name: fresh("frozen"),
            cost: 1,
            slice: 0.05,
            queryTimeoutMillis: 60_000,
            heartbeatMillis: 10_000,
            ttlMillis: 30_000
          }).pipe(Effect.provide(context))
          const fake = Fake.make({ a: [Fake.succeed({ usage: { inputTokens: 100, outputTokens: 100 } })] })
          const run = <A, E>(effect: Effect.Effect<A, E, Rein.Rein>) =>
            effect.pipe(Effect.provide(reinWith(fake)), Effect.provideService(PgBudget.SharedBudget, budget))
          // Frozen until the end of the test, whatever happens (the budget gives its lease back on the way out).
          yield* Effect.acquireRelease(proxy.freeze, () => proxy.thaw)
          const fiber = yield* Effect.fork(Effect.exit(run(Rein.execute(large, contract("5 seconds")))))
          // The large request needs a top-up: its query is in flight (held by the frozen proxy) when 5 virtual
          // seconds pass.
          yield* proxy.held
          yield* TestClock.adjust("5 seconds")
          const exit = yield* Fiber.join(fiber).pipe(
            Effect.timeoutFail({
              duration: "10 seconds",
              onTimeout: () => new Error("the request did not end at its deadline")
            }),
            Effect.withClock(Clock.make())
          )
          expect(Exit.isFailure(exit), String(exit)).toBe(true)
          const error = Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error : undefined
          expect(error?._tag, String(exit)).toBe("DeadlineExceeded")
          expect(error?._tag === "DeadlineExceeded" && error.phase).toBe("admission")
          expect(error?._tag === "DeadlineExceeded" && error.reason).toContain("reserving the budget")
          expect((yield* fake.calls).length).toBe(0)
        }).pipe(Effect.provide(TestContext.TestContext), Effect.scoped)
      })),
    60_000
  )
})
