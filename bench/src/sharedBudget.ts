/**
 * Benchmark 9: a hard budget shared through PostgreSQL. One throwaway PostgreSQL on loopback for the run
 * (`@rein/postgres/testing/TestServer`, fsync off, so a round trip is the cheapest it can be).
 *
 * Part 1, in this process, interleaved: reserve + settle through `PgBudget` (slices leased from the
 * database, reservations served in memory), through the in-memory `Budget.make` (the peer: per-request
 * overhead is the difference), through a round trip per reservation (one conditional `UPDATE … RETURNING`
 * to reserve, one `UPDATE` to settle: the naive shared budget), and one bare round trip (`SELECT 1`).
 *
 * Part 2, the fleet: 4 worker processes (`sharedBudget-worker.js`) on one hot budget. Each round runs every
 * configuration once, in a rotated order: 1, 2 and 4 processes × slices / round trip / in-memory (each
 * process its own `Budget.make`, nothing shared: the CPU floor of this machine) × two models of the call:
 * none (a tight loop, CPU-bound) and a fixed 5 ms `Effect.sleep` per call with 8 calls in flight per
 * process (what a budget guards: calls that wait on a provider). Reservations per second summed over the
 * processes, medians of the rounds with min–max, the machine's load beside them.
 */
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Budget } from "@rein/core"
import { PgBudget } from "@rein/postgres"
import { TestServer } from "@rein/postgres/testing"
import { Effect, Exit, Layer, Redacted, Scope } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import * as os from "node:os"
import { dirname, join } from "node:path"
import { createInterface, type Interface } from "node:readline"
import { fileURLToPath } from "node:url"
import type { Benchmark, Contender, Goal, RunOptions, Section } from "./harness.js"
import { fmtNs, fmtRatio, interleave, median, table } from "./harness.js"

const here = dirname(fileURLToPath(import.meta.url))

const WORST = 0.001 // dollars per reservation
const ACTUAL = 0.0004
const FLEET_CAP = 1e6 // dollars: slices of 1e-4 of the free pool (~$100, 100k reservations) are topped up often
const FLEET_SLICE = 1e-4

type Provide = <A, E>(effect: Effect.Effect<A, E, SqlClient.SqlClient | Scope.Scope>) => Promise<A>

/** Part 1: per-request cost in this process, PgBudget against its in-memory peer and a round trip. */
const inProcess = async (provide: Provide, options: RunOptions) => {
  const budget = await provide(PgBudget.make({ name: "bench-slices", cost: 1e6 }))
  const memory = await provide(Budget.make({ cost: 1e9 }))
  const sql = await provide(SqlClient.SqlClient)
  await provide(PgBudget.make({ name: "bench-round-trip", cost: 1e6 }))
  const nanos = (dollars: number) => Math.round(dollars * 1e9)
  const through = (b: Budget.Service) => (n: number) =>
    Effect.runPromise(Effect.gen(function*() {
      for (let i = 0; i < n; i++) {
        const hold = yield* b.reserve({ cost: WORST, tokens: null })
        yield* b.settle(hold, { cost: ACTUAL, tokens: 0 })
      }
    }))
  const roundTrip = (n: number) =>
    Effect.runPromise(Effect.gen(function*() {
      for (let i = 0; i < n; i++) {
        const rows = yield* sql`UPDATE rein_budgets SET cost_spent = cost_spent + ${nanos(WORST)}
          WHERE name = 'bench-round-trip' AND cost_cap - cost_spent - cost_leased >= ${nanos(WORST)} RETURNING name`
        if (rows.length !== 1) return yield* Effect.dieMessage("round-trip budget refused")
        yield* sql`UPDATE rein_budgets SET cost_spent = cost_spent - ${nanos(WORST)} + ${nanos(ACTUAL)}
          WHERE name = 'bench-round-trip'`
      }
    }))
  const select = (n: number) =>
    Effect.runPromise(Effect.gen(function*() {
      for (let i = 0; i < n; i++) yield* sql`SELECT 1`
    }))
  const contenders: ReadonlyArray<Contender> = [
    { name: "PgBudget: slices, reservations in memory", run: through(budget) },
    { name: "in-memory Budget.make (peer)", run: through(memory) },
    { name: "a round trip per reservation (UPDATE to reserve, UPDATE to settle)", run: roundTrip },
    { name: "one database round trip (SELECT 1)", run: select }
  ]
  const loads: Array<number> = []
  const timings = await interleave(contenders, {
    rounds: options.quick ? 3 : 15,
    sampleMillis: options.quick ? 100 : 300,
    log: (line) => {
      loads.push(os.loadavg()[0]!)
      options.log(line)
    }
  })
  return { timings, loads }
}

