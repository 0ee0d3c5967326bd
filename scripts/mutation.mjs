// `pnpm mutation [module ...] [-- stryker flags]`: StrykerJS over the decision core, one module at a time
// (issue #23). Each finished module is merged into mutation/summary.json (score, counts, survivors, the run's
// wall time and the machine load) — the compact record MUTATION.md quotes. Not part of `pnpm test`.
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { modules } from "../mutation/modules.mjs"

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")
const summaryFile = path.join(root, "mutation/summary.json")
// Per module, so that two modules can run side by side (each with its own sandbox directory too).
const reportOf = (run) => path.join(root, `.tmp/mutation/${run}.json`)

const argv = process.argv.slice(2)
const dash = argv.indexOf("--")
const names = dash === -1 ? argv : argv.slice(0, dash)
const extra = dash === -1 ? [] : argv.slice(dash + 1)
const selected = names.length === 0 ? Object.keys(modules) : names
for (const name of selected) {
  if (!(name in modules)) {
    console.error(`unknown module "${name}"; one of: ${Object.keys(modules).join(", ")}`)
    process.exit(2)
  }
}

/** The files and line ranges of a `--mutate` flag, by file name (`Health.ts:1-430,500-520`). */
const rangesOf = (flags) => {
  const at = flags.findIndex((flag) => flag.startsWith("--mutate") || flag === "-m")
  const value = flags[at].includes("=") ? flags[at].slice(flags[at].indexOf("=") + 1) : (flags[at + 1] ?? "")
  return value.split(",").map((part) => path.basename(part)).join(",")
}

const detected = new Set(["Killed", "Timeout"])
const valid = new Set(["Killed", "Timeout", "Survived", "NoCoverage"])

const summarise = (report) =>
  Object.fromEntries(
    Object.entries(report.files).map(([file, { mutants }]) => {
      const count = (status) => mutants.filter((mutant) => mutant.status === status).length
      const scored = mutants.filter((mutant) => valid.has(mutant.status))
      const killed = scored.filter((mutant) => detected.has(mutant.status)).length
      const survivors = mutants
        .filter((mutant) => mutant.status === "Survived" || mutant.status === "NoCoverage")
        .map((mutant) =>
          `${mutant.location.start.line}:${mutant.location.start.column} ${mutant.mutatorName} ${mutant.status}` +
          ` → ${mutant.replacement.replace(/\s+/g, " ").slice(0, 80)}`
        )
      return [path.relative(root, path.resolve(root, file)), {
        score: scored.length === 0 ? null : Math.round((killed / scored.length) * 10_000) / 100,
        killed: count("Killed"),
        timeout: count("Timeout"),
        survived: count("Survived"),
        noCoverage: count("NoCoverage"),
        ignored: count("Ignored"),
        errors: count("CompileError") + count("RuntimeError"),
        survivors
      }]
    })
  )

for (const name of selected) {
  const module = modules[name]
  const tests = module.tests.filter((file) => fs.existsSync(path.join(root, file)))
  const load = os.loadavg()[0].toFixed(1)
  console.log(`mutation: ${name} (${module.mutate.join(", ")}) against ${tests.length} test files, load ${load}`)
  const partial = extra.some((flag) => flag.startsWith("--mutate") || flag === "-m")
  // A run over part of a module (a line range, to check new tests) is kept beside the module's full run, and
  // beside the runs over its other ranges: its key names the ranges (`health (partial, Health.ts:1-430)`).
  const ranges = partial ? rangesOf(extra) : ""
  const run = partial ? `${name}-partial-${ranges.replace(/[^\w.-]+/g, "_")}` : name
  const reportFile = reportOf(run)
  fs.rmSync(reportFile, { force: true })
  const started = process.hrtime.bigint()
  const child = spawnSync("pnpm", ["exec", "stryker", "run", ...extra], {
    cwd: root,
    stdio: "inherit",
    env: {
      ...process.env,
      REIN_MUTATE: module.mutate.join(","),
      REIN_MUTATION_TESTS: tests.join(","),
      REIN_IGNORE_STATIC: String(module.ignoreStatic ?? true),
      REIN_MUTATION_REPORT: path.relative(root, reportFile),
      REIN_MUTATION_TMP: `.stryker-tmp-${run}`
    }
  })
  const seconds = Number((process.hrtime.bigint() - started) / 1_000_000_000n)
  if (child.status !== 0 || !fs.existsSync(reportFile)) {
    console.error(`mutation: ${name} failed (exit ${child.status})`)
    process.exit(1)
  }
  const summary = fs.existsSync(summaryFile) ? JSON.parse(fs.readFileSync(summaryFile, "utf8")) : {}
  summary[partial ? `${name} (partial, ${ranges})` : name] = {
    finishedAt: new Date().toISOString(),
    wallSeconds: seconds,
    loadAtStart: Number(load),
    loadAtEnd: Number(os.loadavg()[0].toFixed(1)),
    ignoreStatic: module.ignoreStatic ?? true,
    partial,
    tests,
    files: summarise(JSON.parse(fs.readFileSync(reportFile, "utf8")))
  }
  fs.writeFileSync(summaryFile, `${JSON.stringify(summary, null, 2)}\n`)
  console.log(`mutation: ${name} done in ${seconds} s; summary in mutation/summary.json`)
}
