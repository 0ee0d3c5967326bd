// Bench 12's shape on a PostgreSQL with pg_stat_statements: which statements the workers' database time goes to.
//
//   node bench/ab/pg-statements.mjs <root>[,<root>…] [rounds] [workers,…] [items] [latency ms] [concurrency]
//
// Starts one server (as TestServer does, plus `shared_preload_libraries=pg_stat_statements`, planning tracked),
// migrates it with the first root's build, and per round, worker count and root (alternated): submits a run with
// that root's `PgBatchRun.start`, resets the statistics, runs its `bench/dist/distributed-child.js` workers, then
// prints per statement: calls, rows, planning and execution time per item (µs; wall time inside the server,
// which the machine's load inflates: compare shares, not absolutes), and the backends' CPU per item from /proc.
// `NOSTAT=1`: without the extension (its bookkeeping costs CPU), CPU per item only: bench 12's situation, one
// server whose tables keep every earlier run, roots alternated; medians at the end.
import { spawn, spawnSync } from "node:child_process"
import { chownSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { loadavg, tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { pathToFileURL } from "node:url"

const [rootsArg, roundsArg = "1", workersArg = "1,4", itemsArg = "2000", latency = "200", concurrency = "16"] =
  process.argv.slice(2)
const roots = rootsArg.split(",").map((r) => resolve(r))
const rounds = Number(roundsArg)
const workerCounts = workersArg.split(",").map(Number)
const n = Number(itemsArg)
const BIN = "/usr/lib/postgresql/15/bin"
const stats = process.env.NOSTAT === undefined

const passwd = readFileSync("/etc/passwd", "utf8").split("\n").find((l) => l.startsWith("postgres:")).split(":")
const as = process.getuid() === 0 ? { uid: Number(passwd[2]), gid: Number(passwd[3]) } : {}
const dir = mkdtempSync(join(tmpdir(), "rein-pgstat-"))
if (as.uid !== undefined) chownSync(dir, as.uid, as.gid)
const data = join(dir, "data")
spawnSync(`${BIN}/initdb`, ["-D", data, "-U", "rein", "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C"], {
  ...as,
  stdio: "ignore"
})
const port = 20_000 + Math.floor(Math.random() * 20_000)
const server = spawn(`${BIN}/postgres`, [
  "-D", data, "-p", String(port), "-k", dir,
  "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "synchronous_commit=off",
  "-c", "full_page_writes=off", "-c", "max_connections=200",
  ...(stats
    ? ["-c", "shared_preload_libraries=pg_stat_statements", "-c", "pg_stat_statements.track_planning=on",
      "-c", "pg_stat_statements.max=1000"]
    : [])
], { ...as, stdio: "ignore" })
const cleanup = () => {
  server.kill("SIGQUIT")
  setTimeout(() => rmSync(dir, { recursive: true, force: true }), 500)
}
process.on("exit", cleanup)
for (let i = 0; i < 200; i++) {
  if (spawnSync(`${BIN}/pg_isready`, ["-q", "-h", "127.0.0.1", "-p", String(port)]).status === 0) break
  await new Promise((r) => setTimeout(r, 50))
}
const url = `postgres://rein@127.0.0.1:${port}/postgres`

const builds = new Map()
const buildOf = async (root) => {
  if (builds.has(root)) return builds.get(root)
  const at = (p) => import(pathToFileURL(join(root, p)).href)
  const pg = await at("packages/postgres/dist/index.js")
  const { PgClient } = await at("packages/postgres/node_modules/@effect/sql-pg/dist/esm/index.js")
  const { SqlClient } = await at("packages/postgres/node_modules/@effect/sql/dist/esm/index.js")
  const { Effect, Redacted } = await at("packages/postgres/node_modules/effect/dist/esm/index.js")
  const items = await at("bench/dist/distributed-items.js")
  const layer = PgClient.layer({ url: Redacted.make(url), maxConnections: 2 })
  const runSql = (f) =>
    Effect.runPromise(Effect.provide(Effect.flatMap(SqlClient.SqlClient, (sql) => f(sql)), layer))
  const b = { root, pg, Effect, layer, items, runSql }
  builds.set(root, b)
  return b
}

const first = await buildOf(roots[0])
await first.Effect.runPromise(first.Effect.provide(first.pg.Migrations.run, first.layer))
if (stats) await first.runSql((sql) => sql`CREATE EXTENSION IF NOT EXISTS pg_stat_statements`)

const TICK = 10_000
const backendTicks = () => {
  const out = new Map()
  for (const e of readdirSync("/proc")) {
    if (!/^\d+$/.test(e)) continue
    try {
      const t = readFileSync(`/proc/${e}/stat`, "utf8")
      const f = t.slice(t.lastIndexOf(")") + 2).split(" ")
      if (Number(f[1]) === server.pid) out.set(Number(e), Number(f[11]) + Number(f[12]))
    } catch {}
  }
  return out
}
const serverTicks = () => {
  const t = readFileSync(`/proc/${server.pid}/stat`, "utf8")
  const f = t.slice(t.lastIndexOf(")") + 2).split(" ")
  let ticks = Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])
  for (const v of backendTicks().values()) ticks += v
  return ticks
}

