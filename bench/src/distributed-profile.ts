/**
 * A probe for benchmark 12, not a benchmark: `node bench/dist/distributed-profile.js [workers] [items]
 * [latencyMillis] [concurrency] [single] [-- node flags]` starts a PostgreSQL server, submits a run and runs
 * it with `workers` worker processes (bench 12's child, bench 12's shape, started and connected, then all told GO at
 * once as bench 12 does), and prints each worker's CPU time
 * per item (`process.cpuUsage`) and the wall time, with the machine load. With `single`, each process runs
 * the items with `Batch.run` instead (bench 12's peer). Node flags after `--` go to every child:
 * `-- --cpu-prof --cpu-prof-dir=/tmp/prof` profiles each worker.
 */
import { PgClient } from "@effect/sql-pg"
import { Migrations, PgBatchRun } from "@rein/postgres"
import { TestServer } from "@rein/postgres/testing"
import { Effect, Redacted } from "effect"
import { spawn } from "node:child_process"
import { loadavg } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { serverCpuMicros } from "./distributed-cpu.js"
import { identity, itemId, itemsOf, request } from "./distributed-items.js"
import { nowMillis } from "./harness.js"

const here = dirname(fileURLToPath(import.meta.url))
const argv = process.argv.slice(2)
const cut = argv.indexOf("--")
const head = cut < 0 ? argv : argv.slice(0, cut)
const mode = head.includes("single") ? "single" : "worker"
const positional = head.filter((a) => a !== "single").map(Number)
const nodeFlags = cut < 0 ? [] : argv.slice(cut + 1)
const [workers = 1, items = 2_000, latencyMillis = 50, concurrency = 16] = positional

interface Done {
  readonly cpuMicros: number
  readonly succeeded: number
  /** From the common GO to this child's exit. */
  readonly millis: number
  /** From GO to the end of its run, and to its last record's commit (as the child measured them). */
  readonly doneMillis?: number
  readonly lastRecorded?: number
}

// Every child is started and connected, then all get GO at once (as bench 12 does); times count from that GO.
const children = (inputs: ReadonlyArray<unknown>) =>
  new Promise<{ readonly dones: ReadonlyArray<Done>; readonly wall: number }>((resolve, reject) => {
    let t0 = 0
    let ready = 0
    const dones: Array<Done> = []
    const cs = inputs.map((input) => {
      const c = spawn(process.execPath, [...nodeFlags, join(here, "distributed-child.js"), JSON.stringify(input)], {
        stdio: ["pipe", "pipe", "inherit"]
      })
      let out = ""
      let seen = false
      c.stdout.on("data", (b: Buffer) => {
        out += b.toString()
        if (!seen && out.includes("READY")) {
          seen = true
          if (++ready === inputs.length) {
            t0 = nowMillis()
            for (const x of cs) x.stdin.write("GO\n")
          }
        }
      })
      c.on("exit", (code) => {
        if (code !== 0) return reject(new Error(`child exited with ${code}`))
        const done = JSON.parse(out.split("DONE ")[1]!.split("\n")[0]!)
        dones.push({ ...done, millis: nowMillis() - t0 })
        if (dones.length === inputs.length) resolve({ dones, wall: Math.max(...dones.map((d) => d.millis)) })
      })
      return c
    })
  })

const program = Effect.gen(function*() {
  const server = yield* TestServer.start
  const db = PgClient.layer({ url: Redacted.make(server.url), maxConnections: 2 })
  yield* Effect.provide(Migrations.run, db)
  const runId = "probe"
  yield* Effect.provide(
    PgBatchRun.start({ runId, identity, resume: "none", items: itemsOf(items), request, itemId }),
    db
  )
  const load0 = loadavg()[0]!
  const input = { url: server.url, runId, items, concurrency, latencyMillis, mode }
  const db0 = serverCpuMicros(server.dataDir)
  const { dones: outs, wall } = yield* Effect.promise(() => children(Array.from({ length: workers }, () => input)))
  // The backends exit (and are reaped into the postmaster's children time) just after the workers do.
  yield* Effect.sleep("300 millis")
  const dbCpu = serverCpuMicros(server.dataDir) - db0
  const done = outs.reduce((a, o) => a + o.succeeded, 0)
  for (const o of outs) {
    const perItem = o.succeeded === 0 ? 0 : o.cpuMicros / o.succeeded
    process.stdout.write(
      `worker: ${o.succeeded} items, ${(o.cpuMicros / 1000).toFixed(0)} ms CPU, ${perItem.toFixed(0)} µs/item, ` +
        `last record ${o.lastRecorded ?? "?"} ms, done ${o.doneMillis ?? "?"} ms, exit ${o.millis.toFixed(0)} ms\n`
    )
  }
  const cpu = outs.reduce((a, o) => a + o.cpuMicros, 0)
  process.stdout.write(
    `${workers} × ${concurrency}, ${items} items × ${latencyMillis} ms: ${done} done, ${wall.toFixed(0)} ms wall ` +
      `(ideal ${(items * latencyMillis / (workers * concurrency)).toFixed(0)}), ` +
      `${(cpu / done).toFixed(0)} µs CPU/item in the workers, ${(dbCpu / done).toFixed(0)} in PostgreSQL; load ${
        load0.toFixed(1)
      } → ${loadavg()[0]!.toFixed(1)}\n`
  )
})

Effect.runPromise(Effect.scoped(program)).catch((e) => {
  process.stderr.write(`${String(e)}\n`)
  process.exit(1)
})
