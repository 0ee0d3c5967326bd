// A/B helper (not part of the bench): the JIT's work in bench 6's hour through the binary, this checkout against
// another (as sim-bin-other.mjs, which times them): one run each with --trace-opt --trace-deopt, the TurboFan
// compilations and the deoptimizations by reason, then each deoptimization of this checkout with the bundle line it
// happened at (the same on any load; `ONLY=counts` leaves the lines out).
// node bench/ab/sim-bin-jit.mjs <other checkout root>
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

const root = fileURLToPath(new URL("../../", import.meta.url))
const args = ["simulate", "--catalog", "examples/catalog.json", "--contract", "examples/contract.json", "--scenario",
  "bench/scenarios/hour-outage.json", "--seed", "1", "--json"]
// V8's trace goes to stdout: into a file (through a pipe, the end of it is lost when the binary exits).
const trace = (checkout, flags) => {
  const file = path.join(os.tmpdir(), `sim-bin-jit-${process.pid}.txt`)
  const fd = fs.openSync(file, "w")
  spawnSync(process.execPath, [...flags, `${checkout}/packages/cli/dist/bin.js`, ...args], {
    cwd: root, stdio: ["ignore", fd, "ignore"]
  })
  fs.closeSync(fd)
  const text = fs.readFileSync(file, "utf8")
  fs.rmSync(file)
  return text
}
for (const [side, checkout] of [["other", process.argv[2]], ["this", root]]) {
  const text = trace(checkout, ["--trace-opt", "--trace-deopt"])
  const compiled = text.match(/\[completed optimizing /g)?.length ?? 0
  const reasons = {}
  for (const m of text.matchAll(/\[bailout \(kind: [^,]*, reason: ([^)]*)\)/g)) reasons[m[1]] = (reasons[m[1]] ?? 0) + 1
  const deopts = Object.values(reasons).reduce((s, n) => s + n, 0)
  console.log(`${side}: ${compiled} TurboFan compilations, ${deopts} deopts ${JSON.stringify(reasons)}`)
}
if (process.env.ONLY !== "counts") {
  const bundle = JSON.parse(fs.readFileSync(`${root}packages/cli/dist/bundle/inputs.json`, "utf8")).script
  const lines = fs.readFileSync(`${root}packages/cli/dist/bundle/${bundle}`, "utf8").split("\n")
  const verbose = trace(root, ["--trace-deopt-verbose"]).split("\n")
  verbose.forEach((l, i) => {
    const [, reason, fn] = l.match(/^\[bailout \(kind: [^,]*, reason: ([^)]*)\).*?<JSFunction ([^ >]*)/) ?? []
    const line = verbose.slice(i + 1).find((t) => t.includes(";;; deoptimize at"))?.match(/:(\d+):\d+>/)?.[1]
    if (reason !== undefined) console.log(`  ${fn} [${reason}] ${line}: ${lines[Number(line) - 1]?.trim().slice(0, 110)}`)
  })
}
