// The shared services' background fibers against a real PostgreSQL, in one process: a subscription that fails is
// made again (PgRunLimits), a defect in a heartbeat does not end it (PgHealth), and invalid options are reported
// with core's formatter (each line names its field first), the same in every service.
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { describe, expect, layer } from "@effect/vitest"
import type { Termination } from "@rein/batch"
import {
  Context,
  Effect,
  Fiber,
  FiberRef,
  FiberRefs,
  HashMap,
  Layer,
  List,
  Logger,
  Redacted,
  TestClock,
  TestContext,
  TestServices,
  Tracer
} from "effect"
import { PgBudget, PgHealth, PgRateLimiterStore, PgRunLimits } from "../src/index.js"
import { makeWith } from "../src/internal/healthMake.js"
import { available, fresh, PgLive } from "./pg.js"

/** A configuration whose connections are refused (nothing listens on port 1 of loopback). */
const refused = (config: PgClient.PgClientConfig): PgClient.PgClientConfig => ({
  ...config,
  url: Redacted.make("postgres://rein@127.0.0.1:1/postgres"),
  host: "127.0.0.1",
  port: 1
})

/** PgRunLimits on the effect clock, polling every `pollMillis`, with no heartbeat or lease ending in a test. */
const limitsOptions = (name: string, pollMillis: number) => ({
  name,
  clock: "effect" as const,
  pollMillis,
  heartbeatMillis: 60_000,
  ttlMillis: 180_000
})

const FAILURE = { _tag: "failure", kind: "server_error", retryAfterMillis: null } as const

/** Waits in real time (bounded) until `p` holds; the database answers in real time. */
const eventually = (p: () => boolean) =>
  TestServices.provideLive(Effect.gen(function*() {
    for (let i = 0; i < 500 && !p(); i++) yield* Effect.sleep("10 millis")
    return p()
  }))

