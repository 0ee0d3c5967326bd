// A/B helper (not part of the bench): where bench 6's in-process CPU goes by thread, and what the collector does.
// Each variant runs in its own child process (`node <flags> sim-threads.mjs --child …`), which decodes bench 6's
// inputs, runs `Simulate.simulate` of the hour once cold and `warm` times more, and for every run reads each
// thread's CPU (/proc/self/task/*/stat, utime + stime, 10 ms ticks) before and after, grouped by the thread's name
// (`node`: the main thread; `V8 DefaultWorke`: V8's platform workers: parallel scavenge, concurrent marking and
// sweeping, concurrent TurboFan; `libuv-worker`…), the process's CPU (`process.cpuUsage`), the wall time, the GCs
// by kind with their main-thread pause (`PerformanceObserver`), and the bytes promoted: the old generation's growth
// over each scavenge (`v8.GCProfiler`: heap space sizes before and after every GC). Children alternate, variant by
// variant, `rounds` times; medians (min–max) of the warm runs per variant, and of the cold runs.
//
// node bench/ab/sim-threads.mjs [rounds=3] [warm=3] [variant…]
//   a variant is a comma-separated list of node flags, or `default` (none); e.g.
//   node bench/ab/sim-threads.mjs 3 3 default --single-threaded-gc --no-concurrent-recompilation \
//     --no-allocation-site-pretenuring --single-threaded
// FLOORS=1 runs bench 6's floor rows between the hours, as the bench does (bench/dist built: `tsc -b bench`).
// GC=1 runs a full collection before every hour, as the bench's `collect()` does (add --expose-gc to the variant).
// SCENARIO=<path> runs another scenario (default bench/scenarios/hour-outage.json); ROOT=<checkout> another build.
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import os from "node:os"
import { fileURLToPath } from "node:url"

const here = fileURLToPath(import.meta.url)

const threads = () => {
  const out = new Map()
  for (const t of fs.readdirSync("/proc/self/task")) {
    try {
      const stat = fs.readFileSync(`/proc/self/task/${t}/stat`, "utf8")
      const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"))
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
      // Thread names are all `node` on Node 20: the others are keyed by their creation order (V8's platform
      // workers are made at start-up, before any libuv pool thread).
      const key = t === String(process.pid) ? "main" : `${name}#${Number(t) - process.pid}`
      out.set(key, (out.get(key) ?? 0) + (Number(f[11]) + Number(f[12])) * 10)
    } catch {
      // a thread that ended between the listing and the read
    }
  }
  return out
}

const child = async () => {
  const [rootArg, warmArg] = process.argv.slice(3)
  const { checkout } = await import("./sim-checkout.mjs")
  const { GCProfiler } = await import("node:v8")
  const { PerformanceObserver } = await import("node:perf_hooks")
  const side = await checkout(rootArg === "-" ? undefined : rootArg)
  const scenario = side.scenario(process.env.SCENARIO ?? "bench/scenarios/hour-outage.json")
  const gcs = []
  const obs = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) gcs.push({ kind: e.detail?.kind ?? e.kind, ms: e.duration })
  })
  obs.observe({ entryTypes: ["gc"] })
  const kinds = { 1: "scavenge", 2: "markCompact", 4: "incremental", 8: "weak", 16: "minorMC" }
  // FLOORS=1: bench 6's floor rows run after every simulated hour, as the bench's rounds run them in its process.
  const floorRows = process.env.FLOORS === "1"
    ? await (await import(`${side.root}/bench/dist/simulation-floors.js`)).floors(side.root, {
      catalog: side.catalog,
      contract: side.contract,
      health: side.cli.Scenario.healthConfig(scenario)
    })
    : []
  const runs = []
  for (let r = 0; r <= Number(warmArg); r++) {
    if (r > 0) for (const f of floorRows) await f.run()
    if (process.env.GC === "1") globalThis.gc() // as the bench's `collect()` before every run (node --expose-gc)
    await new Promise((resolve) => setImmediate(resolve))
    obs.takeRecords()
    gcs.length = 0
    const profiler = new GCProfiler()
    profiler.start()
    const t0 = threads()
    const c0 = process.cpuUsage()
    const w0 = performance.now()
    const report = await side.Effect.runPromise(side.cli.Simulate.simulate(side.catalog, side.contract, scenario, 1))
    const wall = performance.now() - w0
    const c = process.cpuUsage(c0)
    const t1 = threads()
    const { statistics } = profiler.stop()
    await new Promise((resolve) => setImmediate(resolve)) // the observer's entries
    for (const e of obs.takeRecords()) gcs.push({ kind: e.detail?.kind ?? e.kind, ms: e.duration })
    if (report.requests < 1) throw new Error("no requests")
    const byThread = {}
    for (const [k, v] of t1) byThread[k] = v - (t0.get(k) ?? 0)
    let promoted = 0
    let scavenges = 0
    let majors = 0
    const old = (s) => s.heapSpaceStatistics.filter((x) => x.spaceName === "old_space" || x.spaceName === "code_space" ||
      x.spaceName === "map_space" || x.spaceName === "large_object_space")
      .reduce((sum, x) => sum + x.spaceUsedSize, 0)
    for (const g of statistics) {
      if (g.gcType === "Scavenge") {
        scavenges++
        promoted += Math.max(0, old(g.afterGC) - old(g.beforeGC))
      } else if (g.gcType === "MarkSweepCompact") majors++
    }
    const pauses = {}
    for (const g of gcs) {
      const k = kinds[g.kind] ?? String(g.kind)
      pauses[k] ??= { n: 0, ms: 0 }
      pauses[k].n++
      pauses[k].ms += g.ms
    }
    runs.push({
      cpu: (c.user + c.system) / 1000,
      wall,
      byThread,
      scavenges,
      majors,
      promotedMB: promoted / 2 ** 20,
      pauses,
      requests: report.requests
    })
  }
  process.stdout.write(JSON.stringify(runs))
}

