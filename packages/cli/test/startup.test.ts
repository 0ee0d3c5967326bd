/**
 * What a command loads at start-up. The binary runs the bundle of `pnpm build` (`scripts/bundle-cli.mjs`),
 * compiled with the code cache the build left, while it is the build's, and the unbundled tree otherwise
 * (`internal/entry.ts`); neither runs PostgreSQL's code for a command that does not use a `postgres://`
 * store. Module lists come from a loader hook (`test/support/modules.mjs`), the scripts compiled and the
 * built-ins required from another (`test/support/codecache.mjs`).
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

/** What the code cache hook saw: each script compiled with `vm.Script`, and the modules `require`d. */
interface Compiled {
  readonly scripts: ReadonlyArray<{ readonly filename: string; readonly cached: boolean; readonly rejected?: boolean }>
  readonly required: ReadonlyArray<string>
}

/**
 * Runs `node <script> args…` with both hooks; its exit code, output, the URLs of the modules it loaded and
 * what it compiled.
 */
const loaded = (script: string, args: ReadonlyArray<string>, name: string) =>
  new Promise<
    {
      readonly code: number | null
      readonly stdout: string
      readonly stderr: string
      readonly modules: ReadonlyArray<string>
      readonly compiled: Compiled
    }
  >((resolve) => {
    const out = path.join(tmp, `${name}.modules`)
    const compiled = path.join(tmp, `${name}.compiled`)
    const hooks = ["modules.mjs", "codecache.mjs"].flatMap((hook) => [
      "--import",
      pathToFileURL(path.join(root, "test/support", hook)).href
    ])
    execFile(
      process.execPath,
      [...hooks, script, ...args],
      {
        cwd: root,
        env: { ...process.env, REIN_MODULES_OUT: out, REIN_CODECACHE_OUT: compiled },
        timeout: 120_000,
        maxBuffer: 64 * 1024 * 1024
      },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === "number" ? error.code : null
        resolve({
          code,
          stdout,
          stderr,
          modules: fs.readFileSync(out, "utf8").split("\n").filter((l) => l !== ""),
          compiled: JSON.parse(fs.readFileSync(compiled, "utf8"))
        })
      }
    )
  })

// A module of PostgreSQL's, unbundled: ours, @effect/sql-pg's or pg's.
const postgres = /packages\/postgres\/|@effect\+sql-pg|\/node_modules\/\.pnpm\/pg[@-]/
// In the ES modules, esbuild heads each module's code with a comment naming it (`// packages/postgres/dist/…`).
const bundlesPostgres = (url: string) => postgres.test(fs.readFileSync(new URL(url), "utf8"))
// Node's built-ins that `pg` and the HTTP client (undici) require when their code runs, and nothing else does.
const network = ["dns", "net", "tls"]
const built = () => freshBundle(path.join(root, "packages/cli/dist/bundle"))

