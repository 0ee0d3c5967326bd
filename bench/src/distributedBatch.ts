/**
 * Benchmark 12: one batch run spread over worker processes through PostgreSQL. Items per second with 1, 2 and 4
 * worker processes (`PgWorker`, each at the same concurrency) on one database, at a fixed fake latency, beside
 * one process running the same items with `Batch.run` at the same total concurrency (1×, 2×, 4× the worker's), in
 * interleaved rounds. Every process is started and connected before the clock starts (a GO line on stdin); the
 * time runs until the last one exits. Efficiency is the ideal time (items × latency / total concurrency) over the
 * measured one. CPU time per item is the processes' own `process.cpuUsage`, and PostgreSQL's (its postmaster and
 * backends, from `/proc`) beside it.
 *
 * The CPU bound: at the ideal rate (total concurrency / latency items per second) the processes and the database
 * need (rate × CPU per item) cores. On this machine (2 cores, shared) 50 ms made the 4-worker run CPU-bound
 * before it could be latency-bound: 64 / 0.05 s = 1,280 items/s × ~1.5 ms of CPU per item (workers and
 * PostgreSQL) needs ~1.9 of the 2 cores with nothing else running, so 3.5× was out of reach whatever the code.
 * The latency is 200 ms: the 4-worker ideal (320 items/s) then needs about half a core, and the bench prints
 * the cores needed beside every result so the reader sees whether a miss is the CPU's.
 */
import { PgClient } from "@effect/sql-pg"
import { Migrations, PgBatchRun } from "@rein/postgres"
import { TestServer } from "@rein/postgres/testing"
import { Effect, Exit, Redacted, Scope } from "effect"
import { spawn } from "node:child_process"
import { availableParallelism, loadavg } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { serverCpuMicros } from "./distributed-cpu.js"
import { identity, itemId, itemsOf, request } from "./distributed-items.js"
import type { Benchmark, RunOptions, Section } from "./harness.js"
import { fmtRatio, median, nowMillis, table } from "./harness.js"

const here = dirname(fileURLToPath(import.meta.url))
const LATENCY = 200
const CONCURRENCY = 16

interface Outcome {
  readonly millis: number
  readonly cpuMicros: number
  /** PostgreSQL's CPU time over the same run. */
  readonly dbMicros: number
  readonly succeeded: number
}

type Processes = Omit<Outcome, "dbMicros">

const runProcesses = (inputs: ReadonlyArray<unknown>): Promise<Processes> =>
  new Promise((resolve, reject) => {
    const children = inputs.map((input) => {
      const child = spawn(process.execPath, [join(here, "distributed-child.js"), JSON.stringify(input)], {
        stdio: ["pipe", "pipe", "pipe"]
      })
      let out = ""
      let err = ""
      child.stdout.on("data", (c: Buffer) => void (out += c.toString()))
      child.stderr.on("data", (c: Buffer) => void (err += c.toString()))
      return { child, out: () => out, err: () => err }
    })
    let t0 = 0
    const ready = setInterval(() => {
      if (!children.every((c) => c.out().includes("READY"))) return
      clearInterval(ready)
      t0 = nowMillis()
      for (const c of children) c.child.stdin.write("GO\n")
    }, 5)
    let left = children.length
    let t1 = 0
    for (const c of children) {
      c.child.on("exit", (code) => {
        if (code !== 0) reject(new Error(`child failed: ${c.err()}`))
        t1 = Math.max(t1, nowMillis())
        if (--left === 0) {
          const dones = children.map((x) => JSON.parse(x.out().split("DONE ")[1]!.split("\n")[0]!))
          resolve({
            millis: t1 - t0,
            cpuMicros: dones.reduce((a, d) => a + d.cpuMicros, 0),
            succeeded: dones.reduce((a, d) => a + d.succeeded, 0)
          })
        }
      })
    }
  })

