// `pnpm build`'s second step (after `tsc -b`): bundles the built CLI (packages/cli/dist/internal/node.js, the
// command tree and everything it imports) with esbuild into packages/cli/dist/bundle/, one CommonJS file, so
// that a command loads two files instead of ~1,000 modules (start-up ≈ 0.35 s of CPU instead of ≈ 1.1 s).
// Tree-shaking drops what nothing uses (most of `fast-check`, which the `effect` index re-exports); what is
// imported dynamically (PostgreSQL, the HTTP providers) is in the file but runs only when first imported.
//
// Then a training run (scripts/cli-code-cache.mjs: `rein simulate` of a few virtual seconds, run from the
// bundle as the binary runs it) leaves V8's code cache of the bundle beside it, functions compiled lazily
// during the run included: the binary compiles the bundle with it (packages/cli/src/internal/entry.ts) and
// then compiles almost nothing. The bundle's name carries a hash of its contents and the cache is named after
// it, so a cache never meets another bundle's source (V8 itself checks only the source's length). No cache
// (a failed training run) only means a slower start.
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
      return { contents: await fs.promises.readFile(args.path), loader: args.path.endsWith(".json") ? "json" : "js" }
    })
  }
}

const result = await esbuild.build({
  absWorkingDir: root,
  entryPoints: [entry],
  bundle: true,
  format: "cjs",
  entryNames: "[name]-[hash]",
  outExtension: { ".js": ".cjs" },
  platform: "node",
  target: "node20",
  outdir: out,
  metafile: true,
  write: false,
  logLevel: "warning",
  plugins: [statBeforeRead]
})

fs.mkdirSync(out, { recursive: true })
// Every file the bundle was made from, relative to the bundle's directory, with what identifies its version.
const inputs = Object.keys(result.metafile.inputs).map((input) => {
  const file = path.resolve(root, input)
  const version = seen.get(file)
  if (version === undefined) throw new Error(`bundle-cli: ${input} was bundled without being read by the plugin`)
  return [path.relative(out, file), ...version]
})
const written = new Set(["inputs.json"])
for (const file of result.outputFiles) {
  writeWhole(file.path, file.contents)
  written.add(path.basename(file.path))
}
const [script] = result.outputFiles
// The training run: its cache, or none (reported, not fatal) when it failed.
const trained = () => {
  const cache = script.path.replace(/\.cjs$/, ".cache")
  const run = spawnSync(process.execPath, [path.join(root, "scripts/cli-code-cache.mjs"), script.path, cache], {
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
// is not one of them: without it the bundle runs, compiled as without a cache).
const outputs = [...written].filter((name) => name !== "inputs.json" && name !== cache?.file)
writeWhole(
  path.join(out, "inputs.json"),
  JSON.stringify({ entry: path.basename(script.path), cache, inputs, outputs })
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