describe("start-up", () => {
  it("a command runs the bundle from its code cache: no module from node_modules, no PostgreSQL run", async () => {
    const bundle = built()?.cached
    expect(bundle).toBeDefined()
    for (const [name, args] of commands(path.join(tmp, "b.jsonl"))) {
      const r = await loaded(bin, args, `bundle-${name}`)
      expect(r.code, name).toBe(0)
      const files = r.modules.filter((m) => m.startsWith("file:"))
      expect(files.filter((m) => m.includes("/node_modules/") || postgres.test(m)), name).toEqual([])
      expect(files.length, name).toBeLessThan(30)
      expect(r.compiled.scripts, name).toEqual([{ filename: bundle?.script, cached: true, rejected: false }])
      expect(r.compiled.required.filter((m) => network.includes(m)), name).toEqual([])
      // No command spawns a process: the binary provides no command executor (`NodeContext.layer` did, and
      // its module required `child_process`, with `net` and `dgram`, at every start).
      expect(r.compiled.required, name).not.toContain("child_process")
    }
  }, 120_000)

  // What runs without a code cache this Node can use (another Node's, or none).
  it("the bundle's ES modules: a few files of their own, nothing from node_modules, no PostgreSQL", async () => {
    const runner = path.join(tmp, "modules.mjs")
    fs.writeFileSync(
      runner,
      `import { start } from ${JSON.stringify(pathToFileURL(built()?.entry ?? "").href)}\nstart(process.argv)\n`
    )
    for (const [name, args] of commands(path.join(tmp, "m.jsonl"))) {
      const r = await loaded(runner, args, `modules-${name}`)
      expect(r.code, name).toBe(0)
      const files = r.modules.filter((m) => m.startsWith("file:"))
      expect(files, name).toContain(pathToFileURL(path.join(root, "packages/cli/dist/bundle/node.js")).href)
      expect(files.filter((m) => m.includes("/node_modules/")), name).toEqual([])
      expect(files.filter((m) => postgres.test(m) || bundlesPostgres(m)), name).toEqual([])
      expect(files.length, name).toBeLessThan(30)
    }
  }, 120_000)

  // What runs while the bundle is stale. `@rein/batch` is imported by `rein batch` and `rein worker` when they
  // run (internal/batchLib.ts): its modules' top levels cost every other command ≈ 11 ms (bench/PROFILE.md, #22).
  it("the unbundled tree loads no PostgreSQL without a postgres:// store, and @rein/batch only for batch", async () => {
    const runner = path.join(tmp, "unbundled.mjs")
    const node = pathToFileURL(path.join(root, "packages/cli/dist/internal/node.js")).href
    fs.writeFileSync(runner, `import { start } from ${JSON.stringify(node)}\nstart(process.argv)\n`)
    for (const [name, args] of commands(path.join(tmp, "u.jsonl"))) {
      const r = await loaded(runner, args, `unbundled-${name}`)
      expect(r.code, name).toBe(0)
      expect(r.modules.some((m) => m.includes("/node_modules/.pnpm/effect@")), name).toBe(true)
      expect(r.modules.filter((m) => postgres.test(m)), name).toEqual([])
      const batchModules = r.modules.filter((m) => m.includes("/packages/batch/"))
      if (name === "batch") expect(batchModules.length, name).toBeGreaterThan(0)
      else expect(batchModules, name).toEqual([])
    }
  }, 120_000)
})

describe("the code cache", () => {
  // The bundle and its cache, copied into a directory of the test's own, run as the binary runs them.
  const copy = (name: string): { readonly script: string; readonly cache: string; readonly runner: string } => {
    const bundle = built()?.cached
    if (bundle === undefined) throw new Error("the build left no code cache")
    const dir = path.join(tmp, name)
    fs.mkdirSync(dir)
    const script = path.join(dir, path.basename(bundle.script))
    const cache = path.join(dir, path.basename(bundle.cache))
    fs.copyFileSync(bundle.script, script)
    fs.copyFileSync(bundle.cache, cache)
    const runner = path.join(dir, "run.mjs")
    const entry = pathToFileURL(path.join(root, "packages/cli/dist/internal/entry.js")).href
    fs.writeFileSync(
      runner,
      `import { compileBundle, tuneV8 } from ${JSON.stringify(entry)}\ntuneV8()\n` +
        `compileBundle(${JSON.stringify({ script, cache })}).tree.start(process.argv)\n`
    )
    return { script, cache, runner }
  }
  // A report, and a command that fails on its input (its exit code and message).
  const lines = [simulate, ["simulate", ...inputs, "--scenario", "nowhere.json"]]

  /** Runs each line through the binary and through `runner`: the same output and exit code, every time. */
  const sameAsBinary = async (runner: string, name: string, rejected: boolean | undefined) => {
    for (const [i, args] of lines.entries()) {
      const want = await loaded(bin, args, `${name}-bin-${i}`)
      const got = await loaded(runner, args, `${name}-${i}`)
      expect([got.code, got.stdout, got.stderr]).toEqual([want.code, want.stdout, want.stderr])
      expect(got.compiled.scripts.map((s) => s.rejected)).toEqual([rejected])
    }
  }

  it("a copy of the build's is accepted", async () => {
    const { runner } = copy("accepted")
    await sameAsBinary(runner, "accepted", false)
  }, 120_000)

  it("a damaged cache is rejected (V8 checks its checksum): the same output and exit code", async () => {
    const { cache, runner } = copy("damaged")
    const bytes = fs.readFileSync(cache)
    const middle = Math.floor(bytes.length / 2)
    bytes.set(bytes.subarray(middle, middle + 64).map((b) => b ^ 0x5a), middle)
    fs.writeFileSync(cache, bytes)
    await sameAsBinary(runner, "damaged", true)
  }, 120_000)

  it("a truncated cache, or one made for another source, is rejected: the same output and exit code", async () => {
    const truncated = copy("truncated")
    fs.truncateSync(truncated.cache, 100_000)
    await sameAsBinary(truncated.runner, "truncated", true)
    const other = copy("other-source")
    fs.appendFileSync(other.script, "\n// another build\n")
    await sameAsBinary(other.runner, "other-source", true)
  }, 120_000)

  it("a missing cache only means compiling without one", async () => {
    const { cache, runner } = copy("missing")
    fs.rmSync(cache)
    await sameAsBinary(runner, "missing", undefined)
  }, 120_000)
})

