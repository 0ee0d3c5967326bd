// `pnpm build`'s second step (after `tsc -b`): bundles the built CLI (packages/cli/dist/internal/node.js, the
// command tree and everything it imports) with esbuild into packages/cli/dist/bundle/, twice: one CommonJS
// script (`node-<hash>.cjs`), and ES modules with splitting (`node.js` and its chunks), so that a command
// loads a few files instead of ~1,000 modules (start-up ≈ 0.35 s of CPU instead of ≈ 1.1 s). Tree-shaking
// drops what nothing uses (most of `fast-check`, which the `effect` index re-exports); what is imported
// dynamically (PostgreSQL, the HTTP providers) is in the script but runs only when first imported, and in
// chunks of its own among the modules.
//
// Then a training run (scripts/cli-code-cache.mjs: `rein simulate` of a few virtual seconds, run from the
// script as the binary runs it) leaves V8's code cache of the script beside it, functions compiled lazily
// during the run included: the binary compiles the script with it (packages/cli/src/internal/entry.ts) and
// then compiles almost nothing (≈ 0.09 s less start-up). The script's name carries a hash of its contents and
// the cache is named after it, so a cache never meets another script's source (V8 itself checks only the
// source's length). Without a cache this Node can use (a failed training run, another Node) the binary imports
// the ES modules, which compile faster than the whole script from source.
//
// The bundle cannot go stale unnoticed: beside it, inputs.json lists every file it was made from (the built
// packages and node_modules alike) with its size and modification time, and the binary runs the bundle only
// while all of them are unchanged (packages/cli/src/internal/entry.ts); otherwise it runs the unbundled
// dist/internal/node.js, which `tsc -b` keeps current. Run again after any build to make it current.
//
// Concurrent runs (test suites prepare in parallel) write the same files: each file is written to a
// temporary name and renamed, so a reader sees a whole file, old or new, and inputs.json is written last.
import { spawnSync } from "node:child_process"
import * as esbuild from "esbuild"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")
const dist = path.join(root, "packages/cli/dist")
const out = path.join(dist, "bundle")
const entry = path.join(dist, "internal/node.js")

const writeWhole = (file, contents) => {
  const tmp = `${file}.${process.pid}.tmp`
  fs.writeFileSync(tmp, contents)
  fs.renameSync(tmp, file)
}

// Each input's size and mtime, taken before esbuild reads it: a file rewritten while the bundle is made (a
// concurrent `tsc -b`) then no longer matches, and the bundle is not run.
const seen = new Map()
const statBeforeRead = {
  name: "stat-before-read",
  setup(build) {
    build.onLoad({ filter: /\.(c|m)?js$|\.json$/ }, async (args) => {
      const stat = await fs.promises.stat(args.path)
      seen.set(args.path, [stat.size, stat.mtimeMs])
      const contents = await fs.promises.readFile(args.path)
      if (args.path.endsWith(".json")) return { contents, loader: "json" }
      return { contents: await byModulePath(build, args.path, contents.toString("utf8")), loader: "js" }
    })
  }
}

// Our packages import namespaces from package indexes (`import { Effect, Schema } from "effect"`). In the
// CommonJS script a module reached from a dynamic import is wrapped in a lazy initializer, and a wrapped index
// initializes every module it re-exports: `effect`'s index alone runs the top level of ~400 modules (Stream,
// STM, FastCheck, …) that a command mostly never uses. Our own built files (not node_modules') therefore
// import each namespace from its module's file when the index only re-exports namespaces
// (`export * as Effect from "./Effect.js"`): the same module objects, without the rest of the index.
const indexes = new Map()
const read = new Set()
const namespacesOf = async (index) => {
  if (!indexes.has(index)) {
    const stat = await fs.promises.stat(index)
    seen.set(index, [stat.size, stat.mtimeMs])
    read.add(index)
    const text = await fs.promises.readFile(index, "utf8")
    const code = text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "")
    const names = new Map()
    let rest = code
    for (const [line, name, file] of code.matchAll(/^export \* as (\w+) from "(\.\/[\w/.-]+\.js)";$/gm)) {
      names.set(name, path.join(path.dirname(index), file))
      rest = rest.replace(line, "")
    }
    // Only the re-exports and `export { … } from "./X.js"` groups: then each namespace is its file.
    const plain = rest.replace(/^export \{[\w\s,]*\} from "\.\/[\w/.-]+\.js";$/gm, "").trim() === ""
    indexes.set(index, plain ? names : new Map())
  }
  return indexes.get(index)
}
const byModulePath = async (build, file, text) => {
  if (file.split(path.sep).includes("node_modules")) return text
  const imports = [...text.matchAll(/^import \{([\w\s,]+)\} from "([@\w/.-]+)";$/gm)]
  for (const [statement, names, specifier] of imports) {
    if (specifier.startsWith(".")) continue
    const resolved = await build.resolve(specifier, { resolveDir: path.dirname(file), kind: "import-statement" })
    if (resolved.errors.length > 0 || resolved.path === "") continue
    const namespaces = await namespacesOf(resolved.path)
    const each = names.split(",").map((n) => n.trim()).filter((n) => n !== "").map((n) => n.split(/\s+as\s+/))
    if (!each.every(([name]) => namespaces.has(name))) continue
    text = text.replace(statement, each.map(([name, local = name]) =>
      `import * as ${local} from ${JSON.stringify(namespaces.get(name))};`).join(" "))
  }
  return text
}

