// A/B helper (not part of the bench): bench 6's binary row with extra V8 flags set the way the binary sets its
// own (internal/entry.ts's tuneV8, before the bundle is compiled), each variant a copy of packages/cli/dist
// (`dist-v<i>`, mtimes kept) whose tuneV8 adds the flags and whose code cache is trained again under them (so
// the cache is accepted, as a build made with those flags would ship it). Runs interleaved (rotating order),
// whole-process CPU of the child (bench/dist/cpu-report.js); every report must be byte-identical.
// node bench/ab/sim-bin-variants.mjs <rounds> [scenario] -- "" "--turbo-force-mid-tier-regalloc" …
import { execFileSync, spawnSync } from "node:child_process"
import fs from "node:fs"
import os from "node:os"
import { fileURLToPath, pathToFileURL } from "node:url"

const root = fileURLToPath(new URL("../../", import.meta.url))
const dash = process.argv.indexOf("--")
const [rounds, scenario = "bench/scenarios/hour-outage.json"] = process.argv.slice(2, dash)
const variants = process.argv.slice(dash + 1)
const report = pathToFileURL(`${root}bench/dist/cpu-report.js`).href
const args = ["simulate", "--catalog", "examples/catalog.json", "--contract", "examples/contract.json", "--scenario",
  scenario, "--seed", "1", "--json"]
const cli = `${root}packages/cli/`
const dirs = variants.map((flags, i) => {
  if (flags === "") return "dist"
  const dir = `dist-v${i}`
  fs.rmSync(cli + dir, { recursive: true, force: true })
  execFileSync("cp", ["-a", `${cli}dist`, cli + dir])
  const entry = `${cli}${dir}/internal/entry.js`
  const text = fs.readFileSync(entry, "utf8").replace("--verify-snapshot-checksum\"", `--verify-snapshot-checksum ${flags}"`)
  fs.writeFileSync(entry, text)
  const inputs = JSON.parse(fs.readFileSync(`${cli}${dir}/bundle/inputs.json`, "utf8"))
  const bundle = `${cli}${dir}/bundle/`
  // the training run of scripts/cli-code-cache.mjs, under this copy's entry (its tuneV8)
  const train = fs.readFileSync(`${root}scripts/cli-code-cache.mjs`, "utf8")
    .replace("packages/cli/dist/internal/entry.js", `packages/cli/${dir}/internal/entry.js`)
  const trainer = `${root}scripts/.train-${dir}.mjs`
  fs.writeFileSync(trainer, train)
  try {
    execFileSync(process.execPath, [trainer, bundle + inputs.script, bundle + inputs.cache.file], { cwd: root, stdio: ["ignore", "ignore", "inherit"] })
  } finally {
    fs.rmSync(trainer)
  }
  return dir
})
const runOnce = (dir) => {
  const r = spawnSync(process.execPath, ["--import", report, `${cli}${dir}/bin.js`, ...args],
    { cwd: root, maxBuffer: 64 * 2 ** 20, encoding: "utf8" })
  const line = r.stderr.split("\n").reverse().find((l) => l.startsWith("rein-bench-cpu "))
  if (r.status !== 0 || line === undefined) throw new Error(r.stderr)
  return { cpu: Math.round(Number(line.slice(15)) / 1000), json: r.stdout }
}
const out = variants.map(() => [])
const load0 = os.loadavg()[0]
let reference
for (let r = 0; r < Number(rounds); r++) {
  for (let k = 0; k < variants.length; k++) {
    const i = (k + r) % variants.length
    const { cpu, json } = runOnce(dirs[i])
    reference ??= json
    if (json !== reference) throw new Error(`variant "${variants[i]}": another report`)
    out[i].push(cpu)
  }
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const paired = (i) => median(out[i].map((x, r) => x - out[0][r]))
variants.forEach((v, i) =>
  console.log(`"${v}": ${median(out[i])} ms (${Math.min(...out[i])}–${Math.max(...out[i])})` +
    (i > 0 ? `; paired vs first ${paired(i)} ms, lower in ${out[i].filter((x, r) => x < out[0][r]).length}/${out[i].length}` : "")))
console.log(`load ${load0.toFixed(1)}–${os.loadavg()[0].toFixed(1)}`)
for (const d of dirs) if (d !== "dist") fs.rmSync(cli + d, { recursive: true, force: true })
