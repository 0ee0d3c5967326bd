import { describe, expect, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { checkExamples, extract } from "../scripts/examples.mjs"

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")

describe("@example blocks (pnpm examples)", () => {
  it("extracts the ts blocks under @example tags, at their source lines, and nothing else", () => {
    const text = [
      "/**",
      " * Prose with a fence that is no example:",
      " * ```ts",
      " * not code",
      " * ```",
      " *",
      " * @example",
      " * ```ts",
      " * import { Effect } from \"effect\"",
      " *",
      " * const one = Effect.succeed(1)",
      " * ```",
      " * @since 0.1.0",
      " */"
    ].join("\n")
    expect(extract(text)).toEqual([{
      line: 9,
      code: ["import { Effect } from \"effect\"", "", "const one = Effect.succeed(1)"]
    }])
  })

  it("every example in every package's sources type-checks against the published entry points", () => {
    const { examples, failures } = checkExamples(root)
    expect(examples).toBeGreaterThan(400)
    expect(failures.map((f) => `${f.source}:${f.line}`)).toEqual([])
  }, 120_000)
})

describe("examples/ (runnable programs)", () => {
  it("every program's header says how to run it: its own built file, after pnpm build", () => {
    const programs = fs.readdirSync(path.join(root, "examples"), { withFileTypes: true })
      .filter((d) => d.isDirectory() && !["dist", "build", "node_modules", "scenarios"].includes(d.name))
      .flatMap((d) =>
        fs.readdirSync(path.join(root, "examples", d.name)).filter((f) => f.endsWith(".ts")).map((f) =>
          `${d.name}/${f}`
        )
      )
    expect(programs.length).toBeGreaterThan(5)
    const missing = programs.filter((p) => {
      const header = fs.readFileSync(path.join(root, "examples", p), "utf8").split("*/")[0] ?? ""
      return !header.includes(`Run: \`pnpm build && node examples/dist/${p.replace(/\.ts$/, ".js")}\``)
    })
    expect(missing).toEqual([])
  })
})
