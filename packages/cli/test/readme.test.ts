/**
 * The package README against what the repository does: the demo's scenario is the one `pnpm demo` runs, every
 * example file it names exists, and each command's synopsis lists the flags the root README lists for it.
 */
import { describe, expect, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..")
const readme = fs.readFileSync(path.join(root, "packages/cli/README.md"), "utf8")
const rootReadme = fs.readFileSync(path.join(root, "README.md"), "utf8")

// The flags of the synopsis (the ```sh block) that follows `### rein X` / `## rein X`.
const synopsisFlags = (text: string, command: string): Array<string> => {
  const at = text.search(new RegExp(`^#+ \`rein ${command}\`$`, "m"))
  const block = /```sh\n([\s\S]*?)```/.exec(text.slice(at))?.[1] ?? ""
  return [...new Set(block.match(/--[a-z-]+/g) ?? [])].sort()
}

describe("packages/cli/README.md", () => {
  it("names the scenario pnpm demo runs", () => {
    const demo = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8")).scripts.demo as string
    const scenario = /--scenario (\S+)/.exec(demo)?.[1]
    expect(scenario).toBeDefined()
    const said = /`pnpm demo` builds[\s\S]*?through `([^`]+)`/.exec(readme)?.[1]
    expect(said).toBe(scenario)
  })

  it("names only example files that exist", () => {
    const named = [...new Set(readme.match(/examples\/[\w/.-]+\.jsonl?/g) ?? [])]
    expect(named.length).toBeGreaterThan(5)
    expect(named.filter((f) => !fs.existsSync(path.join(root, f)))).toEqual([])
  })

  it("lists in each synopsis the flags the root README lists", () => {
    for (const command of ["plan", "run", "replay", "explain", "simulate", "batch"]) {
      expect([command, synopsisFlags(readme, command)]).toEqual([command, synopsisFlags(rootReadme, command)])
    }
  })
})