const runWorkers = (root, input, workers) =>
  new Promise((resolveRun, reject) => {
    const children = Array.from({ length: workers }, () => {
      const c = spawn(process.execPath, [join(root, "bench/dist/distributed-child.js"), JSON.stringify(input)], {
        stdio: ["pipe", "pipe", "inherit"]
      })
      let out = ""
      c.stdout.on("data", (b) => (out += b.toString()))
      return { c, out: () => out }
    })
    const ready = setInterval(() => {
      if (!children.every((x) => x.out().includes("READY"))) return
      clearInterval(ready)
      for (const x of children) x.c.stdin.write("GO\n")
    }, 5)
    let left = workers
    for (const x of children) {
      x.c.on("exit", (code) => {
        if (code !== 0) reject(new Error(`worker exited ${code}`))
        if (--left === 0) {
          resolveRun(
            children.map((y) => JSON.parse(y.out().split("DONE ")[1].split("\n")[0])).reduce(
              (a, d) => ({ cpu: a.cpu + d.cpuMicros, done: a.done + d.succeeded }),
              { cpu: 0, done: 0 }
            )
          )
        }
      })
    }
  })

let next = 0
const results = new Map()
for (let r = 0; r < rounds; r++) {
  for (const workers of workerCounts) {
    for (const root of r % 2 === 0 ? roots : [...roots].reverse()) {
      const b = await buildOf(root)
      const runId = `stat-${++next}`
      const { identity, itemId, itemsOf, request } = b.items
      await b.Effect.runPromise(
        b.Effect.provide(b.pg.PgBatchRun.start({ runId, identity, resume: "none", items: itemsOf(n), request, itemId }),
          b.layer)
      )
      if (stats) await b.runSql((sql) => sql`SELECT pg_stat_statements_reset()`)
      const load0 = loadavg()[0]
      const s0 = serverTicks()
      const w = await runWorkers(root, {
        url,
        runId,
        items: n,
        concurrency: Number(concurrency),
        latencyMillis: Number(latency),
        mode: "worker"
      }, workers)
      await new Promise((r2) => setTimeout(r2, 300))
      const pgCpu = ((serverTicks() - s0) * TICK) / n
      const key = `${root} w${workers}`
      results.set(key, [...(results.get(key) ?? []), { worker: w.cpu / n, pg: pgCpu, load: load0 }])
      const rows = !stats ? [] : await b.runSql((sql) =>
        sql`SELECT calls::float8 AS calls, rows::float8 AS rows, total_plan_time AS plan, total_exec_time AS exec,
          shared_blks_hit::float8 AS hit, left(regexp_replace(query, '\\s+', ' ', 'g'), 110) AS q
          FROM pg_stat_statements WHERE query NOT LIKE '%pg_stat_statements%' ORDER BY total_exec_time + total_plan_time DESC LIMIT 14`
      )
      process.stdout.write(
        `\n${root} w${workers} round ${r + 1}: worker CPU ${(w.cpu / n).toFixed(0)} µs/item, PostgreSQL CPU ${
          pgCpu.toFixed(0)
        } µs/item, load ${load0.toFixed(1)} → ${loadavg()[0].toFixed(1)}\n`
      )
      if (stats) process.stdout.write("  calls    rows  plan µs/item exec µs/item  blks/call  query\n")
      for (const row of rows) {
        process.stdout.write(
          `  ${String(row.calls).padStart(6)} ${String(row.rows).padStart(6)} ${
            ((row.plan * 1000) / n).toFixed(1).padStart(12)
          } ${((row.exec * 1000) / n).toFixed(1).padStart(12)} ${(row.hit / row.calls).toFixed(0).padStart(10)}  ${row.q}\n`
        )
      }
    }
  }
}
const median = (xs) => {
  const v = [...xs].sort((a, b) => a - b)
  return v.length % 2 ? v[(v.length - 1) / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2
}
process.stdout.write("\nmedians (µs per item)\n")
for (const [key, os] of results) {
  process.stdout.write(
    `${key}: worker ${median(os.map((o) => o.worker)).toFixed(0)}, PostgreSQL ${
      median(os.map((o) => o.pg)).toFixed(0)
    }, load ${Math.min(...os.map((o) => o.load)).toFixed(1)}–${Math.max(...os.map((o) => o.load)).toFixed(1)}\n`
  )
}
process.exit(0)
