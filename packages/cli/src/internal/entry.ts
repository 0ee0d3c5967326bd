/**
 * How the binary runs the command tree: from the bundle of `scripts/bundle-cli.mjs` (`dist/bundle/`, ≈ 0.8 s
 * less start-up than the unbundled tree) while every file it was made from is unchanged, and otherwise from the unbundled `node.js` that `tsc -b` keeps current. A bundle is never run
 * stale: a build that changed any input (ours or a dependency's) since it was made, a missing bundle or a
 * damaged list of its inputs all mean the unbundled entry. An installed package (one inside a `node_modules`
 * directory: `npm install @rein/cli`) runs its bundle without that check: nothing rebuilds its `dist/`, its
 * bundle carries every dependency it was made from, and the inputs listed are the workspace's files, which an
 * install has not (and whose mtimes a package does not keep).
 *
 * The bundle is one CommonJS script compiled with `vm.Script` and the V8 code cache the build left beside it
 * (a training run of a short command, so the functions a command compiles lazily are in it too): a command then
 * compiles almost none of the bundle's code. Without a cache made by this V8 (another Node's, none) the same
 * bundle's ES modules are imported instead: the script compiled from source would start slower. A cache V8
 * rejects after all (other V8 flags) or a damaged one only means compiling the script as without it. Each
 * cache is named after its script's contents, so it never meets another script's source.
 *
 * Plain Node (no Effect): it runs before anything is loaded, Effect included, and decides which Effect to
 * load. Node 20 has no compile cache for ES modules (`module.enableCompileCache` is Node 22's), hence a
 * CommonJS script.
 *
 * @internal
 */
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import { setFlagsFromString } from "node:v8"
import * as vm from "node:vm"

/**
 * What `bundle-cli.mjs` writes beside the bundle: its ES module entry, its script (`wrapped`: written as the
 * function expression that is compiled, ASCII only; an older build's script is neither, and is not run), each
 * input's path, size and mtime, the bundle's own files (an older bundle's list has none: then only the entry
 * is checked), and the script's code cache with the V8 version that made it (absent when the build could not
 * make one).
 */
interface Inputs {
  readonly entry: string
  readonly script?: string
  readonly wrapped?: boolean
  readonly inputs: ReadonlyArray<readonly [file: string, size: number, mtimeMs: number]>
  readonly outputs?: ReadonlyArray<string>
  readonly cache?: { readonly file: string; readonly v8: string }
}

/**
 * A current bundle: its ES module entry, and its script with the code cache to compile it with when there is
 * one this Node can use. @internal
 */
export interface Bundle {
  readonly entry: string
  readonly cached: { readonly script: string; readonly cache: string } | undefined
}

/** What the command tree exports (`internal/node.ts`). @internal */
export interface Tree {
  readonly start: (argv: ReadonlyArray<string>) => void
}

// About 1,250 inputs are checked at every start (≈ 13 ms of CPU): the path is joined by hand, as
// `path.resolve` per input costs half as much again.
const unchanged = (dir: string, [file, size, mtimeMs]: Inputs["inputs"][number]): boolean => {
  const stat = fs.statSync(`${dir}/${file}`, { throwIfNoEntry: false })
  return stat !== undefined && stat.size === size && stat.mtimeMs === mtimeMs
}

/** Whether `dir` is inside an installed package (under `node_modules`), not a workspace's build. */
const installed = (dir: string): boolean => path.resolve(dir).split(path.sep).includes("node_modules")

/**
 * The bundle in `dir` if it exists and was made from exactly the files there are now (or, installed, if all
 * of its own files are there); `undefined` otherwise (a list that cannot be read included: it was written by
 * our own script, so a damaged one means an interrupted build, never a reason to fail). @internal
 */
export const freshBundle = (dir: string): Bundle | undefined => {
  try {
    const { cache, entry, inputs, outputs = [], script, wrapped }: Inputs = JSON.parse(
      fs.readFileSync(path.join(dir, "inputs.json"), "utf8")
    )
    const file = path.join(dir, entry)
    return fs.existsSync(file) && inputs.length > 0 && outputs.every((name) => fs.existsSync(path.join(dir, name))) &&
        (installed(dir) || inputs.every((input) => unchanged(dir, input)))
      ? {
        entry: file,
        cached: script !== undefined && wrapped === true && cache?.v8 === process.versions.v8
          ? { script: path.join(dir, script), cache: path.join(dir, cache.file) }
          : undefined
      }
      : undefined
  } catch {
    return undefined
  }
}

/**
 * V8 flags for this process, set before anything is compiled: a code cache is accepted only under the flags
 * it was made with, so the build's training run sets the same ones. Allocation-site pretenuring is off: it
 * allocates the objects of a literal straight into the old generation once a sample of them outlived a
 * young-generation collection; Effect's fibers then make most of their short-lived state there, and each
 * such object keeps every young object it points to alive until the next full collection. The CPU of a
 * simulated hour was ~13% less without it (bench/PROFILE.md, #22). @internal
 */
export const tuneV8 = (): void => setFlagsFromString("--no-allocation-site-pretenuring --verify-snapshot-checksum")

/** The cache's bytes, or `undefined` when there is none to read (never a reason to fail). */
const readCache = (file: string | undefined): Buffer | undefined => {
  if (file === undefined) return undefined
  try {
    return fs.readFileSync(file)
  } catch {
    return undefined
  }
}

/**
 * Compiles the bundle's script (with the code cache when there is one) and runs its top level: the compiled
 * script, for the build's training run to take its cache from, and what the bundle exports. The script is
 * ASCII, read as Latin-1: Node then keeps its text outside V8's heap (an external string), and it is already
 * the function expression to compile, so nothing is decoded or copied. @internal
 */
export const compileBundle = (
  bundle: { readonly script: string; readonly cache: string | undefined }
): { readonly script: vm.Script; readonly tree: Tree } => {
  const cachedData = readCache(bundle.cache)
  const script = new vm.Script(fs.readFileSync(bundle.script, "latin1"), {
    filename: bundle.script,
    ...(cachedData === undefined ? {} : { cachedData })
  })
  const module = { exports: {} as Tree }
  const run: (...args: ReadonlyArray<unknown>) => void = script.runInThisContext()
  run(module.exports, createRequire(bundle.script), module, bundle.script, path.dirname(bundle.script))
  return { script, tree: module.exports }
}

/**
 * The command tree: the bundle's when it is current (its script with the code cache, or its ES modules), else
 * the unbundled tree's. @internal
 */
export const load = async (): Promise<Tree> => {
  const bundle = freshBundle(fileURLToPath(new URL("../bundle", import.meta.url)))
  if (bundle === undefined) return import("./node.js")
  return bundle.cached === undefined ? import(pathToFileURL(bundle.entry).href) : compileBundle(bundle.cached).tree
}
