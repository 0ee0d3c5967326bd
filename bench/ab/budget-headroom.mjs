// PgBudget's crash-ceiling headroom, before/after: statements per reservation of a heavy user, and how long
// another process's refusal waits (PgWorker's `watchBudget`: every 100 ms, up to 1 s) near the budget's end.
//
//   node bench/ab/budget-headroom.mjs <postgres dist dir>,<postgres dist dir> [rounds]
//
// One server with pg_stat_statements (as pg-statements.mjs starts it). Per round and dist (alternated):
// - heavy: one process reserves + settles ($0.001 worst, $0.0004 actual) with 8 in flight and a 2 ms call for
//   3 s on a $100 budget (slice 0.01: a top-up every ~2,500 reservations); statements (BEGIN/COMMIT included) per reservation, CPU µs per reservation.
// - fleet: the same on bench 9's budget ($1e6, slice 1e-4).
// - end: two processes on a $1 budget (END_CAP) : B reserves ($0.01 worst, $0.004 actual) with 8 in flight and a
//   200 ms call (LAT) until refused; A asks for one reservation of $0.05 (ASK, $0.02 actual) every 50 ms; each
//   refusal of A waits as `watchBudget` does: until
//   the budget can grant it nowhere ("spent": the run would stop), A's own view admits it ("here"), or 1 s
//   ("bound"). Prints each refusal's wait and how it ended.
import { spawn, spawnSync } from "node:child_process"
import { chownSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { loadavg, tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { pathToFileURL } from "node:url"

const [distsArg, roundsArg = "3"] = process.argv.slice(2)
const dists = distsArg.split(",").map((d) => resolve(d))
const BIN = "/usr/lib/postgresql/15/bin"
const passwd = readFileSync("/etc/passwd", "utf8").split("\n").find((l) => l.startsWith("postgres:")).split(":")
const as = process.getuid() === 0 ? { uid: Number(passwd[2]), gid: Number(passwd[3]) } : {}
const dir = mkdtempSync(join(tmpdir(), "rein-headroom-"))
if (as.uid !== undefined) chownSync(dir, as.uid, as.gid)
spawnSync(`${BIN}/initdb`, ["-D", join(dir, "data"), "-U", "rein", "--auth=trust", "--no-sync", "--locale=C"], {
  ...as,
  stdio: "ignore"
})
const port = 20_000 + Math.floor(Math.random() * 20_000)
const server = spawn(`${BIN}/postgres`, [
  "-D", join(dir, "data"), "-p", String(port), "-k", dir, "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off",
  "-c", "synchronous_commit=off", "-c", "shared_preload_libraries=pg_stat_statements"
], { ...as, stdio: "ignore" })
process.on("exit", () => {
  server.kill("SIGQUIT")
  setTimeout(() => rmSync(dir, { recursive: true, force: true }), 500)
})
for (let i = 0; i < 200; i++) {
  if (spawnSync(`${BIN}/pg_isready`, ["-q", "-h", "127.0.0.1", "-p", String(port)]).status === 0) break
  await new Promise((r) => setTimeout(r, 50))
}
const url = `postgres://rein@127.0.0.1:${port}/postgres`
const pkg = resolve(import.meta.dirname, "../../packages/postgres")
const at = (p) => import(pathToFileURL(join(pkg, p)).href)
const { PgClient } = await at("node_modules/@effect/sql-pg/dist/esm/index.js")
const { SqlClient } = await at("node_modules/@effect/sql/dist/esm/index.js")
const { Effect, Exit, Layer, Redacted, Scope } = await at("node_modules/effect/dist/esm/index.js")
const layer = Layer.orDie(PgClient.layer({ url: Redacted.make(url), maxConnections: 10 }))
const scope = Effect.runSync(Scope.make())
const runtime = await Effect.runPromise(Layer.toRuntime(layer).pipe(Scope.extend(scope)))
const run = (effect) => Effect.runPromise(Effect.provide(effect, runtime))
const sql = await run(SqlClient.SqlClient)
const first = await import(pathToFileURL(join(dists[0], "index.js")).href)
await run(first.Migrations.run)
await run(sql`CREATE EXTENSION IF NOT EXISTS pg_stat_statements`)
const statements = async () =>
  Number((await run(sql`SELECT coalesce(sum(calls), 0)::float8 AS n FROM pg_stat_statements
    WHERE query NOT LIKE '%pg_stat_statements%'`))[0].n)

let next = 0
const ASK = Number(process.env.ASK ?? 0.05)
const LAT = Number(process.env.LAT ?? 200)
const END_CAP = Number(process.env.END_CAP ?? 1)
// Every budget of a scenario is closed with it (one left open would heartbeat into the next one's counts).
let open = Effect.runSync(Scope.make())
const make = (d, options) => run(Effect.provideService(d.pg.PgBudget.make(options), Scope.Scope, open))
const closeAll = async () => {
  await Effect.runPromise(Scope.close(open, Exit.void))
  open = Effect.runSync(Scope.make())
}
const loop = (budget, worst, actual, latency, until) =>
  Effect.gen(function*() {
    let n = 0
    while (Date.now() < until) {
      const hold = yield* Effect.either(budget.reserve({ cost: worst, tokens: null }))
      if (hold._tag === "Left") return n
      if (latency > 0) yield* Effect.sleep(latency)
      yield* budget.settle(hold.right, { cost: actual, tokens: 0 })
      n++
    }
    return n
  })
const heavy = async (d, cap, slice) => {
  const budget = await make(d, { name: `heavy-${++next}`, cost: cap, slice })
  await run(sql`SELECT pg_stat_statements_reset()`)
  const cpu = process.cpuUsage()
  const until = Date.now() + 3000
  const counts = await run(Effect.all(Array.from({ length: 8 }, () => loop(budget, 0.001, 0.0004, 2, until)), {
    concurrency: "unbounded"
  }))
  const used = process.cpuUsage(cpu)
  const n = counts.reduce((a, b) => a + b, 0)
  const total = await statements()
  if (process.env.DEBUG) {
    const rows = await run(sql`SELECT calls, left(regexp_replace(query, '\s+', ' ', 'g'), 60) AS q
      FROM pg_stat_statements WHERE query NOT LIKE '%pg_stat_statements%' ORDER BY calls DESC LIMIT 8`)
    console.log(d.dist, cap, rows.map((r) => `${r.calls} ${r.q}`).join("\n  "))
  }
  await closeAll()
  return { perReservation: total / n, cpuMicros: (used.user + used.system) / n, n }
}
const end = async (d) => {
  const name = `end-${++next}`
  const b = await make(d, { name, cost: END_CAP })
  const a = await make(d, { name, cost: END_CAP })
  const reader = d.grantable.readerOf(a)
  const waits = []
  const busy = run(Effect.all(Array.from({ length: 8 }, () => loop(b, 0.01, 0.004, LAT, Infinity)), {
    concurrency: "unbounded"
  }))
  const until = Date.now() + 20_000
  const t0 = Date.now()
  busy.then(() => process.env.DEBUG && console.log("B done", Date.now() - t0))
  while (Date.now() < until) {
    const hold = await run(Effect.either(a.reserve({ cost: ASK, tokens: null })))
    if (hold._tag === "Right") await run(a.settle(hold.right, { cost: ASK * 0.4, tokens: 0 }))
    else {
      const started = Date.now()
      if (process.env.DEBUG) {
        const rows = await run(sql`SELECT holder, cost_leased / 1e9 AS l, cost_exposed / 1e9 AS k,
          (cost_charged + cost_reserved) / 1e9 AS u, (SELECT (cost_cap - cost_spent - cost_leased) / 1e9
          FROM rein_budgets WHERE name = ${name}) AS pool FROM rein_budget_leases WHERE budget = ${name}`)
        console.log(started - t0, JSON.stringify(rows), hold.left)
      }
      let how = "bound"
      while (Date.now() - started < 1000) {
        const g = await run(reader)
        if (g.cost + 1e-12 < ASK) {
          how = "spent"
          break
        }
        if (a.unsafeLeft().cost + 1e-12 >= ASK) {
          how = "here"
          break
        }
        await new Promise((r) => setTimeout(r, 100))
      }
      waits.push(`${Date.now() - started}ms ${how}`)
      if (how === "spent") break
    }
    await new Promise((r) => setTimeout(r, 50))
  }
  await busy
  await closeAll()
  return waits
}

const builds = await Promise.all(dists.map(async (dist) => ({
  dist,
  pg: await import(pathToFileURL(join(dist, "index.js")).href),
  grantable: await import(pathToFileURL(join(dist, "internal/grantable.js")).href)
})))
const rounds = Number(roundsArg)
const results = new Map(dists.map((d) => [d, { heavy: [], fleet: [], cpu: [], fleetCpu: [] }]))
for (let r = 0; r < rounds; r++) {
  for (const d of r % 2 === 0 ? builds : [...builds].reverse()) {
    const h = await heavy(d, 100, 0.01)
    const f = await heavy(d, 1e6, 1e-4)
    const e = await end(d)
    const out = results.get(d.dist)
    out.heavy.push(h.perReservation)
    out.fleet.push(f.perReservation)
    out.cpu.push(h.cpuMicros)
    out.fleetCpu.push(f.cpuMicros)
    console.log(
      `round ${r} ${d.dist}: heavy ${h.perReservation.toFixed(4)} statements/reservation (${h.n}, ${
        h.cpuMicros.toFixed(0)
      } µs CPU), fleet ${f.perReservation.toFixed(4)} (${f.n}, ${f.cpuMicros.toFixed(0)} µs); refusals: ${
        e.join(", ")
      }; load ${loadavg()[0].toFixed(2)}`
    )
  }
}
const med = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
for (const [d, o] of results) {
  console.log(
    `${d}: median heavy ${med(o.heavy).toFixed(4)} statements/reservation, ${med(o.cpu).toFixed(0)} µs CPU; fleet ${
      med(o.fleet).toFixed(4)
    }, ${med(o.fleetCpu).toFixed(0)} µs CPU`
  )
}
await Effect.runPromise(Scope.close(scope, Exit.void))
process.exit(0)
