/**
 * Benchmark 6: simulation speed. A one-hour virtual outage scenario (bench/scenarios/hour-outage.json:
 * 10,000 requests, one every 360 virtual ms; fake/a fails with 503s for 20 of the 60 minutes) through the
 * CLI's simulate, with examples/catalog.json and examples/contract.json, seed 1 — real seconds taken, two
 * ways:
 *
 * - in-process: `Simulate.simulate(catalog, contract, scenario, 1)` run with `Effect.runPromise`, the
 *   inputs decoded beforehand (the figure is the simulation alone);
 * - the built binary: `node packages/cli/dist/bin.js simulate … --json` as a child process, timed from
 *   spawn to exit (process start-up, module loading, file reading and JSON output included);
 * - the binary's fixed cost, in the same rounds: the same command with bench/scenarios/second.json (the same
 *   scenario cut to one virtual second, 3 requests), so that the binary's figure splits into start-up and the
 *   hour;
 * - the binary's cold floor, in the same rounds: node's own start plus the bare `Rein.execute` hour of
 *   `simulation-floors.ts` run once in a fresh process (`simulation-floor-child.ts`), what the binary's row
 *   cannot go below.
 *
 * Every run is checked to report 10,000 requests over one virtual hour; the in-process and binary reports
 * must be identical (same seed, same report).
 */
import { Catalog, Contract } from "@rein/core"
import { Effect, Either } from "effect"
import { execFile } from "node:child_process"
import { existsSync, readdirSync, readFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import type { Benchmark, Goal, RunOptions, Section } from "./harness.js"
import { collect, fmtMs, fmtRatio, loadNow, loadRange, median, nowMillis, table } from "./harness.js"
import { floors, LEAN_FLOOR, REIN_FLOOR } from "./simulation-floors.js"

const REQUESTS = 10_000
const HOUR_MILLIS = 3_600_000
/** The goal: CPU seconds (user + system), not wall time. */
const GOAL_SECONDS = 1
const SEED = 1
const SECOND_REQUESTS = 3

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..")
const files = {
  catalog: "examples/catalog.json",
  contract: "examples/contract.json",
  scenario: "bench/scenarios/hour-outage.json",
  /** The same scenario cut to one virtual second (3 requests): the binary's start-up, module loading and output. */
  second: "bench/scenarios/second.json"
}
const bin = join(root, "packages", "cli", "dist", "bin.js")

type CliModule = typeof import("@rein/cli")

const readJson = (path: string): unknown => JSON.parse(readFileSync(join(root, path), "utf8"))

interface Report {
  readonly requests: number
  readonly trafficMillis: number
  readonly outcomes: Readonly<Record<string, number>>
  readonly fallbacks: number
  readonly breakerTransitions: ReadonlyArray<unknown>
}

const checkReport = (where: string, r: Report) => {
  if (r.requests !== REQUESTS || r.trafficMillis !== HOUR_MILLIS) {
    throw new Error(`${where}: ${r.requests} requests over ${r.trafficMillis} ms, expected ${REQUESTS} over an hour`)
  }
}

const cpuReport = join(dirname(fileURLToPath(import.meta.url)), "cpu-report.js")

/** The CPU time (ms) the child reported on its way out (see cpu-report.ts). */
const cpuOf = (stderr: string): number => {
  const line = stderr.split("\n").reverse().find((l) => l.startsWith("rein-bench-cpu "))
  if (line === undefined) throw new Error("rein simulate: no CPU report on stderr")
  return Number(line.slice("rein-bench-cpu ".length)) / 1000
}

/** Runs the binary once on `scenario`; resolves with its wall time (ms), its CPU time (ms) and its JSON report. */
const runBinary = (
  scenario: string
): Promise<{ readonly millis: number; readonly cpuMillis: number; readonly json: string }> =>
  new Promise((resolve, reject) => {
    const t0 = nowMillis()
    execFile(
      process.execPath,
      [
        "--import",
        pathToFileURL(cpuReport).href,
        bin,
        "simulate",
        "--catalog",
        files.catalog,
        "--contract",
        files.contract,
        "--scenario",
        scenario,
        "--seed",
        String(SEED),
        "--json"
      ],
      { cwd: root, maxBuffer: 64 * 2 ** 20 },
      (error, stdout, stderr) => {
        const millis = nowMillis() - t0
        if (error !== null) reject(new Error(`rein simulate failed: ${error.message}\n${stderr}`))
        else resolve({ millis, cpuMillis: cpuOf(stderr), json: stdout })
      }
    )
  })

/**
 * CPU ms of this process's main thread and of its other threads (V8's workers: concurrent compilation, parallel
 * scavenging, concurrent marking and sweeping; libuv's pool), from /proc (10 ms ticks); `undefined` where there
 * is no /proc.
 */
const threadCpu = (): { readonly main: number; readonly others: number } | undefined => {
  try {
    let main = 0
    let others = 0
    for (const task of readdirSync("/proc/self/task")) {
      const stat = readFileSync(`/proc/self/task/${task}/stat`, "utf8")
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
      const ms = (Number(fields[11]) + Number(fields[12])) * 10
      if (task === String(process.pid)) main += ms
      else others += ms
    }
    return { main, others }
  } catch {
    return undefined
  }
}

const floorChild = join(dirname(fileURLToPath(import.meta.url)), "simulation-floor-child.js")

/**
 * The cold floor (`simulation-floor-child.ts`) once in a fresh process, with the V8 flag the binary sets for
 * itself: CPU (ms) of node's own start and of the bare `Rein.execute` hour, its first run in that process.
 */
const runColdFloor = (health: string): Promise<{ readonly startCpu: number; readonly hourCpu: number }> =>
  new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ["--no-allocation-site-pretenuring", floorChild, root, files.catalog, files.contract, health],
      { cwd: root },
      (error, stdout, stderr) => {
        if (error !== null) reject(new Error(`cold floor failed: ${error.message}\n${stderr}`))
        else {
          const r = JSON.parse(stdout) as { readonly startMicros: number; readonly hourMicros: number }
          resolve({ startCpu: r.startMicros / 1000, hourCpu: r.hourMicros / 1000 })
        }
      }
    )
  })