interface Sample {
  readonly count: number
  readonly millis: number
  readonly cpuMicros: number
}

interface Worker {
  readonly child: ChildProcess
  readonly lines: Interface
  readonly next: () => Promise<string>
}

const startWorker = (input: unknown): Promise<Worker> => {
  const child = spawn(process.execPath, [join(here, "sharedBudget-worker.js"), JSON.stringify(input)], {
    stdio: ["pipe", "pipe", "inherit"]
  })
  const lines = createInterface({ input: child.stdout! })
  const queue: Array<string> = []
  const waiting: Array<(line: string) => void> = []
  let failed: Error | undefined
  const rejects: Array<(e: Error) => void> = []
  lines.on("line", (line) => {
    // Effect's logger writes to stdout too (a heartbeat that failed on a loaded machine): not the protocol.
    if (line !== "READY" && !line.startsWith("{")) return void process.stderr.write(`    bench worker: ${line}\n`)
    const w = waiting.shift()
    rejects.shift()
    if (w === undefined) queue.push(line)
    else w(line)
  })
  child.on("exit", (code) => {
    failed = new Error(`bench worker exited with ${code}`)
    for (const r of rejects.splice(0)) r(failed)
  })
  const next = () =>
    new Promise<string>((resolve, reject) => {
      const line = queue.shift()
      if (line !== undefined) return resolve(line)
      if (failed !== undefined) return reject(failed)
      waiting.push(resolve)
      rejects.push(reject)
    })
  return next().then((line) => {
    if (line !== "READY") throw new Error(`bench worker: ${line}`)
    return { child, lines, next }
  })
}

interface Config {
  readonly mode: "slices" | "round-trip" | "memory"
  readonly processes: 1 | 2 | 4
  readonly latencyMillis: number
  readonly concurrency: number
}

const label = (c: Pick<Config, "mode" | "latencyMillis" | "concurrency">) =>
  `${
    c.mode === "slices"
      ? "PgBudget slices"
      : c.mode === "round-trip"
      ? "a round trip per reservation"
      : "in-memory Budget.make, one per process (floor)"
  }, ${c.latencyMillis === 0 ? "tight loop" : `${c.latencyMillis} ms call, ${c.concurrency} in flight per process`}`

const key = (c: Config) => `${label(c)}|${c.processes}`

/** One sample: the first `processes` workers run the configuration at once; reservations per second, summed. */
const sampleFleet = async (workers: ReadonlyArray<Worker>, c: Config, millis: number) => {
  const used = workers.slice(0, c.processes)
  const command = JSON.stringify({
    mode: c.mode,
    millis,
    latencyMillis: c.latencyMillis,
    concurrency: c.concurrency
  })
  for (const w of used) w.child.stdin!.write(`${command}\n`)
  const results = await Promise.all(used.map((w) => w.next().then((l) => JSON.parse(l) as Sample)))
  const rate = results.reduce((sum, s) => sum + (s.count * 1000) / s.millis, 0)
  const count = results.reduce((sum, s) => sum + s.count, 0)
  const cpu = results.reduce((sum, s) => sum + s.cpuMicros, 0)
  return { rate, cpuMicrosPerReservation: cpu / count }
}

const tight = { latencyMillis: 0, concurrency: 1 } as const
const modelled = { latencyMillis: 5, concurrency: 8 } as const
const models = [tight, modelled] as const
const modes = ["slices", "round-trip", "memory"] as const