describe.skipIf(!available)("the shared services' background fibers", () => {
  layer(PgLive, { timeout: "120 seconds", excludeTestServices: true })((it) => {
    it.scoped("PgRunLimits subscribes again a poll after its subscription fails; a stop then arrives by NOTIFY", () =>
      Effect.gen(function*() {
        const pg = yield* PgClient.PgClient
        let subscriptions = 0
        // The real client, whose first listening connection fails (as a lost one does): each subscription made on
        // a new listening connection reads the client's configuration once.
        const flaky = new Proxy(pg, {
          get: (target, key) =>
            key === "config"
              ? ++subscriptions === 1 ? refused(target.config) : target.config
              : Reflect.get(target, key)
        })
        const name = fresh("relisten")
        const options = limitsOptions(name, 10_000)
        const limits = yield* PgRunLimits.make({ concurrency: 1 }, options).pipe(
          Effect.provide(Layer.merge(Layer.succeed(PgClient.PgClient, flaky), Layer.succeed(SqlClient.SqlClient, pg)))
        )
        expect(yield* eventually(() => subscriptions === 1)).toBe(true)
        // A poll later: the poll reads, and the subscription is made again.
        yield* TestClock.adjust(10_000)
        expect(yield* eventually(() => subscriptions === 2)).toBe(true)
        yield* TestServices.provideLive(Effect.sleep("300 millis"))
        const stopped = yield* Effect.fork(limits.whenStopped)
        // Another instance (no PgClient: it only writes) records a stop; the clock stays put, so no poll runs.
        const other = yield* PgRunLimits.make({ concurrency: 1 }, options).pipe(
          Effect.provideService(SqlClient.SqlClient, pg)
        )
        const stop: Termination.Stop = {
          _tag: "FailFast",
          kind: "fail_fast",
          reason: "authentication failed on item 7",
          itemId: "item-7",
          category: "authentication"
        }
        yield* other.stop(stop)
        expect(yield* eventually(() => stopped.unsafePoll() !== null)).toBe(true)
        yield* Fiber.interrupt(stopped)
      }).pipe(Effect.provide(TestContext.TestContext)))

    it.scoped("a subscription that keeps failing is logged once, not at every retry", () =>
      Effect.gen(function*() {
        const pg = yield* PgClient.PgClient
        let subscriptions = 0
        // The real client, whose every listening connection fails.
        const deaf = new Proxy(pg, {
          get: (target, key) => {
            if (key !== "config") return Reflect.get(target, key)
            subscriptions++
            return refused(target.config)
          }
        })
        const warnings: Array<string> = []
        const logger = Logger.make(({ logLevel, message }) => {
          if (logLevel._tag === "Warning") warnings.push(String(message))
        })
        const options = limitsOptions(fresh("deaf"), 1_000)
        yield* PgRunLimits.make({ concurrency: 1 }, options).pipe(
          Effect.provide(Layer.merge(Layer.succeed(PgClient.PgClient, deaf), Layer.succeed(SqlClient.SqlClient, pg))),
          Effect.provide(Logger.replace(Logger.defaultLogger, logger))
        )
        for (let i = 0; i < 5; i++) {
          yield* TestClock.adjust(1_000)
          yield* TestServices.provideLive(Effect.sleep("50 millis"))
        }
        expect(yield* eventually(() => subscriptions >= 5)).toBe(true)
        expect(warnings.filter((w) => w.includes("notifications on")).length).toBe(1)
      }).pipe(Effect.provide(TestContext.TestContext)))

    it.scoped("the shared subscription reports in a neutral context, not in its first user's", () =>
      Effect.gen(function*() {
        const pg = yield* PgClient.PgClient
        // The real client, whose every listening connection fails: the subscription logs that it is lost.
        const deaf = new Proxy(pg, {
          get: (target, key) => key === "config" ? refused(target.config) : Reflect.get(target, key)
        })
        const seen: Array<{ annotations: Array<string>; spans: number; parent: boolean }> = []
        const logger = Logger.make(({ annotations, context, message, spans }) => {
          if (!String(message).includes("notifications on")) return
          seen.push({
            annotations: [...HashMap.keys(annotations)],
            spans: List.size(spans),
            parent: Context.getOption(FiberRefs.getOrDefault(context, FiberRef.currentContext), Tracer.ParentSpan)
              ._tag === "Some"
          })
        })
        const options = limitsOptions(fresh("neutral"), 1_000)
        // The first user runs with annotations, a log span and a span of its own.
        yield* PgRunLimits.make({ concurrency: 1 }, options).pipe(
          Effect.provide(Layer.merge(Layer.succeed(PgClient.PgClient, deaf), Layer.succeed(SqlClient.SqlClient, pg))),
          Effect.annotateLogs("caller", "first"),
          Effect.withLogSpan("first-caller"),
          Effect.withSpan("first caller"),
          Effect.provide(Logger.replace(Logger.defaultLogger, logger))
        )
        expect(yield* eventually(() => seen.length > 0)).toBe(true)
        expect(seen[0]).toEqual({ annotations: [], spans: 0, parent: false })
      }).pipe(Effect.provide(TestContext.TestContext)))

    it.scoped("a defect in PgHealth's heartbeat is logged and the next heartbeat still polls", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const clock = yield* Effect.clock
        let broken = false
        let thrown = 0
        const now = (s: SqlClient.SqlClient) => {
          if (broken) {
            thrown++
            throw new Error("a bug")
          }
          return s`${clock.unsafeCurrentTimeMillis()}::float8`
        }
        const options = { name: fresh("defect"), consecutiveFailures: 1, cooldownMillis: 600_000 }
        const watcher = yield* makeWith(options, { sql, listen: undefined }, now)
        broken = true
        yield* TestClock.adjust(1_000)
        expect(yield* eventually(() => thrown > 0)).toBe(true)
        broken = false
        const opener = yield* makeWith(options, { sql, listen: undefined }, now)
        const permit = yield* Effect.orDie(opener.acquire("z", "first"))
        yield* opener.complete(permit, FAILURE)
        yield* TestClock.adjust(1_000)
        const seen = () => watcher.unsafeView!(clock.unsafeCurrentTimeNanos(), ["z"]).health["z"]?.state === "open"
        expect(yield* eventually(seen)).toBe(true)
      }).pipe(Effect.provide(TestContext.TestContext)))

    it.scoped("invalid options name their field first, in core's words, in every service", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const withSql = Effect.provideService(SqlClient.SqlClient, sql)
        const limits = yield* Effect.flip(withSql(PgRunLimits.make({ concurrency: 1 }, { name: "x", slice: 2 })))
        expect(limits.message).toMatch(/^slice: /)
        const budget = yield* Effect.flip(withSql(PgBudget.make({ name: fresh("x"), heartbeatMillis: -1 })))
        expect(budget.message).toMatch(/^heartbeatMillis: /)
        const health = yield* Effect.flip(PgHealth.make({ name: "x", probes: 0 }))
        expect(health.message).toMatch(/^probes: /)
        const store = yield* Effect.flip(withSql(PgRateLimiterStore.make({ heartbeatMillis: -1 })))
        expect(store.message).toMatch(/^invalid options: heartbeatMillis: /)
      }))
  })
})