const parent = () => {
  const rounds = Number(process.argv[2] ?? 3)
  const warm = Number(process.argv[3] ?? 3)
  const variants = process.argv.length > 4 ? process.argv.slice(4) : ["default"]
  const root = process.env.ROOT ?? "-"
  const load0 = os.loadavg()[0]
  const got = new Map(variants.map((v) => [v, { cold: [], warm: [] }]))
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 === 0 ? variants : [...variants].reverse()
    for (const v of order) {
      const flags = v === "default" ? [] : v.split(",")
      const p = spawnSync(process.execPath, [...flags, here, "--child", root, String(warm)], {
        encoding: "utf8",
        maxBuffer: 64 * 2 ** 20,
        env: process.env
      })
      if (p.status !== 0) {
        console.log(`${v}: exit ${p.status} ${p.signal ?? ""}\n${p.stderr.slice(-2000)}`)
        got.delete(v)
        continue
      }
      const runs = JSON.parse(p.stdout)
      got.get(v)?.cold.push(runs[0])
      got.get(v)?.warm.push(...runs.slice(1))
    }
  }
  const med = (xs) => {
    const s = [...xs].sort((a, b) => a - b)
    return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2
  }
  const show = (xs, d = 0) => `${med(xs).toFixed(d)} (${Math.min(...xs).toFixed(d)}–${Math.max(...xs).toFixed(d)})`
  const describe = (runs) => {
    const names = [...new Set(runs.flatMap((x) => Object.keys(x.byThread)))]
    const others = runs.map((x) => Object.entries(x.byThread).filter(([k]) => k !== "main").reduce((s, [, v]) => s + v, 0))
    const lines = [
      `    CPU ${show(runs.map((x) => x.cpu))} ms, wall ${show(runs.map((x) => x.wall))} ms; main thread ${
        show(runs.map((x) => x.byThread.main ?? 0))
      }, other threads ${show(others)}`,
      `    by thread: ${
        names.filter((n) => n !== "main").map((n) => `${n} ${show(runs.map((x) => x.byThread[n] ?? 0))}`).join("; ")
      }`,
      `    scavenges ${show(runs.map((x) => x.scavenges))}, mark-compacts ${show(runs.map((x) => x.majors))}, promoted ${
        show(runs.map((x) => x.promotedMB), 1)
      } MB`,
      `    main-thread GC pauses: ${
        [...new Set(runs.flatMap((x) => Object.keys(x.pauses)))].map((k) =>
          `${k} ${show(runs.map((x) => x.pauses[k]?.n ?? 0))}× ${show(runs.map((x) => x.pauses[k]?.ms ?? 0))} ms`
        ).join("; ")
      }`
    ]
    return lines.join("\n")
  }
  for (const [v, { cold, warm: w }] of got) {
    console.log(`${v}:`)
    console.log(`  warm runs (${w.length}):\n${describe(w)}`)
    console.log(`  cold runs (${cold.length}):\n${describe(cold)}`)
  }
  console.log(`${rounds} rounds × ${warm} warm runs | load ${load0.toFixed(1)}–${os.loadavg()[0].toFixed(1)}`)
}

if (process.argv[2] === "--child") await child()
else parent()