const run = async (options: RunOptions): Promise<Section> => {
  const scope = Effect.runSync(Scope.make())
  try {
    const server = await Effect.runPromise(Scope.extend(TestServer.start, scope))
    const db = PgClient.layer({ url: Redacted.make(server.url), maxConnections: 2 })
    // The processes' run with the database's CPU time over it (its backends exit, and are counted, just after).
    const measured = async (inputs: ReadonlyArray<unknown>): Promise<Outcome> => {
      const db0 = serverCpuMicros(server.dataDir)
      const o = await runProcesses(inputs)
      await new Promise((resolve) => setTimeout(resolve, 300))
      return { ...o, dbMicros: serverCpuMicros(server.dataDir) - db0 }
    }
    await Effect.runPromise(Effect.provide(Migrations.run, db))
    const n = options.quick ? 400 : 2_000
    const rounds = options.quick ? 1 : 3
    let next = 0
    const distributed = async (workers: number) => {
      const runId = `bench-${++next}`
      await Effect.runPromise(
        Effect.provide(PgBatchRun.start({ runId, identity, resume: "none", items: itemsOf(n), request, itemId }), db)
      )
      const input = {
        url: server.url,
        runId,
        items: n,
        concurrency: CONCURRENCY,
        latencyMillis: LATENCY,
        mode: "worker"
      }
      return measured(Array.from({ length: workers }, () => input))
    }
    const single = (concurrency: number) =>
      measured([{ url: server.url, runId: "", items: n, concurrency, latencyMillis: LATENCY, mode: "single" }])
    const configs = [1, 2, 4]
    const results = new Map<string, Array<Outcome>>()
    const loads: Array<number> = []
    for (let r = 0; r < rounds; r++) {
      for (const w of configs) {
        for (const [key, go] of [[`w${w}`, () => distributed(w)], [`s${w}`, () => single(w * CONCURRENCY)]] as const) {
          loads.push(loadavg()[0]!)
          const o = await go()
          if (o.succeeded !== n) throw new Error(`${key}: ${o.succeeded} of ${n} succeeded`)
          results.set(key, [...(results.get(key) ?? []), o])
          options.log(`   round ${r + 1} ${key}: ${o.millis.toFixed(0)} ms, load ${loads.at(-1)!.toFixed(1)}`)
        }
      }
    }
    const med = (key: string) => median(results.get(key)!.map((o) => o.millis))
    const cpu = (key: string) => median(results.get(key)!.map((o) => o.cpuMicros / n))
    const dbCpu = (key: string) => median(results.get(key)!.map((o) => o.dbMicros / n))
    const ideal = (total: number) => (n * LATENCY) / total
    const cores = availableParallelism()
    // Cores the processes and the database need to run at the ideal rate (total / latency items per second).
    const needed = (key: string, total: number) => ((total * 1000) / LATENCY) * (cpu(key) + dbCpu(key)) / 1e6
    const rows = configs.flatMap((w) => {
      const total = w * CONCURRENCY
      return [
        [
          `${w} worker${w > 1 ? "s" : ""} × ${CONCURRENCY} (PgWorker)`,
          String(total),
          med(`w${w}`).toFixed(0),
          Math.round((n / med(`w${w}`)) * 1000).toLocaleString("en-US"),
          (ideal(total) / med(`w${w}`)).toFixed(3),
          cpu(`w${w}`).toFixed(0),
          dbCpu(`w${w}`).toFixed(0),
          needed(`w${w}`, total).toFixed(2)
        ],
        [
          `one process, Batch.run at ${total}`,
          String(total),
          med(`s${w}`).toFixed(0),
          Math.round((n / med(`s${w}`)) * 1000).toLocaleString("en-US"),
          (ideal(total) / med(`s${w}`)).toFixed(3),
          cpu(`s${w}`).toFixed(0),
          dbCpu(`s${w}`).toFixed(0),
          needed(`s${w}`, total).toFixed(2)
        ]
      ]
    })
    const speedup = med("w1") / med("w4")
    const relative = (ideal(4 * CONCURRENCY) / med("w4")) / (ideal(4 * CONCURRENCY) / med("s4"))
    const loadText = `load (1-min average) ${Math.min(...loads).toFixed(1)}–${
      Math.max(...loads).toFixed(1)
    } over the rounds`
    const bound = needed("w4", 4 * CONCURRENCY)
    const cpuText = `CPU bound: at the 4-worker ideal rate (${
      Math.round((4 * CONCURRENCY * 1000) / LATENCY)
    } items/s) the workers and PostgreSQL need ${bound.toFixed(2)} of ${cores} cores`
    const notes = [
      `${n} items × ${LATENCY} ms fake latency; ${rounds} interleaved rounds, medians; ${loadText}.`,
      "PostgreSQL on loopback (TestServer, fsync off). Wall time from GO to the last process's exit.",
      `${cpuText} (with the machine's other load, the share left to them is smaller).`,
      "\"cores needed\" = ideal items/s × (process + PostgreSQL CPU per item): above the free cores, the row is",
      "CPU-bound and its efficiency cannot reach 1 whatever the latency."
    ].join("\n")
    return {
      markdown: `${notes}\n\n${
        table([
          "contender",
          "total concurrency",
          "ms",
          "items / s",
          "efficiency",
          "CPU µs / item",
          "PostgreSQL CPU µs / item",
          "cores needed at the ideal rate"
        ], rows)
      }\n\n4 workers vs 1: ${fmtRatio(speedup)}; 4 workers' efficiency vs one process at 64: ${relative.toFixed(3)}.`,
      goals: [
        {
          benchmark: "12. distributed batch",
          goal: "4 workers ≥ 3.5× one worker",
          measured: `${fmtRatio(speedup)} at ${LATENCY} ms (${loadText}; ${cpuText})`,
          status: speedup >= 3.5 ? "PASS" : "FAIL"
        },
        {
          benchmark: "12. distributed batch",
          goal: "efficiency ≥ 0.9 of the single-process batch at the same total concurrency",
          measured: `${relative.toFixed(3)} at 64 in flight (${loadText})`,
          status: relative >= 0.9 ? "PASS" : "FAIL"
        }
      ]
    }
  } finally {
    await Effect.runPromise(Scope.close(scope, Exit.void))
  }
}

export const distributedBatch: Benchmark = {
  id: 12,
  title: "Distributed batch on PostgreSQL",
  requires: { module: "@rein/postgres", skipped: "skipped: @rein/postgres is not built" },
  run
}
