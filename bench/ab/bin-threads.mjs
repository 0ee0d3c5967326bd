// A/B helper (not part of the bench): where the binary's CPU goes by thread. Runs `rein simulate` of bench 6's
// hour and of one virtual second through packages/cli/dist/bin.js (this file preloaded into the child, which
// then reads /proc/self/task/*/stat on exit), alternated, and prints the medians (min–max) of the whole
// process's CPU, the main thread's and the rest (V8's background threads: concurrent TurboFan compilation,
// parallel and concurrent GC; libuv's pool), with the load. Extra node flags for the child after `--` (a flag
// that V8 hashes makes the code cache rejected: compare against a run with a harmless hashed flag).
// node bench/ab/bin-threads.mjs [rounds] [-- <node flags…>]
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import os from "node:os"
import { fileURLToPath } from "node:url"

if (process.env.REIN_THREADS_CHILD !== undefined) {
  process.on("exit", () => {
    const ticks = (task) => {
      const stat = fs.readFileSync(`/proc/self/task/${task}/stat`, "utf8")
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
      return (Number(fields[11]) + Number(fields[12])) * 10 // utime + stime, at 100 ticks per second
    }
    const tasks = fs.readdirSync("/proc/self/task")
    const main = ticks(String(process.pid))
    const rest = tasks.filter((t) => t !== String(process.pid)).reduce((sum, t) => sum + ticks(t), 0)
    const u = process.cpuUsage()
    process.stderr.write(`\nrein-threads ${JSON.stringify({ total: Math.round((u.user + u.system) / 1000), main, rest })}\n`)
  })
} else {
  const root = fileURLToPath(new URL("../../", import.meta.url))
  const dash = process.argv.indexOf("--")
  const rounds = Number(process.argv[2] === "--" ? 7 : process.argv[2] ?? 7)
  const flags = dash < 0 ? [] : process.argv.slice(dash + 1)
  const scenarios = { hour: "bench/scenarios/hour-outage.json", second: "bench/scenarios/second.json" }
  const runOnce = (scenario) => {
    const r = spawnSync(process.execPath, [...flags, "--import", import.meta.url, "packages/cli/dist/bin.js", "simulate",
      "--catalog", "examples/catalog.json", "--contract", "examples/contract.json", "--scenario", scenario, "--seed",
      "1", "--json"], { cwd: root, encoding: "utf8", maxBuffer: 64 * 2 ** 20, env: { ...process.env, REIN_THREADS_CHILD: "1" } })
    const line = r.stderr.split("\n").find((l) => l.startsWith("rein-threads "))
    if (r.status !== 0 || line === undefined) throw new Error(r.stderr)
    return JSON.parse(line.slice(13))
  }
  const out = { hour: [], second: [] }
  const load0 = os.loadavg()[0]
  for (let r = 0; r < rounds; r++) {
    for (const name of r % 2 === 0 ? ["hour", "second"] : ["second", "hour"]) out[name].push(runOnce(scenarios[name]))
  }
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
  const fmt = (xs) => `${median(xs)} (${Math.min(...xs)}–${Math.max(...xs)})`
  for (const [name, runs] of Object.entries(out)) {
    const of = (k) => fmt(runs.map((x) => x[k]))
    console.log(`${name}: total ${of("total")} ms | main thread ${of("main")} | other threads ${of("rest")}`)
  }
  console.log(`flags ${JSON.stringify(flags)} | ${rounds} rounds | load ${load0.toFixed(1)}–${os.loadavg()[0].toFixed(1)}`)
}
