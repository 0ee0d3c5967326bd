/**
 * Which build of the command tree the binary runs: the bundle of `scripts/bundle-cli.mjs` (`dist/bundle/`,
 * a dozen files, ≈ 0.8 s less start-up) while every file it was made from is unchanged, and otherwise the
 * unbundled `node.js` that `tsc -b` keeps current. A bundle is never run stale: a build that changed any
 * input (ours or a dependency's) since it was made, a missing bundle or a damaged list of its inputs all
 * mean the unbundled entry. Plain Node (no Effect): it runs before anything is loaded.
 *
 * @internal
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"

/**
 * What `bundle-cli.mjs` writes beside the bundle: its entry file, each input's path, size and mtime, and the
 * bundle's own files (an older bundle's list has none: then only the entry is checked).
 */
interface Inputs {
  readonly entry: string
  readonly inputs: ReadonlyArray<readonly [file: string, size: number, mtimeMs: number]>
  readonly outputs?: ReadonlyArray<string>
}

// About 1,250 inputs are checked at every start (≈ 13 ms of CPU): the path is joined by hand, as
// `path.resolve` per input costs half as much again.
const unchanged = (dir: string, [file, size, mtimeMs]: Inputs["inputs"][number]): boolean => {
  const stat = fs.statSync(`${dir}/${file}`, { throwIfNoEntry: false })
  return stat !== undefined && stat.size === size && stat.mtimeMs === mtimeMs
}

/**
 * The bundle's entry in `dir` (a file path) if it exists and was made from exactly the files there are now;
 * `undefined` otherwise (a list that cannot be read included: it was written by our own script, so a
 * damaged one means an interrupted build, never a reason to fail). @internal
 */
export const freshBundle = (dir: string): string | undefined => {
  try {
    const { entry, inputs, outputs = [] }: Inputs = JSON.parse(fs.readFileSync(path.join(dir, "inputs.json"), "utf8"))
    const file = path.join(dir, entry)
    return fs.existsSync(file) && inputs.length > 0 && outputs.every((name) => fs.existsSync(path.join(dir, name))) &&
        inputs.every((input) => unchanged(dir, input))
      ? file
      : undefined
  } catch {
    return undefined
  }
}

/** The module the binary imports to run a command: the bundle when fresh, else the unbundled tree. @internal */
export const entry = (): string => {
  const here = path.dirname(fileURLToPath(import.meta.url))
  const bundle = freshBundle(path.join(here, "..", "bundle"))
  return bundle === undefined ? new URL("./node.js", import.meta.url).href : pathToFileURL(bundle).href
}
