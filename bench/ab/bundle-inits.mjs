// A/B helper (not part of the bench): where the binary's module top levels spend their CPU. Copies the built
// CommonJS bundle (packages/cli/dist/bundle) with esbuild's lazy module initializers (`__esm`, `__commonJS`)
// timed, makes its code cache as the build does (scripts/cli-code-cache.mjs), runs `rein <args>` from it
// `rounds` times in fresh processes, and prints the self CPU of each module's top level (BY=file) or package
// (default), averaged; "(top)" is the code hoisted out of every initializer (the modules no dynamic import
// reaches). Each initializer costs two `process.cpuUsage()` calls (~1–2 ms in all); GC is charged to whatever
// module was running.
// node bench/ab/bundle-inits.mjs [rounds] [top] -- <rein args…>   (default: simulate of bench/scenarios/second.json)
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"

const root = fileURLToPath(new URL("../../", import.meta.url))
const dash = process.argv.indexOf("--")
const [rounds = 5, top = 30] = process.argv.slice(2, dash < 0 ? undefined : dash).map(Number)
const args = dash < 0
  ? ["simulate", "--catalog", "examples/catalog.json", "--contract", "examples/contract.json", "--scenario",
    "bench/scenarios/second.json", "--seed", "1", "--json"]
  : process.argv.slice(dash + 1)

if (process.env.REIN_INITS_CHILD !== undefined) {
  // The child: run the instrumented script as the binary does, and print the self CPU per initializer.
  const entry = await import(pathToFileURL(`${root}packages/cli/dist/internal/entry.js`).href)
  const [script, cache] = process.env.REIN_INITS_CHILD.split(",")
  entry.tuneV8()
  const { script: compiled, tree } = entry.compileBundle({ script, cache })
  if (compiled.cachedDataRejected) throw new Error("the code cache was rejected")
  process.on("exit", () => process.stderr.write(`\nrein-inits ${JSON.stringify([...globalThis.__reinInits.self])}\n`))
  tree.start([process.execPath, "rein", ...args])
} else {
  const dir = `${root}packages/cli/dist/bundle`
  const original = path.join(dir, JSON.parse(fs.readFileSync(path.join(dir, "inputs.json"), "utf8")).script)
  const timed = `{ const T = globalThis.__reinInits = { self: new Map(), stack: [], last: 0 };
  const cpu = () => { const u = process.cpuUsage(); return u.user + u.system };
  const charge = (t) => { const top = T.stack.at(-1) ?? "(top)"; T.self.set(top, (T.self.get(top) ?? 0) + t - T.last); T.last = t };
  T.last = cpu(); T.enter = (name) => { charge(cpu()); T.stack.push(name) }; T.leave = () => { charge(cpu()); T.stack.pop() } }
var __esm = (fn, res) => function __init() {
  if (!fn) return res;
  globalThis.__reinInits.enter(Object.keys(fn)[0]);
  try { return fn && (res = (0, fn[Object.keys(fn)[0]])(fn = 0)), res } finally { globalThis.__reinInits.leave() }
};
var __commonJS = (cb, mod) => function __require() {
  if (mod) return mod.exports;
  globalThis.__reinInits.enter(Object.keys(cb)[0]);
  try { return (0, cb[Object.keys(cb)[0]])((mod = { exports: {} }).exports, mod), mod.exports } finally { globalThis.__reinInits.leave() }
};`
  const source = fs.readFileSync(original, "latin1")
  // (The script is written without whitespace since h/start17: the helpers match either way.)
  const replaced = source.replace(/var __esm ?= ?[\s\S]*?var __commonJS ?= ?[\s\S]*?\n?};(?=\n?var __export)/, timed)
  if (replaced === source) throw new Error("esbuild's __esm / __commonJS helpers were not found")
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "rein-inits-"))
  const script = path.join(tmp, "node.cjs")
  const cache = path.join(tmp, "node.cache")
  fs.writeFileSync(script, replaced)
  const train = spawnSync(process.execPath, [`${root}scripts/cli-code-cache.mjs`, script, cache], { cwd: root })
  if (train.status !== 0) throw new Error(`training run: ${train.stderr}`)
  const sum = new Map()
  const key = (name) =>
    process.env.BY === "file" || name === "(top)" ? name
    : name.startsWith("packages/") ? name.split("/").slice(0, 2).join("/")
    : name.split("node_modules/").at(-1).match(/^(@[^/]+\/)?[^/]+/)?.[0] ?? name
  for (let r = 0; r < rounds; r++) {
    const run = spawnSync(process.execPath, [fileURLToPath(import.meta.url), ...process.argv.slice(2)], {
      cwd: root,
      encoding: "utf8",
      maxBuffer: 64 * 2 ** 20,
      env: { ...process.env, REIN_INITS_CHILD: `${script},${cache}` }
    })
    const line = run.stderr.split("\n").find((l) => l.startsWith("rein-inits "))
    if (line === undefined) throw new Error(run.stderr)
    for (const [name, us] of JSON.parse(line.slice(11))) sum.set(key(name), (sum.get(key(name)) ?? 0) + us / rounds)
  }
  fs.rmSync(tmp, { recursive: true, force: true })
  const sorted = [...sum].sort((a, b) => b[1] - a[1])
  const total = sorted.reduce((s, [, us]) => s + us, 0)
  console.log(`rein ${args.join(" ")}: module top levels ${(total / 1000).toFixed(1)} ms of CPU (mean of ${rounds}), load ${
    os.loadavg()[0].toFixed(1)}`)
  for (const [name, us] of sorted.slice(0, top)) console.log(`${(us / 1000).toFixed(1).padStart(7)} ${name}`)
}
