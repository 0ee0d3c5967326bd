// A/B helper (not part of the bench): bench 6's hour, cold, each run the first of a fresh process (as the binary
// runs it, with the V8 flag the binary sets for itself), module loading excluded: bare `Rein.execute`'s hour (the
// cold floor's), the simulation of `bench/ab/hour-ok.json` (bench 6's hour without its outage: the simulator over
// the same requests) and of `bench/scenarios/hour-outage.json` (bench 6's). Rows rotated every round; CPU of the
// whole process (every thread) over the run, medians with min–max, and the load.
// node bench/ab/sim-cold-split.mjs [rounds=11] [checkout root,…]   (`ROWS=rein,ok,outage`)
import { execFileSync } from "node:child_process"
import os from "node:os"
import { fileURLToPath, pathToFileURL } from "node:url"
if (process.env.SIM_COLD_CHILD !== undefined) {
  const [root, row] = process.env.SIM_COLD_CHILD.split(",")
  const { checkout } = await import("./sim-checkout.mjs")
  const side = await checkout(root)
  const { cli, Effect, catalog, contract } = side
  let run
  if (row === "rein") {
    const { coldReinHour } = await import(pathToFileURL(`${root}/bench/dist/simulation-floors.js`).href)
    const health = cli.Scenario.healthConfig(side.scenario("bench/scenarios/hour-outage.json"))
    run = await coldReinHour(root, { catalog, contract, health })
  } else {
    const scenario = side.scenario(row === "ok" ? "bench/ab/hour-ok.json" : "bench/scenarios/hour-outage.json")
    run = async () => {
      const r = await Effect.runPromise(cli.Simulate.simulate(catalog, contract, scenario, 1))
      if (r.requests !== 10_000) throw new Error("not 10,000 requests")
    }
  }
  const c0 = process.cpuUsage()
  await run()
  const c = process.cpuUsage(c0)
  process.stdout.write(`${(c.user + c.system) / 1000}\n`)
  process.exit(0)
}
const rounds = Number(process.argv[2] ?? 11)
const roots = (process.argv[3] ?? fileURLToPath(new URL("../../", import.meta.url))).split(",")
const rows = (process.env.ROWS ?? "rein,ok,outage").split(",")
const cases = roots.flatMap((root) => rows.map((row) => ({ root, row, key: `${roots.length > 1 ? `${root} ` : ""}${row}` })))
const cpu = Object.fromEntries(cases.map((c) => [c.key, []]))
const load0 = os.loadavg()[0]
for (let r = 0; r < rounds; r++) {
  const order = cases.map((_, i) => cases[(i + r) % cases.length])
  for (const c of r % 2 === 0 ? order : order.reverse()) {
    const out = execFileSync(process.execPath, ["--no-allocation-site-pretenuring", fileURLToPath(import.meta.url)], {
      env: { ...process.env, SIM_COLD_CHILD: `${c.root},${c.row}` }
    })
    cpu[c.key].push(Number(String(out).trim()))
  }
}
const med = (xs) => { const s = [...xs].sort((a, b) => a - b); return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2 }
for (const c of cases) {
  const xs = cpu[c.key]
  console.log(`${c.key.padEnd(10)} ${med(xs).toFixed(0)} ms (${Math.min(...xs).toFixed(0)}–${Math.max(...xs).toFixed(0)})`)
}
console.log(`${rounds} rounds, load ${load0.toFixed(1)}–${os.loadavg()[0].toFixed(1)}`)