describe("the bundle is run only while it is the build's", () => {
  // A bundle directory of our own: an entry, one input beside it, and the list bundle-cli.mjs would write.
  const bundleDir = (name: string) => {
    const dir = path.join(tmp, name)
    fs.mkdirSync(dir, { recursive: true })
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
    expect(freshBundle(dir)).toEqual({ entry: path.join(dir, "node.js"), cached: undefined })
  })

  it("its script with the code cache when this V8 made it, its ES modules otherwise (V8 would reject it)", () => {
    const { dir, input, stat } = bundleDir("cached")
    const list = (v8: string, wrapped = true) => ({
      entry: "node.js",
      script: "node.cjs",
      wrapped,
      cache: { file: "node.cache", v8 },
      inputs: [[path.basename(input), stat.size, stat.mtimeMs]]
    })
    fs.writeFileSync(path.join(dir, "inputs.json"), JSON.stringify(list(process.versions.v8)))
    expect(freshBundle(dir)).toEqual({
      entry: path.join(dir, "node.js"),
      cached: { script: path.join(dir, "node.cjs"), cache: path.join(dir, "node.cache") }
    })
    fs.writeFileSync(path.join(dir, "inputs.json"), JSON.stringify(list("10.2.154.26-node.36")))
    expect(freshBundle(dir)).toEqual({ entry: path.join(dir, "node.js"), cached: undefined })
    // An older build's script (not the function expression the binary compiles): its ES modules.
    fs.writeFileSync(path.join(dir, "inputs.json"), JSON.stringify(list(process.versions.v8, false)))
    expect(freshBundle(dir)).toEqual({ entry: path.join(dir, "node.js"), cached: undefined })
  })

  it("the script is the function expression the binary compiles, in ASCII (read as Latin-1)", () => {
    const bundle = built()?.cached
    if (bundle === undefined) throw new Error("the build left no code cache")
    const bytes = fs.readFileSync(bundle.script)
    expect(bytes.toString("latin1").startsWith("(function (exports, require, module, __filename, __dirname) { "))
      .toBe(true)
    expect(bytes.every((byte) => byte < 0x80)).toBe(true)
  })

  it("the script holds no package index of ours to import from: a wrapped index runs every module it re-exports", () => {
    const bundle = built()?.cached
    if (bundle === undefined) throw new Error("the build left no code cache")
    const text = fs.readFileSync(bundle.script, "latin1")
    // `effect`'s index re-exports FastCheck, Stream, STM, …: none of it may be in the script through it.
    expect(text).not.toMatch(/^\/\/ node_modules\/\S*\/effect\/dist\/esm\/index\.js$/m)
    expect(text).not.toMatch(/^\/\/ node_modules\/\S*\/fast-check\//m)
    expect(text).not.toMatch(/^\/\/ packages\/(core|batch)\/dist\/index\.js$/m)
  })

  it("installed (under node_modules), without checking its inputs: a package keeps no mtimes, has no workspace", () => {
    const { dir, input } = bundleDir("install/node_modules/@rein/cli/dist/bundle")
    fs.utimesSync(input, new Date(499162500000), new Date(499162500000))
    expect(freshBundle(dir)?.entry).toBe(path.join(dir, "node.js"))
    fs.rmSync(input)
    expect(freshBundle(dir)?.entry).toBe(path.join(dir, "node.js"))
    fs.rmSync(path.join(dir, "node.js"))
    expect(freshBundle(dir)).toBeUndefined()
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
    expect(freshBundle(dir)?.entry).toBe(path.join(dir, "node.js"))
    fs.rmSync(path.join(dir, "chunk-A.js"))
    expect(freshBundle(dir)).toBeUndefined()
  })

  it("the built binary's bundle is current after the build (tsc -b, then scripts/bundle-cli.mjs)", () => {
    const dir = path.join(root, "packages/cli/dist/bundle")
    const bundle = built()
    expect(bundle?.entry).toBe(path.join(dir, "node.js"))
    expect(bundle?.cached?.script).toMatch(new RegExp(`^${dir}/node-\\w+\\.cjs$`))
    expect(bundle?.cached?.cache).toBe(bundle?.cached?.script.replace(/\.cjs$/, ".cache"))
  })
})
