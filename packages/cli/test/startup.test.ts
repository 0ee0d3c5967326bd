/**
 * What a command loads at start-up. The binary runs the bundle of `pnpm build` (`scripts/bundle-cli.mjs`)
 * while it is the build's, and the unbundled tree otherwise (`internal/entry.ts`); neither loads PostgreSQL
 * for a command that does not use a `postgres://` store. Module lists come from a loader hook
 * (`test/support/modules.mjs`).
 */
import { describe, expect, it } from "@effect/vitest"
import { execFile } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import { afterAll, beforeAll } from "vitest"
import * as Binary from "../../../test/support/binary.js"
import { freshBundle } from "../src/internal/entry.js"

const { bin, root } = Binary
let tmp = ""

beforeAll(async () => {
  tmp = await Binary.prepare("rein-startup-")
}, 600_000)

afterAll(() => Binary.cleanUp(tmp))

const inputs = ["--catalog", "examples/catalog.json", "--contract", "examples/contract.json"]
const simulate = ["simulate", ...inputs, "--scenario", "examples/scenarios/brief-outage.json", "--json"]
const plan = ["plan", ...inputs, "--json"]
// A JSONL store: the batch runs in this process, against the fake endpoints, all healthy (the default
// scenario), so that every item succeeds however loaded the machine.
const batch = (out: string) => [
  "batch",
  "--input",
  "examples/prompts.jsonl",
  ...inputs,
  "--scenario",
  path.join(tmp, "healthy.json"),
  "--concurrency",
  "16",
  "--out",
  out,
  "--overwrite",
  "--json"
]

/** The commands checked, by name; `out` is the batch's JSONL store. */
const commands = (out: string) => {
  fs.writeFileSync(path.join(tmp, "healthy.json"), JSON.stringify({ endpoints: {} }))
  return [["simulate", simulate], ["plan", plan], ["batch", batch(out)]] as const
}

/** Runs `node <script> args…` with the module hook; the exit code and the URLs of the modules it loaded. */
const loaded = (script: string, args: ReadonlyArray<string>, name: string) =>
  new Promise<{ readonly code: number | null; readonly modules: ReadonlyArray<string> }>((resolve) => {
    const out = path.join(tmp, `${name}.modules`)
    const hook = pathToFileURL(path.join(root, "test/support/modules.mjs")).href
    execFile(
      process.execPath,
      ["--import", hook, script, ...args],
      { cwd: root, env: { ...process.env, REIN_MODULES_OUT: out }, timeout: 120_000, maxBuffer: 64 * 1024 * 1024 },
      (error) => {
        const code = error === null ? 0 : typeof error.code === "number" ? error.code : null
        resolve({ code, modules: fs.readFileSync(out, "utf8").split("\n").filter((l) => l !== "") })
      }
    )
  })

// A module of PostgreSQL's, unbundled: ours, @effect/sql-pg's or pg's.
const postgres = /packages\/postgres\/|@effect\+sql-pg|\/node_modules\/\.pnpm\/pg[@-]/
// In the bundle, esbuild heads each module's code with a comment naming it (`// packages/postgres/dist/…`).
const bundlesPostgres = (url: string) => postgres.test(fs.readFileSync(new URL(url), "utf8"))

