/**
 * The child process of benchmark 9: one of 1, 2 or 4 processes reserving from one hot budget. It opens its
 * `PgBudget` lease on the fleet's budget once, then answers commands from stdin, one JSON line each:
 *
 *   {"mode": "slices" | "round-trip" | "memory", "millis": 400, "latencyMillis": 0 | 5, "concurrency": 1 | 32}
 *
 * by running reserve (+ a modelled call of `latencyMillis`) + settle in `concurrency` loops for `millis` of
 * wall time and printing `{"count", "millis", "cpuMicros"}`. Modes: `slices` through `PgBudget` (the fleet's
 * budget), `round-trip` one conditional `UPDATE … RETURNING` to reserve and one `UPDATE` to settle on the
 * fleet's round-trip row, `memory` the in-memory `Budget.make` of this process (no sharing: the floor).
 *
 *   node bench/dist/sharedBudget-worker.js '{"url": "postgres://…", "slices": "…", "roundTrip": "…"}'
 */
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Budget } from "@rein/core"
import { PgBudget } from "@rein/postgres"
import { Effect, Redacted } from "effect"
import { createInterface } from "node:readline"

interface Input {
  readonly url: string
  /** The fleet's shared budget (PgBudget). */
  readonly slices: string
  /** The fleet's round-trip row (a `rein_budgets` row updated directly). */
  readonly roundTrip: string
  readonly cap: number
  readonly slice: number
}

interface Command {
  readonly mode: "slices" | "round-trip" | "memory"
  readonly millis: number
  readonly latencyMillis: number
  readonly concurrency: number
}

const WORST = 0.001 // dollars per reservation
const ACTUAL = 0.0004

const input = JSON.parse(process.argv[2]!) as Input
const nanos = (dollars: number) => Math.round(dollars * 1e9)

const main = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const shared = yield* PgBudget.make({ name: input.slices, cost: input.cap, slice: input.slice })
  const local = yield* Budget.make({ cost: 1e9 })
  const viaBudget = (budget: Budget.Service) =>
    Effect.flatMap(
      budget.reserve({ cost: WORST, tokens: null }),
      (hold) => budget.settle(hold, { cost: ACTUAL, tokens: 0 })
    )
  const roundTrip = (latency: Effect.Effect<void>) =>
    Effect.gen(function*() {
      const rows = yield* sql`UPDATE rein_budgets SET cost_spent = cost_spent + ${nanos(WORST)}
        WHERE name = ${input.roundTrip} AND cost_cap - cost_spent - cost_leased >= ${nanos(WORST)} RETURNING name`
      if (rows.length !== 1) return yield* Effect.dieMessage("round-trip budget refused")
      yield* latency
      yield* sql`UPDATE rein_budgets SET cost_spent = cost_spent - ${nanos(WORST)} + ${nanos(ACTUAL)}
        WHERE name = ${input.roundTrip}`
    }).pipe(Effect.orDie)
  const once = (c: Command): Effect.Effect<void> => {
    const latency = c.latencyMillis > 0 ? Effect.sleep(c.latencyMillis) : Effect.void
    if (c.mode === "round-trip") return roundTrip(latency)
    const budget = c.mode === "slices" ? shared : local
    return Effect.flatMap(
      budget.reserve({ cost: WORST, tokens: null }),
      (hold) => Effect.zipRight(latency, budget.settle(hold, { cost: ACTUAL, tokens: 0 }))
    ).pipe(
      Effect.orDieWith((s) => new Error(`refused: ${JSON.stringify(s)}`))
    )
  }
  // Warm the JIT on every path before the first command.
  for (let i = 0; i < 2000; i++) {
    yield* viaBudget(shared).pipe(Effect.orDie)
    yield* viaBudget(local).pipe(Effect.orDie)
  }
  yield* roundTrip(Effect.void)
  const run = (c: Command) =>
    Effect.gen(function*() {
      const t0 = performance.now()
      const cpu0 = process.cpuUsage()
      let count = 0
      const loop = Effect.gen(function*() {
        while (performance.now() - t0 < c.millis) {
          yield* once(c)
          count++
        }
      })
      yield* Effect.all(Array.from({ length: c.concurrency }, () => loop), { concurrency: "unbounded", discard: true })
      const cpu = process.cpuUsage(cpu0)
      return { count, millis: performance.now() - t0, cpuMicros: cpu.user + cpu.system }
    })
  process.stdout.write("READY\n")
  const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]()
  for (;;) {
    const line = yield* Effect.promise(() => lines.next())
    if (line.done === true || line.value.trim() === "STOP") return
    const result = yield* run(JSON.parse(line.value) as Command)
    process.stdout.write(`${JSON.stringify(result)}\n`)
  }
}).pipe(
  Effect.scoped,
  Effect.provide(PgClient.layer({ url: Redacted.make(input.url), maxConnections: 4 }))
)

Effect.runPromise(main).then(
  () => process.exit(0),
  (e) => {
    process.stderr.write(`${String(e)}\n`)
    process.exit(1)
  }
)
