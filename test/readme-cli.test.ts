/**
 * The README's walk-through (plan → run --record → replay → explain → simulate) as a reader meets it: each
 * command block run as written (`pnpm rein …` from the repository root) in an 80-column pseudo-terminal,
 * and every line the README shows after it found in what it printed, in order. In a shown line `…` stands
 * for anything, and runs of spaces for any run of spaces (column widths follow the figures).
 */
import { describe, expect, it } from "@effect/vitest"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { beforeAll } from "vitest"
import * as Terminal from "./support/terminal.js"

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")
const readme = fs.readFileSync(path.join(root, "README.md"), "utf8")

interface Step {
  readonly script: string
  readonly shown: ReadonlyArray<string>
}

/** The walk-through section's command blocks, each with the output block that follows it. */
const walkThrough = (text: string): ReadonlyArray<Step> => {
  const start = text.indexOf("### A walk-through")
  const end = text.indexOf("\n### ", start + 1)
  const section = text.slice(start, end)
  const blocks = [...section.matchAll(/```(\w*)\n([\s\S]*?)```/g)].map((m) => ({ lang: m[1]!, body: m[2]! }))
  const steps: Array<Step> = []
  for (const [i, block] of blocks.entries()) {
    const next = blocks[i + 1]
    if (block.lang === "sh" && next !== undefined && next.lang === "") {
      steps.push({ script: block.body.trim(), shown: next.body.trimEnd().split("\n") })
    }
  }
  return steps
}

const normal = (line: string): string => line.trim().replaceAll(/ +/g, " ")

const pattern = (shown: string): RegExp =>
  new RegExp(
    "^" + normal(shown).split("…").map((part) => part.replaceAll(/[.*+?^${}()|[\]\\]/g, "\\$&")).join(".*") + "$"
  )

/** The shown lines that are not found, in order, among the printed lines (none when all are). */
const missing = (printed: ReadonlyArray<string>, shown: ReadonlyArray<string>): ReadonlyArray<string> => {
  const lines = printed.map(normal)
  const out: Array<string> = []
  let at = 0
  for (const line of shown) {
    if (line.trim() === "…") continue
    const re = pattern(line)
    const found = lines.findIndex((l, i) => i >= at && re.test(l))
    if (found < 0) out.push(line)
    else at = found + 1
  }
  return out
}

beforeAll(() => {
  // `pnpm rein` builds when a source is newer than the binary; build now, so that no step's output is a build.
  execFileSync(process.execPath, [path.join(root, "scripts/rein.mjs"), "--version"], { cwd: root, stdio: "ignore" })
}, 600_000)

describe("the README's walk-through", () => {
  const steps = walkThrough(readme)

  it("has its five commands, each with the lines it prints", () => {
    expect(steps.map((s) => /pnpm rein (\w+)/.exec(s.script)?.[1])).toEqual([
      "plan",
      "run",
      "replay",
      "explain",
      "simulate"
    ])
    for (const step of steps) expect(step.shown.length).toBeGreaterThan(0)
  })

  it("the matcher finds lines in order and wildcards only at …", () => {
    expect(missing(["a 1", "b  2 ms", "c"], ["a …", "b 2 ms", "…", "c"])).toEqual([])
    expect(missing(["b 2", "a 1"], ["a 1", "b 2"])).toEqual(["b 2"])
    expect(missing(["cost 0.1"], ["cost 0x1"])).toEqual(["cost 0x1"])
  })

  it("prints in an 80-column terminal what the README says, command after command", async () => {
    for (const step of steps) {
      const r = await Terminal.shell(step.script.replaceAll("\\\n", " "), 80, root, 300_000)
      expect({ script: step.script, code: r.code }).toEqual({ script: step.script, code: 0 })
      const printed = r.stdout.replaceAll("\r", "").split("\n")
      expect({ script: step.script, missing: missing(printed, step.shown) }).toEqual({
        script: step.script,
        missing: []
      })
      // No stack trace, no build output, no ANSI styles when nothing asked for them.
      expect(r.stdout).not.toMatch(/\n\s+at |rein: building/)
    }
  }, 600_000)
})