/** Part 2: 1, 2 and 4 processes, every configuration once per round, rotated. */
const fleet = async (url: string, options: RunOptions) => {
  const input = { url, slices: "bench-fleet", roundTrip: "bench-round-trip", cap: FLEET_CAP, slice: FLEET_SLICE }
  const workers = await Promise.all([0, 1, 2, 3].map(() => startWorker(input)))
  try {
    const configs: Array<Config> = []
    for (const m of models) {
      for (const mode of modes) for (const processes of [1, 2, 4] as const) configs.push({ mode, processes, ...m })
    }
    const rates = new Map<string, Array<number>>()
    const cpu = new Map<string, Array<number>>()
    const loads: Array<number> = []
    const rounds = options.quick ? 2 : 7
    const millis = options.quick ? 150 : 400
    for (let r = 0; r < rounds; r++) {
      loads.push(os.loadavg()[0]!)
      for (let k = 0; k < configs.length; k++) {
        const c = configs[(k + r * 5) % configs.length]!
        const s = await sampleFleet(workers, c, millis)
        rates.set(key(c), [...(rates.get(key(c)) ?? []), s.rate])
        cpu.set(key(c), [...(cpu.get(key(c)) ?? []), s.cpuMicrosPerReservation])
      }
      options.log(`    fleet round ${r + 1}/${rounds} (load ${os.loadavg()[0]!.toFixed(1)})`)
    }
    return { rates, cpu, loads, rounds }
  } finally {
    for (const w of workers) {
      w.child.stdin!.write("STOP\n")
      w.lines.close()
    }
    await Promise.all(
      workers.map((w) =>
        w.child.exitCode !== null ? undefined : new Promise((resolve) => w.child.once("exit", resolve))
      )
    )
  }
}

const spread = (xs: ReadonlyArray<number>, fmt: (x: number) => string) =>
  `${fmt(median(xs))} (${fmt(Math.min(...xs))}–${fmt(Math.max(...xs))})`

const perSecond = (x: number) => Math.round(x).toLocaleString("en-US")

/** The 4-process rate over the 1-process rate, per round (both from the same round), median and range. */
const scaling = (rates: Map<string, Array<number>>, c: Omit<Config, "processes">) => {
  const one = rates.get(key({ ...c, processes: 1 }))!
  const four = rates.get(key({ ...c, processes: 4 }))!
  return four.map((x, i) => x / one[i]!)
}

const run = async (options: RunOptions): Promise<Section> => {
  const scope = Effect.runSync(Scope.make())
  try {
    const server = await Effect.runPromise(Scope.extend(TestServer.start, scope))
    const layer = PgClient.layer({ url: Redacted.make(server.url), maxConnections: 4 })
    const context = await Effect.runPromise(Scope.extend(Layer.buildWithScope(layer, scope), scope))
    const provide: Provide = (effect) => Effect.runPromise(Effect.provide(Scope.extend(effect, scope), context))
    const one = await inProcess(provide, options)
    const many = await fleet(server.url, options)
    return report(one, many, options)
  } finally {
    await Effect.runPromise(Scope.close(scope, Exit.void))
  }
}