const options = {
  absWorkingDir: root,
  entryPoints: [entry],
  bundle: true,
  platform: "node",
  target: "node20",
  outdir: out,
  metafile: true,
  write: false,
  logLevel: "warning",
  plugins: [statBeforeRead]
}
// The script compiled with the code cache, and the ES modules the binary imports when it has no cache that
// this Node can use (another Node's; then they start faster than the script compiled from source, as
// PostgreSQL and the HTTP client stay in chunks of their own, read when used).
// The script is written without comments and indentation (`minifyWhitespace`; names are kept): 3.4 → 2.3 MB.
// V8 scans a script's whole source for its line ends the first time a stack trace shows one of its frames,
// and Effect's `Utils` formats one at load; there is less to read, and to parse for a function the code
// cache does not hold.
const [script, modules] = await Promise.all([
  esbuild.build({
    ...options,
    format: "cjs",
    minifyWhitespace: true,
    entryNames: "[name]-[hash]",
    outExtension: { ".js": ".cjs" }
  }),
  esbuild.build({
    ...options,
    format: "esm",
    splitting: true,
    // CommonJS dependencies (yaml, pg, undici, …) call require(): an ES module has none of its own.
    banner: { js: "import { createRequire as __reinRequire } from \"node:module\"\nconst require = __reinRequire(import.meta.url)" }
  })
])

fs.mkdirSync(out, { recursive: true })
// Every file the bundle was made from, relative to the bundle's directory, with what identifies its version.
const inputs = [
  ...new Set([
    ...Object.keys(script.metafile.inputs).map((input) => path.resolve(root, input)),
    ...Object.keys(modules.metafile.inputs).map((input) => path.resolve(root, input)),
    // The indexes read to map a namespace to its file, which the bundle may not include.
    ...read
  ])
].map((file) => {
  const version = seen.get(file)
  if (version === undefined) throw new Error(`bundle-cli: ${file} was bundled without being read by the plugin`)
  return [path.relative(out, file), ...version]
})
const written = new Set(["inputs.json"])
const scriptFile = script.outputFiles[0].path
// The script is written as the function expression the binary compiles, in ASCII only: the binary reads it
// as Latin-1, which Node makes an external string (no copy into V8's heap, no UTF-8 decoding, no wrapping
// concatenated at run time: ≈ 7 ms and ~7 MB of old generation at every start). esbuild already escapes every
// non-ASCII character of strings, templates, regular expressions and names; what it leaves is in comments,
// where a `\uXXXX` escape is only text, except a line or paragraph separator, which ends a `//` comment as a
// newline does.
const asScript = (text) =>
  `(function (exports, require, module, __filename, __dirname) { ${
    text.replace(/[\u2028\u2029]/g, "\n").replace(
      /[^\x00-\x7f]/g,
      (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`
    )
  }\n})`
for (const file of [...script.outputFiles, ...modules.outputFiles]) {
  writeWhole(file.path, file.path === scriptFile ? asScript(file.text) : file.contents)
  written.add(path.basename(file.path))
}
// The training run: its cache, or none (reported, not fatal) when it failed.
const trained = () => {
  const cache = scriptFile.replace(/\.cjs$/, ".cache")
  const run = spawnSync(process.execPath, [path.join(root, "scripts/cli-code-cache.mjs"), scriptFile, cache], {
    cwd: root,
    encoding: "utf8"
  })
  if (run.status === 0 && fs.existsSync(cache)) return { file: path.basename(cache), v8: process.versions.v8 }
  process.stderr.write(`bundle-cli: no code cache (training run: exit ${run.status})\n${run.stderr}`)
  return undefined
}
const cache = trained()
if (cache !== undefined) written.add(cache.file)
// The bundle's own files are listed too: the binary runs it only while every one of them is there (the cache
// is not one of them: without it the binary imports the ES modules).
const outputs = [...written].filter((name) => name !== "inputs.json" && name !== cache?.file)
writeWhole(
  path.join(out, "inputs.json"),
  JSON.stringify({ entry: "node.js", script: path.basename(scriptFile), wrapped: true, cache, inputs, outputs })
)
// Files of earlier bundles (their names carry a hash of their contents), once an hour old: a concurrent
// bundle (test suites prepare in parallel) may have just written them and not yet its list. With `--prune`
// (`pnpm pack`'s prepack, so that the package holds this bundle only), whatever their age.
const HOUR = process.argv.includes("--prune") ? -1 : 3_600_000
for (const name of fs.readdirSync(out)) {
  if (written.has(name) || name.endsWith(".tmp")) continue
  const file = path.join(out, name)
  const stat = fs.statSync(file, { throwIfNoEntry: false })
  if (stat !== undefined && Date.now() - stat.mtimeMs > HOUR) fs.rmSync(file, { force: true })
}
