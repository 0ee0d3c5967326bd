// The training run of scripts/bundle-cli.mjs: runs `rein simulate` of a few virtual seconds (an outage, a
// breaker opening and a fallback, so their code is compiled) from the bundle, compiled exactly as the binary
// compiles it (packages/cli/src/internal/entry.ts: the same V8 flags, the same wrapped source), and when the
// command has ended writes V8's code cache of the bundle, with every function the run compiled, to <cache>
// (a temporary name, then renamed: a reader sees a whole file).
// node scripts/cli-code-cache.mjs <bundle script> <cache>
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")
const [script, cache] = process.argv.slice(2)
const entry = await import(pathToFileURL(path.join(root, "packages/cli/dist/internal/entry.js")).href)

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rein-code-cache-"))
const scenario = path.join(dir, "scenario.json")
fs.writeFileSync(scenario, JSON.stringify({
  duration: "6 seconds",
  rate: 5,
  arrivals: "steady",
  health: { consecutiveFailures: 3, cooldown: "2 seconds" },
  default: { kind: "ok", latency: "300 millis", outputTokens: 120 },
  endpoints: {
    "fake/a": [{ from: "1 second", until: "3 seconds", behaviour: { kind: "fail", failure: "overloaded", latency: "80 millis" } }]
  }
}))

entry.tuneV8()
const { script: compiled, tree } = entry.compileBundle({ script, cache: undefined })
process.on("exit", () => {
  fs.rmSync(dir, { recursive: true, force: true })
  if (process.exitCode !== 0 && process.exitCode !== undefined) return
  const tmp = `${cache}.${process.pid}.tmp`
  fs.writeFileSync(tmp, compiled.createCachedData())
  fs.renameSync(tmp, cache)
})
const examples = path.join(root, "examples")
tree.start([process.execPath, "rein", "simulate", "--catalog", path.join(examples, "catalog.json"), "--contract",
  path.join(examples, "contract.json"), "--scenario", scenario, "--seed", "1", "--json"])