const run = async (options: RunOptions): Promise<Section> => {
  const rounds = options.quick ? 1 : 3
  const cli = await import("@rein/cli") as CliModule
  const catalog = Either.getOrThrow(Catalog.decode(readJson(files.catalog)))
  const contract = Either.getOrThrow(Contract.decode(readJson(files.contract)))
  const scenario = Either.getOrThrowWith(
    cli.Scenario.decode(readJson(files.scenario)),
    (message) => new Error(`${files.scenario}: ${message}`)
  )
  const health = cli.Scenario.healthConfig(scenario)
  const floorRows = await floors(root, { catalog, contract, health })
  const coldFloor: Array<number> = []
  const coldStart: Array<number> = []
  const floorCpu: Array<Array<number>> = floorRows.map(() => [])
  const floorWall: Array<Array<number>> = floorRows.map(() => [])
  const binaryBuilt = existsSync(bin)
  const inProcess: Array<number> = []
  const binary: Array<number> = []
  const inProcessCpu: Array<number> = []
  const inProcessMain: Array<number> = []
  const binaryCpu: Array<number> = []
  const startUp: Array<number> = []
  const startUpCpu: Array<number> = []
  const load0 = loadNow()
  let reference: string | undefined
  let summary: Report | undefined
  for (let r = 0; r < rounds; r++) {
    collect()
    const th0 = threadCpu()
    const c0 = process.cpuUsage()
    const t0 = nowMillis()
    const report = await Effect.runPromise(cli.Simulate.simulate(catalog, contract, scenario, SEED))
    inProcess.push(nowMillis() - t0)
    const c1 = process.cpuUsage(c0)
    const th1 = threadCpu()
    inProcessCpu.push((c1.user + c1.system) / 1000)
    if (th0 !== undefined && th1 !== undefined) inProcessMain.push(th1.main - th0.main)
    checkReport("in-process", report)
    const json = JSON.stringify(report)
    if (reference !== undefined && json !== reference) throw new Error("in-process: the same seed gave another report")
    reference = json
    summary = report
    if (binaryBuilt) {
      const b = await runBinary(files.scenario)
      binary.push(b.millis)
      binaryCpu.push(b.cpuMillis)
      const parsed = JSON.parse(b.json) as Report
      checkReport("binary", parsed)
      if (JSON.stringify(parsed) !== reference) throw new Error("binary: its report differs from the in-process one")
      const s = await runBinary(files.second)
      startUp.push(s.millis)
      startUpCpu.push(s.cpuMillis)
      const second = JSON.parse(s.json) as Report
      if (second.requests !== SECOND_REQUESTS) throw new Error(`binary, one second: ${second.requests} requests`)
    }
    const cold = await runColdFloor(JSON.stringify(health))
    coldFloor.push(cold.startCpu + cold.hourCpu)
    coldStart.push(cold.startCpu)
    for (let i = 0; i < floorRows.length; i++) {
      collect()
      const f0 = process.cpuUsage()
      const w0 = nowMillis()
      await floorRows[i]!.run()
      floorWall[i]!.push(nowMillis() - w0)
      const f1 = process.cpuUsage(f0)
      floorCpu[i]!.push((f1.user + f1.system) / 1000)
    }
    options.log(
      `  round ${r + 1}/${rounds}: in-process CPU ${fmtMs(inProcessCpu[r]! / 1000)} s${
        binaryBuilt
          ? `, binary CPU ${fmtMs(binaryCpu[r]! / 1000)} s (one virtual second ${fmtMs(startUpCpu[r]! / 1000)} s)`
          : ""
      }, cold floor ${fmtMs(coldFloor[r]! / 1000)} s`
    )
  }
  const seconds = (xs: ReadonlyArray<number>) => ({
    median: median(xs) / 1000,
    min: Math.min(...xs) / 1000,
    max: Math.max(...xs) / 1000
  })
  const load = loadRange(load0, loadNow())
  const rows: Array<Array<string>> = []
  const goals: Array<Goal> = []
  const floorsSaid = floorRows.map((f, i) =>
    `${f.name.replace(/^floor: /, "")} ${fmtMs(seconds(floorCpu[i]!).median)} s`
  )
    .join(", ")
  // The least a bounded call costs on this clock, with no Rein: when it alone is above the target, the goal is
  // out of reach for any executor that bounds its calls, and the goal lines say so (the target stays).
  const floorSeconds = (name: string) => {
    const i = floorRows.findIndex((f) => f.name === name)
    return i < 0 ? undefined : seconds(floorCpu[i]!).median
  }
  const leanSeconds = floorSeconds(LEAN_FLOOR)
  const reinSeconds = floorSeconds(REIN_FLOOR)
  const leanSaid = leanSeconds === undefined ? "" : [
    leanSeconds > GOAL_SECONDS
      ? `; the target (${GOAL_SECONDS} s) is below the lean-bound floor (${fmtMs(leanSeconds)} s, no Rein)`
      : "",
    reinSeconds === undefined ? "" : `; bare Rein.execute ${fmtRatio(reinSeconds / leanSeconds)} the lean-bound floor`
  ].join("")
  const row = (name: string, cpu: ReadonlyArray<number>, wall: ReadonlyArray<number>, requests = REQUESTS) => {
    const c = seconds(cpu)
    const w = seconds(wall)
    rows.push([
      name,
      String(cpu.length),
      fmtMs(c.median),
      `${fmtMs(c.min)}–${fmtMs(c.max)}`,
      fmtMs(w.median),
      fmtMs(requests / c.median, 0)
    ])
    return { c, w }
  }
  const add = (name: string, cpu: ReadonlyArray<number>, wall: ReadonlyArray<number>, fixed = "") => {
    const { c, w } = row(name, cpu, wall)
    goals.push({
      benchmark: "6. simulation speed",
      goal: `${name}: a one-hour virtual outage, ${
        REQUESTS.toLocaleString("en-US")
      } requests, ≤ ${GOAL_SECONDS} s of CPU time`,
      measured:
        `${fmtMs(c.median)} s CPU median (max ${fmtMs(c.max)} s; wall ${fmtMs(w.median)} s)${fixed}; same run, ` +
        `same virtual hour: ${floorsSaid}${leanSaid}; ${load}`,
      status: c.median <= GOAL_SECONDS ? "PASS" : "FAIL"
    })
  }
  add(
    "in-process `Simulate.simulate`",
    inProcessCpu,
    inProcess,
    inProcessMain.length === inProcessCpu.length
      ? `, of which the main thread ${fmtMs(median(inProcessMain) / 1000)} s (V8's other threads: compilation, GC)`
      : ""
  )
  if (binaryBuilt) {
    const fixed =
      `, of which start-up ${fmtMs(median(startUpCpu) / 1000)} s (the same command for one virtual second)` +
      `; cold floor (node's own start + bare Rein.execute's hour, a fresh process) ${fmtMs(median(coldFloor) / 1000)} s`
    add("`node packages/cli/dist/bin.js simulate --json` (child process)", binaryCpu, binary, fixed)
    row(
      "the binary's fixed cost: the same command, one virtual second (3 requests)",
      startUpCpu,
      startUp,
      SECOND_REQUESTS
    )
  } else rows.push(["the built binary", "skipped: packages/cli/dist/bin.js not built", "", "", "", ""])
  {
    const c = seconds(coldFloor)
    rows.push([
      `cold floor: node's own start (${fmtMs(median(coldStart) / 1000)} s) + bare Rein.execute's hour, a fresh process`,
      String(coldFloor.length),
      fmtMs(c.median),
      `${fmtMs(c.min)}–${fmtMs(c.max)}`,
      "–",
      fmtMs(REQUESTS / c.median, 0)
    ])
  }
  floorRows.forEach((f, i) => row(f.name, floorCpu[i]!, floorWall[i]!))
  const s = summary!
  const notes = [
    `${files.scenario}: ${scenario.description ?? ""}.`,
    `Catalog ${files.catalog}, contract ${files.contract}, seed ${SEED}. ${rounds} rounds, alternating in-process and`,
    "binary; the in-process figure times `Simulate.simulate` alone (inputs decoded beforehand), the binary's runs",
    "from spawn to exit (node start-up, module loading and the JSON report included). Every report is checked:",
    `${
      REQUESTS.toLocaleString("en-US")
    } requests over one virtual hour, and the binary's report equal to the in-process one.`,
    `What the hour did: outcomes ${
      JSON.stringify(s.outcomes)
    }, ${s.fallbacks} fallbacks, ${s.breakerTransitions.length}`,
    "breaker transitions. CPU time is the process's user + system time (`process.cpuUsage`; the binary reports its",
    "own on exit through a preloaded `bench/dist/cpu-report.js`, start-up and module loading included). The goal",
    `is judged on the median CPU time. Measured at ${load} (1-minute load average).`,
    "",
    `The binary's fixed cost runs the same command in the same rounds with ${files.second} (the same scenario cut`,
    "to one virtual second, 3 requests): node start-up, module loading, reading and decoding the inputs, the",
    "report; the binary's figure less this one is what the hour itself costs in a fresh process.",
    "",
    "The last rows run the same hour (10,000 arrivals, one every 360 virtual ms, each call a 300 ms sleep) on the",
    "simulator's own virtual scheduler and clock without the simulator, in the same rounds, each arrival forked by",
    "the clock's callback and each call's end one step, as the simulator drives its requests: the arrivals alone,",
    "each call bounded by `Effect.timeout`, each call under a lean bound (bench 4's: one fork and one timer per",
    "call, the fiber's observer resuming the caller; here the fork on the simulation's runtime and the timer on the",
    "virtual clock; no Rein: the least a call bounded by a deadline costs on this clock), and bare `Rein.execute`",
    "per arrival (the scenario's catalog, contract and health settings; a provider that sleeps and answers; no",
    "scenario, tally or report): the simulator cannot cost less than the last of them, and Rein's requests cannot",
    "cost less than the lean bound's. The goal lines compare the target with the lean-bound floor.",
    "",
    "The cold floor is the binary's: a fresh node (with the V8 flag the binary sets for itself) takes its own CPU",
    "before it loads anything (node's start), then loads Rein and the virtual scheduler and runs the bare",
    "`Rein.execute` hour once, its first run in that process (bench/src/simulation-floor-child.ts); the row is the",
    "sum of the two, module loading excluded. The binary starts the same node and runs at least these requests on",
    "the same clock, cold: its CPU cannot go below this row, and the goal is out of reach while this row is above",
    "it. (Its hour compiles the functions it runs from source, where the binary takes them from its code cache.)"
  ].join("\n")
  const header = ["run", "rounds", "CPU s (median)", "CPU min–max s", "wall s (median)", "virtual requests per CPU s"]
  return { markdown: `${notes}\n\n${table(header, rows)}`, goals }
}

export const simulation: Benchmark = {
  id: 6,
  title: "Simulation speed",
  requires: { module: "@rein/cli", skipped: "skipped: the CLI's simulate (@rein/cli) not built yet" },
  goals: [`a one-hour virtual outage, ${REQUESTS.toLocaleString("en-US")} requests: ≤ ${GOAL_SECONDS} s of CPU time`],
  run
}