describe("start-up", () => {
  it("a command runs the bundle: a few files of its own, nothing from node_modules, no PostgreSQL", async () => {
    for (const [name, args] of commands(path.join(tmp, "b.jsonl"))) {
      const r = await loaded(bin, args, `bundle-${name}`)
      expect(r.code, name).toBe(0)
      const files = r.modules.filter((m) => m.startsWith("file:"))
      expect(files, name).toContain(pathToFileURL(path.join(root, "packages/cli/dist/bundle/node.js")).href)
      expect(files.filter((m) => m.includes("/node_modules/")), name).toEqual([])
      expect(files.filter((m) => postgres.test(m) || bundlesPostgres(m)), name).toEqual([])
      expect(files.length, name).toBeLessThan(30)
    }
  }, 120_000)

  // What runs while the bundle is stale.
  it("the unbundled tree loads no PostgreSQL without a postgres:// store", async () => {
    const runner = path.join(tmp, "unbundled.mjs")
    const node = pathToFileURL(path.join(root, "packages/cli/dist/internal/node.js")).href
    fs.writeFileSync(runner, `import { start } from ${JSON.stringify(node)}\nstart(process.argv)\n`)
    for (const [name, args] of commands(path.join(tmp, "u.jsonl"))) {
      const r = await loaded(runner, args, `unbundled-${name}`)
      expect(r.code, name).toBe(0)
      expect(r.modules.some((m) => m.includes("/node_modules/.pnpm/effect@")), name).toBe(true)
      expect(r.modules.filter((m) => postgres.test(m)), name).toEqual([])
    }
  }, 120_000)
})

describe("the bundle is run only while it is the build's", () => {
  // A bundle directory of our own: an entry, one input beside it, and the list bundle-cli.mjs would write.
  const bundleDir = (name: string) => {
    const dir = path.join(tmp, name)
    fs.mkdirSync(dir)
    fs.writeFileSync(path.join(dir, "node.js"), "export const start = () => {}\n")
    const input = path.join(dir, "input.js")
    fs.writeFileSync(input, "export const x = 1\n")
    const stat = fs.statSync(input)
    fs.writeFileSync(
      path.join(dir, "inputs.json"),
      JSON.stringify({ entry: "node.js", inputs: [["input.js", stat.size, stat.mtimeMs]] })
    )
    return { dir, input, stat }
  }

  it("runs a bundle whose inputs are all unchanged", () => {
    const { dir } = bundleDir("fresh")
    expect(freshBundle(dir)).toBe(path.join(dir, "node.js"))
  })

  it("not once an input was rebuilt (a new modification time, even with the same size)", () => {
    const { dir, input, stat } = bundleDir("touched")
    fs.utimesSync(input, stat.atime, new Date(stat.mtimeMs + 1000))
    expect(freshBundle(dir)).toBeUndefined()
  })

  it("not once an input changed size, or is gone", () => {
    const { dir, input, stat } = bundleDir("changed")
    fs.writeFileSync(input, "export const x = 12\n")
    fs.utimesSync(input, stat.atime, stat.mtime)
    expect(freshBundle(dir)).toBeUndefined()
    fs.rmSync(input)
    expect(freshBundle(dir)).toBeUndefined()
  })

  it("not without its list of inputs, with a damaged one, or without its entry", () => {
    const { dir } = bundleDir("damaged")
    fs.writeFileSync(path.join(dir, "inputs.json"), "{\"entry\": \"node.js\", \"inp")
    expect(freshBundle(dir)).toBeUndefined()
    fs.rmSync(path.join(dir, "inputs.json"))
    expect(freshBundle(dir)).toBeUndefined()
    const other = bundleDir("no-entry")
    fs.rmSync(path.join(other.dir, "node.js"))
    expect(freshBundle(other.dir)).toBeUndefined()
  })

  it("not once one of its own chunks is gone (a concurrent build's clean-up)", () => {
    const { dir, input, stat } = bundleDir("chunks")
    fs.writeFileSync(path.join(dir, "chunk-A.js"), "export const y = 2\n")
    const list = {
      entry: "node.js",
      inputs: [[path.basename(input), stat.size, stat.mtimeMs]],
      outputs: ["node.js", "chunk-A.js"]
    }
    fs.writeFileSync(path.join(dir, "inputs.json"), JSON.stringify(list))
    expect(freshBundle(dir)).toBe(path.join(dir, "node.js"))
    fs.rmSync(path.join(dir, "chunk-A.js"))
    expect(freshBundle(dir)).toBeUndefined()
  })

  it("the built binary's bundle is current after the build (tsc -b, then scripts/bundle-cli.mjs)", () => {
    expect(freshBundle(path.join(root, "packages/cli/dist/bundle"))).toBe(
      path.join(root, "packages/cli/dist/bundle/node.js")
    )
  })
})
