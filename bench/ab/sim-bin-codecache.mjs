// A/B helper (not part of the bench): a prototype of the binary with a V8 code cache. Bundles the command tree
// as one CommonJS file (esbuild) into a temporary directory, runs it through `vm.Script` with the cache a
// training run (one virtual second, bench/scenarios/second.json) left, and times it against this checkout's
// bin.js, interleaved, on one second and on the hour (the child's own CPU, bench/dist/cpu-report.js); checks
// the reports are byte-identical. node bench/ab/sim-bin-codecache.mjs [rounds]
import { spawnSync } from "node:child_process"
import * as esbuild from "esbuild"
import * as fs from "node:fs"
import os from "node:os"
import { fileURLToPath, pathToFileURL } from "node:url"

const root = fileURLToPath(new URL("../../", import.meta.url))
const dir = fs.mkdtempSync(`${os.tmpdir()}/rein-codecache-`)
await esbuild.build({ absWorkingDir: root, entryPoints: ["packages/cli/dist/internal/node.js"], bundle: true,
  format: "cjs", platform: "node", target: "node20", outfile: `${dir}/node.cjs`, logLevel: "error" })
fs.writeFileSync(`${dir}/run.cjs`, `const fs = require("node:fs"), vm = require("node:vm"), Module = require("node:module")
require("node:v8").setFlagsFromString("--no-allocation-site-pretenuring")
const file = __dirname + "/node.cjs", cache = file + ".cache"
const cachedData = fs.existsSync(cache) ? fs.readFileSync(cache) : undefined
const script = new vm.Script(Module.wrap(fs.readFileSync(file, "utf8")), { filename: file, cachedData })
if (cachedData !== undefined && script.cachedDataRejected) process.stderr.write("code cache rejected\\n")
const mod = { exports: {} }
script.runInThisContext()(mod.exports, Module.createRequire(file), mod, file, __dirname)
mod.exports.start(process.argv)
if (cachedData === undefined) process.on("exit", () => fs.writeFileSync(cache, script.createCachedData()))
`)
const report = pathToFileURL(`${root}bench/dist/cpu-report.js`).href
const args = (scenario) => ["simulate", "--catalog", "examples/catalog.json", "--contract", "examples/contract.json",
  "--scenario", scenario, "--seed", "1", "--json"]
const runOnce = (main, scenario) => {
  const r = spawnSync(process.execPath, ["--import", report, main, ...args(scenario)], { cwd: root, encoding: "utf8",
    maxBuffer: 64 * 2 ** 20 })
  const line = r.stderr.split("\n").reverse().find((l) => l.startsWith("rein-bench-cpu "))
  if (r.status !== 0 || line === undefined || r.stderr.includes("rejected")) throw new Error(r.stderr)
  return { cpu: Math.round(Number(line.slice(15)) / 1000), json: r.stdout }
}
runOnce(`${dir}/run.cjs`, "bench/scenarios/second.json") // the training run: writes the cache
const sides = { bin: `${root}packages/cli/dist/bin.js`, cached: `${dir}/run.cjs` }
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
for (const scenario of ["bench/scenarios/second.json", "bench/scenarios/hour-outage.json"]) {
  const out = { bin: [], cached: [] }
  const load0 = os.loadavg()[0]
  let reference
  for (let r = 0; r < Number(process.argv[2] ?? 7); r++) {
    for (const side of r % 2 === 0 ? ["bin", "cached"] : ["cached", "bin"]) {
      const { cpu, json } = runOnce(sides[side], scenario)
      reference ??= json
      if (json !== reference) throw new Error(`${side}: another report`)
      out[side].push(cpu)
    }
  }
  const fmt = (xs) => `${median(xs)} ms (${Math.min(...xs)}–${Math.max(...xs)})`
  console.log(`${scenario}: bin.js ${fmt(out.bin)} | CommonJS bundle + code cache ${fmt(out.cached)} | load ${
    load0.toFixed(1)}–${os.loadavg()[0].toFixed(1)}`)
}
fs.rmSync(dir, { recursive: true, force: true })
