/**
 * `pnpm bench`: runs the benchmarks in order and writes bench/RESULTS.md. Not part of `pnpm test`.
 *
 *   node --expose-gc bench/dist/main.js [--quick] [--only=1,4] [--out=path]
 *
 * `--quick` is a smoke run (few rounds); its figures are not to be quoted. A benchmark whose package cannot
 * be imported yet is skipped, and RESULTS.md says so.
 */
import { writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { abort } from "./abort.js"
import { artifacts } from "./artifacts.js"
import { batch } from "./batch.js"
import { deadline } from "./deadline.js"
import { distributedBatch } from "./distributedBatch.js"
import type { Benchmark, Goal } from "./harness.js"
import { canImport, machine, nowMillis, table } from "./harness.js"
import { languageModel } from "./languageModel.js"
import { memory } from "./memory.js"
import { overhead } from "./overhead.js"
import { sharedBudget } from "./sharedBudget.js"
import { sharedHealth } from "./sharedHealth.js"
import { sharedRates } from "./sharedRates.js"
import { simulation } from "./simulation.js"

const benchmarks: ReadonlyArray<Benchmark> = [
  overhead,
  batch,
  memory,
  deadline,
  abort,
  simulation,
  artifacts,
  languageModel,
  sharedBudget,
  sharedHealth,
  sharedRates,
  distributedBatch
]

const args = process.argv.slice(2)
const flag = (name: string) => args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3)
const quick = args.includes("--quick")
const only = flag("only")?.split(",").map(Number)
const here = dirname(fileURLToPath(import.meta.url))
const out = flag("out") ?? join(here, "..", "RESULTS.md")
const effectVersion = (createRequire(import.meta.url)("effect/package.json") as { readonly version: string }).version

const log = (line: string) => process.stdout.write(`${line}\n`)

const main = async () => {
  const facts = machine(effectVersion)
  const started = nowMillis()
  const sections: Array<string> = []
  const goals: Array<Goal> = []
  for (const b of benchmarks) {
    if (only !== undefined && !only.includes(b.id)) continue
    const heading = `## ${b.id}. ${b.title}`
    if (b.requires !== undefined && !(await canImport(b.requires.module))) {
      log(`${b.id}. ${b.title}: ${b.requires.skipped}`)
      sections.push(`${heading}\n\n${b.requires.skipped}.`)
      for (const g of b.goals ?? []) {
        goals.push({
          benchmark: `${b.id}. ${b.title.toLowerCase()}`,
          goal: g,
          measured: b.requires.skipped,
          status: "pending"
        })
      }
      continue
    }
    log(`${b.id}. ${b.title}`)
    const t0 = nowMillis()
    const section = await b.run({ quick, log })
    const seconds = ((nowMillis() - t0) / 1000).toFixed(1)
    log(`   done in ${seconds} s`)
    sections.push(`${heading}\n\n${section.markdown}\n\n(${seconds} s)`)
    goals.push(...section.goals)
  }
  const total = ((nowMillis() - started) / 1000).toFixed(1)
  const doc = [
    "# Rein benchmarks",
    "",
    `Written by \`pnpm bench\` (bench/src/main.ts)${quick ? " in --quick mode: smoke figures, not to be quoted" : ""}.`,
    "Do not edit by hand: run it again. The machine is shared and noisy; contenders of one table ran side by",
    "side in the same process, interleaved, so compare within a table rather than across runs.",
    "",
    table(["machine", ""], facts.map(([k, v]) => [k, v])),
    "",
    "## Goals",
    "",
    "Where Rein misses a goal, bench/PROFILE.md says where the time goes in packages/core and what to change.",
    "",
    table(["benchmark", "goal", "measured", "status"], goals.map((g) => [g.benchmark, g.goal, g.measured, g.status])),
    "",
    ...sections.flatMap((s) => [s, ""]),
    `Total time: ${total} s.`,
    ""
  ].join("\n")
  writeFileSync(out, doc)
  log(`wrote ${out} (${total} s)`)
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error)
    process.exit(1)
  }
)
