// A/B helper (not part of the bench): every scenario of examples/scenarios and bench/scenarios through this
// checkout's binary and another's (seed 1, --json and text), and a few other commands: stdout, stderr and
// exit code must be the same. node bench/ab/sim-bin-same.mjs <other checkout root>
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import { fileURLToPath } from "node:url"

const root = fileURLToPath(new URL("../../", import.meta.url))
const inputs = ["--catalog", "examples/catalog.json", "--contract", "examples/contract.json"]
const scenarios = ["examples/scenarios", "bench/scenarios"].flatMap((dir) =>
  fs.readdirSync(`${root}${dir}`).filter((f) => f.endsWith(".json")).map((f) => `${dir}/${f}`))
const lines = [
  ...scenarios.flatMap((s) => [["simulate", ...inputs, "--scenario", s, "--seed", "1", "--json"],
    ["simulate", ...inputs, "--scenario", s, "--seed", "1"]]),
  ["plan", ...inputs, "--json"], ["--help"], ["batch", "--help"], ["simulate", "--catalog", "nope.json"], ["frobnicate"],
  ["status", "--store", "postgres://127.0.0.1:1/none", "--run", "r1"]
]
const run = (checkout, args) => {
  const r = spawnSync(process.execPath, [`${checkout}/packages/cli/dist/bin.js`, ...args], { cwd: root,
    encoding: "utf8", maxBuffer: 64 * 2 ** 20 })
  return JSON.stringify([r.status, r.stdout, r.stderr])
}
let same = 0
for (const args of lines) {
  if (run(process.argv[2], args) === run(root, args)) same++
  else console.log(`differs: ${args.join(" ")}`)
}
console.log(`${same} of ${lines.length} command lines identical (stdout, stderr, exit code)`)
