/**
 * `pnpm bench`: runs the benchmarks in order and writes bench/RESULTS.md. Not part of `pnpm test`.
 *
 *   node --expose-gc bench/dist/main.js [--quick] [--only=1,4] [--out=path]
 *
 * Every section is kept, with its own date, commit and load, in a JSON file beside the Markdown
 * (bench/RESULTS.json): a run with `--only` replaces just its sections and RESULTS.md is written again from
 * all of them, so no section is lost and each says when and on what it was measured. A full run replaces
 * every section. `--quick` is a smoke run (few rounds); its figures are not to be quoted, and its sections
 * say so. A benchmark whose package cannot be imported yet is skipped, and RESULTS.md says so.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { abort } from "./abort.js"
import { artifacts } from "./artifacts.js"
import { batch } from "./batch.js"
import { deadline } from "./deadline.js"
import { distributedBatch } from "./distributedBatch.js"
import type { Benchmark, Goal } from "./harness.js"
import { canImport, loadNow, machine, nowMillis, table } from "./harness.js"
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
const store = out.replace(/\.md$/, "") + ".json"
const effectVersion = (createRequire(import.meta.url)("effect/package.json") as { readonly version: string }).version

const log = (line: string) => process.stdout.write(`${line}\n`)

/** One benchmark's last result, as kept in the JSON file beside RESULTS.md. */
interface Kept {
  readonly id: number
  readonly heading: string
  readonly markdown: string
  readonly goals: ReadonlyArray<Goal>
  readonly date: string
  readonly commit: string
  readonly load: string
  readonly seconds: string
  readonly quick: boolean
}

const readKept = (): Map<number, Kept> => {
  if (only === undefined || !existsSync(store)) return new Map()
  const kept = JSON.parse(readFileSync(store, "utf8")) as { readonly sections: ReadonlyArray<Kept> }
  return new Map(kept.sections.map((k) => [k.id, k]))
}

const fact = (facts: ReadonlyArray<[string, string]>, key: string): string =>
  facts.find(([k]) => k === key)?.[1] ?? "unknown"

const runOne = async (b: Benchmark, facts: ReadonlyArray<[string, string]>): Promise<Kept> => {
  const heading = `## ${b.id}. ${b.title}`
  const stamp = { id: b.id, heading, date: fact(facts, "date"), commit: fact(facts, "rein commit"), quick }
  if (b.requires !== undefined && !(await canImport(b.requires.module))) {
    log(`${b.id}. ${b.title}: ${b.requires.skipped}`)
    const goals = (b.goals ?? []).map((g): Goal => ({
      benchmark: `${b.id}. ${b.title.toLowerCase()}`,
      goal: g,
      measured: b.requires!.skipped,
      status: "pending"
    }))
    return { ...stamp, markdown: `${b.requires.skipped}.`, goals, load: "—", seconds: "0" }
  }
  log(`${b.id}. ${b.title}`)
  const t0 = nowMillis()
  const load0 = loadNow()
  const section = await b.run({ quick, log })
  const seconds = ((nowMillis() - t0) / 1000).toFixed(1)
  log(`   done in ${seconds} s`)
  const load = `${load0.toFixed(1)} → ${loadNow().toFixed(1)}`
  return { ...stamp, markdown: section.markdown, goals: section.goals, load, seconds }
}

const render = (facts: ReadonlyArray<[string, string]>, sections: ReadonlyArray<Kept>): string => {
  const common = facts.filter(([k]) => ["cpu", "memory", "os", "node", "effect", "gc between samples"].includes(k))
  const when = (k: Kept) => `${k.date.slice(0, 16).replace("T", " ")} · ${k.commit}${k.quick ? " · quick" : ""}`
  const goals = sections.flatMap((k) => k.goals.map((g) => [g.benchmark, g.goal, g.measured, g.status, when(k)]))
  return [
    "# Rein benchmarks",
    "",
    "Written by `pnpm bench` (bench/src/main.ts) from bench/RESULTS.json, which keeps each section's last run.",
    "Do not edit by hand: run it again (`--only=N` re-runs and replaces section N). The machine is shared and",
    "noisy; contenders of one table ran side by side in the same process, interleaved, so compare within a table",
    "rather than across sections. Each section says when, on which commit and at which load it ran.",
    "",
    table(["machine", ""], common.map(([k, v]) => [k, v])),
    "",
    "## Goals",
    "",
    "Where Rein misses a goal, bench/PROFILE.md says where the time goes in packages/core and what to change.",
    "",
    table(["benchmark", "goal", "measured", "status", "run (UTC · commit)"], goals),
    "",
    ...sections.flatMap((k) => [
      k.heading,
      "",
      `Run ${k.date} on ${k.commit}, load ${k.load} (1-min average at start → end), ${k.seconds} s` +
      (k.quick ? "; **--quick: smoke figures, not to be quoted**" : "") + ".",
      "",
      k.markdown,
      ""
    ])
  ].join("\n")
}

const main = async () => {
  const started = nowMillis()
  const kept = readKept()
  let facts = machine(effectVersion)
  let failed = 0
  for (const b of benchmarks) {
    if (only !== undefined && !only.includes(b.id)) continue
    facts = machine(effectVersion)
    const result = await runOne(b, facts).catch((error: unknown): Kept => {
      // One benchmark failing does not lose the others: it is kept as failed, and the run exits non-zero.
      failed++
      console.error(error)
      return {
        id: b.id,
        heading: `## ${b.id}. ${b.title}`,
        markdown: `**This benchmark failed:** ${error instanceof Error ? error.message : String(error)}`,
        goals: (b.goals ?? []).map((g): Goal => ({
          benchmark: `${b.id}. ${b.title.toLowerCase()}`,
          goal: g,
          measured: "the benchmark failed",
          status: "FAIL"
        })),
        date: fact(facts, "date"),
        commit: fact(facts, "rein commit"),
        load: "—",
        seconds: "—",
        quick
      }
    })
    kept.set(b.id, result)
    // Written after every benchmark, so that a run stopped half-way keeps what it measured.
    const sections = [...kept.values()].sort((x, y) => x.id - y.id)
    writeFileSync(store, JSON.stringify({ sections }, null, 2) + "\n")
    writeFileSync(out, render(facts, sections))
  }
  log(`wrote ${out} and ${store} (${((nowMillis() - started) / 1000).toFixed(1)} s)`)
  if (failed > 0) throw new Error(`${failed} benchmark(s) failed`)
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error)
    process.exit(1)
  }
)
