// Bench 12's shape (PgWorker processes on one PostgreSQL), two or more checkouts' builds alternated, CPU per item:
// the workers' (`process.cpuUsage`) and PostgreSQL's, split into the workers' backends and the server's
// background processes (autovacuum, WAL writer, checkpointer, …).
//
//   node bench/ab/ab-distributed.mjs <root>[,<root>…] <rounds> <workers,…> [items] [latency ms] [concurrency]
//
// Each root is a checkout built with `pnpm build && tsc -b bench`; its own `bench/dist/distributed-profile.js`
// (which starts its own TestServer, submits the run with that build and runs its workers) does each run. The
// PostgreSQL processes are those under that probe (its TestServer's postmaster and the postmaster's children),
// sampled from /proc every 50 ms: a backend's CPU is its last sample (it exits with its worker, up to 50 ms
// after its last sample), so the split is a lower bound; the probe's own total (the postmaster's reaped children
// included) is printed beside it. Order alternates every round. Medians per root and worker count, with the load.
import { spawn } from "node:child_process"
import { readdirSync, readFileSync } from "node:fs"
import { loadavg } from "node:os"

const [rootsArg, roundsArg = "3", workersArg = "1,4", items = "2000", latency = "200", concurrency = "16"] =
  process.argv.slice(2)
if (rootsArg === undefined) {
  process.stderr.write("usage: ab-distributed.mjs <root>[,<root>…] [rounds] [workers,…] [items] [latency] [conc]\n")
  process.exit(2)
}
const roots = rootsArg.split(",")
const rounds = Number(roundsArg)
const workerCounts = workersArg.split(",").map(Number)
const TICK = 10_000 // µs per clock tick (USER_HZ 100)

const stat = (pid) => {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, "utf8")
    const f = text.slice(text.lastIndexOf(")") + 2).split(" ")
    return { ppid: Number(f[1]), ticks: Number(f[11]) + Number(f[12]) }
  } catch {
    return undefined
  }
}
const title = (pid) => {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").replace(/\0/g, " ").trim()
  } catch {
    return ""
  }
}
// A PostgreSQL process's kind from its title: `postgres: rein postgres 127.0.0.1(5432) idle` is a client backend.
const kindOf = (t) => {
  if (/^postgres: \S+ \S+ 127\.0\.0\.1/.test(t)) return "backends"
  if (t.includes("autovacuum")) return "autovacuum"
  return "background"
}

// Until the probe's first worker process exists, every sample is the baseline (the migrations and the
// submission are not counted); a process that appears after counts from zero.
const sampleUnder = (probe, seen, state) => {
  const pids = readdirSync("/proc").filter((e) => /^\d+$/.test(e)).map(Number)
  const stats = new Map()
  for (const pid of pids) {
    const s = stat(pid)
    if (s !== undefined) stats.set(pid, s)
  }
  const postmasters = [...stats].filter(([, s]) => s.ppid === probe).map(([pid]) => pid)
    .filter((pid) => title(pid).includes("postgres"))
  const baseline = !state.started
  if (baseline && [...stats].some(([pid, s]) => s.ppid === probe && title(pid).includes("distributed-child"))) {
    state.started = true
  }
  for (const [pid, s] of stats) {
    if (!postmasters.includes(pid) && !postmasters.includes(s.ppid)) continue
    const prev = seen.get(pid)
    const kind = postmasters.includes(pid)
      ? "postmaster"
      : prev?.kind === "backends" || prev?.kind === "autovacuum"
      ? prev.kind
      : kindOf(title(pid))
    seen.set(pid, { kind, ticks: s.ticks, first: baseline ? s.ticks : prev?.first ?? 0 })
  }
}

const once = (root, workers) =>
  new Promise((resolve, reject) => {
    const load = loadavg()[0]
    const child = spawn(process.execPath, [
      `${root}/bench/dist/distributed-profile.js`,
      String(workers),
      items,
      latency,
      concurrency
    ], { stdio: ["ignore", "pipe", "inherit"] })
    let out = ""
    const seen = new Map()
    const state = { started: false }
    let measuring = false
    child.stdout.on("data", (b) => (out += b.toString()))
    // The probe prints nothing until its workers ended; the split counts from the first sample after the
    // server is up (the submission's backend CPU included: subtracted below with each pid's first sample).
    const timer = setInterval(() => {
      sampleUnder(child.pid, seen, state)
      measuring = state.started
    }, 50)
    child.on("exit", (code) => {
      clearInterval(timer)
      if (code !== 0) return reject(new Error(`${root}: probe exited with ${code}`))
      const m = out.match(
        /(\d+) done, (\d+) ms wall .*?, (\d+) µs CPU\/item in the workers, (\d+) in PostgreSQL; load ([\d.]+) → ([\d.]+)/
      )
      if (m === null || !measuring) return reject(new Error(`${root}: no result in ${out}`))
      const done = Number(m[1])
      const split = { backends: 0, autovacuum: 0, background: 0 }
      for (const p of seen.values()) if (p.kind !== "postmaster") split[p.kind] += ((p.ticks - p.first) * TICK) / done
      resolve({
        wall: Number(m[2]),
        worker: Number(m[3]),
        pg: Number(m[4]),
        ...split,
        load: (load + Number(m[6])) / 2
      })
    })
  })

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2
}

const results = new Map()
for (let r = 0; r < rounds; r++) {
  for (const workers of workerCounts) {
    const order = r % 2 === 0 ? roots : [...roots].reverse()
    for (const root of order) {
      const o = await once(root, workers)
      const key = `${root} w${workers}`
      results.set(key, [...(results.get(key) ?? []), o])
      process.stdout.write(
        `round ${r + 1} ${key}: worker ${o.worker} µs/item, PostgreSQL ${o.pg} (backends ${
          o.backends.toFixed(0)
        }, autovacuum ${o.autovacuum.toFixed(0)}, other ${o.background.toFixed(0)}), wall ${o.wall} ms, load ${
          o.load.toFixed(1)
        }\n`
      )
    }
  }
}
process.stdout.write("\nmedians (µs per item)\n")
for (const [key, os] of results) {
  const m = (f) => median(os.map(f)).toFixed(0)
  process.stdout.write(
    `${key}: worker ${m((o) => o.worker)}, PostgreSQL ${m((o) => o.pg)} (backends ${m((o) => o.backends)}, autovacuum ${
      m((o) => o.autovacuum)
    }, other ${m((o) => o.background)}), wall ${m((o) => o.wall)} ms, load ${
      Math.min(...os.map((o) => o.load)).toFixed(1)
    }–${Math.max(...os.map((o) => o.load)).toFixed(1)}\n`
  )
}