const report = (
  one: Awaited<ReturnType<typeof inProcess>>,
  many: Awaited<ReturnType<typeof fleet>>,
  options: RunOptions
): Section => {
  const [slices, memory, trips, select] = one.timings
  const overhead = one.timings[0]!.samples.map((s, i) => s - memory!.samples[i]!)
  const inProcessRows = one.timings.map((t) => [
    t.name,
    spread(t.samples, fmtNs),
    perSecond(1e9 / t.median),
    fmtRatio(t.median / memory!.median)
  ])
  const fleetRows = models.flatMap((m) =>
    modes.map((mode) => {
      const c = { mode, ...m }
      const cells = ([1, 2, 4] as const).map((processes) =>
        spread(many.rates.get(key({ ...c, processes }))!, perSecond)
      )
      return [
        label(c),
        ...cells,
        spread(scaling(many.rates, c), fmtRatio),
        spread(many.cpu.get(key({ ...c, processes: 4 }))!, (x) => x.toFixed(1))
      ]
    })
  )
  const loads = [...one.loads, ...many.loads]
  const loadText = `load (1 min) ${median(loads).toFixed(1)} (${Math.min(...loads).toFixed(1)}–${
    Math.max(...loads).toFixed(1)
  }) on ${os.availableParallelism()} cores`
  const ratio = (c: Omit<Config, "processes">) => median(scaling(many.rates, c))
  const range = (c: Omit<Config, "processes">) => spread(scaling(many.rates, c), fmtRatio)
  const floor = ratio({ mode: "memory", ...tight })
  /** The slices' 4 ÷ 1 over the in-memory floor's 4 ÷ 1, per round (1.0: the slices scale as far as the cores allow). */
  const ofFloor = (m: typeof tight | typeof modelled) => {
    const slicesScaling = scaling(many.rates, { mode: "slices", ...m })
    const floorScaling = scaling(many.rates, { mode: "memory", ...m })
    return spread(slicesScaling.map((x, i) => x / floorScaling[i]!), (x) => x.toFixed(2))
  }
  const goals: Array<Goal> = [
    {
      benchmark: "9. shared budget on PostgreSQL",
      goal: "with slices, 4 processes ≥ 3× one process (tight loop: CPU-bound)",
      measured: `${range({ mode: "slices", ...tight })}; floor on this machine: in-memory, nothing shared, ${
        range({ mode: "memory", ...tight })
      }; slices ÷ floor ${ofFloor(tight)}; ${loadText}`,
      status: ratio({ mode: "slices", ...tight }) >= 3 ? "PASS" : "FAIL"
    },
    {
      benchmark: "9. shared budget on PostgreSQL",
      goal:
        `with slices, 4 processes ≥ 3× one process (${modelled.latencyMillis} ms call, ${modelled.concurrency} in flight per process)`,
      measured: `${range({ mode: "slices", ...modelled })}; in-memory ${range({ mode: "memory", ...modelled })}; ` +
        `round trip ${range({ mode: "round-trip", ...modelled })}; slices ÷ floor ${ofFloor(modelled)}; ${loadText}`,
      status: ratio({ mode: "slices", ...modelled }) >= 3 ? "PASS" : "FAIL"
    },
    {
      benchmark: "9. shared budget on PostgreSQL",
      goal: "per-request overhead (PgBudget − in-memory Budget.make) < one database round trip",
      measured: `${spread(overhead, fmtNs)} ns against ${spread(select!.samples, fmtNs)} ns for SELECT 1 (${
        fmtNs(trips!.median)
      } ns for a reservation by round trip); ${loadText}`,
      status: median(overhead) < select!.median ? "PASS" : "FAIL"
    }
  ]
  const notes = [
    `PostgreSQL on loopback with fsync off: a real network round trip costs more. ${loadText}.`,
    "",
    `In this process: ns per reserve + settle, median of ${
      slices!.samples.length
    } interleaved rounds (min–max). Per-request overhead of PgBudget over the in-memory peer, per round: ${
      spread(overhead, fmtNs)
    } ns.`,
    "",
    table(["contender", "ns / reserve+settle", "per second", "vs in-memory"], inProcessRows),
    "",
    `The fleet: reservations per second on one hot budget ($${
      FLEET_CAP.toLocaleString("en-US")
    } cap, slices of ${FLEET_SLICE} of`,
    `the free pool), summed over the processes; median of ${many.rounds} rounds (min–max), every configuration`,
    "once per round in a rotated order. The in-memory rows share nothing: they are what this machine's cores",
    `allow (4 ÷ 1 of the tight loop: ${
      fmtRatio(floor)
    }). CPU µs per reservation is process CPU (user + system) of the 4 workers, PostgreSQL's not included.`,
    "",
    table(
      ["configuration", "1 process", "2 processes", "4 processes", "4 ÷ 1 (per round)", "CPU µs / res. (4)"],
      fleetRows
    )
  ].join("\n")
  options.log(`    ${loadText}`)
  return { markdown: notes, goals }
}

export const sharedBudget: Benchmark = {
  id: 9,
  title: "Shared budget on PostgreSQL",
  requires: { module: "@rein/postgres", skipped: "skipped: @rein/postgres is not built" },
  run
}
